"""Tests for the Chapter 4 checkers: pass the reference, fail known mistakes with the right hint, stubs."""

from __future__ import annotations

import functools

import pytest
import torch
from torch import nn

from course_utils.exercises.ch04_masking import (
    check_additive_softmax,
    check_length_mask,
    check_mask_experiment,
    check_window_mask,
)
from course_utils.masks import causal_mask
from course_utils.model import EncoderBlock

# ----- reference solutions and realistic mistakes ---------------------------------------------

def window_ok(T, w):
    full = torch.ones(T, T, dtype=torch.bool)
    return (full.tril() & ~full.tril(-w)).view(1, 1, T, T)


def window_by_distance(T, w):
    d = torch.arange(T).view(T, 1) - torch.arange(T).view(1, T)  # (T, T): query minus key position
    return ((d >= 0) & (d < w)).view(1, 1, T, T)


def window_plain_causal(T, w):
    return torch.ones(T, T, dtype=torch.bool).tril().view(1, 1, T, T)


def window_one_too_wide(T, w):
    full = torch.ones(T, T, dtype=torch.bool)
    return (full.tril() & ~full.tril(-w - 1)).view(1, 1, T, T)


def window_future(T, w):
    full = torch.ones(T, T, dtype=torch.bool)
    return (full.triu() & ~full.triu(w)).view(1, 1, T, T)


def window_inverted(T, w):
    return ~window_ok(T, w)


def window_2d(T, w):
    return window_ok(T, w)[0, 0]


def window_float(T, w):
    return window_ok(T, w).float()


@pytest.mark.parametrize("fn,hint", [
    (window_plain_causal, "plain causal mask"),
    (window_one_too_wide, "sees w + 1 keys"),
    (window_future, "looks into the future"),
    (window_inverted, "inverted"),
    (window_2d, "Add batch and head dimensions"),
    (window_float, "float 0/1"),
])
def test_window_checker_names_mistake(fn, hint: str, capsys) -> None:
    result = check_window_mask(fn)
    assert not result.passed and hint in result.message
    assert hint in capsys.readouterr().out


@pytest.mark.parametrize("fn", [window_ok, window_by_distance])
def test_window_checker_passes_right_answers(fn) -> None:
    assert check_window_mask(fn).passed


def test_window_mask_with_a_wide_window_is_the_causal_mask() -> None:
    assert torch.equal(window_ok(6, 6), causal_mask(6)) and torch.equal(window_ok(6, 9), causal_mask(6))


def length_ok(lengths, T):
    B = lengths.shape[0]
    return (torch.arange(T) < lengths.view(B, 1)).view(B, 1, 1, T)


def length_loop(lengths, T):
    m = torch.zeros(lengths.shape[0], 1, 1, T, dtype=torch.bool)
    for b, n in enumerate(lengths.tolist()):
        m[b, 0, 0, :n] = True
    return m


def length_inclusive(lengths, T):
    return (torch.arange(T) <= lengths[:, None])[:, None, None, :]


def length_inverted(lengths, T):
    return ~length_ok(lengths, T)


def length_left(lengths, T):
    return (torch.arange(T) >= T - lengths[:, None])[:, None, None, :]


def length_2d(lengths, T):
    return torch.arange(T) < lengths[:, None]


def length_max_T(lengths, T):
    return length_ok(lengths, int(lengths.max()))


def length_no_broadcast(lengths, T):
    return (torch.arange(T) < lengths).view(-1, 1, 1, T)


@pytest.mark.parametrize("fn,hint", [
    (length_inclusive, "one position too many"),
    (length_inverted, "inverted"),
    (length_left, "right padding"),
    (length_2d, "Reshape with .view(B, 1, 1, T)"),
    (length_max_T, "not lengths.max()"),
    (length_no_broadcast, "lengths[:, None]"),
])
def test_length_checker_names_mistake(fn, hint: str) -> None:
    result = check_length_mask(fn)
    assert not result.passed and hint in result.message


@pytest.mark.parametrize("fn", [length_ok, length_loop])
def test_length_checker_passes_right_answers(fn) -> None:
    assert check_length_mask(fn).passed


def test_length_mask_agrees_with_padding_mask() -> None:
    from course_utils.masks import padding_mask

    tokens = torch.tensor([[5, 6, 7, 0, 0], [3, 0, 0, 0, 0], [1, 2, 3, 4, 5]])
    torch.testing.assert_close(length_ok(torch.tensor([3, 1, 5]), 5), padding_mask(tokens, 0))


def additive_ok(scores, bias):
    z = scores + bias
    empty = torch.isneginf(z).all(dim=-1, keepdim=True)
    return torch.softmax(z.masked_fill(empty, 0.0), dim=-1).masked_fill(empty, 0.0)


def additive_nan_to_num(scores, bias):
    return torch.softmax(scores + bias, dim=-1).nan_to_num(0.0)


def additive_nan(scores, bias):
    return torch.softmax(scores + bias, dim=-1)


def additive_clamped(scores, bias):
    return torch.softmax((scores + bias).clamp_min(-1e9), dim=-1)


def additive_as_keep_mask(scores, bias):
    return torch.softmax(scores.masked_fill(bias != 0, float("-inf")), dim=-1).nan_to_num(0.0)


def additive_only_hides(scores, bias):
    return torch.softmax(scores.masked_fill(torch.isinf(bias), float("-inf")), dim=-1).nan_to_num(0.0)


def additive_not_renormalised(scores, bias):
    return torch.softmax(scores, dim=-1) * bias.exp()


