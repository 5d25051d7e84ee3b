"""A Vision Transformer (Dosovitskiy et al., 2021) on scikit-learn's 8x8 handwritten digits:
patches as tokens, a learned class token (or global average pooling) and learned positions,
Chapter 5's encoder blocks; an MLP baseline with about as many parameters; and the training
loop of Chapter 6 run over epochs. Chapter 12.

The digits ship with scikit-learn (``sklearn.datasets.load_digits``: 1,797 images of 8x8
pixels with values 0-16, from the UCI "Optical Recognition of Handwritten Digits" data set);
nothing is downloaded. The recipes and the shipped model live in ``course_utils.runs.vit``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from .model import EncoderBlock
from .norm import LayerNorm
from .training import TrainConfig, TrainHistory, train
from .utils import count_params  # noqa: F401  (re-exported: Chapter 12 imports it from here)
from .validate import (
    check_bool,
    check_choice,
    check_finite,
    check_float_tensor,
    check_int,
    check_module,
    check_number,
    check_positive_int,
    check_probability,
    check_rank,
)

N_DIGITS = 1797  # images in scikit-learn's digits


def load_digits_split(test_size: int = 450, seed: int = 0) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(train images (N, 8, 8) in [0, 1], train labels, test images, test labels), a fixed split. Chapter 12."""
    from sklearn.datasets import load_digits

    check_int("test_size", test_size, low=1, high=N_DIGITS - 1)
    seed = check_int("seed", seed, low=0)
    digits = load_digits()
    images = torch.tensor(digits.images, dtype=torch.float32) / 16.0  # (1797, 8, 8), pixel values 0-16 -> 0-1
    labels = torch.tensor(digits.target, dtype=torch.long)  # (1797,)
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(seed))
    train_idx, test_idx = order[:-test_size], order[-test_size:]
    return images[train_idx], labels[train_idx], images[test_idx], labels[test_idx]


