"""Tests of the full Transformer (Chapter 5) against nn.Transformer, invariants and hand checks."""

from __future__ import annotations

import math
import warnings

import pytest
import torch
from torch import nn

from course_utils.masks import padding_mask
from course_utils.model import (
    DecoderBlock,
    EncoderBlock,
    KVCache,
    PositionwiseFeedForward,
    Transformer,
    TransformerConfig,
    to_torch_transformer,
)


def small_config(**kw) -> TransformerConfig:
    base = dict(src_vocab_size=11, tgt_vocab_size=13, d_model=16, n_heads=4, d_ff=32,
                n_encoder_layers=2, n_decoder_layers=3, dropout=0.0, max_len=32)
    base.update(kw)
    return TransformerConfig(**base)


def tokens(B: int, T: int, V: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(1, V, (B, T), generator=g)


@pytest.fixture(params=[False, True], ids=["post-LN", "pre-LN"])
def model(request) -> Transformer:
    torch.manual_seed(0)
    return Transformer(small_config(norm_first=request.param)).eval()


def test_shapes_and_attention(model):
    src, tgt = tokens(2, 7, 11), tokens(2, 5, 13, seed=1)
    assert model(src, tgt).shape == (2, 5, 13)
    memory, enc_w = model.encode(src, return_attention=True)
    assert memory.shape == (2, 7, 16)
    assert len(enc_w) == 2 and all(w.shape == (2, 4, 7, 7) for w in enc_w)
    logits, att = model(src, tgt, return_attention=True)
    assert set(att) == {"encoder", "decoder_self", "cross"}
    assert [w.shape for w in att["decoder_self"]] == [(2, 4, 5, 5)] * 3
    assert [w.shape for w in att["cross"]] == [(2, 4, 5, 7)] * 3
    torch.testing.assert_close(logits, model(src, tgt))  # fused and explicit paths agree
    for w in att["encoder"] + att["decoder_self"] + att["cross"]:
        torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]))
    assert torch.all(att["decoder_self"][0].triu(1) == 0)  # causal


def test_ffn_matches_hand_computation():
    torch.manual_seed(0)
    ffn = PositionwiseFeedForward(8, 16)
    x = torch.randn(2, 3, 8)
    want = torch.relu(x @ ffn.linear1.weight.T + ffn.linear1.bias) @ ffn.linear2.weight.T + ffn.linear2.bias
    torch.testing.assert_close(ffn(x), want)


@pytest.mark.parametrize("norm_first", [False, True])
def test_equivalence_with_torch_transformer(norm_first):
    torch.manual_seed(0)
    model = Transformer(small_config(norm_first=norm_first)).eval()
    ref = to_torch_transformer(model).eval()
    src, tgt = tokens(3, 7, 11), tokens(3, 5, 13, seed=1)
    src[0, 5:] = 0  # padding in the source
    scale = math.sqrt(16)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # nested-tensor prototype warning
        xs = model.pe(model.src_embed(src) * scale)
        xt = model.pe(model.tgt_embed(tgt) * scale)
        out = ref(xs, xt, tgt_mask=nn.Transformer.generate_square_subsequent_mask(5).isinf(),
                  src_key_padding_mask=src == 0, memory_key_padding_mask=src == 0)
        want = model.output_projection(out)
        got = model(src, tgt)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=0)


def test_block_equivalence_with_torch_layers():
    torch.manual_seed(0)
    for norm_first in (False, True):
        model = Transformer(small_config(norm_first=norm_first, n_encoder_layers=1, n_decoder_layers=1)).eval()
        ref = to_torch_transformer(model).eval()
        x, mem = torch.randn(2, 4, 16), torch.randn(2, 6, 16)
        with torch.no_grad():
            torch.testing.assert_close(model.encoder_layers[0](x)[0], ref.encoder.layers[0](x), atol=1e-5, rtol=0)
            causal = torch.ones(4, 4, dtype=torch.bool).tril()
            got = model.decoder_layers[0](x, mem, causal)[0]
            want = ref.decoder.layers[0](x, mem, tgt_mask=~causal)
            torch.testing.assert_close(got, want, atol=1e-5, rtol=0)


