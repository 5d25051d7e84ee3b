"""Tiled attention with the online softmax (Chapter 11) against plain attention and PyTorch."""

import pytest
import torch
import torch.nn.functional as F

from course_utils.flash import online_softmax_update, peak_memory_bytes, plain_attention, tiled_attention


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("T,block", [(1, 4), (37, 8), (64, 64), (100, 7)])
def test_tiled_equals_sdpa_float64(causal, T, block):
    g = torch.Generator().manual_seed(T)
    q, k, v = (torch.randn(2, 3, T, 16, generator=g, dtype=torch.float64) for _ in range(3))
    want = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    torch.testing.assert_close(tiled_attention(q, k, v, causal, block=block), want, atol=1e-12, rtol=0)
    torch.testing.assert_close(plain_attention(q, k, v, causal), want, atol=1e-12, rtol=0)


def test_tiled_cross_attention_different_lengths_and_dv():
    g = torch.Generator().manual_seed(0)
    q = torch.randn(5, 8, generator=g, dtype=torch.float64)
    k = torch.randn(13, 8, generator=g, dtype=torch.float64)
    v = torch.randn(13, 3, generator=g, dtype=torch.float64)
    torch.testing.assert_close(tiled_attention(q, k, v, block=4), F.scaled_dot_product_attention(q, k, v),
                               atol=1e-12, rtol=0)


def test_large_scores_do_not_overflow():
    q = torch.full((1, 4, 8), 30.0, dtype=torch.float64)
    k = torch.full((1, 12, 8), 30.0, dtype=torch.float64)
    v = torch.randn(1, 12, 2, dtype=torch.float64)
    out = tiled_attention(q, k, v, block=5)
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v), atol=1e-12, rtol=0)


def test_online_update_over_two_tiles_equals_softmax_of_all():
    g = torch.Generator().manual_seed(3)
    s = torch.randn(4, 10, generator=g, dtype=torch.float64)
    v = torch.randn(10, 3, generator=g, dtype=torch.float64)
    m, l, acc = torch.full((4,), float("-inf"), dtype=torch.float64), torch.zeros(4, dtype=torch.float64), \
        torch.zeros(4, 3, dtype=torch.float64)
    m, l, acc = online_softmax_update(m, l, acc, s[:, :6], v[:6])
    m, l, acc = online_softmax_update(m, l, acc, s[:, 6:], v[6:])
    torch.testing.assert_close(acc / l[:, None], torch.softmax(s, -1) @ v)
    torch.testing.assert_close(m, s.amax(-1))
    torch.testing.assert_close(l, torch.exp(s - s.amax(-1, keepdim=True)).sum(-1))


def test_causal_needs_square():
    x = torch.randn(3, 4)
    with pytest.raises(ValueError, match="T_q == T_k"):
        tiled_attention(x, torch.randn(5, 4), torch.randn(5, 4), causal=True)
    with pytest.raises(ValueError, match="block"):
        tiled_attention(x, x, x, block=0)


def test_peak_memory_sees_the_t_by_t_matrix_and_tiles_avoid_it():
    T = 512
    q, k, v = (torch.randn(1, 1, T, 32) for _ in range(3))
    plain = peak_memory_bytes(lambda: plain_attention(q, k, v, causal=True))
    tiled = peak_memory_bytes(lambda: tiled_attention(q, k, v, causal=True, block=64))
    assert plain >= 2 * T * T * 4  # scores and weights are both T x T
    assert tiled < T * T * 4 / 4
    assert peak_memory_bytes(lambda: torch.ones(1000)) == 4000
    assert peak_memory_bytes(lambda: torch.ones(1000)) == peak_memory_bytes(lambda: torch.ones(1000))
