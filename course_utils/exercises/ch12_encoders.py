"""Checkers for the exercises of Chapter 12 (encoders, images, scaling)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from ..mlm import IGNORE
from ..runs.vit import load_vit
from ..scaling import compute_optimal
from ..vit import VIT_RECIPE, count_params, load_digits_split, patchify
from .core import CheckFailed, as_number, call_student, checker, expect_close, expect_tensor
from .experiment import Expected, compare_prediction, judge_range, require_prediction


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
    for vocab_size, rate, seed in ((65, 0.15, 0), (30, 0.3, 1), (100, 0.05, 2)):
        g = torch.Generator().manual_seed(seed)
        ids = torch.randint(0, vocab_size, (200, 400), generator=g)  # 80,000 positions
        mask_id = vocab_size  # one id past the characters, as in the chapter
        out = call_student(fn, ids, vocab_size, mask_id, rate, torch.Generator().manual_seed(seed + 10),
                           what="your bert_mask")
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise CheckFailed(f"bert_mask should return a pair (inputs, targets), got {type(out).__name__}")
        inputs = expect_tensor(out[0], "inputs", tuple(ids.shape))
        targets = expect_tensor(out[1], "targets", tuple(ids.shape))
        if inputs.dtype != torch.long or targets.dtype != torch.long:
            raise CheckFailed(f"inputs and targets should hold token ids (torch.long), got {inputs.dtype} "
                              f"and {targets.dtype}")
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
        if bool((inputs < 0).any()) or bool((inputs > mask_id).any()):
            raise CheckFailed(f"Inputs hold ids outside [0, {mask_id}]: random replacements come from the "
                              f"vocabulary [0, vocab_size).")
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
        if replaced.numel() and int(replaced.unique().numel()) < vocab_size // 2:
            raise CheckFailed("The random replacements use only a few ids: draw each one uniformly from "
                              "[0, vocab_size).")
    return "Of the chosen positions about 80 % show [MASK], 10 % a random character and 10 % their own."


# ---------------------------------------------------------------- 12.2 patches
@checker("12.2", "cutting an image into patches")
def check_patchify(fn: Callable[[Tensor, int], Tensor]) -> None:
    """Check ``fn(images, patch)``: (B, C, H, W) -> (B, H/p * W/p, C * p * p), patches row by row."""
    g = torch.Generator().manual_seed(0)
    for shape, p in (((2, 1, 8, 8), 2), ((3, 3, 6, 4), 2), ((1, 2, 12, 12), 4), ((2, 1, 8, 8), 8), ((1, 1, 4, 6), 1)):
        x = torch.randn(shape, generator=g)
        B, C, H, W = shape
        got = call_student(fn, x.clone(), p, what="your patchify")
        want = patchify(x, p)
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


# ---------------------------------------------------------------- 12.3 shuffled patches (experiment)
SHUFFLE_OPTIONS = {
    "same": "accuracy stays within a few points: a patch is recognisable wherever it is",
    "some": "accuracy falls by more than a few points but stays far above chance",
    "chance": "accuracy falls to near chance (10 %): without the right positions the image is noise",
}
SHUFFLE_EXPECTED = Expected(
    quantity="test accuracy of the shipped ViT with the patches shuffled",
    low=0.5, high=0.96,
    meaning="a quarter of a digit says much about the digit wherever it sits, and the rest of what the model "
            "knows about layout comes from the position vectors, which now point to the wrong places.",
    below="Near chance: did you move single pixels or rows instead of whole patches, or use another "
          "permutation than `perm`?",
    above="Did you shuffle the way `perm` says, for every image, and reassemble the image before calling the "
          "model?",
)


def _shuffle_reference(images: Tensor, perm: Tensor, patch: int) -> Tensor:
    B, H, W = images.shape
    rows, cols = H // patch, W // patch
    patches = patchify(images, patch)[:, perm]  # (B, N, p p): patch i goes where patch perm[i] was
    grid = patches.reshape(B, rows, cols, patch, patch)  # (B, rows, cols, p, p)
    return grid.permute(0, 1, 3, 2, 4).reshape(B, H, W)  # (B, H, W)


@checker("12.3", "shuffled patches")
def check_shuffled_patches(prediction: str | Callable[[], str], fn: Callable[..., Tensor],
                           model: nn.Module | None = None, images: Tensor | None = None,
                           labels: Tensor | None = None, patch: int | None = None) -> str:
    """Check ``fn(images, perm, patch)`` shuffles the patches of (B, H, W) images, then judge the accuracy.

    ``prediction`` is "same" or "drops", or a function returning it. By default the model is the
    shipped ViT (``course_utils/assets/vit_digits.pt``) and the images are the chapter's test split.
    """
    if callable(prediction):
        prediction = call_student(prediction, what="your prediction")
    key = require_prediction(prediction, SHUFFLE_OPTIONS)
    if model is None:
        model, info = load_vit()
        patch = info["recipe"]["model"]["patch"]
    if images is None or labels is None:
        _, _, images, labels = load_digits_split(VIT_RECIPE["test_size"], VIT_RECIPE["seed"])
    patch = patch or 2
    g = torch.Generator().manual_seed(0)
    x = torch.rand(2, 8, 8, generator=g)
    for p in (2, 4):
        perm = torch.randperm((8 // p) ** 2, generator=g)
        got = call_student(fn, x.clone(), perm.clone(), p, what="your shuffle_patches")
        want = _shuffle_reference(x, perm, p)
        if isinstance(got, Tensor) and tuple(got.shape) == (2, (8 // p) ** 2, p * p):
            raise CheckFailed("The result is not reassembled into images: put the shuffled patches back into "
                              "(B, H, W) images the model can read.")
        expect_close(got, want, f"shuffle_patches(images, perm, patch={p})", mistakes={
            "The patches moved the other way: position i of the result holds patch perm[i] (patches[:, perm]).":
                _shuffle_reference(x, torch.argsort(perm), p),
        })
    perm = torch.randperm((8 // patch) ** 2, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        model.eval()
        shuffled = _shuffle_reference(images, perm, patch)
        accuracy = float((model(shuffled).argmax(-1) == labels).float().mean())
        plain = float((model(images).argmax(-1) == labels).float().mean())
    verdict = judge_range(accuracy, SHUFFLE_EXPECTED, what="the measured accuracy")
    outcome = "same" if accuracy > plain - 0.03 else "chance" if accuracy < 0.3 else "some"
    return verdict + " " + compare_prediction(key, outcome, {
        "same": "The encoder itself ignores order; the position vectors added to the patches do not, and after "
                "the shuffle they describe the wrong places.",
        "chance": "Each patch still carries a quarter of the digit's strokes, and the class token reads all of "
                  "them: that survives any order."})


# ---------------------------------------------------------------- 12.4 a baseline at equal size (design)
@checker("12.4", "a baseline with the ViT's parameter count")
def check_baseline_design(fn: Callable[[int], nn.Module]) -> str:
    """Check ``fn(target)`` returns a module mapping (B, 8, 8) digits to (B, 10) logits, target +- 5 % parameters."""
    images = torch.rand(3, 8, 8, generator=torch.Generator().manual_seed(0))
    counts = {}
    for target in (69_194, 20_000, 150_000):
        model = call_student(fn, target, what="your make_baseline")
        if not isinstance(model, nn.Module):
            raise CheckFailed(f"make_baseline should return an nn.Module, got {type(model).__name__}")
        try:
            with torch.no_grad():
                out = model(images)
        except Exception as error:  # the learner's module may fail in any way
            raise CheckFailed(f"your model cannot read a batch of images of shape (3, 8, 8): "
                              f"{type(error).__name__}: {error}. Flatten the 8 x 8 pixels first (nn.Flatten), "
                              "or add a channel dimension for a convolution.") from None
        expect_tensor(out, "the model's output for 3 images", (3, 10))
        counts[target] = count_params(model)
    if len(set(counts.values())) == 1:
        raise CheckFailed("The size does not change with the target: compute the width from `target`.")
    for target, n in counts.items():
        if abs(n - target) > 0.05 * target:
            raise CheckFailed(f"For a target of {target:,} parameters the model has {n:,}, more than 5 % away. "
                              "Each nn.Linear(a, b) holds a b + b parameters (weights and biases); "
                              "count them with sum(p.numel() for p in model.parameters()).")
    return "Equal parameter counts make the comparison about the architecture, not about its size."


# ---------------------------------------------------------------- 12.5 compute-optimal split (derive)
@checker("12.5", "the compute-optimal split")
def check_compute_optimal(fn: Callable[[float, float], Any]) -> None:
    """Check ``fn(compute, tokens_per_param)`` returns (N, D) with 6 N D = compute and D = tokens_per_param N."""
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
