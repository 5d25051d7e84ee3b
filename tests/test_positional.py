"""Tests for course_utils.positional (Chapter 2) against hand values, identities and invariants."""

from __future__ import annotations

import math

import pytest
import torch

from course_utils.positional import (
    LearnedPositionalEncoding,
    SinusoidalPositionalEncoding,
    alibi_bias,
    alibi_slopes,
    apply_rope,
    pe_frequencies,
    rope_tables,
    shift_rotation,
    sinusoidal_encoding,
)


# ---------------------------------------------------------------- sinusoidal
def test_sinusoidal_hand_values():
    pe = sinusoidal_encoding(50, 64)
    assert pe.shape == (50, 64)
    torch.testing.assert_close(pe[0, :4], torch.tensor([0.0, 1.0, 0.0, 1.0]))
    # by hand: pair 0 has w=1, pair 1 has w=10000^(-2/64); position 10
    w1 = 10000 ** (-2 / 64)
    hand = torch.tensor([math.sin(10), math.cos(10), math.sin(10 * w1), math.cos(10 * w1)])
    torch.testing.assert_close(pe[10, :4], hand, atol=1e-6, rtol=0)
    torch.testing.assert_close(pe[10, :4], torch.tensor([-0.544, -0.839, 0.938, 0.348]), atol=5e-4, rtol=0)


