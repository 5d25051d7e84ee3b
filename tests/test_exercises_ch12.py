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
    check_scaling_prediction,
    position_reference,
)
from course_utils.gpt import DecoderOnly, DecoderOnlyConfig
from course_utils.mlm import IGNORE, bert_mask
from course_utils.runs.scaling import SCALING_RECIPE, load_scaling, run_size, size_recipe
from course_utils.runs.vit import VIT_RECIPE, load_vit
from course_utils.scaling import compute_optimal, fit_loss_surface, non_embedding_params
from course_utils.vit import VisionTransformer, load_digits_split, matched_mlp, mlp_baseline, patchify, unpatchify


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


def random_from_one(ids, vocab_size, mask_id, rate, generator):
    """The student walk's accepted mistake: random ids from [1, vocab_size), so id 0 is never drawn."""
    chosen = torch.rand(ids.shape, generator=generator) < rate
    action = torch.rand(ids.shape, generator=generator)
    random_ids = torch.randint(1, vocab_size, ids.shape, generator=generator)
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
    (random_from_one, ["no random replacement is id 0", "includes 0"]),
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


def overlapping_unfold(images, patch):
    """The student walk's mistake: F.unfold without stride=patch takes a patch at every pixel offset."""
    return nn.functional.unfold(images, patch).transpose(1, 2)


def patchify_in_place(images, patch):
    images -= images.mean()  # "normalise" the pixels first, in the caller's tensor
    return patchify_permute(images, patch)


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
    (overlapping_unfold, ["overlapping", "stride=patch"]),
    (patchify_in_place, ["in place"]),
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


