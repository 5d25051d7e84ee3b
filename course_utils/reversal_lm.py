"""String reversal for a decoder-only model: one sequence ``[src; SEP; tgt; EOS]``, loss on the
target part only, recipe, greedy reversal and a shipped checkpoint. Chapter 8.

The vocabulary is Chapter 6's (V = 29). The separator is the ``SOS`` token: in the
encoder-decoder it tells the decoder "start writing the target", and here it does the same
job in the middle of one sequence. For ``abc`` the sequence is ``a b c <sos> c b a <eos>``;
the model reads it shifted (``inputs = seq[:-1]``, ``targets = seq[1:]``) and the targets of
the source part are set to ``PAD`` so the loss ignores them: the source letters are random,
nothing can predict them, and we never ask the model to.

``load_decoder_only_reversal()`` reads ``course_utils/assets/reversal_decoder_only.pt``;
``scripts/train_decoder_only_checkpoint.py`` re-creates it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from .data import EOS_ID, PAD_ID, SOS_ID, VOCAB_SIZE, decode, encode, random_letter_ids
from .gpt import DecoderOnly, DecoderOnlyConfig, generate
from .training import TrainHistory, train_recipe
from .validate import check_positive_int, check_rank

SEP_ID = SOS_ID  # the separator between source and target (Chapter 6's SOS token)
CHECKPOINT_PATH = Path(__file__).parent / "assets" / "reversal_decoder_only.pt"

# The decoder-only counterpart of Chapter 6's fast recipe: same width, heads, FFN, optimiser and
# batch; 4 causal blocks in place of 2 encoder + 2 decoder blocks. It needs more steps: with
# Chapter 6's 450 it stopped short of 99.5 % exact match (about 96 % at step 400 in a trial run).
DECODER_ONLY_RECIPE: dict[str, Any] = {
    "model": {"d_model": 64, "n_heads": 4, "d_ff": 128, "n_layers": 4, "dropout": 0.0, "norm_first": True,
              "positional": "sinusoidal", "max_len": 64, "tie_embeddings": True},
    "train": {"steps": 900, "lr": 5e-3, "warmup": 45, "optimizer": "adam", "clip": 1.0},
    "batch_size": 128,
    "min_len": 3,  # training strings have 3..10 letters
    "max_len": 10,
    "seed": 0,
}


def one_sequence_batch(ids: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor]:
    """(inputs, targets), each (B, 2 n_max + 1), for letter ids (B, T) with lengths (B,). Chapter 8.

    Row with n letters: inputs = ``src SEP rev`` then PAD, targets = n PADs (source part, no
    loss), then ``rev EOS``, then PAD. Padding sits at the end, where causality hides it.
    """
    check_rank("ids", ids, 2, "(B, T) letter ids")
    check_rank("lengths", lengths, 1, "(B,)")
    B = ids.shape[0]
    n_max = int(lengths.max())
    width = 2 * n_max + 1
    inputs = torch.full((B, width), PAD_ID, dtype=torch.long)
    targets = torch.full((B, width), PAD_ID, dtype=torch.long)
    for row, n in enumerate(lengths.tolist()):
        src = ids[row, :n]
        rev = src.flip(0)
        inputs[row, :n] = src
        inputs[row, n] = SEP_ID
        inputs[row, n + 1: 2 * n + 1] = rev
        targets[row, n: 2 * n] = rev  # predicted at SEP and at every target letter
        targets[row, 2 * n] = EOS_ID
    return inputs, targets


def make_one_sequence_batch(strings: Sequence[str]) -> tuple[Tensor, Tensor]:
    """(inputs, targets) of the one-sequence layout for ``strings``. Chapter 8."""
    if isinstance(strings, str) or not isinstance(strings, Sequence) or len(strings) == 0:
        raise TypeError(f"strings must be a non-empty list of str, got {type(strings).__name__}")
    encoded = [encode(s) for s in strings]
    if any(not e for e in encoded):
        raise ValueError("every string needs at least one letter")
    T = max(len(e) for e in encoded)
    ids = torch.full((len(encoded), T), PAD_ID, dtype=torch.long)
    for row, e in enumerate(encoded):
        ids[row, : len(e)] = torch.tensor(e)
    return one_sequence_batch(ids, torch.tensor([len(e) for e in encoded]))


def build_decoder_only(recipe: dict[str, Any] | None = None) -> DecoderOnly:
    """A fresh decoder-only model with the recipe's settings (default DECODER_ONLY_RECIPE). Chapter 8."""
    recipe = recipe or DECODER_ONLY_RECIPE
    return DecoderOnly(DecoderOnlyConfig(vocab_size=VOCAB_SIZE, **recipe["model"]))