def test_sinusoidal_every_entry_against_loop():
    T, d_model = 7, 10
    pe = sinusoidal_encoding(T, d_model)
    for p in range(T):
        for i in range(d_model // 2):
            angle = p / 10000 ** (2 * i / d_model)
            assert abs(pe[p, 2 * i].item() - math.sin(angle)) < 1e-6
            assert abs(pe[p, 2 * i + 1].item() - math.cos(angle)) < 1e-6


def test_sinusoidal_pairs_have_unit_norm():
    pe = sinusoidal_encoding(30, 16)
    pair_norms = pe.view(30, 8, 2).pow(2).sum(-1)
    torch.testing.assert_close(pair_norms, torch.ones(30, 8))


def test_frequencies_match_table():
    w = pe_frequencies(8)
    want = torch.tensor([1.0, 10000**-0.25, 10000**-0.5, 10000**-0.75], dtype=torch.float64)
    torch.testing.assert_close(w, want)


@pytest.mark.parametrize("d_model", [2, 16, 64])
def test_shift_property_all_p_k(d_model):
    T = 200
    p = torch.arange(T, dtype=torch.float64).unsqueeze(1)
    pe = torch.zeros(T, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(p * pe_frequencies(d_model))
    pe[:, 1::2] = torch.cos(p * pe_frequencies(d_model))
    for k in range(0, 100, 7):
        R = shift_rotation(k, d_model)
        shifted = pe[:100] @ R.T  # row p -> R(k) PE[p]
        torch.testing.assert_close(shifted, pe[k : k + 100], atol=1e-10, rtol=0)


def test_shift_rotation_is_orthogonal_and_composes():
    R3, R4, R7 = shift_rotation(3, 16), shift_rotation(4, 16), shift_rotation(7, 16)
    torch.testing.assert_close(R3 @ R3.T, torch.eye(16, dtype=torch.float64))
    torch.testing.assert_close(R3 @ R4, R7)
    torch.testing.assert_close(shift_rotation(-3, 16), R3.T)
    # block-diagonal: nothing outside the 2x2 blocks
    blocks = torch.block_diag(*[torch.ones(2, 2)] * 8).bool()
    assert (R7[~blocks] == 0).all()


def test_dot_product_depends_only_on_offset():
    pe = sinusoidal_encoding(120, 32).double()
    for k in (0, 1, 5, 20):
        dots = (pe[: 100] * pe[k : k + 100]).sum(-1)
        w = pe_frequencies(32)
        want = torch.cos(k * w).sum()  # sum_i sin(a)sin(b) + cos(a)cos(b) = cos(b - a)
        assert (dots - want).abs().max() < 1e-4


def test_sinusoidal_module_adds_table():
    m = SinusoidalPositionalEncoding(8, max_len=20)
    x = torch.zeros(2, 5, 8)
    torch.testing.assert_close(m(x), sinusoidal_encoding(5, 8).expand(2, 5, 8))
    torch.testing.assert_close(m(x, offset=3)[0], sinusoidal_encoding(8, 8)[3:8])


def test_sinusoidal_errors():
    with pytest.raises(ValueError, match="d_model must be even for sinusoidal PE, got 63"):
        sinusoidal_encoding(10, 63)
    with pytest.raises(ValueError, match="T must be a positive int, got 0"):
        sinusoidal_encoding(0, 8)
    with pytest.raises(ValueError, match="exceeds max_len=4"):
        SinusoidalPositionalEncoding(8, max_len=4)(torch.zeros(1, 5, 8))
    with pytest.raises(TypeError, match="k must be an int"):
        shift_rotation(1.5, 8)
    with pytest.raises(ValueError, match="d_model must be even"):
        shift_rotation(1, 7)


# ---------------------------------------------------------------- learned
def test_learned_adds_rows_and_trains_only_seen_rows():
    g = torch.Generator().manual_seed(0)
    m = LearnedPositionalEncoding(10, 4, generator=g)
    x = torch.zeros(3, 6, 4)
    out = m(x)
    torch.testing.assert_close(out[1], m.table.weight[:6])
    out.sum().backward()
    grad = m.table.weight.grad
    assert (grad[:6] != 0).all() and (grad[6:] == 0).all()
    torch.testing.assert_close(m(torch.zeros(1, 2, 4), offset=8)[0], m.table.weight[8:10])


def test_learned_init_is_seeded_and_scaled():
    a = LearnedPositionalEncoding(50, 64, generator=torch.Generator().manual_seed(1)).table.weight
    b = LearnedPositionalEncoding(50, 64, generator=torch.Generator().manual_seed(1)).table.weight
    torch.testing.assert_close(a, b)
    assert 0.015 < a.std().item() < 0.025


def test_learned_errors():
    m = LearnedPositionalEncoding(8, 4)
    with pytest.raises(ValueError, match=r"outside the learned table.*max_len=8"):
        m(torch.zeros(1, 9, 4))
    with pytest.raises(ValueError, match=r"max_len=8"):
        m(torch.zeros(1, 4, 4), offset=5)
    with pytest.raises(ValueError, match="last dimension d_model=4"):
        m(torch.zeros(1, 3, 5))
    with pytest.raises(ValueError, match="max_len must be a positive int, got 0"):
        LearnedPositionalEncoding(0, 4)
    with pytest.raises(ValueError, match="x must have 3 dimensions"):
        m(torch.zeros(3, 4))


# ---------------------------------------------------------------- RoPE
def _rope_by_complex(x: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Independent reference: pairs as complex numbers times e^{i m w}."""
    T, d_k = x.shape[-2:]
    w = base ** (-torch.arange(0, d_k, 2, dtype=torch.float64) / d_k)
    rot = torch.polar(torch.ones(T, d_k // 2, dtype=torch.float64), torch.arange(T).unsqueeze(1) * w)
    z = torch.view_as_complex(x.double().reshape(*x.shape[:-1], d_k // 2, 2).contiguous())
    return torch.view_as_real(z * rot).reshape(x.shape).to(x.dtype)


def test_rope_matches_complex_reference():
    x = torch.randn(2, 3, 11, 8, generator=torch.Generator().manual_seed(0))
    cos, sin = rope_tables(11, 8)
    torch.testing.assert_close(apply_rope(x, cos, sin), _rope_by_complex(x), atol=1e-5, rtol=1e-5)


def test_rope_keeps_norms_and_position_zero():
    x = torch.randn(5, 6, generator=torch.Generator().manual_seed(1))
    cos, sin = rope_tables(5, 6)
    y = apply_rope(x, cos, sin)
    torch.testing.assert_close(y.norm(dim=-1), x.norm(dim=-1))
    torch.testing.assert_close(y[0], x[0])


def test_rope_score_depends_only_on_offset():
    g = torch.Generator().manual_seed(2)
    T, d_k = 40, 16
    q, k = torch.randn(d_k, generator=g), torch.randn(d_k, generator=g)
    cos, sin = rope_tables(T, d_k)
    Q = apply_rope(q.expand(T, d_k), cos, sin)  # the same query at every position m
    K = apply_rope(k.expand(T, d_k), cos, sin)
    S = Q @ K.T  # (T, T): S[m, n] = q_m . k_n
    for offset in range(-T + 1, T):
        diag = S.diagonal(offset)
        assert (diag - diag[0]).abs().max() < 1e-4


def test_rope_offset_equals_slice():
    x = torch.randn(1, 4, 8, generator=torch.Generator().manual_seed(3))
    cos, sin = rope_tables(10, 8)
    full = apply_rope(torch.cat([torch.zeros(1, 3, 8), x], 1), cos, sin)
    torch.testing.assert_close(apply_rope(x, cos, sin, offset=3), full[:, 3:])


def test_rope_errors():
    with pytest.raises(ValueError, match="d_k must be even for RoPE.*got 7"):
        rope_tables(4, 7)
    cos, sin = rope_tables(4, 8)
    with pytest.raises(ValueError, match="exceed the RoPE tables' max_len=4"):
        apply_rope(torch.zeros(5, 8), cos, sin)
    with pytest.raises(ValueError, match="even last dimension d_k"):
        apply_rope(torch.zeros(4, 7), cos, sin)
    with pytest.raises(ValueError, match=r"d_k/2=3"):
        apply_rope(torch.zeros(4, 6), cos, sin)
    with pytest.raises(ValueError, match="offset must be a non-negative int"):
        apply_rope(torch.zeros(2, 8), cos, sin, offset=-1)


# ---------------------------------------------------------------- ALiBi
def test_alibi_slopes_eight_heads():
    torch.testing.assert_close(alibi_slopes(8), torch.tensor([1 / 2 ** h for h in range(1, 9)]))


def test_alibi_slopes_other_counts():
    torch.testing.assert_close(alibi_slopes(1), torch.tensor([1 / 256]))
    torch.testing.assert_close(alibi_slopes(4), torch.tensor([1 / 4, 1 / 16, 1 / 64, 1 / 256]))
    s16 = alibi_slopes(16)
    torch.testing.assert_close(s16, torch.tensor([2 ** (-h / 2) for h in range(1, 17)]))
    # not a power of two: the 8 slopes of n=8, then every other slope of n=16
    torch.testing.assert_close(alibi_slopes(12), torch.cat([alibi_slopes(8), s16[0::2][:4]]))


def test_alibi_bias_values():
    b = alibi_bias(8, 4)
    assert b.shape == (1, 8, 4, 4)
    for h, m in enumerate(alibi_slopes(8).tolist()):
        for i in range(4):
            for j in range(4):
                assert b[0, h, i, j].item() == pytest.approx(-m * abs(i - j))
    # queries aligned to the end of the keys (decoding with a cache)
    torch.testing.assert_close(alibi_bias(2, 1, 5)[0, :, 0], alibi_bias(2, 5)[0, :, 4])


def test_alibi_softmax_shift_invariance_with_causal_mask():
    # Press et al. add m*j instead of -m*(i-j): per row they differ by a constant, so softmax agrees
    T, h = 6, 4
    scores = torch.randn(1, h, T, T, generator=torch.Generator().manual_seed(4))
    causal = torch.ones(T, T).tril().bool()
    a = (scores + alibi_bias(h, T)).masked_fill(~causal, float("-inf")).softmax(-1)
    m = alibi_slopes(h).view(1, h, 1, 1)
    b = (scores + m * torch.arange(T)).masked_fill(~causal, float("-inf")).softmax(-1)
    torch.testing.assert_close(a, b)


def test_alibi_errors():
    with pytest.raises(ValueError, match="n_heads must be a positive int, got 0"):
        alibi_slopes(0)
    with pytest.raises(TypeError, match="n_heads must be a positive int"):
        alibi_slopes(2.0)
    with pytest.raises(ValueError, match="T_q must be <= T_k"):
        alibi_bias(2, 5, 3)


# ---------------------------------------------------------------- Chapter 9: stretching RoPE (issue 37)
def test_rope_scale_is_position_interpolation():
    from course_utils.positional import rope_tables

    cos, sin = rope_tables(9, 8, scale=4.0, dtype=torch.float64)
    ref_cos, ref_sin = rope_tables(40, 8, dtype=torch.float64)  # position 4 p at scale 1 = position p at 4
    scaled = rope_tables(40, 8, dtype=torch.float64, scale=4.0)
    torch.testing.assert_close(scaled[0][::4], ref_cos[:10])
    torch.testing.assert_close(cos, scaled[0][:9])
    torch.testing.assert_close(sin, scaled[1][:9])


def test_ntk_base_slows_the_slowest_pair_by_the_factor_and_keeps_the_fastest():
    from course_utils.positional import ntk_base, pe_frequencies

    for d_k, factor in ((16, 4.0), (64, 2.5)):
        old, new = pe_frequencies(d_k), pe_frequencies(d_k, ntk_base(d_k, factor))
        assert abs(old[-1].item() / new[-1].item() - factor) < 1e-9
        assert old[0].item() == new[0].item() == 1.0


def test_stretch_rope_replaces_tables_and_leaves_the_model_alone():
    from course_utils.model import Transformer, TransformerConfig
    from course_utils.positional import ntk_base, rope_tables, stretch_rope

    torch.manual_seed(0)
    model = Transformer(TransformerConfig(29, 29, d_model=16, n_heads=2, d_ff=16, n_encoder_layers=1,
                                          n_decoder_layers=1, positional="rope", max_len=20))
    original = model.positional_scheme.cos.clone()
    pi, ntk = stretch_rope(model, "interpolation", 4.0), stretch_rope(model, "ntk", 4.0)
    torch.testing.assert_close(pi.positional_scheme.cos, rope_tables(20, 8, scale=4.0)[0])
    torch.testing.assert_close(ntk.positional_scheme.sin, rope_tables(20, 8, base=ntk_base(8, 4.0))[1])
    assert torch.equal(model.positional_scheme.cos, original)
    same = stretch_rope(model, "none", 4.0)
    assert torch.equal(same.positional_scheme.cos, original)
