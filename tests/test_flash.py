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


def test_online_update_keeps_a_fully_masked_row_at_zero_without_nan():
    m, l, acc = torch.full((2,), float("-inf")), torch.zeros(2), torch.zeros(2, 3)
    s = torch.tensor([[float("-inf")] * 4, [0.5, -1.0, float("-inf"), 2.0]])
    v = torch.randn(4, 3, generator=torch.Generator().manual_seed(0))
    m, l, acc = online_softmax_update(m, l, acc, s, v)
    assert m[0] == float("-inf") and l[0] == 0 and (acc[0] == 0).all()
    assert torch.isfinite(l).all() and torch.isfinite(acc).all()
    s2 = torch.randn(2, 4, generator=torch.Generator().manual_seed(1))
    m, l, acc = online_softmax_update(m, l, acc, s2, v)
    torch.testing.assert_close(acc[0] / l[0], torch.softmax(s2[0], -1) @ v)


@pytest.mark.parametrize("T,block,causal,want", [(2048, 256, True, (36, 64)), (4096, 256, True, (136, 256)),
                                                 (100, 7, False, (225, 225)), (1, 4, True, (1, 1))])
def test_tile_counts(T, block, causal, want):
    from course_utils.flash import tile_counts

    assert tile_counts(T, block, causal) == want


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("T,chunk", [(1, 4), (37, 8), (64, 64), (100, 7)])
def test_linear_attention_equals_its_quadratic_form(causal, T, chunk):
    from course_utils.flash import elu_feature_map, linear_attention

    g = torch.Generator().manual_seed(T)
    q, k = (torch.randn(2, 3, T, 8, generator=g, dtype=torch.float64) for _ in range(2))
    v = torch.randn(2, 3, T, 5, generator=g, dtype=torch.float64)
    a = elu_feature_map(q) @ elu_feature_map(k).transpose(-2, -1)
    if causal:
        a = a.tril()
    want = a @ v / a.sum(-1, keepdim=True)
    torch.testing.assert_close(linear_attention(q, k, v, causal, chunk=chunk), want, atol=1e-12, rtol=0)


def test_linear_attention_memory_grows_linearly():
    from course_utils.flash import linear_attention

    T = 4096
    q = torch.randn(1, 1, T, 16)
    peak = peak_memory_bytes(lambda: linear_attention(q, q, q, causal=True))
    assert peak < T * T * 4 / 16


def test_interleaved_times_runs_in_turn_with_a_warm_up():
    from course_utils.flash import interleaved_times, median

    order = []
    times = interleaved_times({"a": lambda: order.append("a"), "b": lambda: order.append("b")}, repeats=3)
    assert order == ["a", "b"] * 4 and len(times["a"]) == len(times["b"]) == 3
    assert median([3.0, 1.0, 2.0]) == 2.0