def test_decoder_does_not_see_the_future(model):
    src, tgt = tokens(2, 6, 11), tokens(2, 8, 13, seed=2)
    base = model(src, tgt)
    for t in range(8):
        changed = tgt.clone()
        changed[:, t] = (changed[:, t] % 12) + 1  # a different non-pad token
        assert not torch.equal(changed[:, t], tgt[:, t])
        out = model(src, changed)
        torch.testing.assert_close(out[:, :t], base[:, :t], atol=1e-6, rtol=0)
        assert (out[:, t:] - base[:, t:]).abs().max() > 1e-4


def test_source_padding_does_not_change_real_positions(model):
    src, tgt = tokens(1, 5, 11), tokens(1, 4, 13, seed=3)
    base = model(src, tgt)
    padded = torch.cat([src, torch.zeros(1, 3, dtype=torch.long)], dim=1)  # 3 pads at the end
    torch.testing.assert_close(model(padded, tgt), base, atol=1e-5, rtol=0)
    torch.testing.assert_close(model.encode(padded)[:, :5], model.encode(src), atol=1e-5, rtol=0)
    # a batch with different lengths gives each sequence the result it gets alone
    other = tokens(1, 8, 11, seed=4)
    batch = torch.cat([padded, other])
    out = model(batch, torch.cat([tgt, tgt]))
    torch.testing.assert_close(out[0], base[0], atol=1e-5, rtol=0)


def test_target_padding_keeps_real_positions(model):
    src, tgt = tokens(1, 5, 11), tokens(1, 4, 13, seed=5)
    base = model(src, tgt)
    padded = torch.cat([tgt, torch.zeros(1, 2, dtype=torch.long)], dim=1)
    torch.testing.assert_close(model(src, padded)[:, :4], base, atol=1e-5, rtol=0)


@pytest.mark.parametrize("return_attention", [False, True])
def test_kv_cache_matches_full_recompute(model, return_attention):
    src, tgt = tokens(2, 6, 11), tokens(2, 7, 13, seed=6)
    tgt[1, 5:] = 0  # target padding is remembered by the cache
    src[1, 4:] = 0
    src_mask = padding_mask(src, 0)
    with torch.no_grad():
        full = model(src, tgt)
        memory = model.encode(src)
        cache = KVCache(3)
        pieces = []
        for start, stop in ((0, 3), (3, 4), (4, 5), (5, 7)):  # a prompt, then one or more tokens at a time
            out = model.decode(tgt[:, start:stop], memory, src_mask, cache=cache, return_attention=return_attention)
            pieces.append(out[0] if return_attention else out)
            assert cache.length == stop
    torch.testing.assert_close(torch.cat(pieces, dim=1), full, atol=1e-5, rtol=0)
    assert cache.self_k[0].shape == (2, 4, 7, 4) and cache.cross_k[2].shape == (2, 4, 6, 4)


def test_kv_cache_reuses_cross_attention_keys(model):
    src, tgt = tokens(1, 6, 11), tokens(1, 3, 13)
    memory = model.encode(src)
    cache = model.new_cache()
    model.decode(tgt[:, :1], memory, cache=cache)
    k0 = cache.cross_k[0]
    model.decode(tgt[:, 1:2], memory, cache=cache)
    assert cache.cross_k[0] is k0


def test_tied_embeddings_share_one_matrix():
    model = Transformer(small_config(src_vocab_size=13, tie_embeddings=True))
    assert model.src_embed.weight is model.tgt_embed.weight is model.output_projection.weight
    untied = Transformer(small_config(src_vocab_size=13))
    n_tied = sum(p.numel() for p in model.parameters())
    n_untied = sum(p.numel() for p in untied.parameters())
    assert n_untied - n_tied == 2 * 13 * 16


def test_dropout_is_active_in_training_only():
    torch.manual_seed(0)
    model = Transformer(small_config(dropout=0.5))
    src, tgt = tokens(2, 6, 11), tokens(2, 5, 13)
    model.train()
    assert not torch.equal(model(src, tgt), model(src, tgt))
    model.eval()
    torch.testing.assert_close(model(src, tgt), model(src, tgt))
    model.train()
    out, _ = model(src, tgt, return_attention=True)  # explicit path trains too
    out.sum().backward()
    assert model.src_embed.weight.grad is not None


