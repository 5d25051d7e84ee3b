"""A Vision Transformer (Dosovitskiy et al., 2021) on scikit-learn's 8x8 handwritten digits:
patches as tokens, a learned class token and learned positions, Chapter 5's encoder blocks;
and an MLP baseline with about as many parameters. Chapter 12.

The digits ship with scikit-learn (``sklearn.datasets.load_digits``: 1,797 images of 8x8
pixels with values 0-16, from the UCI "Optical Recognition of Handwritten Digits" data set);
nothing is downloaded.
"""

from __future__ import annotations

import copy
import math
import time
from typing import Any

import torch
from torch import Tensor, nn

from .model import EncoderBlock
from .norm import LayerNorm
from .validate import check_finite, check_float_tensor, check_int, check_module, check_positive_int, check_rank

# The chapter's ViT and its training: about 15 s of one CPU thread (benchmarks/vit_digits.py measures it).
# Patches of 4 x 4 pixels (4 tokens): in one run each, 2 x 2 patches (16 tokens) reached 96.4 % test accuracy
# after 40 epochs, 4 x 4 patches 97.3 % after 40 and 98.0 % after 60.
VIT_RECIPE: dict[str, Any] = {
    "model": {"patch": 4, "d_model": 64, "n_heads": 4, "d_ff": 128, "n_layers": 2, "dropout": 0.1},
    "train": {"epochs": 60, "batch_size": 64, "lr": 3e-3, "weight_decay": 0.05, "warmup_epochs": 2},
    "shift": 0,  # augmentation: random shifts of up to this many pixels (0: none; at 8x8 one pixel cuts strokes)
    "test_size": 450,  # the fixed split: the last 450 of a seeded permutation are the test set
    "seed": 0,
}


