"""Tests for the Chapter 12 checkers: pass the reference and other right answers, fail known mistakes
with the right hint, and report stubs as not implemented yet."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import fails_with
from conftest import stub as _stub
from torch import nn

from course_utils.exercises.ch12_encoders import (
    check_baseline_design,
    check_bert_mask,
    check_compute_optimal,
    check_patchify,
    check_shuffled_patches,
)
from course_utils.mlm import IGNORE, bert_mask
from course_utils.scaling import compute_optimal
from course_utils.vit import VisionTransformer, matched_mlp, patchify


@pytest.mark.parametrize("check", [check_bert_mask, check_patchify, check_baseline_design, check_compute_optimal])
def test_stub_is_not_implemented_yet(check):
    result = check(_stub)
    assert not result.passed and result.not_implemented and "not implemented yet" in result.message


def _fails_with(result, *words):
    fails_with(result, *words, case=False)


# ----- 12.1 BERT's masking rule ---------------------------------------------------------------

def mask_per_action(ids, vocab_size, mask_id, rate, generator):
    """Another right answer: choose, then draw the action among the chosen positions only."""
    inputs, targets = ids.clone(), torch.full_like(ids, IGNORE)
    chosen = torch.rand(ids.shape, generator=generator) < rate
    targets[chosen] = ids[chosen]
    action = torch.rand(int(chosen.sum()), generator=generator)
    values = ids[chosen].clone()
    values[action < 0.8] = mask_id
    pick = (action >= 0.8) & (action < 0.9)
    values[pick] = torch.randint(0, vocab_size, (int(pick.sum()),), generator=generator)
    inputs[chosen] = values
    return inputs, targets


def mask_multinomial(ids, vocab_size, mask_id, rate, generator):
    """A third right answer: one categorical draw per position (none, mask, random, keep)."""
    probs = torch.tensor([1 - rate, 0.8 * rate, 0.1 * rate, 0.1 * rate])
    kind = torch.multinomial(probs, ids.numel(), replacement=True, generator=generator).view(ids.shape)
    inputs = ids.clone()
    inputs[kind == 1] = mask_id
    inputs[kind == 2] = torch.randint(0, vocab_size, (int((kind == 2).sum()),), generator=generator)
    return inputs, torch.where(kind > 0, ids, torch.full_like(ids, IGNORE))


@pytest.mark.parametrize("fn", [bert_mask, mask_per_action, mask_multinomial])
def test_bert_mask_right_answers(fn):
    assert check_bert_mask(fn).passed


def all_masked(ids, vocab_size, mask_id, rate, generator):
    chosen = torch.rand(ids.shape, generator=generator) < rate
    return torch.where(chosen, mask_id, ids), torch.where(chosen, ids, IGNORE)


def every_target(ids, vocab_size, mask_id, rate, generator):
    inputs, _ = bert_mask(ids, vocab_size, mask_id, rate, generator)
    return inputs, ids.clone()


def fixed_rate(ids, vocab_size, mask_id, rate, generator):
    return bert_mask(ids, vocab_size, mask_id, 0.15, generator)


def corrupted_targets(ids, vocab_size, mask_id, rate, generator):
    inputs, targets = bert_mask(ids, vocab_size, mask_id, rate, generator)
    return inputs, torch.where(targets != IGNORE, inputs, targets)


def only_masked_scored(ids, vocab_size, mask_id, rate, generator):
    inputs, targets = bert_mask(ids, vocab_size, mask_id, rate, generator)
    return inputs, torch.where(inputs == mask_id, targets, IGNORE)


def in_place(ids, vocab_size, mask_id, rate, generator):
    inputs, targets = bert_mask(ids, vocab_size, mask_id, rate, generator)
    ids.copy_(inputs)
    return ids, targets


def random_is_one_id(ids, vocab_size, mask_id, rate, generator):
    inputs, targets = bert_mask(ids, vocab_size, mask_id, rate, generator)
    replaced = (targets != IGNORE) & (inputs != mask_id) & (inputs != ids)
    return torch.where(replaced, 0, inputs), targets


def split_60_20_20(ids, vocab_size, mask_id, rate, generator):
    chosen = torch.rand(ids.shape, generator=generator) < rate
    action = torch.rand(ids.shape, generator=generator)
    random_ids = torch.randint(0, vocab_size, ids.shape, generator=generator)
    inputs = torch.where(chosen & (action < 0.6), mask_id, ids)
    inputs = torch.where(chosen & (action >= 0.6) & (action < 0.8), random_ids, inputs)
    return inputs, torch.where(chosen, ids, IGNORE)


@pytest.mark.parametrize("fn, words", [
    (all_masked, ["80 %", "random"]),
    (every_target, ["chosen positions only"]),
    (fixed_rate, ["rate argument"]),
    (corrupted_targets, ["original character"]),
    (only_masked_scored, ["unchanged", "predicted"]),
    (in_place, ["in place"]),
    (random_is_one_id, ["uniformly"]),
    (split_60_20_20, ["0.8 / 0.1 / 0.1"]),
])
def test_bert_mask_mistakes(fn, words):
    _fails_with(check_bert_mask(fn), *words)


# ----- 12.2 patches -----------------------------------------------------------------------------

def patchify_unfold(images, patch):
    return nn.functional.unfold(images, patch, stride=patch).transpose(1, 2)  # (B, C p p, N) -> (B, N, C p p)


def patchify_loops(images, patch):
    B, C, H, W = images.shape
    return torch.stack([
        torch.stack([images[b, :, i:i + patch, j:j + patch].reshape(-1)
                     for i in range(0, H, patch) for j in range(0, W, patch)]) for b in range(B)])


@pytest.mark.parametrize("fn", [patchify, patchify_unfold, patchify_loops])
def test_patchify_right_answers(fn):
    assert check_patchify(fn).passed


def no_permute(images, patch):
    B, C, H, W = images.shape
    return images.reshape(B, -1, C * patch * patch)


def column_order(images, patch):
    B, C, H, W = images.shape
    grid = images.reshape(B, C, H // patch, patch, W // patch, patch)
    return grid.permute(0, 4, 2, 1, 3, 5).reshape(B, -1, C * patch * patch)


def channels_last(images, patch):
    B, C, H, W = images.shape
    grid = images.reshape(B, C, H // patch, patch, W // patch, patch)
    return grid.permute(0, 2, 4, 3, 5, 1).reshape(B, -1, C * patch * patch)


def hard_coded_two(images, patch):
    return patchify(images, 2)


def transposed_inside(images, patch):
    B, C, H, W = images.shape
    grid = images.reshape(B, C, H // patch, patch, W // patch, patch)
    return grid.permute(0, 2, 4, 1, 5, 3).reshape(B, -1, C * patch * patch)


@pytest.mark.parametrize("fn, words", [
    (no_permute, ["permute"]),
    (column_order, ["column order"]),
    (channels_last, ["channel first"]),
    (transposed_inside, ["transposed"]),
    (hard_coded_two, ["shape"]),
])
def test_patchify_mistakes(fn, words):
    _fails_with(check_patchify(fn), *words)


# ----- 12.3 shuffled patches ----------------------------------------------------------------------

def shuffle_loops(images, perm, patch):
    out = torch.empty_like(images)
    n = images.shape[-1] // patch
    for i, src in enumerate(perm.tolist()):
        r, c, sr, sc = i // n, i % n, src // n, src % n
        out[:, r * patch:(r + 1) * patch, c * patch:(c + 1) * patch] = \
            images[:, sr * patch:(sr + 1) * patch, sc * patch:(sc + 1) * patch]
    return out


def shuffle_fold(images, perm, patch):
    B, H, W = images.shape
    cols = nn.functional.unfold(images[:, None], patch, stride=patch)[:, :, perm]  # (B, p p, N)
    return nn.functional.fold(cols, (H, W), patch, stride=patch)[:, 0]


@pytest.fixture(scope="module")
def position_model():
    """A stand-in for the trained ViT: a model that reads only the top-left patch's position."""
    class TopLeft(nn.Module):
        def forward(self, images):
            return nn.functional.one_hot((images[:, 0, 0] * 9.99).long(), 10).float()  # (B, 10)

    images = torch.rand(200, 8, 8, generator=torch.Generator().manual_seed(0))
    labels = (images[:, 0, 0] * 9.99).long()
    return TopLeft(), images, labels


