"""Chapter 3 checkers: each passes the reference, names realistic mistakes, and reports a stub as not done."""

from __future__ import annotations

import functools

import pytest
import torch
from conftest import fails_with
from torch import nn

from course_utils.exercises import ch03_norm
from course_utils.exercises.ch03_norm import (
    check_masked_stats,
    check_residual_sublayer,
    check_rms_norm,
)


# ---------------------------------------------------------------- 3.1
def rms_ref(x, gamma, eps):
    return gamma * x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def rms_by_sum(x, gamma, eps):
    d = x.shape[-1]
    return gamma * x * torch.rsqrt((x * x).sum(-1, keepdim=True) / d + eps)


def test_rms_norm_passes_reference_and_other_right_answers():
    assert check_rms_norm(rms_ref).passed
    assert check_rms_norm(lambda x, g, eps: torch.nn.functional.rms_norm(x, x.shape[-1:], g, eps)).passed
    assert check_rms_norm(rms_by_sum).passed


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda x, g, eps: torch.nn.functional.layer_norm(x, x.shape[-1:], g, None, eps), "does not subtract the mean"),
        (lambda x, g, eps: g * x / (x.pow(2).mean(-1, keepdim=True).sqrt() + eps), "eps inside the sqrt"),
        (lambda x, g, eps: g * torch.nn.functional.normalize(x, dim=-1), "not their sum"),
        (lambda x, g, eps: rms_ref(x, torch.ones_like(g), eps), "forget gamma"),
        (lambda x, g, eps: g * x / (x.pow(2).mean(0, keepdim=True) + eps).sqrt(), "not over the batch (dim=0)"),
        (lambda x, g, eps: g * x / (x.var(-1, keepdim=True, unbiased=False) + eps).sqrt(), "standard deviation"),
        (lambda x, g, eps: rms_ref(x, g, eps) * 1.01, "largest difference"),
    ],
)
def test_rms_norm_names_mistakes(wrong, hint):
    fails_with(check_rms_norm(wrong), hint)


def test_rms_norm_crash_is_readable():
    def crashes(x, g, eps):
        return x @ torch.ones(3)

    fails_with(check_rms_norm(crashes), "my_rms_norm raised RuntimeError")


# ---------------------------------------------------------------- 3.2
def sublayer_ref(x, sublayer, norm, placement):
    return norm(x + sublayer(x)) if placement == "post" else x + sublayer(norm(x))


def test_residual_sublayer_passes_reference():
    assert check_residual_sublayer(sublayer_ref).passed
    assert check_residual_sublayer(ch03_norm.residual_sublayer).passed


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda x, f, n, p: sublayer_ref(x, f, n, "pre" if p == "post" else "post"), "You returned the pre-LN result"),
        (lambda x, f, n, p: n(f(x)) if p == "post" else f(n(x)), "forget the residual"),
        (lambda x, f, n, p: x + n(f(x)) if p == "post" else x + f(n(x)), "normalises the sum"),
        (lambda x, f, n, p: n(x + f(x)) if p == "post" else n(x) + f(n(x)), "adds the raw x back"),
        (lambda x, f, n, p: n(x + f(x)) if p == "post" else n(x + f(n(x))), "no norm after the sum"),
    ],
)
def test_residual_sublayer_names_mistakes(wrong, hint):
    fails_with(check_residual_sublayer(wrong), hint)


# ---------------------------------------------------------------- 3.4
def stats_ref(x, keep):
    tokens = x[keep]
    return tokens.mean(0), tokens.var(0, unbiased=False)


def test_masked_stats_passes_reference():
    assert check_masked_stats(stats_ref).passed


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda x, k: (x.reshape(-1, x.shape[-1]).mean(0), x.reshape(-1, x.shape[-1]).var(0, unbiased=False)),
         "includes the pad positions"),
        (lambda x, k: ((x * k[..., None]).sum((0, 1)) / (x.shape[0] * x.shape[1]), stats_ref(x, k)[1]),
         "not by B * T"),
        (lambda x, k: (stats_ref(x, k)[0], x.reshape(-1, x.shape[-1]).var(0, unbiased=False)),
         "variance includes the pad"),
        (lambda x, k: (stats_ref(x, k)[0], x[k].var(0)), "biased variance"),
        (lambda x, k: (x[k].mean(-1), x[k].var(-1)), "should have shape"),
        (lambda x, k: stats_ref(x, k)[0], "should return a pair"),
    ],
)
def test_masked_stats_names_mistakes(wrong, hint):
    fails_with(check_masked_stats(wrong), hint)


# ---------------------------------------------------------------- 3.3 (experiment)
@functools.cache  # a seeded run: its tests and the mistakes table share it
def deep_stack(residual, seed, *, normalise=True, last=True, zero_grad=True, honour_flag=True, lr=0.005):
    torch.manual_seed(seed)
    layers = torch.nn.ModuleList(torch.nn.Linear(32, 32) for _ in range(16))
    head = torch.nn.Linear(32, 1)
    g = torch.Generator().manual_seed(seed)
    X, w = torch.randn(256, 32, generator=g), torch.randn(32, 1, generator=g)
    Y = torch.sin(X @ w / 2)
    opt = torch.optim.SGD([*layers.parameters(), *head.parameters()], lr=lr)
    losses = []
    for _ in range(200):
        h = X
        for layer in layers:
            h = h + torch.tanh(layer(h)) if (residual or not honour_flag) else torch.tanh(layer(h))
        loss = (head(h) - Y).pow(2).mean()
        if zero_grad:
            opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    value = losses[-1] if last else losses[0]
    return value / Y.var(unbiased=False).item() if normalise else value