def random_permutations(model, images, labels, patch):
    """23 random orders (some repeated, the identity possible) instead of the 23 non-identity ones."""
    r = experiment(model, images, labels, patch)
    g = torch.Generator().manual_seed(0)
    n = (images.shape[-1] // patch) ** 2
    with torch.no_grad():
        r["shuffled"] = [(model(shuffle_loops(images, torch.randperm(n, generator=g), patch)).argmax(-1) == labels)
                         .float().mean().item() for _ in range(23)]
    return r


def rounded_numbers(model, images, labels, patch):
    """Numbers read off a first run and typed in, rounded: no longer whole numbers of images."""
    r = experiment(model, images, labels, patch)
    return {"plain": round(r["plain"], 2), "zeroed": round(r["zeroed"], 2),
            "shuffled": [round(x, 2) for x in r["shuffled"]]}


def train_mode_everywhere(model, images, labels, patch):
    """The student walk's mistake: model.eval() forgotten, dropout on in every measurement."""
    import copy
    import itertools

    model = copy.deepcopy(model).train()
    # the checker recognises train mode by the accuracies dropout gives under seeds 0-7; the global RNG
    # state here depends on the tests run before this one, so fix it (a learner's is arbitrary)
    torch.manual_seed(0)
    acc = lambda m, x: (m(x).argmax(-1) == labels).float().mean().item()  # noqa: E731
    with torch.no_grad():
        zeroed = copy.deepcopy(model)
        zeroed.pos.zero_()
        n = (images.shape[-1] // patch) ** 2
        return {"plain": acc(model, images), "zeroed": acc(zeroed, images),
                "shuffled": [acc(model, shuffle_loops(images, torch.tensor(p), patch))
                             for p in itertools.permutations(range(n)) if p != tuple(range(n))]}


def test_position_experiment_mistakes(shipped_numbers):
    _fails_with(check_position_experiment("shuffling", shuffle_loops, hard_coded(shipped_numbers)),
                "type numbers in")
    _fails_with(check_position_experiment("shuffling", shuffle_loops, zeroes_the_shipped_model), "in place",
                "copy.deepcopy(model)")
    _fails_with(check_position_experiment("shuffling", shuffle_loops, random_permutations), "itertools.permutations")
    _fails_with(check_position_experiment("shuffling", shuffle_loops, rounded_numbers), "multiple of 1/450")
    _fails_with(check_position_experiment("shuffling", shuffle_loops, train_mode_everywhere), "train mode",
                "model.eval()")
    _fails_with(check_position_experiment("shuffling", shuffle_loops, keeps_cls_position), "class token")
    _fails_with(check_position_experiment("shuffling", shuffle_loops, with_identity), "identity")
    _fails_with(check_position_experiment("shuffling", shuffle_loops, in_train_mode), "eval")
    _fails_with(check_position_experiment("shuffling", shuffle_loops, percent), "between 0 and 1")
    _fails_with(check_position_experiment("shuffling", shuffle_loops, uses_globals), "type numbers in")
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


@pytest.mark.parametrize("fn", [one_hidden_layer, small_cnn])
def test_baseline_right_answers(fn):
    result = check_baseline_design(fn, against={"ViT": 0.95, "MLP": 0.96})
    assert result.passed, result.message
    assert "multiply-adds" in result.message and "332,416" in result.message  # the ViT's, counted
    # trained with the live run's recipe: its accuracy beside the live ViT's and MLP's
    assert "6 epochs" in result.message and "the live ViT 95.0 %" in result.message


def test_baseline_refuses_the_library_baselines():
    _fails_with(check_baseline_design(matched_mlp), "course_utils' matched_mlp")
    _fails_with(check_baseline_design(lambda target: mlp_baseline(round((target - 10) / 75), depth=1)),
                "course_utils' mlp_baseline")


def fixed_width(target):
    return one_hidden_layer(69_194)


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


def handwritten_attention(target):
    """The student walk's accepted mistake: attention written inline (no module named for it)."""
    class TinyViT(nn.Module):
        def __init__(self):
            super().__init__()
            d = 16
            self.embed = nn.Linear(16, d)
            self.q, self.k, self.v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
            rest = target - (16 * d + d) - 3 * (d * d + d) - (4 * d * 10 + 10)
            self.mix = nn.Linear(d, max(1, rest // (d + 1) - 1))
            self.head = nn.Linear(4 * d, 10)

        def forward(self, x):
            t = self.embed(patchify_permute(x[:, None], 4))  # (B, 4, d)
            w = torch.softmax(self.q(t) @ self.k(t).transpose(1, 2) / 4, dim=-1)  # (B, 4, 4)
            return self.head((w @ self.v(t)).flatten(1))

    return TinyViT()


@pytest.mark.parametrize("fn, words", [
    (handwritten_attention, ["attention", "matmul", "not a baseline"]),
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


def compare_ref():
    n, _ = ref_split(5.76e23, 20.0)
    return n / 280e9, n / 70e9


def compare_tensor():
    n = torch.tensor(5.76e23 / 120, dtype=torch.float64).sqrt()
    return n / 280e9, n / 70e9


@pytest.mark.parametrize("compare", [compare_ref, compare_tensor])
def test_compare_gopher_right_answers(compare):
    result = check_compute_optimal(ref_split, compare)
    assert result.passed, result.message
    assert "0.25 of Gopher's parameters and 0.99 of Chinchilla's" in result.message


def test_compare_gopher_stub_and_mistakes():
    assert check_compute_optimal(ref_split, _stub).not_implemented
    n, _ = ref_split(5.76e23, 20.0)
    n6, _ = ref_split(6 * 280e9 * 300e9, 20.0)
    _fails_with(check_compute_optimal(ref_split, lambda: (280e9 / n, 70e9 / n)), "upside down")
    _fails_with(check_compute_optimal(ref_split, lambda: (n6 / 280e9, n6 / 70e9)), "5.76e23")
    _fails_with(check_compute_optimal(ref_split, lambda: (0.25, 1.0)), "rather than typing")
    _fails_with(check_compute_optimal(ref_split, lambda: n / 280e9), "pair")


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


# ----- 12.6 the scaling law's prediction, tested ---------------------------------------------------
_record = load_scaling()
_runs = _record["sizes"] + _record["lengths"]
SURFACE = fit_loss_surface([r["params"] for r in _runs], [r["tokens"] for r in _runs],
                           [r["val_bits_per_char"] for r in _runs])
SMALL, FEW = {"d_model": 16, "n_layers": 1, "n_heads": 2}, 60  # a second or so per run: a test, not a lesson
TOKENS = SCALING_RECIPE["batch_size"] * SCALING_RECIPE["block_size"]  # per step


def n_of(size, embeddings=False):
    model = DecoderOnly(DecoderOnlyConfig(vocab_size=65, **size_recipe(size)["model"]))
    return sum(p.numel() for p in model.parameters()) if embeddings else non_embedding_params(model)


def predict_ref(size, steps):
    n, d = n_of(size), steps * TOKENS
    return (SURFACE.predict(n, d), *SURFACE.interval(n, d))


def predict_by_hand(size, steps):
    """Another right answer: N counted by hand (attention 4 (d d + d), FFN 8 d d + 5 d, LayerNorms 4 d; final 2 d)."""
    d = size["d_model"]
    n = size["n_layers"] * (4 * (d * d + d) + 8 * d * d + 5 * d + 4 * d) + 2 * d
    low, high = SURFACE.interval(n, steps * 32 * 64)
    return torch.tensor(SURFACE.predict(n, steps * 32 * 64)), low, high


def measure_ref(size, steps, seed):
    return run_size(size, steps, {**SCALING_RECIPE, "seed": seed})["val_bits_per_char"]


def measure_copy(size, steps, seed):
    import copy

    recipe = copy.deepcopy(SCALING_RECIPE)
    recipe["seed"] = seed
    return torch.tensor(run_size(size, steps, recipe)["val_bits_per_char"])


def test_scaling_prediction_right_answers():
    result = check_scaling_prediction(predict_ref, measure_ref, SMALL, FEW)
    assert result.passed, result.message
    assert "(seed 0)" in result.message and "(seed 1)" in result.message and "interval" in result.message
    assert "not the error of assuming a plane" in result.message
    result = check_scaling_prediction(predict_by_hand, measure_copy, SMALL, FEW)
    assert result.passed, result.message


def test_scaling_prediction_stubs():
    assert check_scaling_prediction(_stub, measure_ref, SMALL, FEW).not_implemented
    assert check_scaling_prediction(predict_ref, _stub, SMALL, FEW).not_implemented


def with_embeddings(size, steps):
    n, d = n_of(size, embeddings=True), steps * TOKENS
    return (SURFACE.predict(n, d), *SURFACE.interval(n, d))


def tokens_per_step_forgotten(size, steps):
    n, d = n_of(size), steps * 32
    return (SURFACE.predict(n, d), *SURFACE.interval(n, d))


def steps_as_tokens(size, steps):
    n = n_of(size)
    return (SURFACE.predict(n, steps), *SURFACE.interval(n, steps))


def ignores_steps(size, steps):
    n, d = n_of(size), 1000 * TOKENS
    return (SURFACE.predict(n, d), *SURFACE.interval(n, d))


def in_nats(size, steps):
    return tuple(v * math.log(2) for v in predict_ref(size, steps))


def narrow_interval(size, steps):
    n, d = n_of(size), steps * TOKENS
    return (SURFACE.predict(n, d), *SURFACE.interval(n, d, level=0.68))


def out_of_order(size, steps):
    pred, low, high = predict_ref(size, steps)
    return low, pred, high


def sizes_only_fit(size, steps):
    """A plane through the six sizes only: at one length it cannot see D."""
    rows = _record["sizes"] + [_record["lengths"][0]]
    surface = fit_loss_surface([r["params"] for r in rows], [r["tokens"] for r in rows],
                               [r["val_bits_per_char"] for r in rows])
    n, d = n_of(size), steps * TOKENS
    return (surface.predict(n, d), *surface.interval(n, d))


@pytest.mark.parametrize("fn, words", [
    (with_embeddings, ["non-embedding"]),
    (tokens_per_step_forgotten, ["batch_size x block_size"]),
    (steps_as_tokens, ["counts tokens"]),
    (ignores_steps, ["ignores the number of steps"]),
    (in_nats, ["nats"]),
    (narrow_interval, ["95 % interval"]),
    (out_of_order, ["(predicted, low, high)"]),
    (sizes_only_fit, ["every run"]),
])
def test_scaling_prediction_mistakes(fn, words):
    _fails_with(check_scaling_prediction(fn, measure_ref, SMALL, FEW), *words)


def typed_in(size, steps, seed):
    return 3.9


def ignores_seed(size, steps, seed):
    return measure_ref(size, steps, 0)


def measured_in_nats(size, steps, seed):
    return measure_ref(size, steps, seed) * math.log(2)


def returns_prediction(size, steps, seed):
    return predict_ref(size, steps)[0]


@pytest.mark.parametrize("fn, words", [
    (typed_in, ["not a number typed in"]),
    (ignores_seed, ["seed"]),
    (measured_in_nats, ["nats"]),
    (returns_prediction, ["prediction itself"]),
])
def test_scaling_measurement_mistakes(fn, words):
    _fails_with(check_scaling_prediction(predict_ref, fn, SMALL, FEW), *words)


def test_scaling_prediction_refuses_a_sweep_run_a_costly_run_and_a_bad_size():
    _fails_with(check_scaling_prediction(predict_ref, measure_ref, {"d_model": 32, "n_layers": 2, "n_heads": 2}, 500),
                "run of the sweep")
    _fails_with(check_scaling_prediction(predict_ref, measure_ref, {"d_model": 96, "n_layers": 3, "n_heads": 6}, 900),
                "smaller size")
    _fails_with(check_scaling_prediction(predict_ref, measure_ref, {"d_model": 30, "n_layers": 1, "n_heads": 4}, 100),
                "multiple of n_heads")
    _fails_with(check_scaling_prediction(predict_ref, measure_ref, {"d_model": 32}, 100), "keys")