@pytest.mark.parametrize("fn", [shuffle_loops, shuffle_fold])
def test_shuffle_right_answers(fn):
    result = check_shuffled_patches("some", fn)  # the shipped ViT and the chapter's test split
    assert result.passed, result.message
    assert "matches" in result.message


def test_shuffle_wrong_predictions_are_explained():
    assert "wrong places" in check_shuffled_patches("same", shuffle_loops).message
    assert "survives any order" in check_shuffled_patches("chance", shuffle_loops).message


def test_shuffle_needs_a_prediction(position_model):
    model, images, labels = position_model
    result = check_shuffled_patches("", shuffle_loops, model, images, labels)
    assert not result.passed and result.not_implemented
    _fails_with(check_shuffled_patches("maybe", shuffle_loops, model, images, labels), "not one of the choices")


def test_shuffle_range_fails_a_model_that_reads_one_pixel(position_model):
    model, images, labels = position_model  # moving the top-left patch leaves it at chance
    _fails_with(check_shuffled_patches("some", shuffle_loops, model, images, labels), "below the range")


def shuffle_inverse(images, perm, patch):
    return shuffle_loops(images, torch.argsort(perm), patch)


def shuffle_not_reassembled(images, perm, patch):
    return patchify(images, patch)[:, perm]


def shuffle_nothing(images, perm, patch):
    return images.clone()


