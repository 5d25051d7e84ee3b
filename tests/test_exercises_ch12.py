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
    check_position_experiment,
    position_reference,
)
from course_utils.mlm import IGNORE, bert_mask
from course_utils.runs.vit import VIT_RECIPE, load_vit
from course_utils.scaling import compute_optimal
from course_utils.vit import VisionTransformer, load_digits_split, matched_mlp, patchify, unpatchify


def ref_mask(ids, vocab_size, mask_id, rate, generator):
    """BERT's rule written out (a learner's own right answer; the wrong answers below build on it)."""
    chosen = torch.rand(ids.shape, generator=generator) < rate
    action = torch.rand(ids.shape, generator=generator)
    random_ids = torch.randint(0, vocab_size, ids.shape, generator=generator)
    inputs = torch.where(chosen & (action < 0.8), torch.full_like(ids, mask_id), ids)
    inputs = torch.where(chosen & (action >= 0.8) & (action < 0.9), random_ids, inputs)
    return inputs, torch.where(chosen, ids, torch.full_like(ids, IGNORE))


def ref_split(compute, tokens_per_param):
    n = math.sqrt(compute / (6 * tokens_per_param))
    return n, tokens_per_param * n


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


@pytest.mark.parametrize("fn", [ref_mask, mask_per_action, mask_multinomial])
def test_bert_mask_right_answers(fn):
    assert check_bert_mask(fn).passed


def all_masked(ids, vocab_size, mask_id, rate, generator):
    chosen = torch.rand(ids.shape, generator=generator) < rate
    return torch.where(chosen, mask_id, ids), torch.where(chosen, ids, IGNORE)


def every_target(ids, vocab_size, mask_id, rate, generator):
    inputs, _ = ref_mask(ids, vocab_size, mask_id, rate, generator)
    return inputs, ids.clone()


def fixed_rate(ids, vocab_size, mask_id, rate, generator):
    return ref_mask(ids, vocab_size, mask_id, 0.15, generator)


def corrupted_targets(ids, vocab_size, mask_id, rate, generator):
    inputs, targets = ref_mask(ids, vocab_size, mask_id, rate, generator)
    return inputs, torch.where(targets != IGNORE, inputs, targets)


def only_masked_scored(ids, vocab_size, mask_id, rate, generator):
    inputs, targets = ref_mask(ids, vocab_size, mask_id, rate, generator)
    return inputs, torch.where(inputs == mask_id, targets, IGNORE)


def in_place(ids, vocab_size, mask_id, rate, generator):
    inputs, targets = ref_mask(ids, vocab_size, mask_id, rate, generator)
    ids.copy_(inputs)
    return ids, targets


def random_is_one_id(ids, vocab_size, mask_id, rate, generator):
    inputs, targets = ref_mask(ids, vocab_size, mask_id, rate, generator)
    replaced = (targets != IGNORE) & (inputs != mask_id) & (inputs != ids)
    return torch.where(replaced, 0, inputs), targets


def global_draw(ids, vocab_size, mask_id, rate, generator):
    """The student walk's accepted mistake: one draw without `generator` (the global generator)."""
    chosen = torch.rand(ids.shape, generator=generator) < rate
    action = torch.rand(ids.shape)  # forgot generator=generator
    random_ids = torch.randint(0, vocab_size, ids.shape, generator=generator)
    inputs = torch.where(chosen & (action < 0.8), torch.full_like(ids, mask_id), ids)
    inputs = torch.where(chosen & (action >= 0.8) & (action < 0.9), random_ids, inputs)
    return inputs, torch.where(chosen, ids, torch.full_like(ids, IGNORE))


def random_may_be_mask(ids, vocab_size, mask_id, rate, generator):
    """The student walk's other accepted mistake: random ids from [0, vocab_size], which holds [MASK]."""
    chosen = torch.rand(ids.shape, generator=generator) < rate
    action = torch.rand(ids.shape, generator=generator)
    random_ids = torch.randint(0, vocab_size + 1, ids.shape, generator=generator)
    inputs = torch.where(chosen & (action < 0.8), torch.full_like(ids, mask_id), ids)
    inputs = torch.where(chosen & (action >= 0.8) & (action < 0.9), random_ids, inputs)
    return inputs, torch.where(chosen, ids, torch.full_like(ids, IGNORE))


def random_up_to_mask_id(ids, vocab_size, mask_id, rate, generator):
    chosen = torch.rand(ids.shape, generator=generator) < rate
    action = torch.rand(ids.shape, generator=generator)
    random_ids = torch.randint(0, mask_id, ids.shape, generator=generator)
    inputs = torch.where(chosen & (action < 0.8), torch.full_like(ids, mask_id), ids)
    inputs = torch.where(chosen & (action >= 0.8) & (action < 0.9), random_ids, inputs)
    return inputs, torch.where(chosen, ids, torch.full_like(ids, IGNORE))


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
    (global_draw, ["generator"]),
    (random_may_be_mask, ["not a character", "[0, vocab_size)"]),
    (random_up_to_mask_id, ["not a character"]),
    (bert_mask, ["course_utils' bert_mask"]),
    (lambda ids, v, m, r, g: bert_mask(ids, v, m, r, g), ["course_utils' bert_mask"]),
])
def test_bert_mask_mistakes(fn, words):
    _fails_with(check_bert_mask(fn), *words)


