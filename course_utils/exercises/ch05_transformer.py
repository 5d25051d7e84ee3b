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

from ..masks import causal_mask, padding_mask
from ..model import DecoderBlock
from ..positional import sinusoidal_encoding
from .core import CheckFailed, as_int, call_student, checker, expect_close, expect_tensor
from .experiment import Expected, compare_prediction, judge_range, measure, read_prediction, require_own_run

__all__ = ["check_decoder_block", "check_embed", "check_ffn", "check_mqa_layer_params", "check_order_experiment"]


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


# ----- 5.2 parameters of a variant the table does not list: multi-query attention (derive) ----------
def _mqa_layer_params(d: int, h: int, f: int, kv: int = 2, kv_bias: bool = True, kv_width: str = "d_k",
                      out: str = "full", ln: int = 2) -> int:
    """Parameters of one post-LN encoder layer whose K and V projections are shared by all heads."""
    d_k = d // h
    w = d_k if kv_width == "d_k" else d
    q_and_o = (d * d + d) + ((d * d + d) if out == "full" else (d_k * d + d))
    keys_values = kv * (d * w + (w if kv_bias else 0))
    return q_and_o + keys_values + (2 * d * f + f + d) + ln * 2 * d


@checker("5.2", "parameters of a multi-query encoder layer")
def check_mqa_layer_params(fn: Callable[[int, int, int], int]) -> str:
    """Check ``fn(d_model, n_heads, d_ff)``: the parameters of a post-LN encoder layer with multi-query attention
    (one key and one value projection of width d_k shared by all heads), biases and LayerNorms included."""
    cases = ((512, 8, 2048), (64, 4, 128), (48, 3, 96), (6, 2, 5))
    got = []
    for d, h, f in cases:
        got.append(as_int(call_student(fn, d, h, f, what="your mqa_layer_params"), f"mqa_layer_params({d}, {h}, {f})"))
    got_t = torch.tensor(got, dtype=torch.float64)

    def table(**variant: Any) -> Tensor:
        return torch.tensor([_mqa_layer_params(d, h, f, **variant) for d, h, f in cases], dtype=torch.float64)

    mistakes = {
        "That is the table's encoder layer: in multi-query attention W_K and W_V map d_model to d_k = d_model / "
        "n_heads once, for all heads together, instead of d_model to d_model.": table(kv_width="d_model"),
        "Did you forget the biases of the shared K and V projections (d_k each)?": table(kv_bias=False),
        "Keys and values are two separate projections, each d_model -> d_k: count both.": table(kv=1),
        "The output projection W_O still maps the concatenated heads (d_model wide) back to d_model: it keeps "
        "its d_model x d_model weight.": table(out="d_k"),
        "Did you forget the two LayerNorms (2 d_model each)?": table(ln=0),
        "An encoder layer has two LayerNorms, one per sub-layer.": table(ln=1),
    }
    want = table()
    expect_close(got_t, want, "your counts for (d_model, n_heads, d_ff) in " + str(list(cases)), mistakes,
                 atol=0.5, rtol=0)
    saved = 1 - _mqa_layer_params(512, 8, 2048) / _mqa_layer_params(512, 8, 2048, kv_width="d_model")
    return (f"At the paper's base sizes the shared K and V save {saved:.0%} of a layer's parameters; the larger "
            "saving of multi-query attention is the size of the key-value cache at decoding time.")


# ----- 5.5 does the model know the order of its source? (experiment) --------------------------------
ORDER_OPTIONS = {
    "changes": "without positions, shuffling the source still changes the output",
    "unchanged": "without positions, shuffling the source leaves the output unchanged",
}
_ORDER_WHY = {
    "changes": "Without positions every encoder layer treats its tokens as a set (shuffle in, same shuffle out), "
               "and cross-attention sums over the memory's positions in any order: the decoder cannot tell.",
}
NO_POSITIONS = Expected(
    "largest change of the logits without positions", 0.0, 1e-4,
    "without positional information the model sees its source as a bag of tokens: 'abc' and 'cba' give the "
    "same translation, up to float32 rounding.",
    above="Did you call model.eval() (dropout draws new masks on every call), build the model with "
          "positional='none', and shuffle the source (src), not the target?",
)
WITH_POSITIONS = Expected(
    "largest change of the logits with the sinusoidal table", 0.02, 100.0,
    "adding the positional table to the embeddings is all that tells the model which token came first.",
    below="Did you build this model with positional='sinusoidal' and apply the same shuffle to every row of src?",
    above="Did you compare logits (not softmax or loss values of different sizes)?",
)


@checker("5.5", "is the model blind to source order?")
def check_order_experiment(prediction: Any, fn: Callable[[str, int], float]) -> str:
    """Run the learner's ``fn(positional, seed)`` (largest |logits(src) - logits(shuffled src)| of a small
    untrained Transformer) without positions and with the sinusoidal table, and judge both."""
    guess = read_prediction(prediction, ORDER_OPTIONS)
    changes = {}
    for positional in ("none", "sinusoidal"):
        value = measure(fn, "order_sensitivity", positional, 0)
        if value < 0:
            raise CheckFailed(f"order_sensitivity({positional!r}, 0) is negative: return the largest absolute "
                              "difference, (a - b).abs().max().")
        changes[positional] = value
    require_own_run(fn, "order_sensitivity", ("sinusoidal", 0), changes["sinusoidal"])
    none_line = judge_range(changes["none"], NO_POSITIONS, what="your run without positions", show=True)
    pe_line = judge_range(changes["sinusoidal"], WITH_POSITIONS, what="your run with positions", show=True)
    return f"{none_line} {pe_line} {compare_prediction(guess, 'unchanged', _ORDER_WHY)}"
