"""Checkers for the exercises of Chapter 5 (the full Transformer).

Each checker runs the learner's code on seeded inputs, compares with the reference in
:mod:`course_utils.model` / :mod:`course_utils.counting`, and names the likely mistake when
the answer matches what a typical wrong implementation would return.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..counting import encoder_layer_params
from ..masks import causal_mask, padding_mask
from ..model import DecoderBlock, Transformer, TransformerConfig
from ..positional import sinusoidal_encoding
from .core import CheckFailed, as_int, call_student, checker, expect_close, expect_tensor

__all__ = ["check_decoder_block", "check_embed", "check_encoder_layer_params", "check_ffn"]


# ---------------------------------------------------------------- 5.1 position-wise FFN
def _find_linears(module: nn.Module, d_model: int, d_ff: int) -> tuple[nn.Linear, nn.Linear]:
    linears = [m for m in module.modules() if isinstance(m, nn.Linear)]
    first = [m for m in linears if (m.in_features, m.out_features) == (d_model, d_ff)]
    second = [m for m in linears if (m.in_features, m.out_features) == (d_ff, d_model)]
    if len(linears) != 2 or len(first) != 1 or len(second) != 1:
        shapes = [(m.in_features, m.out_features) for m in linears]
        raise CheckFailed(
            f"with d_model={d_model}, d_ff={d_ff} the module should hold two nn.Linear layers, "
            f"{d_model} -> {d_ff} and {d_ff} -> {d_model}; found (in, out) = {shapes}."
        )
    return first[0], second[0]


_SEED = 5


def _drop(t: Tensor, p: float) -> Tensor:
    """F.dropout(t, p) right after seeding the global RNG: the mask a seeded nn.Dropout would draw."""
    torch.manual_seed(_SEED)
    return F.dropout(t, p)


@checker("5.1", "position-wise feed-forward network")
def check_ffn(cls: Callable[..., nn.Module]) -> str:
    """Check ``cls(d_model, d_ff, dropout)``: Linear -> ReLU -> dropout -> Linear, back to d_model. Chapter 5."""
    g = torch.Generator().manual_seed(51)
    name = getattr(cls, "__name__", "your class")
    for d_model, d_ff, p in ((8, 20, 0.1), (6, 4, 0.3), (8, 12, 0.0)):
        torch.manual_seed(d_model)
        module = call_student(cls, d_model, d_ff, p, what=f"{name}(d_model={d_model}, d_ff={d_ff}, dropout={p})")
        if not isinstance(module, nn.Module):
            raise CheckFailed(f"the class should build an nn.Module, got {type(module).__name__}")
        n = sum(q.numel() for q in module.parameters())
        want_n = 2 * d_model * d_ff + d_ff + d_model
        if n == 2 * d_model * d_ff:
            raise CheckFailed("the module has no biases: the paper's FFN is W_2 max(0, x W_1 + b_1) + b_2.")
        lin1, lin2 = _find_linears(module, d_model, d_ff)
        if n != want_n:
            raise CheckFailed(
                f"the module should have {want_n} parameters for d_model={d_model}, d_ff={d_ff}, got {n}."
            )
        module.eval()  # dropout off: the comparison is deterministic
        for shape in ((2, 5, d_model), (1, 1, d_model)):
            x = torch.randn(*shape, generator=g)
            torch.manual_seed(_SEED)  # a dropout left on in eval mode draws the masks _drop draws
            got = call_student(module, x, what="your FFN's forward")
            with torch.no_grad():
                h = lin1(x)
                want = lin2(torch.relu(h))
                mistakes = {
                    "Did you forget the ReLU between the two linear layers? Without it the FFN is one linear map.":
                        lin2(h),
                    "The ReLU goes between the two layers only, not after the second one: the output "
                    "must be able to be negative.": torch.relu(lin2(torch.relu(h))),
                    "The paper's FFN uses ReLU, max(0, x), not GELU.": lin2(F.gelu(h)),
                    "The paper's FFN uses ReLU, max(0, x), not tanh or a sigmoid.": lin2(torch.tanh(h)),
                    "In eval mode dropout must be off: use nn.Dropout (or F.dropout(..., training=self.training)), "
                    "which does nothing after model.eval().": lin2(_drop(torch.relu(h), p)),
                }
            expect_close(got, want, f"FFN output for input of shape {shape}", mistakes)
        module.train()
        x = torch.randn(4, 6, d_model, generator=g)
        torch.manual_seed(_SEED)  # the same dropout masks as _drop draws
        got = call_student(module, x, what="your FFN's forward in training mode")
        with torch.no_grad():
            hidden = torch.relu(lin1(x))
            want = lin2(_drop(hidden, p))
            mistakes = {
                f"in training mode the FFN should apply dropout with p=dropout ({p}) to the hidden activations: "
                "nn.Dropout(dropout) after the ReLU.": lin2(hidden),
                "Dropout goes on the hidden activations, after the ReLU and before the second linear layer, "
                "not on the output.": _drop(lin2(hidden), p),
                "Dropout goes on the hidden activations, after the ReLU, not on the input.":
                    lin2(torch.relu(lin1(_drop(x, p)))),
            }
            if p != 0.1:
                mistakes[f"Use the dropout argument (here {p}): your module drops with a fixed p = 0.1."] = (
                    lin2(_drop(hidden, 0.1))
                )
        expect_close(got, want, f"FFN output in training mode with dropout={p}", mistakes)
    return "Two linear maps with a ReLU between them, applied to each position on its own."


# ---------------------------------------------------------------- 5.2 parameters of an encoder layer
@checker("5.2", "parameters of one encoder layer")
def check_encoder_layer_params(fn: Callable[[int, int], int]) -> str:
    """Check ``fn(d_model, d_ff)``: the number of parameters of one encoder layer. Chapter 5."""
    cases = ((512, 2048), (64, 128), (4, 8), (6, 5))
    got_values = []
    for d, d_ff in cases:
        got = call_student(fn, d, d_ff, what="encoder_layer_params")
        got_values.append(as_int(got, f"encoder_layer_params({d}, {d_ff})"))
    got_t = torch.tensor(got_values, dtype=torch.float64)

    def table(mha: Callable[[int], int], ffn: Callable[[int, int], int], ln: Callable[[int], int]) -> Tensor:
        return torch.tensor([mha(d) + ffn(d, f) + ln(d) for d, f in cases], dtype=torch.float64)

    def mha(d: int) -> int:
        return 4 * (d * d + d)

    def ffn(d: int, f: int) -> int:
        return 2 * d * f + d + f

    want = torch.tensor([encoder_layer_params(d, f) for d, f in cases], dtype=torch.float64)
    mistakes = {
        "Did you forget the biases? Each nn.Linear has one (W_Q, W_K, W_V, W_O, W_1, W_2).":
            table(lambda d: 4 * d * d, lambda d, f: 2 * d * f, lambda d: 4 * d),
        "Did you forget the LayerNorm parameters? Each of the 2 LayerNorms has gamma and beta (2 d_model).":
            table(mha, ffn, lambda d: 0),
        "Did you count only one LayerNorm? The encoder layer has two, one per sub-layer.":
            table(mha, ffn, lambda d: 2 * d),
        "Did you count 3 projections instead of 4? Besides W_Q, W_K, W_V there is the output projection W_O.":
            table(lambda d: 3 * (d * d + d), ffn, lambda d: 4 * d),
        "Did you give both FFN biases d_ff entries? b_1 has d_ff, b_2 has d_model.":
            table(mha, lambda d, f: 2 * d * f + 2 * f, lambda d: 4 * d),
        "You are d_model short: one bias (of W_Q, W_K, W_V, W_O or the FFN's b_2) or one LayerNorm's gamma "
        "or beta is missing.": table(mha, ffn, lambda d: 3 * d),
        "You are d_ff short: the FFN's first bias b_1 (d_ff entries) is missing.":
            table(mha, lambda d, f: 2 * d * f + d, lambda d: 4 * d),
        "You counted d_model too many: is there an extra bias or LayerNorm vector?": table(mha, ffn, lambda d: 5 * d),
        "Did you count the FFN's weights only once? W_1 is d_model x d_ff and W_2 is d_ff x d_model.":
            table(mha, lambda d, f: d * f + d + f, lambda d: 4 * d),
        "Did you count the decoder's layer? An encoder layer has one attention block; the decoder's has two "
        "(self and cross) and three LayerNorms.": table(lambda d: 8 * (d * d + d), ffn, lambda d: 6 * d),
    }
    expect_close(got_t, want, "your counts for (d_model, d_ff) in " + str(list(cases)), mistakes, atol=0.5, rtol=0)
    return f"For the paper's base layer that is {encoder_layer_params(512, 2048):,} parameters."


# ---------------------------------------------------------------- 5.3 decoder block wiring
def _decoder_variant(block: DecoderBlock, x: Tensor, memory: Tensor, tgt_mask: Tensor | None,
                     src_mask: Tensor | None, kv_from_decoder: bool = False, residual: bool = True,
                     pre_ln: bool = False, self_residual: bool = True, ffn_residual: bool = True,
                     one_norm: bool = False) -> Tensor:
    """What a post-LN decoder block computes with one deliberate change."""
    if one_norm:
        x = block.norm1(x + block.self_attn(x, mask=tgt_mask)[0])
        x = block.norm1(x + block.cross_attn(x, memory, memory, mask=src_mask)[0])
        return block.norm1(x + block.ffn(x))
    if pre_ln:
        x = x + block.self_attn(block.norm1(x), mask=tgt_mask)[0]
        kv = block.norm2(x) if kv_from_decoder else memory
        x = x + block.cross_attn(block.norm2(x), kv, kv, mask=None if kv_from_decoder else src_mask)[0]
        return x + block.ffn(block.norm3(x))
    a = block.self_attn(x, mask=tgt_mask)[0]
    x = block.norm1(x + a if self_residual else a)
    kv = x if kv_from_decoder else memory
    c = block.cross_attn(x, kv, kv, mask=tgt_mask if kv_from_decoder else src_mask)[0]
    x = block.norm2(x + c if residual else c)
    return block.norm3(x + block.ffn(x) if ffn_residual else block.ffn(x))


@checker("5.3", "decoder block wiring")
def check_decoder_block(fn: Callable[..., Tensor]) -> str:
    """Check ``fn(block, x, memory, tgt_mask, src_mask)``: one post-LN decoder block, wired by hand. Chapter 5."""
    g = torch.Generator().manual_seed(53)
    torch.manual_seed(53)
    block = DecoderBlock(d_model=8, n_heads=2, d_ff=16, dropout=0.0).eval()
    with torch.no_grad():  # non-trivial LayerNorm parameters so a skipped norm shows
        for p in block.parameters():
            if p.dim() == 1:
                p.add_(0.3 * torch.randn(p.shape, generator=g))
    for B, T_tgt, T_src in ((2, 4, 6), (1, 5, 5), (1, 1, 3)):
        x, memory = torch.randn(B, T_tgt, 8, generator=g), torch.randn(B, T_src, 8, generator=g)
        src_tokens = torch.ones(B, T_src, dtype=torch.long)
        src_tokens[0, -1] = 0  # one padded source position
        src_mask, tgt_mask = padding_mask(src_tokens, 0), causal_mask(T_tgt)
        with torch.no_grad():
            got = call_student(fn, block, x.clone(), memory.clone(), tgt_mask, src_mask, what="decoder_block")
            got = got[0] if isinstance(got, tuple) else got
            expect_tensor(got, "decoder_block output", None)
            if tuple(got.shape) == (B, T_src, 8) and T_src != T_tgt:
                raise CheckFailed(
                    f"the output has T_src={T_src} rows instead of T_tgt={T_tgt}: the queries of cross-attention "
                    "come from the decoder (x), the keys and values from the encoder (memory)."
                )
            want = block(x, memory, tgt_mask, src_mask)[0]
            mistakes = {
                "In cross-attention, K and V must come from the encoder output (memory), Q from the decoder; "
                "you attended from the decoder to itself.": _decoder_variant(block, x, memory, tgt_mask, src_mask,
                                                                             kv_from_decoder=True),
                "The self-attention needs the causal tgt_mask: without it each position sees the future.":
                    _decoder_variant(block, x, memory, None, src_mask),
                "Cross-attention needs src_mask so padded source positions are ignored.":
                    _decoder_variant(block, x, memory, tgt_mask, None),
                "Add the residual around cross-attention: norm2(x + cross_attn(...)), not norm2(cross_attn(...)).":
                    _decoder_variant(block, x, memory, tgt_mask, src_mask, residual=False),
                "This block is post-LN (the paper's): LayerNorm after the residual add, norm(x + sublayer(x)); "
                "you wrote pre-LN.": _decoder_variant(block, x, memory, tgt_mask, src_mask, pre_ln=True),
                "Add the residual around self-attention: norm1(x + self_attn(...)).":
                    _decoder_variant(block, x, memory, tgt_mask, src_mask, self_residual=False),
                "Add the residual around the FFN: norm3(x + ffn(x)).":
                    _decoder_variant(block, x, memory, tgt_mask, src_mask, ffn_residual=False),
                "Each sub-layer has its own LayerNorm: norm1 after self-attention, norm2 after cross-attention, "
                "norm3 after the FFN.": _decoder_variant(block, x, memory, tgt_mask, src_mask, one_norm=True),
            }
            expect_close(got, want, f"decoder_block output for B={B}, T_tgt={T_tgt}, T_src={T_src}", mistakes)
    return "Queries from the decoder, keys and values from the encoder, a residual and a LayerNorm around each."


# ---------------------------------------------------------------- 5.4 embedding step
@checker("5.4", "embeddings scaled by sqrt(d_model) plus PE")
def check_embed(fn: Callable[..., Tensor]) -> str:
    """Check ``fn(tokens, embedding, pe)``: embedding(tokens) * sqrt(d_model) + PE[:T]. Chapter 5."""
    g = torch.Generator().manual_seed(54)
    for d_model, cases in ((16, ((2, 5), (1, 1), (3, 12))), (8, ((2, 7),))):
        embedding = nn.Embedding(10, d_model)
        with torch.no_grad():
            embedding.weight.copy_(torch.randn(10, d_model, generator=g) * 0.3)
        pe = sinusoidal_encoding(12, d_model)  # (max_len, d_model)
        for B, T in cases:
            tokens = torch.randint(0, 10, (B, T), generator=g)
            try:
                got: Any = call_student(fn, tokens, embedding, pe, what="embed")
            except CheckFailed as failure:
                if "must match the size of tensor" in str(failure):
                    raise CheckFailed(
                        f"{failure} pe holds max_len rows: add only the first T, pe[:tokens.shape[1]]."
                    ) from None
                raise
            with torch.no_grad():
                e = embedding(tokens)  # (B, T, d_model)
                want = e * math.sqrt(d_model) + pe[:T]
                mistakes = {
                    "Multiply the embeddings by sqrt(d_model) (section 3.4 of the paper) before adding PE.":
                        e + pe[:T],
                    "Scale by sqrt(d_model), not by d_model.": e * d_model + pe[:T],
                    "Divide? No: the embeddings are multiplied by sqrt(d_model).": e / math.sqrt(d_model) + pe[:T],
                    "Scale only the embeddings, then add PE: (E x sqrt(d_model)) + PE, not (E + PE) x sqrt(d_model).":
                        (e + pe[:T]) * math.sqrt(d_model),
                    "Positions start at 0: add pe[:T], not pe[1:T + 1].": e * math.sqrt(d_model) + pe[1 : T + 1]
                    if T < pe.shape[0] else want * float("nan"),
                    "The positional table is indexed by token id (pe[tokens]): index it by position, "
                    "pe[:T], the same rows for every sequence.": e * math.sqrt(d_model) + pe[tokens],
                }
                if d_model != 16:
                    mistakes["Read d_model from the embedding (embedding.embedding_dim): your scale is a fixed "
                             "sqrt(16) = 4."] = e * 4.0 + pe[:T]
            expect_close(got, want, f"embed output for tokens of shape {(B, T)} and d_model={d_model}", mistakes)
    return "Token vectors and positions now have comparable sizes."


# ----- 5.5 the parameters of the whole model (transfer) ------------------------------------------------

def _model_params(c: TransformerConfig, skip: str = "") -> int:
    d, f = c.d_model, c.d_ff
    mha = 4 * (d * d + d)
    ffn = 2 * d * f + f + d
    ln = 2 * d
    enc = c.n_encoder_layers * (mha + ffn + 2 * ln)
    dec = c.n_decoder_layers * ((1 if skip == "cross" else 2) * mha + ffn + (2 if skip == "cross" else 3) * ln)
    emb = c.src_vocab_size * d + (0 if c.tie_embeddings and skip != "tie" else c.tgt_vocab_size * d)
    out = c.tgt_vocab_size + (0 if c.tie_embeddings and skip != "tie" else d * c.tgt_vocab_size)
    if skip == "out_bias":
        out -= c.tgt_vocab_size
    final = 2 * ln if c.norm_first and skip != "final" else 0
    return enc + dec + emb + out + final


@checker("5.5", "parameters of the whole model")
def check_model_params(fn: Callable[[TransformerConfig], int]) -> str:
    """Check ``fn(config)`` returns the number of distinct parameters of Transformer(config), ties counted once."""
    configs = [
        TransformerConfig(29, 29, d_model=64, n_heads=4, d_ff=128, norm_first=False),
        TransformerConfig(29, 29, d_model=64, n_heads=4, d_ff=128, norm_first=True),
        TransformerConfig(100, 120, d_model=32, n_heads=2, d_ff=64, n_encoder_layers=3, n_decoder_layers=1),
        TransformerConfig(500, 500, d_model=48, n_heads=4, d_ff=96, tie_embeddings=True, norm_first=True),
    ]
    for c in configs:
        want = sum(p.numel() for p in Transformer(c).parameters())  # parameters() counts a shared one once
        assert want == _model_params(c)
        got = call_student(fn, c, what="your model_params")
        if isinstance(got, bool) or not isinstance(got, int):
            raise CheckFailed(f"model_params should return an int, got {type(got).__name__}.")
        if got == want:
            continue
        mistakes = {
            "cross": "Each decoder layer has two attention sublayers (masked self-attention and cross-attention) "
                     "and three LayerNorms.",
            "tie": "With tie_embeddings=True one (V, d_model) matrix serves as source embedding, target embedding "
                   "and output projection: count it once.",
            "final": "A pre-LN model (norm_first=True) ends each stack with one more LayerNorm (2 d_model "
                     "parameters each).",
            "out_bias": "The output projection d_model -> V_tgt has a bias of V_tgt numbers.",
        }
        for skip, hint in mistakes.items():
            if _model_params(c, skip) != want and got == _model_params(c, skip):
                raise CheckFailed(f"for {c.n_encoder_layers}+{c.n_decoder_layers} layers, d_model={c.d_model}, "
                                  f"tie={c.tie_embeddings}, pre-LN={c.norm_first}: got {got:,}. {hint}")
        raise CheckFailed(
            f"for d_model={c.d_model}, d_ff={c.d_ff}, {c.n_encoder_layers}+{c.n_decoder_layers} layers, vocabularies "
            f"{c.src_vocab_size}/{c.tgt_vocab_size}, tie={c.tie_embeddings}, pre-LN={c.norm_first}: expected "
            f"{want:,}, got {got:,} (off by {got - want:+,})."
        )
    return "Your count matches the model for post-LN, pre-LN, unequal stacks and tied embeddings."
