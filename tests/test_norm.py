"""course_utils.norm against PyTorch's own modules, hand calculations and invariants."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from course_utils.norm import LayerNorm, SublayerConnection, masked_feature_stats, residual_sublayer


@pytest.mark.parametrize("shape", [(2, 3, 8), (5, 16), (1, 1, 4), (2, 2, 3, 6), (7,)])
@pytest.mark.parametrize("eps", [1e-5, 1e-2])
def test_layer_norm_matches_torch_values_and_gradients(shape, eps):
    g = torch.Generator().manual_seed(0)
    d = shape[-1]
    ours, ref = LayerNorm(d, eps=eps).double(), nn.LayerNorm(d, eps=eps).double()
    with torch.no_grad():
        ours.gamma.copy_(torch.rand(d, generator=g) + 0.5)
        ours.beta.copy_(torch.randn(d, generator=g))
        ref.weight.copy_(ours.gamma)
        ref.bias.copy_(ours.beta)
    x = (torch.randn(*shape, generator=g, dtype=torch.float64) * 3 + 1).requires_grad_()
    x_ref = x.detach().clone().requires_grad_()
    upstream = torch.randn(*shape, generator=g, dtype=torch.float64)
    y, y_ref = ours(x), ref(x_ref)
    torch.testing.assert_close(y, y_ref)
    (y * upstream).sum().backward()
    (y_ref * upstream).sum().backward()
    torch.testing.assert_close(x.grad, x_ref.grad)
    torch.testing.assert_close(ours.gamma.grad, ref.weight.grad)
    torch.testing.assert_close(ours.beta.grad, ref.bias.grad)


def test_layer_norm_tokens_have_mean_zero_and_std_one():
    x = torch.randn(4, 10, 32, generator=torch.Generator().manual_seed(1)) * 5 + 3
    y = LayerNorm(32)(x)
    torch.testing.assert_close(y.mean(-1), torch.zeros(4, 10), atol=1e-5, rtol=0)
    torch.testing.assert_close(y.std(-1, unbiased=False), torch.ones(4, 10), atol=1e-4, rtol=0)


def test_layer_norm_hand_calculation():
    x = torch.tensor([[1.0, 3.0]])  # mean 2, biased var 1
    torch.testing.assert_close(LayerNorm(2, eps=1e-5)(x), torch.tensor([[-1.0, 1.0]]) / (1 + 1e-5) ** 0.5)


def test_layer_norm_does_not_mix_tokens():
    g = torch.Generator().manual_seed(2)
    ln = LayerNorm(8)
    x = torch.randn(3, 5, 8, generator=g)
    torch.testing.assert_close(ln(x)[1, 2], ln(x[1:2, 2:3])[0, 0], atol=0, rtol=0)


def test_layer_norm_bad_input():
    with pytest.raises(TypeError, match="d_model must be a positive int, got float"):
        LayerNorm(8.0)
    with pytest.raises(ValueError, match="d_model must be a positive int, got 0"):
        LayerNorm(0)
    with pytest.raises(ValueError, match="eps must be a positive number, got -1"):
        LayerNorm(8, eps=-1)
    with pytest.raises(ValueError, match=r"x must have last dimension d_model=8, got shape \(2, 7\)"):
        LayerNorm(8)(torch.zeros(2, 7))
    with pytest.raises(TypeError, match="x must be a torch.Tensor, got list"):
        LayerNorm(8)([1.0] * 8)


def test_residual_sublayer_post_and_pre():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(2, 4, 6, generator=g)
    norm, lin = nn.LayerNorm(6), nn.Linear(6, 6)
    torch.testing.assert_close(residual_sublayer(x, lin, norm, "post"), norm(x + lin(x)))
    torch.testing.assert_close(residual_sublayer(x, lin, norm, "pre"), x + lin(norm(x)))
    zero = lambda t: torch.zeros_like(t)  # noqa: E731
    torch.testing.assert_close(residual_sublayer(x, zero, norm, "pre"), x)  # pre-LN: a clean identity path
    with pytest.raises(ValueError, match="placement must be 'post' or 'pre', got 'middle'"):
        residual_sublayer(x, lin, norm, "middle")


@pytest.mark.parametrize("placement", ["post", "pre"])
def test_sublayer_connection_uses_its_layer_norm(placement):
    x = torch.randn(2, 3, 8, generator=torch.Generator().manual_seed(4))
    block = SublayerConnection(8, placement)
    lin = nn.Linear(8, 8)
    torch.testing.assert_close(block(x, lin), residual_sublayer(x, lin, block.norm, placement))
    with pytest.raises(ValueError, match="placement must be 'post' or 'pre', got 'PRE'"):
        SublayerConnection(8, "PRE")


def test_masked_feature_stats_against_a_loop():
    g = torch.Generator().manual_seed(5)
    x = torch.randn(3, 5, 4, generator=g)
    lengths = [5, 2, 3]
    keep = torch.arange(5)[None] < torch.tensor(lengths)[:, None]
    rows = torch.cat([x[b, :n] for b, n in enumerate(lengths)])  # (10, 4) real tokens only
    mean, var = masked_feature_stats(x, keep)
    torch.testing.assert_close(mean, rows.mean(0))
    torch.testing.assert_close(var, ((rows - rows.mean(0)) ** 2).mean(0))


def test_masked_feature_stats_bad_input():
    x = torch.zeros(2, 3, 4)
    with pytest.raises(ValueError, match=r"x must have 3 dimensions \(B, T, d_model\), got shape \(3, 4\)"):
        masked_feature_stats(x[0], torch.ones(2, 3, dtype=torch.bool))
    with pytest.raises(TypeError, match="keep must be a boolean tensor"):
        masked_feature_stats(x, torch.ones(2, 3))
    with pytest.raises(ValueError, match=r"keep must have shape \(B, T\) = \(2, 3\), got \(3, 2\)"):
        masked_feature_stats(x, torch.ones(3, 2, dtype=torch.bool))
    with pytest.raises(ValueError, match="keep has no True entry"):
        masked_feature_stats(x, torch.zeros(2, 3, dtype=torch.bool))