# ----- 12.2 patches -----------------------------------------------------------------------------

def test_patchify_refuses_the_chapter_s_patchify():
    _fails_with(check_patchify(patchify), "course_utils' patchify")
    _fails_with(check_patchify(lambda images, patch: patchify(images, patch)), "course_utils' patchify")


def patchify_unfold(images, patch):
    return nn.functional.unfold(images, patch, stride=patch).transpose(1, 2)  # (B, C p p, N) -> (B, N, C p p)


def patchify_loops(images, patch):
    B, C, H, W = images.shape
    return torch.stack([
        torch.stack([images[b, :, i:i + patch, j:j + patch].reshape(-1)
                     for i in range(0, H, patch) for j in range(0, W, patch)]) for b in range(B)])


def patchify_permute(images, patch):
    B, C, H, W = images.shape
    grid = images.reshape(B, C, H // patch, patch, W // patch, patch)  # (B, C, rows, p, cols, p)
    return grid.permute(0, 2, 4, 1, 3, 5).reshape(B, -1, C * patch * patch)


@pytest.mark.parametrize("fn", [patchify_permute, patchify_unfold, patchify_loops])
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
    return patchify_permute(images, 2)


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


# ----- 12.3 the ViT and its positions -------------------------------------------------------------

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


def experiment(model, images, labels, patch):
    """A right answer written out: plain, zeroed on a copy, the 23 non-identity shuffles."""
    import copy
    import itertools

    model.eval()
    with torch.no_grad():
        acc = lambda m, x: (m(x).argmax(-1) == labels).float().mean().item()  # noqa: E731
        zeroed = copy.deepcopy(model)
        zeroed.pos.zero_()
        n = (images.shape[-1] // patch) ** 2
        return {"plain": acc(model, images), "zeroed": acc(zeroed, images),
                "shuffled": [acc(model, shuffle_loops(images, torch.tensor(p), patch))
                             for p in itertools.permutations(range(n)) if p != tuple(range(n))]}


def experiment_tensor_result(model, images, labels, patch):
    """Another style: numpy-free, returns 0-d tensors and a tensor of shuffles."""
    r = experiment(model, images, labels, patch)
    return {"plain": torch.tensor(r["plain"]), "zeroed": torch.tensor(r["zeroed"]),
            "shuffled": torch.tensor(r["shuffled"])}


@pytest.fixture(scope="module")
def shipped_numbers():
    vit, info = load_vit()
    _, _, x_test, y_test = load_digits_split(VIT_RECIPE["test_size"], VIT_RECIPE["split_seed"])
    return position_reference(vit, x_test, y_test, VIT_RECIPE["model"]["patch"])


@pytest.mark.parametrize("shuffle", [shuffle_loops, shuffle_fold])
@pytest.mark.parametrize("fn", [experiment, experiment_tensor_result])
def test_position_experiment_right_answers(shuffle, fn, shipped_numbers):
    result = check_position_experiment("shuffling", shuffle, fn)
    assert result.passed, result.message
    # the pass line shows the learner's own numbers beside the shipped runs' range
    assert f"plain {100 * shipped_numbers['plain']:.1f} %" in result.message and "shipped runs:" in result.message


def test_position_experiment_prediction_feedback():
    assert "matches" in check_position_experiment("shuffling", shuffle_loops, experiment).message
    assert "wrong places" in check_position_experiment("zeroing", shuffle_loops, experiment).message
    assert "worst one" in check_position_experiment("neither", shuffle_loops, experiment).message
    result = check_position_experiment(_stub, shuffle_loops, experiment)
    assert not result.passed and result.not_implemented
    _fails_with(check_position_experiment("maybe", shuffle_loops, experiment), "not one of the choices")


def hard_coded(shipped):
    """The student walk's accepted mistake in 11.4, here: the shipped numbers typed in, no measurement."""
    return lambda model, images, labels, patch: dict(shipped)


def zeroes_the_shipped_model(model, images, labels, patch):
    with torch.no_grad():
        plain = (model(images).argmax(-1) == labels).float().mean().item()
        model.pos.zero_()  # in place: the learner's (and the checker's) ViT loses its positions
    r = experiment(model, images, labels, patch)
    return {**r, "plain": plain}


def keeps_cls_position(model, images, labels, patch):
    import copy

    r = experiment(model, images, labels, patch)
    zeroed = copy.deepcopy(model)
    with torch.no_grad():
        zeroed.pos[:, 1:] = 0  # only the patches' positions
        r["zeroed"] = (zeroed(images).argmax(-1) == labels).float().mean().item()
    return r


def with_identity(model, images, labels, patch):
    r = experiment(model, images, labels, patch)
    return {**r, "shuffled": [r["plain"], *r["shuffled"]]}


def in_train_mode(model, images, labels, patch):
    import copy

    m = copy.deepcopy(model)
    r = experiment(m, images, labels, patch)
    m.train()  # dropout on: other numbers on every call
    torch.manual_seed(0)
    with torch.no_grad():
        r["plain"] = (m(images).argmax(-1) == labels).float().mean().item()
    return r


def percent(model, images, labels, patch):
    r = experiment(model, images, labels, patch)
    return {"plain": 100 * r["plain"], "zeroed": 100 * r["zeroed"], "shuffled": [100 * x for x in r["shuffled"]]}


def uses_globals(model, images, labels, patch):
    """Measures the checker's first call everywhere: ignores its arguments after the first call."""
    cache = uses_globals.__dict__.setdefault("cache", {})
    if "r" not in cache:
        cache["r"] = experiment(model, images, labels, patch)
    return cache["r"]


def test_position_experiment_mistakes(shipped_numbers):
    _fails_with(check_position_experiment("shuffling", shuffle_loops, hard_coded(shipped_numbers)),
                "fixed numbers")
    _fails_with(check_position_experiment("shuffling", shuffle_loops, zeroes_the_shipped_model), "in place")
    _fails_with(check_position_experiment("shuffling", shuffle_loops, keeps_cls_position), "class token")
    _fails_with(check_position_experiment("shuffling", shuffle_loops, with_identity), "identity")
    _fails_with(check_position_experiment("shuffling", shuffle_loops, in_train_mode), "eval")
    _fails_with(check_position_experiment("shuffling", shuffle_loops, percent), "between 0 and 1")
    _fails_with(check_position_experiment("shuffling", shuffle_loops, uses_globals), "fixed numbers")
    _fails_with(check_position_experiment("shuffling", shuffle_loops, lambda *a: [0.9, 0.8]), "dict")


def shuffle_inverse(images, perm, patch):
    return shuffle_loops(images, torch.argsort(perm), patch)


def shuffle_not_reassembled(images, perm, patch):
    return patchify_permute(images[:, None], patch)[:, perm]


def shuffle_nothing(images, perm, patch):
    return images.clone()


def shuffle_plain_reshape(images, perm, patch):
    return patchify_permute(images[:, None], patch)[:, perm].reshape(images.shape)


@pytest.mark.parametrize("fn, words", [
    (shuffle_inverse, ["other way"]),
    (shuffle_not_reassembled, ["reassembled"]),
    (shuffle_nothing, ["use `perm`"]),
    (shuffle_plain_reshape, ["plain reshape"]),
])
def test_shuffle_mistakes(fn, words):
    _fails_with(check_position_experiment("shuffling", fn, experiment), *words)


def test_unpatchify_is_patchify_s_inverse():
    x = torch.rand(2, 8, 8)
    torch.testing.assert_close(unpatchify(patchify(x, 4), 8), x, rtol=0, atol=0)


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
    assert "multiply-adds" in result.message and "332,416" in result.message  # the ViT's, counted


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


def a_vit(target):
    """The student walk's accepted mistake: a (small) Vision Transformer as the non-Transformer baseline."""
    d = 8
    while sum(p.numel() for p in VisionTransformer(patch=4, d_model=d + 8, n_heads=4, d_ff=2 * d + 16,
                                                       n_layers=2).parameters()) <= target:
        d += 8
    return VisionTransformer(patch=4, d_model=d, n_heads=4, d_ff=2 * d, n_layers=2)


def torch_attention(target):
    class WithAttention(nn.Module):
        def __init__(self):
            super().__init__()
            h = round((target - 10) / 75)
            self.attn = nn.MultiheadAttention(8, 1, batch_first=True)
            self.mlp = one_hidden_layer(target - 4 * 72)
            self.h = h

        def forward(self, x):
            return self.mlp(self.attn(x, x, x)[0])

    return WithAttention()


@pytest.mark.parametrize("fn, words", [
    (a_vit, ["VisionTransformer", "not a baseline"]),
    (torch_attention, ["MultiheadAttention", "not a baseline"]),
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


@pytest.mark.parametrize("fn", [ref_split, split_via_tokens,
                                lambda c, r: (torch.tensor(c / 6 / r).sqrt(), r * (c / 6 / r) ** 0.5)])
def test_compute_optimal_right_answers(fn):
    assert check_compute_optimal(fn).passed


@pytest.mark.parametrize("fn, words", [
    (compute_optimal, ["course_utils' compute_optimal"]),
    (lambda c, r: compute_optimal(c, r), ["course_utils' compute_optimal"]),
    (lambda c, r: ref_split(c, r)[::-1], ["swapped"]),
    (lambda c, r: (math.sqrt(c / r), r * math.sqrt(c / r)), ["the 6"]),
    (lambda c, r: (math.sqrt(c / 2 / r), r * math.sqrt(c / 2 / r)), ["forward"]),
    (lambda c, r: ref_split(c, 20.0), ["tokens_per_param"]),
    (lambda c, r: (c / 6 / r, r * c / 6 / r), ["should be about"]),
])
def test_compute_optimal_mistakes(fn, words):
    _fails_with(check_compute_optimal(fn), *words)