def patchify(images: Tensor, patch: int) -> Tensor:
    """Images (B, H, W) or (B, C, H, W) -> patches (B, H/p * W/p, C * p * p), row by row. Chapter 12."""
    check_float_tensor("images", images, (3, 4), "(B, H, W) or (B, C, H, W)")
    check_positive_int("patch", patch)
    x = images[:, None] if images.dim() == 3 else images  # (B, C, H, W)
    B, C, H, W = x.shape
    if H % patch or W % patch:
        raise ValueError(f"patch must divide the image height and width, got patch={patch} for {H}x{W} images")
    x = x.reshape(B, C, H // patch, patch, W // patch, patch)  # (B, C, rows, p, cols, p)
    x = x.permute(0, 2, 4, 1, 3, 5)  # (B, rows, cols, C, p, p)
    return x.reshape(B, (H // patch) * (W // patch), C * patch * patch)  # (B, N, C p p)


def unpatchify(patches: Tensor, image_size: int) -> Tensor:
    """Patches (B, N, p * p) of one-channel images, row by row -> images (B, H, W); patchify's inverse. Chapter 12."""
    check_float_tensor("patches", patches, 3, "(B, N, p p)")
    check_positive_int("image_size", image_size)
    B, N, pp = patches.shape
    side, p = round(N**0.5), round(pp**0.5)
    if side * side != N or p * p != pp or side * p != image_size:
        raise ValueError(f"patches must be (B, N, p p) with sqrt(N) * p = image_size={image_size}, "
                         f"got shape {tuple(patches.shape)}")
    grid = patches.reshape(B, side, side, p, p)  # (B, rows, cols, p, p)
    return grid.permute(0, 1, 3, 2, 4).reshape(B, image_size, image_size)  # (B, rows, p, cols, p) -> (B, H, W)


class VisionTransformer(nn.Module):
    """Patches -> linear embedding, a class token first, learned positions, pre-LN encoder blocks, head. Chapter 12.

    ``pool="cls"`` classifies from the class token's final vector (the ViT paper's default);
    ``pool="mean"`` drops the class token and averages the patch tokens' final vectors (global
    average pooling, the paper's appendix D.3 alternative).
    """

    def __init__(self, image_size: int = 8, patch: int = 2, channels: int = 1, n_classes: int = 10,
                 d_model: int = 64, n_heads: int = 4, d_ff: int = 128, n_layers: int = 2, dropout: float = 0.0,
                 pool: str = "cls"):
        super().__init__()
        for name, value in (("image_size", image_size), ("patch", patch), ("channels", channels),
                            ("n_classes", n_classes), ("d_model", d_model), ("n_heads", n_heads),
                            ("d_ff", d_ff), ("n_layers", n_layers)):
            check_positive_int(name, value)
        check_probability("dropout", dropout)
        check_choice("pool", pool, ("cls", "mean"))
        if image_size % patch:
            raise ValueError(f"patch must divide image_size={image_size}, got {patch}")
        if d_model % n_heads:
            raise ValueError(f"n_heads must divide d_model={d_model}, got {n_heads}")
        self.patch, self.image_size, self.pool = patch, image_size, pool
        self.n_patches = (image_size // patch) ** 2
        n_tokens = self.n_patches + (pool == "cls")
        self.embed = nn.Linear(channels * patch * patch, d_model)  # one patch -> one token vector
        if pool == "cls":
            self.cls = nn.Parameter(torch.zeros(1, 1, d_model))  # the learned class token
        self.pos = nn.Parameter(torch.randn(1, n_tokens, d_model) * 0.02)  # learned positions
        self.dropout = nn.Dropout(dropout)
        self.layers = nn.ModuleList(
            EncoderBlock(d_model, n_heads, d_ff, dropout, norm_first=True) for _ in range(n_layers))
        self.norm = LayerNorm(d_model)
        self.head = nn.Linear(d_model, n_classes)

    def forward(self, images: Tensor, return_attention: bool = False) -> Tensor | tuple[Tensor, list[Tensor]]:
        """images (B, H, W) or (B, C, H, W) -> class logits (B, n_classes) [, weights (B, h, T, T) per layer]."""
        check_float_tensor("images", images, (3, 4), "(B, H, W) or (B, C, H, W)")
        check_bool("return_attention", return_attention)
        if images.shape[-1] != self.image_size or images.shape[-2] != self.image_size:
            raise ValueError(f"images must be {self.image_size}x{self.image_size}, got shape {tuple(images.shape)}")
        x = self.embed(patchify(images, self.patch))  # (B, N, d_model)
        if self.pool == "cls":
            x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1)  # (B, 1 + N, d_model)
        x = self.dropout(x + self.pos)  # (B, T, d_model), T = 1 + N or N
        weights = []
        for block in self.layers:  # no mask: every token sees every token
            x, w = block(x, None, need_weights=return_attention)
            if w is not None:
                weights.append(w)
        pooled = x[:, 0] if self.pool == "cls" else x.mean(dim=1)  # (B, d_model)
        logits = self.head(self.norm(pooled))  # (B, n_classes)
        return (logits, weights) if return_attention else logits


def mlp_baseline(hidden: int, depth: int = 2, n_inputs: int = 64, n_classes: int = 10) -> nn.Sequential:
    """A plain MLP on the flattened pixels: depth hidden layers of width ``hidden`` with GELU. Chapter 12."""
    for name, value in (("hidden", hidden), ("depth", depth), ("n_inputs", n_inputs), ("n_classes", n_classes)):
        check_positive_int(name, value)
    layers: list[nn.Module] = [nn.Flatten()]
    width = n_inputs
    for _ in range(depth):
        layers += [nn.Linear(width, hidden), nn.GELU(), nn.Dropout(0.1)]
        width = hidden
    layers.append(nn.Linear(width, n_classes))
    return nn.Sequential(*layers)


MAX_MLP_WIDTH = 4095  # matched_mlp searches hidden widths 1..4095


def _mlp_params(h: int, depth: int) -> int:
    """Parameters of mlp_baseline(h, depth) on 64 pixels and 10 classes: 64 h + h + (depth - 1)(h h + h) + 10 h + 10."""
    return 75 * h + 10 + (depth - 1) * (h * h + h)


def matched_mlp(target_params: int, depth: int = 2) -> nn.Sequential:
    """The MLP baseline whose hidden width gives the parameter count closest to ``target_params``. Chapter 12.

    Raises when no width in 1..4095 comes within 5 % of the target (too small or too large a target).
    """
    check_positive_int("target_params", target_params)
    check_positive_int("depth", depth)
    best = min(range(1, MAX_MLP_WIDTH + 1), key=lambda h: abs(_mlp_params(h, depth) - target_params))
    got = _mlp_params(best, depth)
    if abs(got - target_params) > 0.05 * target_params:
        low, high = _mlp_params(1, depth), _mlp_params(MAX_MLP_WIDTH, depth)
        raise ValueError(f"target_params must be within 5 % of a {depth}-hidden-layer MLP's size "
                         f"({low:,} to {high:,} parameters), got {target_params:,} (closest: {got:,})")
    return mlp_baseline(best, depth)


def random_shift(images: Tensor, shift: int, generator: torch.Generator | None = None) -> Tensor:
    """Each image (B, H, W) moved by a random whole number of pixels in [-shift, shift] per axis, zeros filled in."""
    check_float_tensor("images", images, 3, "(B, H, W)")
    shift = check_int("shift", shift, low=0, high=min(images.shape[1:]) - 1)
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")
    if shift == 0:
        return images
    B, H, W = images.shape
    padded = nn.functional.pad(images, (shift, shift, shift, shift))  # (B, H + 2s, W + 2s)
    dy = torch.randint(0, 2 * shift + 1, (B,), generator=generator)
    dx = torch.randint(0, 2 * shift + 1, (B,), generator=generator)
    rows = (dy[:, None] + torch.arange(H))[:, :, None]  # (B, H, 1)
    cols = (dx[:, None] + torch.arange(W))[:, None, :]  # (B, 1, W)
    return padded[torch.arange(B)[:, None, None], rows, cols]  # (B, H, W)


def _check_labels(images: Tensor, labels: object) -> Tensor:
    labels = check_rank("labels", labels, 1, "(N,) class ids")
    if labels.dtype.is_floating_point or labels.dtype.is_complex or labels.dtype == torch.bool:
        raise TypeError(f"labels must hold integer class ids, got dtype {labels.dtype}")
    if labels.shape[0] != images.shape[0]:
        raise ValueError(f"labels must be N={images.shape[0]} integer class ids (one per image), "
                         f"got {labels.shape[0]}")
    return labels


@torch.no_grad()
def accuracy(model: nn.Module, images: Tensor, labels: Tensor) -> float:
    """Share of images whose arg-max class is the label. Chapter 12."""
    check_module("model", model)
    check_finite("images", check_float_tensor("images", images), "pixel values are finite")
    labels = _check_labels(images, labels)
    model.eval()
    logits = model(images)  # (N, n_classes)
    if int(labels.min()) < 0 or int(labels.max()) >= logits.shape[-1]:
        raise ValueError(f"labels must be class ids in [0, {logits.shape[-1]}), got min {int(labels.min())} "
                         f"and max {int(labels.max())}")
    return float((logits.argmax(-1) == labels).float().mean())


def steps_per_epoch(n_images: int, batch_size: int) -> int:
    """Optimiser steps in one pass over ``n_images`` in batches of ``batch_size`` (the last one smaller). Chapter 12."""
    return -(-check_positive_int("n_images", n_images) // check_positive_int("batch_size", batch_size))


def epoch_batches(images: Tensor, labels: Tensor, batch_size: int, generator: torch.Generator,
                  shift: int = 0) -> Callable[[int], tuple[Tensor, Tensor]]:
    """A batch function for ``training.train``: step -> (images, labels), epoch after epoch. Chapter 12.

    Each epoch visits every image once, in the order of a fresh permutation drawn from
    ``generator`` when the epoch starts; ``shift`` > 0 moves each image randomly (augmentation).
    Steps must be asked for in order 1, 2, 3, ... (as ``train`` does).
    """
    check_float_tensor("images", images, 3, "(N, H, W)")
    labels = _check_labels(images, labels)
    per_epoch = steps_per_epoch(len(labels), batch_size)
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    check_int("shift", shift, low=0, high=min(images.shape[1:]) - 1)
    order: list[Tensor] = []

    def batch(step: int) -> tuple[Tensor, Tensor]:
        k = (step - 1) % per_epoch  # the batch's place in its epoch
        if k == 0:
            order[:] = torch.randperm(len(labels), generator=generator).split(batch_size)
        idx = order[k]
        return random_shift(images[idx], shift, generator), labels[idx]

    return batch


def classification_loss(logits: Tensor, labels: Tensor) -> Tensor:
    """Mean cross-entropy of class logits (B, n_classes) against labels (B,). Chapter 12."""
    check_float_tensor("logits", logits, 2, "(B, n_classes)")
    return nn.functional.cross_entropy(logits, labels)


def train_classifier(model: nn.Module, data: tuple[Tensor, Tensor, Tensor, Tensor], epochs: int,
                     batch_size: int = 64, lr: float = 3e-3, weight_decay: float = 0.05, warmup_epochs: int = 2,
                     shift: int = 0, seed: int = 0, progress: bool = False) -> dict[str, Any]:
    """Train ``model`` on (x_train, y_train, x_test, y_test) with Chapter 6's loop; return its scores. Chapter 12.

    AdamW, a linear warm-up of ``warmup_epochs`` epochs (0: none) and a cosine decay to zero
    (``schedules.warmup_cosine_lr``), no gradient clipping; batches from :func:`epoch_batches`
    with a generator seeded by ``seed``. The model's own weights are not re-seeded: build it
    seeded. Returns test and train accuracy, parameters, steps and CPU / wall seconds of training.
    """
    check_module("model", model)
    if not isinstance(data, (tuple, list)) or len(data) != 4:
        raise TypeError(f"data must be (x_train, y_train, x_test, y_test), got {type(data).__name__}")
    x_train, y_train, x_test, y_test = data
    check_positive_int("epochs", epochs)
    warmup_epochs = check_int("warmup_epochs", warmup_epochs, low=0, high=epochs - 1)
    check_int("seed", seed)
    per_epoch = steps_per_epoch(len(y_train), batch_size)
    config = TrainConfig(steps=epochs * per_epoch, lr=check_number("lr", lr, low=0.0, low_open=True),
                         warmup=warmup_epochs * per_epoch, min_lr=0.0, optimizer="adamw", betas=(0.9, 0.999),
                         weight_decay=check_number("weight_decay", weight_decay, low=0.0), clip=None)
    batches = epoch_batches(x_train, y_train, batch_size, torch.Generator().manual_seed(seed), shift)
    history = train(model, batches, config, loss_fn=classification_loss, progress=check_bool("progress", progress))
    return scores(model, data, history)


def scores(model: nn.Module, data: tuple[Tensor, Tensor, Tensor, Tensor], history: TrainHistory) -> dict[str, Any]:
    """Test and train accuracy, parameters, steps and the training's CPU and wall seconds. Chapter 12."""
    x_train, y_train, x_test, y_test = data
    return {"test_accuracy": accuracy(model, x_test, y_test), "train_accuracy": accuracy(model, x_train, y_train),
            "params": count_params(model), "steps": len(history.losses),
            "cpu_seconds": history.cpu_seconds, "wall_seconds": history.seconds}


@torch.no_grad()
def zero_positions(model: VisionTransformer) -> VisionTransformer:
    """A copy of ``model`` whose learned position vectors are all zero: it sees a set of patches. Chapter 12."""
    import copy

    if not isinstance(model, VisionTransformer):
        raise TypeError(f"model must be a VisionTransformer, got {type(model).__name__}")
    clone = copy.deepcopy(model)
    clone.pos.zero_()
    return clone.eval()


def multiply_adds(model: nn.Module, image_size: int = 8) -> int:
    """Multiply-adds of one forward pass on one image (matrix products and convolutions). Chapter 12."""
    from torch.utils.flop_counter import FlopCounterMode

    check_module("model", model)
    check_positive_int("image_size", image_size)
    was_training = model.training
    model.eval()
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        model(torch.zeros(1, image_size, image_size))
    model.train(was_training)
    return counter.get_total_flops() // 2  # one multiply-add = 2 floating-point operations
