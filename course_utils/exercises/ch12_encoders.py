"""Checkers for the exercises of Chapter 12 (encoders, images, scaling)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn
from torch.overrides import TorchFunctionMode

from .. import mlm as _mlm
from .. import scaling as _scaling
from .. import vit as _vit
from ..mlm import IGNORE
from ..runs.vit import load_vit
from ..scaling import compute_optimal
from ..vit import count_params, load_digits_split, multiply_adds, patchify, unpatchify, zero_positions
from .core import (
    CheckFailed,
    _one_line,
    as_number,
    call_student,
    checker,
    expect_close,
    expect_tensor,
    fail_on_mistake,
    refuse_library,
)
from .experiment import compare_prediction, read_prediction


# ---------------------------------------------------------------- 12.1 BERT's masking rule
def _mask_shares(ids: Tensor, inputs: Tensor, targets: Tensor, mask_id: int) -> dict[str, float]:
    chosen = targets != IGNORE
    n = max(int(chosen.sum()), 1)
    masked = chosen & (inputs == mask_id)
    kept = chosen & (inputs == ids)
    return {"chosen": float(chosen.float().mean()), "mask": int(masked.sum()) / n,
            "random": int((chosen & ~masked & ~kept).sum()) / n, "kept": int(kept.sum()) / n}


@checker("12.1", "BERT's masking rule")
def check_bert_mask(fn: Callable[..., tuple[Tensor, Tensor]]) -> str:
    """Check ``fn(ids, vocab_size, mask_id, rate, generator)`` returns (inputs, targets) by BERT's 80/10/10 rule."""
    refuse_library(fn, (_mlm.bert_mask,), "write the rule yourself with torch.rand and torch.randint.")
    for vocab_size, rate, seed, extra in ((65, 0.15, 0, 0), (30, 0.3, 1, 3), (100, 0.05, 2, 0), (4, 0.5, 3, 0)):
        g = torch.Generator().manual_seed(seed)
        ids = torch.randint(0, vocab_size, (200, 400), generator=g)  # 80,000 positions
        mask_id = vocab_size + extra  # an id past the characters (the chapter's is vocab_size itself)
        with torch.random.fork_rng():  # the learner's global generator is left as it was
            torch.manual_seed(1000 + seed)
            out = call_student(fn, ids, vocab_size, mask_id, rate, torch.Generator().manual_seed(seed + 10),
                               what="your bert_mask")
            torch.manual_seed(2000 + seed)  # another global state: a draw that ignores `generator` changes
            again = call_student(fn, ids, vocab_size, mask_id, rate, torch.Generator().manual_seed(seed + 10),
                                 what="your bert_mask")
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise CheckFailed(f"bert_mask should return a pair (inputs, targets), got {type(out).__name__}")
        inputs = expect_tensor(out[0], "inputs", tuple(ids.shape))
        targets = expect_tensor(out[1], "targets", tuple(ids.shape))
        if inputs.dtype != torch.long or targets.dtype != torch.long:
            raise CheckFailed(f"inputs and targets should hold token ids (torch.long), got {inputs.dtype} "
                              f"and {targets.dtype}")
        same = isinstance(again, (tuple, list)) and len(again) == 2 and all(
            isinstance(a, Tensor) and a.shape == b.shape and torch.equal(a, b) for a, b in zip(again, out, strict=True))
        if not same:
            raise CheckFailed("Two calls with generators seeded the same way gave different results: some random "
                              "draw does not use `generator`. Pass generator=generator to every torch.rand, "
                              "torch.randint or torch.bernoulli call.")
        if bool(((inputs >= vocab_size) & (inputs != mask_id)).any()) or bool((inputs < 0).any()):
            bad = inputs[((inputs >= vocab_size) & (inputs != mask_id)) | (inputs < 0)]
            raise CheckFailed(f"A random replacement is id {int(bad[0])}, which is not a character: with "
                              f"vocab_size={vocab_size} and mask_id={mask_id}, draw random ids from [0, vocab_size) "
                              "(torch.randint's upper end is excluded), so a random id is never [MASK] or beyond.")
        chosen = targets != IGNORE
        if bool(chosen.all()):
            raise CheckFailed("Every position has a target: the loss is on the chosen positions only, so the "
                              f"targets must be {IGNORE} (ignored) everywhere else.")
        s = _mask_shares(ids, inputs, targets, mask_id)
        if abs(s["chosen"] - rate) > 0.01:
            if abs(s["chosen"] - 0.15) < 0.01:
                raise CheckFailed(f"About 15 % of positions were chosen with rate={rate}: use the rate argument "
                                  "instead of a fixed 0.15.")
            if abs(s["chosen"] - 0.8 * rate) < 0.01:
                raise CheckFailed("Only the [MASK] positions have targets: the 10 % random and 10 % unchanged "
                                  "positions are chosen too and must be predicted.")
            raise CheckFailed(f"The share of chosen positions should be the rate ({rate}), got about "
                              f"{s['chosen']:.2f}.")
        if bool((inputs[~chosen] != ids[~chosen]).any()):
            raise CheckFailed("Some positions that were not chosen (target ignored) were changed in the input: "
                              "only chosen positions are masked or replaced.")
        if bool((targets[chosen] != ids[chosen]).any()):
            raise CheckFailed("A target should be the original character at its position, not what the input "
                              "shows there after masking or replacement.")
        if s["mask"] > 0.97:
            raise CheckFailed("Every chosen position became [MASK]: BERT masks 80 % of them, replaces 10 % "
                              "with a random character and leaves 10 % unchanged.")
        if s["kept"] < 0.05:
            raise CheckFailed("No chosen position keeps its own character: 10 % of the chosen positions stay "
                              "unchanged (and are still predicted).")
        expected_random = 0.1 * (1 - 1 / vocab_size)  # a random id can hit the original character
        for key, want in (("mask", 0.8), ("random", expected_random), ("kept", 1 - 0.8 - expected_random)):
            if abs(s[key] - want) > 0.03:
                raise CheckFailed(f"Of the chosen positions, about {want:.0%} should be '{key}', got about "
                                  f"{s[key]:.0%}: draw one number per chosen position and split it 0.8 / 0.1 / "
                                  "0.1.")
        replaced = inputs[chosen & (inputs != mask_id) & (inputs != ids)]
        if replaced.numel() and int(replaced.unique().numel()) < max(2, vocab_size // 2):
            raise CheckFailed("The random replacements use only a few ids: draw each one uniformly from "
                              "[0, vocab_size).")
        if vocab_size == 65:  # about 1,200 replacements: each of the 65 ids turns up about 18 times
            missing = sorted(set(range(vocab_size)) - set(replaced.unique().tolist()))
            if missing:
                raise CheckFailed(f"No random replacement is id {missing[0]}"
                                  + (f" (nor {len(missing) - 1} other ids)" if len(missing) > 1 else "")
                                  + f" in about {replaced.numel():,} replacements: every id of [0, vocab_size) "
                                  "is a character and must be possible. torch.randint(0, vocab_size, ...) "
                                  "includes 0 and excludes vocab_size.")
    return "Of the chosen positions about 80 % show [MASK], 10 % a random character and 10 % their own."


# ---------------------------------------------------------------- 12.2 patches
@checker("12.2", "cutting an image into patches")
def check_patchify(fn: Callable[[Tensor, int], Tensor]) -> None:
    """Check ``fn(images, patch)``: (B, C, H, W) -> (B, H/p * W/p, C * p * p), patches row by row."""
    refuse_library(fn, (_vit.patchify,), "write it with reshape and permute (or F.unfold).")
    g = torch.Generator().manual_seed(0)
    for shape, p in (((2, 1, 8, 8), 2), ((3, 3, 6, 4), 2), ((1, 2, 12, 12), 4), ((2, 1, 8, 8), 8), ((1, 1, 4, 6), 1)):
        x = torch.randn(shape, generator=g)
        B, C, H, W = shape
        got = call_student(fn, x.clone(), p, what="your patchify")
        want = patchify(x, p)
        overlapping = (B, (H - p + 1) * (W - p + 1), C * p * p)
        if overlapping[1] != (H // p) * (W // p) and isinstance(got, Tensor) and tuple(got.shape) == overlapping:
            raise CheckFailed(f"patchify(images of shape {shape}, patch={p}) has shape {overlapping}: "
                              f"{overlapping[1]} overlapping patches, one at every pixel offset. Patches do not "
                              "overlap: step by the patch size (F.unfold(images, patch, stride=patch)).")
        grid = x.reshape(B, C, H // p, p, W // p, p)  # (B, C, rows, p, cols, p)
        mistakes = {
            "Did you reshape without a permute? A plain reshape cuts the image into strips of pixels, not "
            "p x p squares: permute to (B, rows, cols, C, p, p) before flattening.":
                x.reshape(B, -1, C * p * p),
            "The patches are in column order: number them row by row (left to right, then down).":
                grid.permute(0, 4, 2, 1, 3, 5).reshape(B, -1, C * p * p),
            "Each patch is flattened as (p, p, C): flatten it as (C, p, p), channel first, like nn.Unfold.":
                grid.permute(0, 2, 4, 3, 5, 1).reshape(B, -1, C * p * p),
            "Inside a patch the pixels are transposed: flatten each patch row by row.":
                grid.permute(0, 2, 4, 1, 5, 3).reshape(B, -1, C * p * p),
        }
        expect_close(got, want, f"patchify(images of shape {shape}, patch={p})",
                     mistakes=mistakes)


# ---------------------------------------------------------------- 12.3 the ViT and its positions (experiment)
POSITION_OPTIONS = {
    "zeroing": "zeroing the position vectors costs more accuracy than the worst shuffle",
    "shuffling": "the worst shuffle costs more accuracy than zeroing the position vectors",
    "neither": "both cost less than 5 points: the model hardly uses where a patch sits",
}
EXPLAIN = {
    "zeroing": "Without positions the model still sees every patch, and a quarter of a digit says much about the "
               "digit wherever it sits: it loses little. A shuffle is worse than no positions at all, because the "
               "positions it keeps now point to the wrong places.",
    "neither": "Some shuffles cost little (swapping two patches the model reads alike), but others mislead it badly: "
               "look at the worst one.",
    "shuffling": "Without positions the model loses a few points; with positions attached to the wrong patches it "
                 "loses far more: using positions and being misled by wrong ones are different things.",
}


def _shuffle_reference(images: Tensor, perm: Tensor, patch: int) -> Tensor:
    """Images (B, H, W) whose patch i is the input's patch perm[i] (the same permutation for every image)."""
    return unpatchify(patchify(images, patch)[:, perm], images.shape[-1])  # (B, H, W)


def non_identity_permutations(n: int) -> list[tuple[int, ...]]:
    """Every order of n patches except the identity, in itertools' order (23 for the recipe's 4 patches)."""
    return [p for p in itertools.permutations(range(n)) if p != tuple(range(n))]


@torch.no_grad()
def position_reference(model: _vit.VisionTransformer, images: Tensor, labels: Tensor, patch: int,
                       keep_cls: bool = False) -> dict[str, Any]:
    """The experiment done right: plain accuracy, with every position vector zeroed, under each shuffle."""
    model.eval()

    def acc(m: nn.Module, x: Tensor) -> float:
        return float((m(x).argmax(-1) == labels).float().mean())

    zeroed = zero_positions(model)
    if keep_cls:  # the mistake of zeroing the patches' positions only
        zeroed.pos[:, 0] = model.pos[:, 0]
    n = (images.shape[-1] // patch) ** 2
    return {"plain": acc(model, images), "zeroed": acc(zeroed, images),
            "shuffled": [acc(model, _shuffle_reference(images, torch.tensor(p), patch))
                         for p in non_identity_permutations(n)]}


def _read_result(got: Any, n_perms: int) -> dict[str, Any]:
    """The learner's returned dict as {"plain": float, "zeroed": float, "shuffled": [float, ...]}."""
    if not isinstance(got, dict) or {"plain", "zeroed", "shuffled"} - set(got):
        raise CheckFailed("position_experiment should return a dict with the keys 'plain', 'zeroed' and "
                          f"'shuffled', got {type(got).__name__}"
                          + (f" with the keys {sorted(got)}" if isinstance(got, dict) else ""))
    shuffled = got["shuffled"]
    if isinstance(shuffled, Tensor):
        shuffled = shuffled.tolist()
    if not isinstance(shuffled, (list, tuple)):
        raise CheckFailed(f"'shuffled' should be a list of accuracies, one per permutation, got "
                          f"{type(shuffled).__name__}")
    if len(shuffled) == n_perms + 1:
        raise CheckFailed(f"'shuffled' holds {len(shuffled)} accuracies: leave out the identity (the unshuffled "
                          f"order), which is 'plain'; {n_perms} permutations remain.")
    if len(shuffled) != n_perms:
        raise CheckFailed(f"'shuffled' should hold one accuracy for each of the {n_perms} non-identity "
                          f"permutations of the patches, got {len(shuffled)}")
    values = [as_number(v, "each accuracy in 'shuffled'") for v in shuffled]
    plain, zeroed = as_number(got["plain"], "'plain'"), as_number(got["zeroed"], "'zeroed'")
    if any(not 0.0 <= v <= 1.0 for v in [plain, zeroed, *values]):
        raise CheckFailed("Accuracies are shares between 0 and 1 (0.94, not 94).")
    return {"plain": plain, "zeroed": zeroed, "shuffled": values}


def _agrees(got: dict[str, Any], want: dict[str, Any], n_images: int) -> list[str]:
    """The keys on which the learner's measurement differs from the reference by more than one image."""
    tol = 1.0 / n_images + 1e-6
    bad = [k for k in ("plain", "zeroed") if abs(got[k] - want[k]) > tol]
    if any(abs(a - b) > tol for a, b in zip(sorted(got["shuffled"]), sorted(want["shuffled"]), strict=True)):
        bad.append("shuffled")
    return bad


def _position_ranges(info: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """The ranges a correct run lands in: the shipped runs' spread over seeds, widened by 3 points."""
    rows = info["result"]["positions"]  # one dict per seed of the benchmark
    out = {}
    for key in ("zeroed_drop", "worst_drop"):
        values = [r[key] for r in rows]
        out[key] = (max(0.0, min(values) - 0.03), min(1.0, max(values) + 0.03))
    return out


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def _call_experiment(fn: Callable[..., Any], model: nn.Module, images: Tensor, labels: Tensor, patch: int) -> Any:
    """The learner's position_experiment; changing the model's positions in place gets its own hint."""
    try:
        return call_student(fn, model, images, labels, patch, what="your position_experiment")
    except CheckFailed as failure:
        if "in place" in str(failure) and "pos of the" in str(failure):
            raise CheckFailed("your position_experiment zeroed the position vectors of the model it was given, in "
                              "place: zero them on a copy (zeroed = copy.deepcopy(model), then zeroed.pos.zero_() "
                              "under torch.no_grad()), so that the plain and shuffled runs keep theirs.") from None
        raise


@torch.no_grad()
def _train_mode_range(model: _vit.VisionTransformer, images: Tensor, labels: Tensor, zero: bool) -> tuple[float, float]:
    """The lowest and highest accuracy of ``model`` in train mode (dropout on) over 8 seeds."""
    m = zero_positions(model) if zero else model
    values = []
    with torch.random.fork_rng():
        for seed in range(8):
            torch.manual_seed(seed)
            values.append(float((m.train()(images).argmax(-1) == labels).float().mean()))
    m.eval()
    return min(values), max(values)


def _whole_images(got: dict[str, Any], n: int) -> None:
    """Fail when an accuracy on n images is not a multiple of 1/n: a number typed in, not measured."""
    for key, values in (("plain", [got["plain"]]), ("zeroed", [got["zeroed"]]), ("shuffled", got["shuffled"])):
        for value in values:
            if abs(value * n - round(value * n)) > 1e-3:
                raise CheckFailed(f"Your {key!r} accuracy {value:.4g} is no whole number of the {n} images (a "
                                  f"multiple of 1/{n}): measure the model on the images it is given, do not type "
                                  "numbers in.")


def _diagnose(bad: list[str], got: dict[str, Any], want: dict[str, Any], model: _vit.VisionTransformer, images: Tensor,
              labels: Tensor, patch: int) -> None:
    """Name the likely mistake behind a measurement that differs from the checker's; always raises."""
    n = len(labels)
    tol = 1.0 / n
    if "zeroed" in bad and abs(got["zeroed"] - position_reference(
            model, images, labels, patch, keep_cls=True)["zeroed"]) <= tol:
        raise CheckFailed("'zeroed' keeps the class token's position vector: zero every row of model.pos "
                          "(the class token's too), on a copy of the model.")
    for key in ("plain", "zeroed"):
        low, high = _train_mode_range(model, images, labels, zero=key == "zeroed")
        if key in bad and low - tol <= got[key] <= high + tol:
            raise CheckFailed(f"Your {key!r} accuracy lies in the range the model gives in train mode (dropout on, "
                              f"another result at every call): call model.eval() (and eval() on the zeroed copy) "
                              "before measuring.")
    if bad == ["plain"] or (abs(got["plain"] - want["plain"]) > 0.02 and "plain" in bad):
        raise CheckFailed(f"'plain' should be the shipped ViT's accuracy on the {n} test images it "
                          "was given, unshuffled and in eval mode (model.eval(): dropout off).")
    if bad == ["shuffled"]:
        raise CheckFailed("'plain' and 'zeroed' agree with the checker's measurement, 'shuffled' does not: it "
                          "should hold the accuracy under each of the non-identity orders of "
                          "itertools.permutations(range(number of patches)), each once (not random "
                          "permutations), made with your shuffle_patches and the given patch size.")
    raise CheckFailed(f"Your {' and '.join(repr(b) for b in bad)} differ from the same measurement made "
                      "by the checker on the model and images your function was given: use the arguments "
                      "(model, images, labels, patch), not the notebook's globals.")


@checker("12.3", "the ViT and its positions")
def check_position_experiment(prediction: Any, shuffle_fn: Callable[..., Tensor],
                              experiment_fn: Callable[..., Any]) -> str:
    """Check the shuffle, re-run the learner's ``experiment_fn(model, images, labels, patch)`` and judge it.

    The learner's function runs on the shipped ViT and the chapter's test images, and again on a
    second model and a subset of images, where the checker knows the answers too: numbers that do
    not come from measuring the model it was given fail.
    """
    key = read_prediction(prediction, POSITION_OPTIONS)
    g = torch.Generator().manual_seed(0)
    x = torch.rand(2, 8, 8, generator=g)
    for p in (2, 4):
        perm = torch.randperm((8 // p) ** 2, generator=g)
        got = call_student(shuffle_fn, x.clone(), perm.clone(), p, what="your shuffle_patches")
        if isinstance(got, Tensor) and tuple(got.shape) == (2, (8 // p) ** 2, p * p):
            raise CheckFailed("The result is not reassembled into images: put the shuffled patches back into "
                              "(B, H, W) images the model can read.")
        patches = patchify(x, p)[:, perm]  # (B, N, p p)
        expect_close(got, _shuffle_reference(x, perm, p), f"shuffle_patches(images, perm, patch={p})", mistakes={
            "The patches moved the other way: position i of the result holds patch perm[i] (patches[:, perm]).":
                _shuffle_reference(x, torch.argsort(perm), p),
            "The patches were put back with a plain reshape, which cuts each patch into strips: permute "
            "(B, rows, cols, p, p) to (B, rows, p, cols, p) before the reshape to (B, H, W).":
                patches.reshape(2, 8, 8),
            "The image came back unshuffled: use `perm` to reorder the patches.": x,
        })
    model, info = load_vit()
    patch = info["recipe"]["model"]["patch"]
    _, _, images, labels = load_digits_split(info["recipe"]["test_size"], info["recipe"]["split_seed"])
    n_perms = len(non_identity_permutations((8 // patch) ** 2))
    want = position_reference(model, images, labels, patch)
    got = _read_result(_call_experiment(experiment_fn, model, images, labels, patch), n_perms)
    _whole_images(got, len(labels))
    if bad := _agrees(got, want, len(labels)):
        _diagnose(bad, got, want, model, images, labels, patch)
    # the same function on another model and fewer images: a measurement follows its inputs
    other = zero_positions(model)
    with torch.no_grad():
        other.pos.copy_(model.pos[:, torch.tensor([0, 2, 1, 4, 3])] if model.pos.shape[1] == 5 else model.pos.flip(1))
    few = slice(0, 300)
    want2 = position_reference(other, images[few], labels[few], patch)
    got2 = _read_result(_call_experiment(experiment_fn, other, images[few], labels[few], patch), n_perms)
    _whole_images(got2, 300)
    if got2 == got or _agrees(got2, want2, 300):
        raise CheckFailed("On another model and 300 of the images your position_experiment does not return "
                          "what that model scores: measure the model and images it is given, do not return "
                          "fixed numbers.")
    zeroed_drop = got["plain"] - got["zeroed"]
    worst_drop = got["plain"] - min(got["shuffled"])
    ranges = _position_ranges(info)
    for _, value, (low, high), what in (
            ("zeroed_drop", zeroed_drop, ranges["zeroed_drop"], "the points lost with positions zeroed"),
            ("worst_drop", worst_drop, ranges["worst_drop"], "the points lost under the worst shuffle")):
        if not low <= value <= high:
            raise CheckFailed(f"{what.capitalize()}, {100 * value:.1f}, is outside the range of the shipped runs "
                              f"({100 * low:.0f} to {100 * high:.0f}): check which accuracies you subtract.")
    outcome = ("neither" if max(zeroed_drop, worst_drop) < 0.05 else
               "zeroing" if zeroed_drop > worst_drop else "shuffling")
    shuffled = got["shuffled"]
    lo_z, hi_z = ranges["zeroed_drop"]
    lo_w, hi_w = ranges["worst_drop"]
    return (f"Your run: plain {_pct(got['plain'])}; positions zeroed {_pct(got['zeroed'])} "
            f"(-{100 * zeroed_drop:.1f} points; shipped runs: {100 * lo_z:.0f} to {100 * hi_z:.0f}); "
            f"{len(shuffled)} shuffles {_pct(min(shuffled))} to {_pct(max(shuffled))}, mean "
            f"{_pct(sum(shuffled) / len(shuffled))} (worst -{100 * worst_drop:.1f} points; shipped runs: "
            f"{100 * lo_w:.0f} to {100 * hi_w:.0f}). "
            + compare_prediction(key, outcome, EXPLAIN))


# ---------------------------------------------------------------- 12.4 a baseline at equal size (design + experiment)
TRANSFORMER_PARTS = ("Attention", "Transformer", "EncoderBlock", "DecoderBlock")
_PRODUCTS = {"matmul", "__matmul__", "__rmatmul__", "bmm", "baddbmm", "einsum", "mm", "tensordot"}
_ATTENTION = {"scaled_dot_product_attention", "multi_head_attention_forward"}


class _AttentionSpy(TorchFunctionMode):
    """Sees a matrix product of two tensors computed from the input (q k^T, weights v): attention's mark.

    A layer multiplies an activation by a weight; attention multiplies two activations. The input
    is the only tensor that requires a gradient while the spy runs (the weights are frozen), so an
    operand "comes from the input" when it requires a gradient.
    """

    def __init__(self) -> None:
        super().__init__()
        self.found = ""

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        name = getattr(func, "__name__", "")
        if name in _ATTENTION:
            self.found = self.found or name
        elif name in _PRODUCTS:
            flat = [a for a in args if isinstance(a, Tensor)]
            flat += [t for a in args if isinstance(a, (list, tuple)) for t in a if isinstance(t, Tensor)]
            if sum(t.requires_grad for t in flat) >= 2:
                self.found = self.found or f"{name} on two tensors computed from the input"
        return func(*args, **(kwargs or {}))


def _attention_inside(model: nn.Module, images: Tensor) -> str:
    """What in ``model``'s forward pass multiplies two activations ('' if nothing does)."""
    frozen = [(p, p.requires_grad) for p in model.parameters()]
    spy = _AttentionSpy()
    try:
        for p, _ in frozen:
            p.requires_grad_(False)
        with torch.enable_grad(), spy:
            model.eval()(images.clone().requires_grad_(True))
    except Exception:  # the learner's module may fail in any way: the shape check below reports it
        return ""
    finally:
        for p, flag in frozen:
            p.requires_grad_(flag)
    return spy.found


def _short_training(build: Callable[[Any], nn.Module], data: tuple[Tensor, ...]) -> float:
    """Test accuracy of ``build(recipe)`` after the chapter's 6-epoch run of the ViT's recipe (seeded)."""
    from ..runs.core import run
    from ..runs.vit import VIT_RECIPE
    from ..vit import accuracy, classification_loss, epoch_batches, steps_per_epoch

    x_train, y_train, x_test, y_test = data
    steps = 6 * steps_per_epoch(len(y_train), VIT_RECIPE["batch_size"])
    result = run(VIT_RECIPE, build, lambda r, g: epoch_batches(x_train, y_train, r["batch_size"], g, r["shift"]),
                 progress=False, steps=steps, loss_fn=classification_loss)
    return accuracy(result.model, x_test, y_test)


@checker("12.4", "a baseline with the ViT's parameter count")
def check_baseline_design(fn: Callable[[int], nn.Module], against: dict[str, float] | None = None) -> str:
    """Check ``fn(target)`` returns a non-Transformer module mapping (B, 8, 8) digits to (B, 10), target +- 5 %.

    Then train it at the ViT's size for the chapter's 6 epochs and report its test accuracy, beside
    ``against`` ({"name": test accuracy} of models trained the same way, e.g. the live ViT and MLP).
    """
    for library in (_vit.matched_mlp, _vit.mlp_baseline):
        refuse_library(fn, (library,), "choose the layers and compute their width from `target` yourself.")
    images = torch.rand(3, 8, 8, generator=torch.Generator().manual_seed(0))
    counts, models = {}, {}
    for target in (69_194, 20_000, 150_000):
        model = call_student(fn, target, what="your make_baseline")
        if not isinstance(model, nn.Module):
            raise CheckFailed(f"make_baseline should return an nn.Module, got {type(model).__name__}")
        parts = sorted({type(m).__name__ for m in model.modules()
                        if any(t.lower() in type(m).__name__.lower() for t in TRANSFORMER_PARTS)})
        found = _attention_inside(model, images)
        if parts or found:
            what = ", ".join(parts) if parts else f"attention (its forward pass calls {found})"
            raise CheckFailed(f"Your model contains {what}: a Transformer is not a baseline for a "
                              "Transformer. Build a non-Transformer model: an MLP (nn.Linear layers) or a small "
                              "CNN (nn.Conv2d), whose layers multiply the input by weights, never two "
                              "activations by each other.")
        try:
            with torch.no_grad():
                out = model.eval()(images)
        except Exception as error:  # the learner's module may fail in any way
            raise CheckFailed(f"your model cannot read a batch of images of shape (3, 8, 8): "
                              f"{type(error).__name__}: {error}. Flatten the 8 x 8 pixels first (nn.Flatten), "
                              "or add a channel dimension for a convolution.") from None
        expect_tensor(out, "the model's output for 3 images", (3, 10))
        counts[target], models[target] = count_params(model), model
    if len(set(counts.values())) == 1:
        raise CheckFailed("The size does not change with the target: compute the width from `target`.")
    for target, n in counts.items():
        if abs(n - target) > 0.05 * target:
            raise CheckFailed(f"For a target of {target:,} parameters the model has {n:,}, more than 5 % away. "
                              "Each nn.Linear(a, b) holds a b + b parameters (weights and biases); "
                              "count them with sum(p.numel() for p in model.parameters()).")
    vit, info = load_vit()
    mine, theirs = multiply_adds(models[69_194]), multiply_adds(vit)
    data = load_digits_split(info["recipe"]["test_size"], info["recipe"]["split_seed"])
    try:
        acc = _short_training(lambda r: call_student(fn, 69_194, what="your make_baseline"), data)
    except CheckFailed:
        raise
    except Exception as error:  # the learner's module may fail in training in any way
        raise CheckFailed(f"training your model failed: {type(error).__name__}: {_one_line(error)}. It must "
                          "have parameters and give logits (B, 10) for a batch (B, 8, 8).") from None
    beside = ""
    if against is not None:
        if not isinstance(against, dict) or not all(
                isinstance(k, str) and isinstance(v, (int, float)) and 0 <= v <= 1 for k, v in against.items()):
            raise CheckFailed(f"against must map names to test accuracies between 0 and 1, got {against!r:.80}")
        beside = "; " + ", ".join(f"the live {k} {_pct(v)}" for k, v in against.items())
    ratio = (f"{theirs / max(mine, 1):.1f} times as many" if theirs >= mine else
             f"your model {mine / theirs:.1f} times as many")
    return (f"At the ViT's size your model has {counts[69_194]:,} parameters and does {mine:,} multiply-adds per "
            f"image; the ViT does {theirs:,}, {ratio}. Trained for 6 epochs with the ViT's recipe, as in the live "
            f"run above, it scores {_pct(acc)} of the {len(data[3])} test images{beside} (one seed"
            f"{' each' if beside else ''}; one image is {100 / len(data[3]):.2f} points).")


# ---------------------------------------------------------------- 12.5 compute-optimal split (derive)
GOPHER_BUDGET, GOPHER_N, CHINCHILLA_N = 5.76e23, 280e9, 70e9  # Hoffmann et al. 2022, Table 1 and section 4


@checker("12.5", "the compute-optimal split")
def check_compute_optimal(fn: Callable[[float, float], Any], compare: Callable[[], Any] | None = None) -> str | None:
    """Check ``fn(compute, tokens_per_param)`` returns (N, D) with 6 N D = compute and D = tokens_per_param N.

    ``compare()`` returns (N / Gopher's N, N / Chinchilla's N) for N the optimum at Gopher's budget.
    """
    refuse_library(fn, (_scaling.compute_optimal,), "derive N and D from C = 6 N D and D = r N yourself.")
    for compute, ratio in ((5.76e23, 20.0), (1e21, 20.0), (3.14e23, 1.7), (1e18, 100.0)):
        got = call_student(fn, compute, ratio, what="your optimal_split")
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            raise CheckFailed(f"optimal_split should return a pair (N, D), got {type(got).__name__}")
        n, d = (as_number(v, "N and D") for v in got)
        want_n, want_d = compute_optimal(compute, ratio)
        if math.isclose(n, want_d, rel_tol=1e-3) and math.isclose(d, want_n, rel_tol=1e-3):
            raise CheckFailed("N and D are swapped: return (parameters, tokens), and D is the larger one.")
        if math.isclose(n, math.sqrt(compute / ratio), rel_tol=1e-3):
            raise CheckFailed("Did you forget the 6 in C = 6 N D? Training costs about 6 operations per "
                              "parameter per token (2 forward, 4 backward).")
        if math.isclose(n, math.sqrt(compute / (2 * ratio)), rel_tol=1e-3):
            raise CheckFailed("C = 2 N D counts only the forward pass: training costs 6 N D (forward and backward).")
        if math.isclose(n, math.sqrt(compute / 120.0), rel_tol=1e-3) and ratio != 20.0:
            raise CheckFailed("Use the tokens_per_param argument instead of a fixed 20.")
        for what, value, want in (("N", n, want_n), ("D", d, want_d)):
            if not math.isclose(value, want, rel_tol=1e-3):
                raise CheckFailed(f"For C = {compute:.3g} and {ratio:g} tokens per parameter, {what} should be "
                                  f"about {want:.3g}, got {value:.3g}: solve C = 6 N D with D = ratio * N.")
    if compare is None:
        return None
    result = call_student(compare, what="your compare_gopher")
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise CheckFailed(f"compare_gopher should return a pair (N / Gopher's N, N / Chinchilla's N), got "
                          f"{type(result).__name__}")
    to_gopher, to_chinchilla = (as_number(v, "each ratio of compare_gopher") for v in result)
    n_opt, _ = compute_optimal(GOPHER_BUDGET, 20.0)
    ratios = (n_opt / GOPHER_N, n_opt / CHINCHILLA_N)
    if math.isclose(to_gopher, 1 / ratios[0], rel_tol=1e-3) or math.isclose(to_chinchilla, 1 / ratios[1], rel_tol=1e-3):
        raise CheckFailed("A ratio is upside down: divide the compute-optimal N by the published model's N "
                          "(below 1 means the published model is larger than the optimum).")
    n_6nd, _ = compute_optimal(6 * GOPHER_N * 300e9, 20.0)
    if math.isclose(to_gopher, n_6nd / GOPHER_N, rel_tol=1e-3):
        raise CheckFailed("You used 6 N D of Gopher's N and D (5.04e23) as its budget: the exercise gives "
                          "Hoffmann et al.'s figure, 5.76e23 operations.")
    pairs = (("N / Gopher's N", to_gopher, ratios[0]), ("N / Chinchilla's N", to_chinchilla, ratios[1]))
    for what, got, value in pairs:
        if not math.isclose(got, value, rel_tol=1e-3):
            raise CheckFailed(f"{what} should be what your optimal_split gives for 5.76e23 operations at 20 tokens "
                              f"per parameter, divided by {GOPHER_N:.3g} or {CHINCHILLA_N:.3g}, got {got:.3g}: "
                              "compute it with your function rather than typing a rounded number.")
    return (f"By your function Gopher's budget buys {to_gopher:.2f} of Gopher's parameters and "
            f"{to_chinchilla:.2f} of Chinchilla's.")


# ---------------------------------------------------------------- 12.6 the law's prediction, tested (experiment)
MAX_COMPUTE = 2e11  # 6 N D of one run: about 3 CPU seconds (the sweep's 25k-parameter model for 250 steps is 0.8e11)


def _surface() -> tuple[_scaling.LossSurfaceFit, list[dict[str, Any]], dict[str, Any]]:
    """The plane fitted through the shipped sweep (every size and length, as in the chapter)."""
    from ..runs.scaling import load_scaling

    record = load_scaling()
    runs = record["sizes"] + record["lengths"]
    return _scaling.fit_loss_surface([r["params"] for r in runs], [r["tokens"] for r in runs],
                                     [r["val_bits_per_char"] for r in runs]), runs, record["recipe"]


def _read_size(size: Any, steps: Any) -> tuple[dict[str, int], int]:
    """The learner's new run: a size dict {"d_model", "n_layers", "n_heads"} and a number of steps."""
    keys = {"d_model", "n_layers", "n_heads"}
    if not isinstance(size, dict) or set(size) != keys:
        raise CheckFailed(f"the new size should be a dict with the keys 'd_model', 'n_heads' and 'n_layers' (like "
                          f"the sweep's sizes), got {size!r:.80}")
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in size.values()):
        raise CheckFailed(f"d_model, n_layers and n_heads should be positive whole numbers, got {size!r:.80}")
    if size["d_model"] % size["n_heads"]:
        raise CheckFailed(f"d_model ({size['d_model']}) should be a multiple of n_heads ({size['n_heads']}).")
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
        raise CheckFailed(f"the number of steps should be a positive whole number, got {steps!r:.40}")
    return dict(size), steps


def _new_run(size: dict[str, int], steps: int, recipe: dict[str, Any]) -> tuple[int, int, int]:
    """(N non-embedding, N with the embedding tables, D tokens) of a run of the sweep's recipe."""
    from ..gpt import DecoderOnly, DecoderOnlyConfig
    from ..runs.scaling import size_recipe

    model = DecoderOnly(DecoderOnlyConfig(vocab_size=65, **size_recipe(size, recipe)["model"]))
    return (_scaling.non_embedding_params(model), count_params(model),
            steps * recipe["batch_size"] * recipe["block_size"])


def _read_prediction(got: Any, what: str) -> tuple[float, float, float]:
    if not isinstance(got, (tuple, list)) or len(got) != 3:
        raise CheckFailed(f"{what} should return three numbers (predicted, low, high), got {type(got).__name__}")
    pred, low, high = (as_number(v, f"each number {what} returns") for v in got)
    if not low <= pred <= high:
        raise CheckFailed(f"{what} returned {pred:.3g}, {low:.3g}, {high:.3g}: return (predicted, low, high), the "
                          "prediction between the two ends of its interval.")
    return pred, low, high


@checker("12.6", "the scaling law's prediction, tested")
def check_scaling_prediction(predict_fn: Callable[..., Any], measure_fn: Callable[..., Any], size: Any,
                             steps: Any) -> str:
    """Check ``predict_fn(size, steps)`` against the fitted surface, run ``measure_fn(size, steps, seed)`` twice
    (seeds 0 and 1) and say whether each measurement lands inside the predicted 95 % interval."""
    from .experiment import measure, require_own_run

    size, steps = _read_size(size, steps)
    surface, runs, recipe = _surface()
    # the prediction: three sizes and lengths (the learner's and two others), each against the surface
    for s, k in ((size, steps), ({"d_model": 16, "n_layers": 2, "n_heads": 2}, 400),
                 ({"d_model": 128, "n_layers": 4, "n_heads": 8}, 5000)):
        n, n_all, d = _new_run(s, k, recipe)
        what = f"your predict_loss({s}, {k})"
        pred, low, high = _read_prediction(call_student(predict_fn, dict(s), k, what="your predict_loss"), what)
        want = (surface.predict(n, d), *surface.interval(n, d))
        d_sweep = recipe["size_steps"] * recipe["batch_size"] * recipe["block_size"]
        if all(math.isclose(a, b, rel_tol=1e-4) for a, b in zip((pred, low, high), want, strict=True)):
            continue
        mistakes = {
            "N counts the embedding and output tables: the sweep's N (and the fit's) is the non-embedding count "
            "(non_embedding_params)": (surface.predict(n_all, d), *surface.interval(n_all, d)),
            "D counts steps x batch: every step trains on batch_size x block_size tokens, D = steps x 32 x 64":
                (surface.predict(n, d // recipe["block_size"]), *surface.interval(n, d // recipe["block_size"])),
            "D is the number of steps: the fit's D counts tokens, steps x batch_size x block_size":
                (surface.predict(n, k), *surface.interval(n, k)),
            "your prediction ignores the number of steps: it is the surface at the sweep's 1,000 steps for "
            "every length; D = steps x batch_size x block_size":
                (surface.predict(n, d_sweep), *surface.interval(n, d_sweep)),
            "the prediction is in nats: the runs' loss is in bits per character":
                tuple(v * math.log(2) for v in want),
        }
        fail_on_mistake((pred, low, high), {f"{hint}.": wrong for hint, wrong in mistakes.items()}, lambda g, w: all(
            math.isclose(a, b, rel_tol=1e-3) for a, b in zip(g, w, strict=True)), f"{what}: ")
        if math.isclose(pred, want[0], rel_tol=1e-4):
            raise CheckFailed(f"{what}: the prediction is right, the interval ({low:.3g}-{high:.3g}) is not "
                              f"({want[1]:.3g}-{want[2]:.3g}): use the surface's 95 % interval, "
                              "surface.interval(N, D).")
        raise CheckFailed(f"{what} predicts {pred:.3g} bits/char, the surface fitted through the sweep's "
                          f"{surface.n_points} runs gives {want[0]:.3g} at N = {n:,} non-embedding parameters and "
                          f"D = {d:,} tokens: fit L(N, D) through every run (sizes and lengths) and evaluate it "
                          "there.")
    n, _, d = _new_run(size, steps, recipe)
    if any(r["params"] == n and r["tokens"] == d for r in runs):
        raise CheckFailed(f"N = {n:,} and D = {d:,} is a run of the sweep: the fit has seen it. Choose another size "
                          "or number of steps.")
    compute = _scaling.training_flops(n, d)
    if compute > MAX_COMPUTE:
        raise CheckFailed(f"This run costs C = 6 N D = {compute:.2g} operations, more than the {MAX_COMPUTE:.0e} "
                          "this exercise allows (a few CPU seconds for each of two seeds): choose a smaller size "
                          "or fewer steps.")
    pred, low, high = surface.predict(n, d), *surface.interval(n, d)
    label = f"measure_loss({size}, {steps}, seed=0)"
    first = measure(measure_fn, "measure_loss", dict(size), steps, 0, label=label)
    if math.isclose(first, pred, rel_tol=1e-9):
        raise CheckFailed(f"{label} returned the prediction itself: train the model (run_size) and return what "
                          "it measures.")
    second = require_own_run(measure_fn, "measure_loss", (dict(size), steps, 0), first, seed_at=2, other_seed=1,
                             what=label)
    if math.isclose(first, pred * math.log(2), rel_tol=0.15) and not math.isclose(first, pred, rel_tol=0.15):
        raise CheckFailed(f"{label} is {first:.3g}, about ln 2 times the prediction: the loss is in nats, the "
                          "sweep's in bits per character (model_bits_per_char, or the run's 'val_bits_per_char').")
    for value in (first, second):
        if not 0.7 * pred <= value <= 1.4 * pred:
            raise CheckFailed(f"{label} gives {value:.3g} bits/char, far from the prediction ({pred:.3g}): return "
                              "the validation bits per character of the trained run (its 'val_bits_per_char'), "
                              "not a training loss or an accuracy.")
    where = ["inside" if low <= v <= high else ("below" if v < low else "above") for v in (first, second)]
    beyond = [axis for axis, value, top in (("N", n, max(r["params"] for r in runs)),
                                            ("D", d, max(r["tokens"] for r in runs)))
              if value > top]
    below = [axis for axis, value, bottom in (("N", n, min(r["params"] for r in runs)),
                                              ("D", d, min(r["tokens"] for r in runs)))
             if value < bottom]
    place = ("an extrapolation beyond the runs in " + " and ".join(beyond) if beyond else
             "an extrapolation below the runs in " + " and ".join(below) if below else
             "an interpolation: inside the runs' range of N and of D")
    verdict = ("both inside the interval" if where == ["inside", "inside"] else
               f"seed 0 {where[0]}, seed 1 {where[1]} the interval")
    return (f"Your run: N = {n:,} non-embedding parameters, D = {d:,} tokens, C = {compute:.2g} ({place}). "
            f"Predicted {pred:.3f} bits/char, 95 % interval {low:.3f}-{high:.3f}; measured {first:.3f} (seed 0) "
            f"and {second:.3f} (seed 1): {verdict}. The interval covers the scatter of runs about the fitted "
            "plane, not the error of assuming a plane.")
