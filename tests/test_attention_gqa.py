"""Grouped-query and multi-query attention as a switch of MultiHeadAttention (Chapter 11)."""

import pytest
import torch
import torch.nn.functional as F

from course_utils.attention import MultiHeadAttention
from course_utils.masks import causal_mask


def test_default_n_kv_heads_is_todays_mha_exactly():
    torch.manual_seed(0)
    a = MultiHeadAttention(32, 4)
    torch.manual_seed(0)
    b = MultiHeadAttention(32, 4, n_kv_heads=4)
    assert a.n_kv_heads == 4
    assert list(a.state_dict()) == list(b.state_dict())
    for (name, p), (_, q) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert p.shape == q.shape and torch.equal(p, q), name
    assert a.W_K.weight.shape == (32, 32)


@pytest.mark.parametrize("n_kv", [1, 2, 4])
@pytest.mark.parametrize("need_weights", [True, False])
def test_gqa_equals_sdpa_enable_gqa_and_repeated_heads_float64(n_kv, need_weights):
    torch.manual_seed(1)
    mha = MultiHeadAttention(32, 4, n_kv_heads=n_kv).double()
    assert mha.W_K.weight.shape == (n_kv * 8, 32) and mha.W_V.weight.shape == (n_kv * 8, 32)
    x = torch.randn(2, 7, 32, dtype=torch.float64)
    mask = causal_mask(7)
    out, w = mha(x, mask=mask, need_weights=need_weights)
    B, T = 2, 7
    q = mha.W_Q(x).view(B, T, 4, 8).transpose(1, 2)  # (B, h, T, d_k)
    k = mha.W_K(x).view(B, T, n_kv, 8).transpose(1, 2)  # (B, n_kv, T, d_k)
    v = mha.W_V(x).view(B, T, n_kv, 8).transpose(1, 2)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)  # (B, h, T, d_k)
    ref = mha.W_O(ref.transpose(1, 2).reshape(B, T, 32))
    torch.testing.assert_close(out, ref, atol=1e-12, rtol=0)
    rep = F.scaled_dot_product_attention(q, k.repeat_interleave(4 // n_kv, 1), v.repeat_interleave(4 // n_kv, 1),
                                         attn_mask=mask)
    torch.testing.assert_close(out, mha.W_O(rep.transpose(1, 2).reshape(B, T, 32)), atol=1e-12, rtol=0)
    assert (w is None) != need_weights
    if need_weights:
        assert w.shape == (2, 4, 7, 7)


def test_gqa_kv_heads_must_divide_heads():
    with pytest.raises(ValueError, match="n_kv_heads must divide n_heads"):
        MultiHeadAttention(32, 4, n_kv_heads=3)
    with pytest.raises(ValueError, match="n_kv_heads"):
        MultiHeadAttention(32, 4, n_kv_heads=0)


def test_mqa_has_fewer_parameters():
    n = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert n(MultiHeadAttention(32, 4)) - n(MultiHeadAttention(32, 4, n_kv_heads=1)) == 2 * (32 * 24 + 24)
