"""Chapter 12: the power-law fit, compute counting and the shipped scaling benchmark."""

import math

import pytest
import torch

from course_utils.runs.scaling import load_scaling
from course_utils.scaling import (
    SCALING_RECIPE,
    build_sized_lm,
    compute_optimal,
    fit_power_law,
    non_embedding_params,
    training_flops,
)


def test_fit_recovers_a_known_exponent():
    x = torch.logspace(3, 6, 8, dtype=torch.float64)
    fit = fit_power_law(x, 7.0 * x**-0.35)
    assert math.isclose(fit.exponent, 0.35, rel_tol=1e-9)
    assert math.isclose(fit.coefficient, 7.0, rel_tol=1e-9)
    assert fit.exponent_se < 1e-9


def test_fit_uncertainty_covers_the_truth_on_noisy_data():
    g = torch.Generator().manual_seed(0)
    hits = 0
    for _ in range(200):
        x = torch.logspace(3, 6, 6, dtype=torch.float64)
        y = 3.0 * x**-0.1 * torch.exp(0.02 * torch.randn(6, generator=g, dtype=torch.float64))
        fit = fit_power_law(x.tolist(), y.tolist())
        hits += abs(fit.exponent - 0.1) < 2 * fit.exponent_se
    assert 170 <= hits <= 200  # about 88 % for a t distribution with 4 degrees of freedom at 2 standard errors


def test_fit_bad_input():
    with pytest.raises(ValueError, match="positive"):
        fit_power_law([1, 2, 3], [1, 0, 2])
    with pytest.raises(ValueError, match="at least 3"):
        fit_power_law([1, 2], [1, 2])
    with pytest.raises(ValueError, match="same length"):
        fit_power_law([1, 2, 3], [1, 2])


def test_compute_optimal_arithmetic():
    # Chinchilla: 70e9 parameters, 1.4e12 tokens -> C = 6 N D = 5.88e23
    n, d = compute_optimal(6 * 70e9 * 1.4e12, 20.0)
    assert math.isclose(n, 70e9, rel_tol=1e-9) and math.isclose(d, 1.4e12, rel_tol=1e-9)
    assert training_flops(10, 5) == 300.0


def test_non_embedding_params_counts_the_blocks():
    model = build_sized_lm(65, {"d_model": 16, "n_layers": 1, "n_heads": 2})
    d = 16
    # attention 4 (d d + d), FFN d 4d + 4d + 4d d + d, two LayerNorms of 2d, final LayerNorm 2d
    assert non_embedding_params(model) == 4 * (d * d + d) + (8 * d * d + 5 * d) + 4 * d + 2 * d


def test_non_embedding_params_skips_a_learned_position_table():
    # the same blocks with a learned table (max_len x d parameters more) have the same non-embedding count
    from course_utils.gpt import DecoderOnly, DecoderOnlyConfig

    d, max_len = 16, 8
    blocks = 4 * (d * d + d) + (8 * d * d + 5 * d) + 4 * d + 2 * d
    for positional in ("learned", "t5", "sinusoidal"):
        model = DecoderOnly(DecoderOnlyConfig(vocab_size=65, d_model=d, n_heads=2, d_ff=4 * d, n_layers=1,
                                              max_len=max_len, positional=positional))
        assert non_embedding_params(model) == blocks, positional
    learned = DecoderOnly(DecoderOnlyConfig(vocab_size=65, d_model=d, n_heads=2, d_ff=4 * d, n_layers=1,
                                            max_len=max_len, positional="learned"))
    assert sum(p.numel() for n, p in learned.named_parameters() if n.startswith("positional_scheme.")) == max_len * d


def test_shipped_asset_matches_the_recipe():
    record = load_scaling()
    assert record["recipe"] == SCALING_RECIPE
    assert len(record["sizes"]) >= 5
    params = [r["params"] for r in record["sizes"]]
    assert params == sorted(params)
    fit = fit_power_law(params, [r["val_bits_per_char"] for r in record["sizes"]])
    assert math.isclose(fit.exponent, record["exponent"], abs_tol=1e-3)