def test_blocks_validate_shapes():
    enc = EncoderBlock(8, 2, 16)
    dec = DecoderBlock(8, 2, 16)
    with pytest.raises(ValueError, match="d_model=8"):
        enc(torch.randn(1, 3, 6))
    with pytest.raises(ValueError, match="key must have last dimension d_model=8"):
        dec(torch.randn(1, 3, 8), torch.randn(1, 4, 5))


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        (dict(d_model=30, n_heads=4), ValueError, "d_model must be divisible by n_heads, got d_model=30 and n_heads=4"),
        (dict(d_model=9, n_heads=3), ValueError, "d_model must be even for sinusoidal positional encoding, got 9"),
        (dict(d_ff=0), ValueError, "d_ff must be a positive int, got 0"),
        (dict(n_encoder_layers=-1), ValueError, "n_encoder_layers must be a positive int"),
        (dict(n_heads=2.0), TypeError, "n_heads must be a positive int, got float"),
        (dict(tie_embeddings=True), ValueError, "src_vocab_size must equal tgt_vocab_size, got 11 and 13"),
        (dict(dropout=1.0), ValueError, r"dropout must be a number in \[0, 1\)"),
        (dict(pad_id=11), ValueError, "pad_id must be a valid token id < src_vocab_size=11"),
    ],
)
def test_config_validation(kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        small_config(**kwargs)


def test_input_validation(model):
    src, tgt = tokens(2, 6, 11), tokens(2, 5, 13)
    with pytest.raises(ValueError, match=r"src must have 2 dimensions \(B, T\) of token ids, got shape \(6,\)"):
        model(src[0], tgt)
    with pytest.raises(TypeError, match="src must hold token ids as torch.long, got dtype torch.float32"):
        model(src.float(), tgt)
    with pytest.raises(ValueError, match="tgt has length 40, beyond max_len=32"):
        model(src, tokens(2, 40, 13))
    with pytest.raises(ValueError, match=r"tgt must hold token ids in \[0, 13\), got min 1 and max 13"):
        model(src, torch.tensor([[1, 13, 2, 3, 4], [5, 6, 7, 8, 9]]))
    with pytest.raises(ValueError, match="same batch size, got 2 and 1"):
        model(src, tgt[:1])
    with pytest.raises(TypeError, match="src_mask must be a boolean keep-mask"):
        model(src, tgt, src_mask=torch.ones(2, 1, 1, 6))
    with pytest.raises(TypeError, match="config must be a TransformerConfig, got dict"):
        Transformer({"src_vocab_size": 3})
    memory = model.encode(src)
    with pytest.raises(ValueError, match="memory must have shape"):
        model.decode(tgt, memory[:, :, :8])
    cache = KVCache(3)
    model.decode(tgt[:, :30], memory, cache=cache)
    with pytest.raises(ValueError, match="after 5 cached tokens, beyond max_len=32"):
        model.decode(tokens(2, 28, 13), memory, cache=cache)
    with pytest.raises(ValueError, match=r"cache must have one entry per decoder layer \(3\), got 2"):
        model.decode(tgt, memory, cache=KVCache(2))


@pytest.mark.parametrize("norm_first", [False, True])
def test_kernel_switches_compute_the_same_function(norm_first):
    """fused_layer_norm and sdpa_attention change the speed, not the outputs or the gradients."""
    torch.manual_seed(0)
    base = TransformerConfig(29, 29, d_model=32, n_heads=4, d_ff=64, dropout=0.0, norm_first=norm_first)
    a = Transformer(base)
    b = Transformer(TransformerConfig(**{**base.__dict__, "fused_layer_norm": True, "sdpa_attention": False}))
    b.load_state_dict(a.state_dict())
    src = torch.tensor([[5, 6, 7, 0], [8, 9, 10, 11]])
    tgt = torch.tensor([[1, 7, 6, 5], [1, 11, 0, 0]])
    out_a, out_b = a(src, tgt), b(src, tgt)
    torch.testing.assert_close(out_a, out_b, atol=1e-5, rtol=1e-4)
    out_a.square().sum().backward()
    out_b.square().sum().backward()
    for (name, pa), pb in zip(a.named_parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(pa.grad, pb.grad, atol=1e-4, rtol=1e-3, msg=name)
