"""How each shipped checkpoint is made: ``name -> runner``, the table ``scripts/train_checkpoint.py`` dispatches by.

A runner trains from its recipe, writes its file(s) and returns a line to print per file. Each
takes ``steps`` (None: the recipe's; smoke runs pass fewer), ``out`` (None: ``course_utils/assets/``)
and ``evaluate`` (print an evaluation table where the run has one). To add a checkpoint: write a
runner here, add it to :data:`RUNNERS`, and register the file with its command in
:mod:`course_utils.runs.registry`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..evaluation import evaluate_by_length, every_string_score, results_table
from .charlm import CHARLM_CHECKPOINT, run_charlm
from .core import asset_path, save
from .length import LOSER, TEST_LENGTHS, WINNER, checkpoint_file, length_curve, shipped_recipe
from .reversal import DECODER_ONLY_CHECKPOINT, DECODER_ONLY_RECIPE, FAST_RECIPE, REVERSAL_CHECKPOINT, run_reversal

INSIDE_N, INSIDE_SEED = 1000, 99  # Chapter 9: strings per length 3-10 for "inside_curve", and their seed

Runner = Callable[[int | None, Path | None, bool], list[str]]


def _report(name: str, path: Path, history: Any) -> str:
    return (f"{name}: trained {len(history.losses)} steps in {history.seconds:.1f} s "
            f"({history.cpu_seconds:.1f} CPU s), final loss {history.losses[-1]:.4f}; "
            f"wrote {path} ({path.stat().st_size / 1024:.0f} KiB)")


def _reversal(recipe: dict[str, Any], file: str, name: str) -> Runner:
    def make(steps: int | None, out: Path | None, evaluate: bool) -> list[str]:
        model, history, ran = run_reversal(recipe, progress=True, steps=steps)
        results = {"train_loss": [round(x, 5) for x in history.losses]}  # the training log, for the loss curve
        lines = [_report(name, save(model, ran, out or asset_path(file), results), history)]
        if evaluate:
            lines.append(results_table(evaluate_by_length(model, range(3, 16), 200), (ran["min_len"], ran["max_len"])))
        return lines
    return make


def make_charlm(steps: int | None, out: Path | None, evaluate: bool) -> list[str]:
    """Chapter 8's character LM (CHARLM_RECIPE) -> charlm_shakespeare.pt, with its training log."""
    (model, history, recipe), results = run_charlm(progress=True, steps=steps)
    path = save(model, recipe, out or asset_path(CHARLM_CHECKPOINT), results)
    curve = dict(zip(results["val_steps"], results["val_bits_per_char"], strict=True))
    return [_report("charlm", path, history), f"validation bits/char by step: {curve}"]


def make_length(steps: int | None, out: Path | None, evaluate: bool) -> list[str]:
    """Chapter 9's two shipped models (the winner and the paper's sinusoidal one) -> length_<scheme>.pt."""
    lines = []
    for name in (WINNER, LOSER):
        model, history, recipe = run_reversal(shipped_recipe(name), progress=False, steps=steps)
        results = {
            "curve": length_curve(model, TEST_LENGTHS, 100),
            # a closer look inside the training lengths, where one string in 100 is already 1 %
            "inside_curve": {"n_per_length": INSIDE_N, "seed": INSIDE_SEED,
                             **length_curve(model, range(3, 11), INSIDE_N, seed=INSIDE_SEED)},
            "every_string_3": every_string_score(model, 3),  # all 17,576 strings of 3 letters
            "train_seconds": round(history.seconds, 1),
        }
        path = out.with_name(checkpoint_file(name)) if out else asset_path(checkpoint_file(name))
        lines.append(_report(name, save(model, recipe, path, results), history))
    return lines


def make_mlm(steps: int | None, out: Path | None, evaluate: bool) -> list[str]:
    """Chapter 12's masked-language model (MLM_RECIPE) -> mlm_shakespeare.pt."""
    from .mlm import MLM_FILE, MLM_RECIPE, run_mlm, save_mlm

    model, log = run_mlm(MLM_RECIPE, steps=steps, progress=True)
    path = save_mlm(model, log, out or asset_path(MLM_FILE))
    last = log["loss_nats"][-50:]
    return [f"mlm: trained {len(log['loss_nats'])} steps in {log['wall_seconds']:.1f} s "
            f"({log['cpu_seconds']:.1f} CPU s), mean loss of the last 50 steps {sum(last) / len(last):.4f} nats; "
            f"wrote {path} ({path.stat().st_size / 1024:.0f} KiB)"]


RUNNERS: dict[str, Runner] = {
    "reversal": _reversal(FAST_RECIPE, REVERSAL_CHECKPOINT, "reversal"),
    "decoder-only": _reversal(DECODER_ONLY_RECIPE, DECODER_ONLY_CHECKPOINT, "decoder-only"),
    "charlm": make_charlm,
    "length": make_length,
    "mlm": make_mlm,
}