@functools.cache  # a seeded run: its tests and the mistakes table share it
def deep_stack_sequential(residual, seed):
    """A second correct style: blocks as modules, the loss from F.mse_loss, a 0-d tensor answer."""
    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(32, 32)

        def forward(self, h):
            return h + torch.tanh(self.linear(h)) if residual else torch.tanh(self.linear(h))

    torch.manual_seed(seed + 3)  # another seed: the ranges hold beyond seed 0
    net = torch.nn.Sequential(*[Block() for _ in range(16)], torch.nn.Linear(32, 1))
    g = torch.Generator().manual_seed(seed + 3)
    X, w = torch.randn(256, 32, generator=g), torch.randn(32, 1, generator=g)
    Y = torch.sin(X @ w / 2)
    opt = torch.optim.SGD(net.parameters(), lr=0.005)
    for _ in range(200):
        loss = torch.nn.functional.mse_loss(net(X), Y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.detach() / Y.var(unbiased=False)


def test_residual_experiment_passes_reference_and_alternative(capsys):
    assert ch03_norm.check_residual_experiment("residual only", deep_stack).passed
    assert ch03_norm.check_residual_experiment(lambda: "residual only", deep_stack_sequential).passed
    assert "between 0 and 0.5" in capsys.readouterr().out


def test_residual_experiment_explains_a_wrong_prediction():
    result = ch03_norm.check_residual_experiment("both", deep_stack)
    assert result.passed and "barely move" in result.message


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda r, s: deep_stack(r, s, normalise=False), "division by the targets' variance"),
        (lambda r, s: deep_stack(r, s, last=False), "rather than the first"),
        (lambda r, s: deep_stack(not r, s), "keep a residual connection"),
        (lambda r, s: deep_stack(True, s), "same number"),
        (lambda r, s: deep_stack(r, s, lr=0.05), "NaN"),
    ],
)
def test_residual_experiment_names_mistakes(wrong, hint):
    fails_with(ch03_norm.check_residual_experiment("residual only", wrong), hint)


def test_residual_experiment_stub_and_prediction():
    def stub(*args):
        raise NotImplementedError

    assert ch03_norm.check_residual_experiment(stub, deep_stack).not_implemented
    assert ch03_norm.check_residual_experiment("both", stub).not_implemented
    fails_with(ch03_norm.check_residual_experiment("all", deep_stack), "not one of the choices")


# ---------------------------------------------------------------- 3.6
def _zero_last(stack):
    with torch.no_grad():
        for branch in stack:
            branch[2].weight.zero_()
            branch[2].bias.zero_()


def _zero_last_init(stack):
    for branch in stack:
        nn.init.zeros_(branch[-1].weight)
        nn.init.zeros_(branch[-1].bias)
    return stack


def _zero_weight_only(stack):
    with torch.no_grad():
        for branch in stack:
            branch[2].weight.zero_()


def _zero_all(stack):
    with torch.no_grad():
        for p in stack.parameters():
            p.zero_()


def _shrink(stack):
    with torch.no_grad():
        for p in stack.parameters():
            p.mul_(0.01)


def _freeze_first(stack):
    _zero_last(stack)
    for branch in stack:
        branch[0].weight.requires_grad_(False)


def _new_modules(stack):
    return nn.ModuleList(nn.Identity() for _ in stack)


def _new_last_layer(stack):
    """Replaces each branch's last Linear by a new, zeroed one: the task forbids new modules."""
    for branch in stack:
        last = nn.Linear(branch[2].in_features, branch[2].out_features)
        nn.init.zeros_(last.weight)
        nn.init.zeros_(last.bias)
        branch[2] = last


def _new_parameters(stack):
    """Swaps in new zero Parameters instead of writing into the existing ones."""
    for branch in stack:
        branch[2].weight = nn.Parameter(torch.zeros_like(branch[2].weight))
        branch[2].bias = nn.Parameter(torch.zeros_like(branch[2].bias))


def test_identity_init_passes_right_answers():
    assert ch03_norm.check_identity_init(_zero_last).passed
    assert ch03_norm.check_identity_init(_zero_last_init).passed


@pytest.mark.parametrize(("fn", "words"), [
    (_zero_weight_only, "bias"),
    (_zero_all, "ReLU(0) = 0"),
    (_shrink, "close to the identity but not equal"),
    (_freeze_first, "requires_grad=False"),
    (_new_modules, "keep every branch"),
    (_new_last_layer, "no new modules"),
    (_new_parameters, "no new modules"),
    (lambda stack: None, "not its input"),
])
def test_identity_init_names_mistakes(fn, words):
    result = ch03_norm.check_identity_init(fn)
    assert not result.passed and not result.not_implemented and words in result.message, result.message


def test_identity_init_stub_is_not_implemented():
    def stub(stack):
        raise NotImplementedError

    assert ch03_norm.check_identity_init(stub).not_implemented