def one_sequence_batch_fn(recipe: dict[str, Any], generator: torch.Generator) -> Callable[[int], tuple]:
    """batch_fn(step) for :func:`course_utils.training.train`: random (inputs, targets). Chapter 8."""
    B, lo, hi = recipe["batch_size"], recipe["min_len"], recipe["max_len"]

    def batch(step: int) -> tuple[Tensor, Tensor]:
        ids, lengths = random_letter_ids(B, lo, hi, generator)
        return one_sequence_batch(ids, lengths)

    return batch


def train_decoder_only_reversal(
    recipe: dict[str, Any] | None = None,
    progress: bool = True,
    steps: int | None = None,
    on_step: Callable[..., bool | None] | None = None,
) -> tuple[DecoderOnly, TrainHistory]:
    """Train a decoder-only reversal model from scratch with Chapter 6's loop. Chapter 8."""
    return train_recipe(recipe or DECODER_ONLY_RECIPE, build_decoder_only, one_sequence_batch_fn,
                        progress, steps, on_step)


def reverse_strings_decoder_only(model: DecoderOnly, strings: Sequence[str], extra: int = 2) -> list[str]:
    """The model's greedy (KV-cached) reversal of each string: prompt ``src SEP``, stop at EOS. Chapter 8.

    Strings of equal length share one batch (their prompts line up without padding).
    """
    out: list[str | None] = [None] * len(strings)
    by_length: dict[int, list[int]] = {}
    for i, s in enumerate(strings):
        by_length.setdefault(len(s), []).append(i)
    for n, rows in by_length.items():
        check_positive_int("string length", n)
        src = torch.tensor([encode(strings[i]) for i in rows], dtype=torch.long)  # (b, n)
        prompt = torch.cat([src, torch.full((len(rows), 1), SEP_ID)], dim=1)  # (b, n + 1)
        new = generate(model, prompt, n + extra, temperature=0, eos_id=EOS_ID, pad_id=PAD_ID)
        for i, row in zip(rows, new, strict=True):
            out[i] = decode(row)
    return [s for s in out if s is not None]


def save_decoder_only_checkpoint(model: DecoderOnly, recipe: dict[str, Any], path: Path | str = CHECKPOINT_PATH
                                 ) -> Path:
    """Write the model's weights, config and recipe (plain data only) to ``path``. Chapter 8."""
    if not isinstance(model, DecoderOnly):
        raise TypeError(f"model must be a DecoderOnly, got {type(model).__name__}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    torch.save({"config": asdict(model.config), "recipe": recipe, "state_dict": state}, path)
    return path


def load_decoder_only_reversal(path: Path | str = CHECKPOINT_PATH) -> DecoderOnly:
    """The shipped decoder-only reversal model, in eval mode, loaded with weights_only=True. Chapter 8."""
    data = _load(path)
    model = DecoderOnly(DecoderOnlyConfig(**data["config"]))
    model.load_state_dict(data["state_dict"])
    return model.eval()


def checkpoint_info(path: Path | str = CHECKPOINT_PATH) -> dict[str, Any]:
    """The recipe and training log stored with the shipped checkpoint. Chapter 8."""
    return _load(path)["recipe"]


def _load(path: Path | str) -> dict[str, Any]:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(
            f"checkpoint not found at {path.name}; create it with `python scripts/train_decoder_only_checkpoint.py`"
        )
    return torch.load(path, map_location="cpu", weights_only=True)


__all__ = [
    "CHECKPOINT_PATH", "DECODER_ONLY_RECIPE", "SEP_ID", "build_decoder_only", "checkpoint_info",
    "load_decoder_only_reversal", "make_one_sequence_batch", "one_sequence_batch", "one_sequence_batch_fn",
    "reverse_strings_decoder_only", "save_decoder_only_checkpoint", "train_decoder_only_reversal",
]