@pytest.mark.parametrize("fn, words", [
    (shuffle_inverse, ["other way"]),
    (shuffle_not_reassembled, ["reassembled"]),
    (shuffle_nothing, ["shuffle_patches"]),
])
def test_shuffle_mistakes(fn, words, position_model):
    model, images, labels = position_model
    _fails_with(check_shuffled_patches("some", fn, model, images, labels), *words)


def test_shuffle_range_fails_a_model_that_ignores_positions():
    torch.manual_seed(0)
    model = VisionTransformer(d_model=16, n_heads=2, d_ff=32, n_layers=1)
    with torch.no_grad():
        model.pos.zero_()  # no positions: shuffling changes nothing
    images = torch.rand(50, 8, 8)
    labels = model.eval()(images).argmax(-1)
    _fails_with(check_shuffled_patches("some", shuffle_loops, model, images, labels), "above the range")


# ----- 12.4 a baseline at equal size --------------------------------------------------------------

def one_hidden_layer(target):
    h = round((target - 10) / 75)  # 64 h + h + 10 h + 10 parameters
    return nn.Sequential(nn.Flatten(), nn.Linear(64, h), nn.ReLU(), nn.Linear(h, 10))


def small_cnn(target):
    c = 4
    while True:  # conv 1 -> c (9c + c), conv c -> c (9 c c + c), linear 16c -> 10
        n = 10 * c + 9 * c * c + c + 160 * c + 10
        if n >= target:
            break
        c += 1
    return nn.Sequential(nn.Unflatten(1, (1, 8)), nn.Conv2d(1, c, 3, padding=1), nn.ReLU(),
                         nn.Conv2d(c, c, 3, padding=1), nn.ReLU(), nn.MaxPool2d(4), nn.Flatten(),
                         nn.Linear(4 * c, 10)) if False else _cnn(c)


def _cnn(c):
    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Sequential(nn.Conv2d(1, c, 3, padding=1), nn.ReLU(), nn.Conv2d(c, c, 3, padding=1),
                                      nn.ReLU(), nn.MaxPool2d(2), nn.Flatten())
            self.head = nn.Linear(16 * c, 10)

        def forward(self, x):
            return self.head(self.conv(x[:, None]))  # (B, 8, 8) -> (B, 1, 8, 8) -> (B, 10)

    return CNN()


@pytest.mark.parametrize("fn", [matched_mlp, one_hidden_layer, small_cnn])
def test_baseline_right_answers(fn):
    result = check_baseline_design(fn)
    assert result.passed, result.message


def fixed_width(target):
    return matched_mlp(69_194)


def no_flatten(target):
    return nn.Sequential(nn.Linear(64, 100), nn.ReLU(), nn.Linear(100, 10))


def weights_only_count(target):
    h = round(target / 74)  # forgot the biases: 64 h + 10 h
    return nn.Sequential(nn.Flatten(), nn.Linear(64, h), nn.ReLU(), nn.Linear(h, 10)) if target < 60_000 else \
        one_hidden_layer(target * 2)


def wrong_outputs(target):
    h = round((target - 10) / 75)
    return nn.Sequential(nn.Flatten(), nn.Linear(64, h), nn.ReLU(), nn.Linear(h, 1))


@pytest.mark.parametrize("fn, words", [
    (fixed_width, ["does not change"]),
    (no_flatten, ["flatten"]),
    (weights_only_count, ["5 %", "biases"]),
    (wrong_outputs, ["shape"]),
])
def test_baseline_mistakes(fn, words):
    _fails_with(check_baseline_design(fn), *words)


# ----- 12.5 the compute-optimal split ------------------------------------------------------------

def split_via_tokens(compute, tokens_per_param):
    d = math.sqrt(compute * tokens_per_param / 6)
    return d / tokens_per_param, d


@pytest.mark.parametrize("fn", [compute_optimal, split_via_tokens,
                                lambda c, r: (torch.tensor(c / 6 / r).sqrt(), r * (c / 6 / r) ** 0.5)])
def test_compute_optimal_right_answers(fn):
    assert check_compute_optimal(fn).passed


@pytest.mark.parametrize("fn, words", [
    (lambda c, r: compute_optimal(c, r)[::-1], ["swapped"]),
    (lambda c, r: (math.sqrt(c / r), r * math.sqrt(c / r)), ["the 6"]),
    (lambda c, r: (math.sqrt(c / 2 / r), r * math.sqrt(c / 2 / r)), ["forward"]),
    (lambda c, r: compute_optimal(c, 20.0), ["tokens_per_param"]),
    (lambda c, r: (c / 6 / r, r * c / 6 / r), ["should be about"]),
])
def test_compute_optimal_mistakes(fn, words):
    _fails_with(check_compute_optimal(fn), *words)


def test_shuffle_prediction_may_be_a_function(position_model):
    model, images, labels = position_model
    assert "not one of the choices" in check_shuffled_patches(lambda: "drops", shuffle_loops, model, images,
                                                              labels).message
    result = check_shuffled_patches(_stub, shuffle_loops, model, images, labels)
    assert not result.passed and result.not_implemented