@pytest.mark.parametrize("fn,hint", [
    (additive_nan, "returns NaN"),
    (additive_clamped, "not uniform"),
    (additive_as_keep_mask, "not a keep-mask"),
    (additive_only_hides, "Add the bias to the scores"),
    (additive_not_renormalised, "not renormalised"),
    (lambda s, b: torch.softmax(s, dim=-1), "bias was ignored"),
])
def test_additive_softmax_checker_names_mistake(fn, hint: str) -> None:
    result = check_additive_softmax(fn)
    assert not result.passed and hint in result.message


@pytest.mark.parametrize("fn", [additive_ok, additive_nan_to_num])
def test_additive_softmax_checker_passes_right_answers(fn) -> None:
    assert check_additive_softmax(fn).passed


def test_additive_softmax_matches_course_attention_on_a_keep_mask() -> None:
    """With a bias of 0 and -inf only, the answer is the weights of course_utils.attention."""
    from course_utils.attention import scaled_dot_product_attention

    g = torch.Generator().manual_seed(0)
    s = torch.randn(2, 3, 3, generator=g)
    keep = causal_mask(3)[0] & torch.tensor([True, True, False])  # (1, 3, 3)
    keep[0, 0] = False  # query 0 keeps nothing
    bias = torch.zeros(1, 3, 3).masked_fill(~keep, float("-inf"))
    _, want = scaled_dot_product_attention(s * 3**0.5, torch.eye(3), torch.eye(3), keep)
    torch.testing.assert_close(additive_ok(s, bias), want)


def test_checker_reports_crash_without_traceback() -> None:
    result = check_window_mask(lambda T, w: torch.ones(T, T)[T])
    assert not result.passed and "raised IndexError" in result.message


# ----- 4.3 (experiment): training without the causal mask -------------------------------------------
@functools.cache  # a seeded run: its tests and the mistakes table share it
def next_token(causal, seed, *, shift=True, last=True, inverted=False, steps=200):
    V, T, d = 8, 8, 32
    torch.manual_seed(seed)
    embed, pos = nn.Embedding(V, d), nn.Parameter(torch.randn(T, d))
    block, head = EncoderBlock(d, 1, 2 * d), nn.Linear(d, V)
    opt = torch.optim.Adam([*embed.parameters(), pos, *block.parameters(), *head.parameters()], lr=0.01)
    mask = causal_mask(T) if causal != inverted else None
    g = torch.Generator().manual_seed(seed)
    losses = []
    for _ in range(steps):
        seq = torch.randint(0, V, (32, T + 1), generator=g)
        x, y = seq[:, :-1], (seq[:, 1:] if shift else seq[:, :-1])
        h, _ = block(embed(x) + pos, mask)
        loss = nn.functional.cross_entropy(head(h).flatten(0, 1), y.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return sum(losses[-20:]) / 20 if last else losses[0]


@functools.cache  # a seeded run: its tests and the mistakes table share it
def next_token_torch_layer(causal, seed):
    """A second correct style: nn.TransformerEncoderLayer (True = blocked), another seed, a 0-d tensor answer."""
    V, T, d = 8, 8, 32
    torch.manual_seed(seed + 5)
    embed, pos = nn.Embedding(V, d), nn.Parameter(torch.randn(T, d))
    layer = nn.TransformerEncoderLayer(d, 1, 2 * d, dropout=0.0, batch_first=True)
    head = nn.Linear(d, V)
    opt = torch.optim.Adam([*embed.parameters(), pos, *layer.parameters(), *head.parameters()], lr=0.01)
    blocked = ~causal_mask(T)[0, 0] if causal else None
    g = torch.Generator().manual_seed(seed + 5)
    tail = []
    for step in range(200):
        seq = torch.randint(0, V, (32, T + 1), generator=g)
        logits = head(layer(embed(seq[:, :-1]) + pos, src_mask=blocked))
        loss = nn.functional.cross_entropy(logits.reshape(-1, V), seq[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step >= 180:
            tail.append(loss.detach())
    return torch.stack(tail).mean()


def test_mask_experiment_passes_reference_and_alternative(capsys) -> None:
    assert check_mask_experiment("lower", next_token).passed
    assert check_mask_experiment(lambda: "lower", next_token_torch_layer).passed
    assert "between 0.15 and 0.6" in capsys.readouterr().out


def test_mask_experiment_explains_a_wrong_prediction() -> None:
    result = check_mask_experiment("same", next_token)
    assert result.passed and "exactly the token it must predict" in result.message


@pytest.mark.parametrize("fn,hint", [
    (lambda c, s: next_token(c, s, shift=False), "targets the inputs shifted by one"),
    (lambda c, s: next_token(c, s, last=False), "the last steps (not the first)"),
    (lambda c, s: next_token(c, s, inverted=True), "Below ln 8 on random tokens"),
    (lambda c, s: next_token(True, s), "same loss"),
    (lambda c, s: next_token(c, s, steps=20), "really drop the mask"),
])
def test_mask_experiment_names_mistakes(fn, hint: str) -> None:
    result = check_mask_experiment("lower", fn)
    assert not result.passed and hint in result.message, result.message


def test_mask_experiment_stub_and_prediction() -> None:
    def stub(*args):
        raise NotImplementedError

    assert check_mask_experiment(stub, next_token).not_implemented
    assert check_mask_experiment("lower", stub).not_implemented
    result = check_mask_experiment("smaller", next_token)
    assert not result.passed and "not one of the choices" in result.message
