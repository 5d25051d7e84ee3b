"""Chapter 12: the power-law fit, compute counting and the shipped scaling benchmark."""

import math

import pytest
import torch
from torch import nn

from course_utils.gpt import DecoderOnly, DecoderOnlyConfig
from course_utils.runs.scaling import SCALING_RECIPE, load_scaling, size_recipe
from course_utils.scaling import (
    compute_optimal,
    fit_loss_surface,
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
    size = size_recipe({"d_model": 16, "n_layers": 1, "n_heads": 2})
    model = DecoderOnly(DecoderOnlyConfig(vocab_size=65, **size["model"]))
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
    lengths = record["lengths"]
    tokens = fit_power_law([r["tokens"] for r in lengths], [r["val_bits_per_char"] for r in lengths])
    assert math.isclose(tokens.exponent, record["tokens_exponent"], abs_tol=1e-3)
    assert {r["steps"] for r in record["lengths"]} == set(SCALING_RECIPE["length_steps"])


def test_predict_refuses_what_a_power_law_cannot_take():
    fit = fit_power_law([1.0, 2.0, 4.0], [3.0, 2.0, 1.5])
    for bad in (-1.0, 0.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="x must be a positive number"):
            fit.predict(bad)
    with pytest.raises(TypeError, match="x must be a positive number"):
        fit.predict("10")
    with pytest.raises(ValueError, match="x must hold positive numbers"):
        fit.predict(torch.tensor([1.0, -2.0]))
    assert fit.predict(torch.tensor([1, 2])).shape == (2,)


def test_loss_surface_recovers_known_exponents_and_widens_away_from_the_runs():
    g = torch.Generator().manual_seed(0)
    n = [1e3, 3e3, 1e4, 3e4, 1e5, 1e4, 1e4, 1e4]
    d = [1e6, 1e6, 1e6, 1e6, 1e6, 3e5, 3e6, 1e7]
    noise = torch.exp(0.01 * torch.randn(len(n), generator=g, dtype=torch.float64)).tolist()
    loss = [5.0 * a**-0.08 * b**-0.1 * e for a, b, e in zip(n, d, noise, strict=True)]
    fit = fit_loss_surface(n, d, loss)
    assert abs(fit.alpha_n - 0.08) < 0.02 and abs(fit.alpha_d - 0.1) < 0.02 and fit.n_points == 8
    near, far = fit.interval(1e4, 1e6), fit.interval(1e7, 1e9)
    assert near[0] < fit.predict(1e4, 1e6) < near[1]
    assert far[1] / far[0] > near[1] / near[0]  # extrapolation is less certain
    exact = fit_loss_surface(n, d, [5.0 * a**-0.08 * b**-0.1 for a, b in zip(n, d, strict=True)])
    assert math.isclose(exact.alpha_n, 0.08, rel_tol=1e-6) and math.isclose(exact.alpha_d, 0.1, rel_tol=1e-6)


def test_loss_surface_bad_input():
    with pytest.raises(ValueError, match="vary independently"):
        fit_loss_surface([1, 2, 4, 8], [1, 2, 4, 8], [4, 3, 2, 1])  # N and D on one line
    with pytest.raises(ValueError, match="at least 4 different runs"):
        fit_loss_surface([1, 2, 3], [1, 2, 3], [3, 2, 1])
    with pytest.raises(ValueError, match="same length"):
        fit_loss_surface([1, 2, 3, 4], [1, 2, 3, 4], [3, 2, 1])
    with pytest.raises(ValueError, match="loss must hold positive numbers"):
        fit_loss_surface([1, 2, 1, 2], [1, 1, 2, 2], [3, 2, 0, 1])
    with pytest.raises(TypeError, match="n must be a sequence"):
        fit_loss_surface("1234", [1, 1, 2, 2], [3, 2, 1, 1])
    fit = fit_loss_surface([1, 2, 1, 2, 4], [1, 1, 2, 2, 4], [3, 2.5, 2.6, 2.0, 1.5])
    with pytest.raises(ValueError, match="n must be a positive number"):
        fit.predict(-5, 10)
    with pytest.raises(ValueError, match="level must be"):
        fit.interval(5, 10, level=1.5)


def test_non_embedding_params_refuses_a_model_with_other_names():
    # a class that names its tables otherwise would have its embeddings counted into N silently
    with pytest.raises(ValueError, match="model must name its token table 'embedding'"):
        non_embedding_params(nn.Sequential(nn.Embedding(65, 8), nn.Linear(8, 65)))