def load_digits_split(test_size: int = 450, seed: int = 0) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(train images (N, 8, 8) in [0, 1], train labels, test images, test labels), a fixed split. Chapter 12."""
    from sklearn.datasets import load_digits

    check_int("test_size", test_size, low=1, high=1796)
    digits = load_digits()
    images = torch.tensor(digits.images, dtype=torch.float32) / 16.0  # (1797, 8, 8), pixel values 0-16 -> 0-1
    labels = torch.tensor(digits.target, dtype=torch.long)  # (1797,)
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(seed))
    train_idx, test_idx = order[:-test_size], order[-test_size:]
    return images[train_idx], labels[train_idx], images[test_idx], labels[test_idx]


def patchify(images: Tensor, patch: int) -> Tensor:
    """Images (B, H, W) or (B, C, H, W) -> patches (B, H/p * W/p, C * p * p), row by row. Chapter 12."""
    check_rank("images", images, (3, 4), "(B, H, W) or (B, C, H, W)")
    check_positive_int("patch", patch)
    x = images[:, None] if images.dim() == 3 else images  # (B, C, H, W)
    B, C, H, W = x.shape
    if H % patch or W % patch:
        raise ValueError(f"patch must divide the image height and width, got patch={patch} for {H}x{W} images")
    x = x.reshape(B, C, H // patch, patch, W // patch, patch)  # (B, C, rows, p, cols, p)
    x = x.permute(0, 2, 4, 1, 3, 5)  # (B, rows, cols, C, p, p)
    return x.reshape(B, (H // patch) * (W // patch), C * patch * patch)  # (B, N, C p p)


class VisionTransformer(nn.Module):
    """Patches -> linear embedding, a class token first, learned positions, pre-LN encoder blocks, head. Chapter 12."""

    def __init__(self, image_size: int = 8, patch: int = 2, channels: int = 1, n_classes: int = 10,
                 d_model: int = 64, n_heads: int = 4, d_ff: int = 128, n_layers: int = 2, dropout: float = 0.0):
        super().__init__()
        for name, value in (("image_size", image_size), ("patch", patch), ("channels", channels),
                            ("n_classes", n_classes), ("d_model", d_model), ("n_heads", n_heads),
                            ("d_ff", d_ff), ("n_layers", n_layers)):
            check_positive_int(name, value)
        if image_size % patch:
            raise ValueError(f"patch must divide image_size={image_size}, got {patch}")
        self.patch, self.image_size = patch, image_size
        self.n_patches = (image_size // patch) ** 2
        self.embed = nn.Linear(channels * patch * patch, d_model)  # one patch -> one token vector
        self.cls = nn.Parameter(torch.zeros(1, 1, d_model))  # the learned class token
        self.pos = nn.Parameter(torch.randn(1, self.n_patches + 1, d_model) * 0.02)  # learned positions
        self.dropout = nn.Dropout(dropout)
        self.layers = nn.ModuleList(
            EncoderBlock(d_model, n_heads, d_ff, dropout, norm_first=True) for _ in range(n_layers))
        self.norm = LayerNorm(d_model)
        self.head = nn.Linear(d_model, n_classes)

    def forward(self, images: Tensor, return_attention: bool = False) -> Tensor | tuple[Tensor, list[Tensor]]:
        """images (B, H, W) or (B, C, H, W) -> class logits (B, n_classes) [, weights (B, h, 1+N, 1+N) per layer]."""
        check_float_tensor("images", images, (3, 4), "(B, H, W) or (B, C, H, W)")
        if images.shape[-1] != self.image_size or images.shape[-2] != self.image_size:
            raise ValueError(f"images must be {self.image_size}x{self.image_size}, got shape {tuple(images.shape)}")
        tokens = self.embed(patchify(images, self.patch))  # (B, N, d_model)
        cls = self.cls.expand(tokens.shape[0], -1, -1)  # (B, 1, d_model)
        x = self.dropout(torch.cat([cls, tokens], dim=1) + self.pos)  # (B, 1 + N, d_model)
        weights = []
        for block in self.layers:  # no mask: every token sees every token
            x, w = block(x, None, need_weights=return_attention)
            if w is not None:
                weights.append(w)
        logits = self.head(self.norm(x[:, 0]))  # the class token's final vector -> (B, n_classes)
        return (logits, weights) if return_attention else logits


def mlp_baseline(hidden: int, depth: int = 2, n_inputs: int = 64, n_classes: int = 10) -> nn.Sequential:
    """A plain MLP on the flattened pixels: depth hidden layers of width ``hidden`` with GELU. Chapter 12."""
    check_positive_int("hidden", hidden)
    check_positive_int("depth", depth)
    layers: list[nn.Module] = [nn.Flatten()]
    width = n_inputs
    for _ in range(depth):
        layers += [nn.Linear(width, hidden), nn.GELU(), nn.Dropout(0.1)]
        width = hidden
    layers.append(nn.Linear(width, n_classes))
    return nn.Sequential(*layers)


def count_params(model: nn.Module) -> int:
    """Number of trainable parameters. Chapter 12."""
    check_module("model", model)
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def matched_mlp(target_params: int, depth: int = 2) -> nn.Sequential:
    """The MLP baseline whose hidden width gives the parameter count closest to ``target_params``. Chapter 12."""
    check_positive_int("target_params", target_params)
    def params(h: int) -> int:  # 64 h + h + (depth - 1) (h h + h) + 10 h + 10
        return 75 * h + 10 + (depth - 1) * (h * h + h)

    best = min(range(1, 4096), key=lambda h: abs(params(h) - target_params))
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


@torch.no_grad()
def accuracy(model: nn.Module, images: Tensor, labels: Tensor) -> float:
    """Share of images whose arg-max class is the label. Chapter 12."""
    check_module("model", model)
    check_finite("images", check_float_tensor("images", images), "pixel values are finite")
    if check_rank("labels", labels, 1, "(N,)").shape[0] != images.shape[0] or labels.dtype.is_floating_point:
        raise ValueError(f"labels must be N={images.shape[0]} integer class ids, "
                         f"got {labels.shape[0]} ({labels.dtype})")
    model.eval()
    logits = model(images)  # (N, n_classes)
    if int(labels.min()) < 0 or int(labels.max()) >= logits.shape[-1]:
        raise ValueError(f"labels must be class ids in [0, {logits.shape[-1]}), got min {int(labels.min())} "
                         f"and max {int(labels.max())}")
    return float((logits.argmax(-1) == labels).float().mean())


def train_classifier(model: nn.Module, recipe: dict[str, Any] | None = None,
                     data: tuple[Tensor, Tensor, Tensor, Tensor] | None = None) -> dict[str, Any]:
    """Train ``model`` on the digits with the recipe (AdamW, warm-up + cosine); return the scores. Chapter 12."""
    check_module("model", model)
    _check_vit_recipe(recipe)
    recipe = copy.deepcopy(recipe or VIT_RECIPE)
    t = recipe["train"]
    x_train, y_train, x_test, y_test = data or load_digits_split(recipe["test_size"], recipe["seed"])
    generator = torch.Generator().manual_seed(recipe["seed"])
    optimizer = torch.optim.AdamW(model.parameters(), lr=t["lr"], weight_decay=t["weight_decay"])
    steps_per_epoch = -(-len(y_train) // t["batch_size"])
    total, warmup = t["epochs"] * steps_per_epoch, t["warmup_epochs"] * steps_per_epoch
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warmup, 0.5 * (1 + math.cos(math.pi * min(s, total) / total))))
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(t["epochs"]):
        model.train()
        order = torch.randperm(len(y_train), generator=generator)
        for idx in order.split(t["batch_size"]):
            images = random_shift(x_train[idx], recipe["shift"], generator)
            loss = nn.functional.cross_entropy(model(images), y_train[idx])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            schedule.step()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return {"test_accuracy": accuracy(model, x_test, y_test), "train_accuracy": accuracy(model, x_train, y_train),
            "params": count_params(model), "cpu_seconds": cpu, "wall_seconds": wall}


def _check_vit_recipe(recipe: object) -> None:
    if recipe is not None and (not isinstance(recipe, dict) or set(VIT_RECIPE) - set(recipe)):
        raise ValueError(f"recipe must be a dict with the keys {sorted(VIT_RECIPE)}, got {recipe!r:.60}")


def build_vit(recipe: dict[str, Any] | None = None) -> VisionTransformer:
    """The chapter's ViT with the recipe's model settings, seeded. Chapter 12."""
    _check_vit_recipe(recipe)
    recipe = recipe or VIT_RECIPE
    torch.manual_seed(recipe["seed"])
    return VisionTransformer(**recipe["model"])
