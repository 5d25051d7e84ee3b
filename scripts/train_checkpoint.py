"""Train a shipped model from scratch with its recipe and write its checkpoint to course_utils/assets/.

Usage: python scripts/train_checkpoint.py [--run reversal|decoder-only|charlm|length|mlm] [--steps N] [--out PATH]
       [--threads N] [--no-eval]

    reversal      Chapter 6's encoder-decoder, FAST_RECIPE          -> reversal_transformer.pt
    decoder-only  Chapter 8's decoder-only model, DECODER_ONLY_RECIPE -> reversal_decoder_only.pt
    charlm        Chapter 8's character LM, CHARLM_RECIPE          -> charlm_shakespeare.pt
    length        Chapter 9's two models (the winner with WINNER_STEPS) -> length_<scheme>.pt
    mlm           Chapter 12's masked-language model, MLM_RECIPE   -> mlm_shakespeare.pt

Every checkpoint holds its kind, config, the recipe that actually ran (after --steps) and its
results (training log, curves); `python -m course_utils.runs check` compares the recipe with the
code. Seeded: on the same machine and thread count a run reproduces the shipped weights (other
CPUs may differ in the last float bits, not in accuracy).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from course_utils.evaluation import evaluate_by_length, every_string_score, results_table
from course_utils.runs import asset_path, save
from course_utils.runs.charlm import CHARLM_CHECKPOINT, run_charlm
from course_utils.runs.length import LOSER, TEST_LENGTHS, WINNER, checkpoint_file, length_curve, shipped_recipe
from course_utils.runs.mlm import MLM_FILE, MLM_RECIPE, run_mlm, save_mlm
from course_utils.runs.reversal import (
    DECODER_ONLY_CHECKPOINT,
    DECODER_ONLY_RECIPE,
    FAST_RECIPE,
    REVERSAL_CHECKPOINT,
    run_reversal,
)

RUNS = ("reversal", "decoder-only", "charlm", "length", "mlm")
INSIDE_N, INSIDE_SEED = 1000, 99  # Chapter 9: strings per length 3-10 for "inside_curve", and their seed


def _report(name: str, path: Path, history) -> None:
    print(f"{name}: trained {len(history.losses)} steps in {history.seconds:.1f} s "
          f"({history.cpu_seconds:.1f} CPU s), final loss {history.losses[-1]:.4f}; "
          f"wrote {path} ({path.stat().st_size / 1024:.0f} KiB)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", choices=RUNS, default="reversal", help="which shipped model (default: reversal)")
    parser.add_argument("--steps", type=int, default=None, help="override the recipe's steps (smoke runs)")
    parser.add_argument("--out", type=Path, default=None, help="write here instead of course_utils/assets/")
    parser.add_argument("--no-eval", action="store_true", help="skip the evaluation table")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: PyTorch's choice)")
    args = parser.parse_args(argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    if args.run == "charlm":
        (model, history, recipe), results = run_charlm(progress=True, steps=args.steps)
        path = save(model, recipe, args.out or asset_path(CHARLM_CHECKPOINT), results)
        _report(args.run, path, history)
        print("validation bits/char by step:", dict(zip(results["val_steps"], results["val_bits_per_char"],
                                                        strict=True)))
        return
    if args.run == "mlm":
        model, log = run_mlm(MLM_RECIPE, steps=args.steps, progress=True)
        path = save_mlm(model, log, args.out or asset_path(MLM_FILE))
        print(f"mlm: trained {len(log['loss_nats'])} steps in {log['wall_seconds']:.1f} s "
              f"({log['cpu_seconds']:.1f} CPU s), mean loss of the last 50 steps "
              f"{sum(log['loss_nats'][-50:]) / len(log['loss_nats'][-50:]):.4f} nats; "
              f"wrote {path} ({path.stat().st_size / 1024:.0f} KiB)")
        return
    if args.run == "length":
        for name in (WINNER, LOSER):
            model, history, recipe = run_reversal(shipped_recipe(name), progress=False, steps=args.steps)
            results = {
                "curve": length_curve(model, TEST_LENGTHS, 100),
                # a closer look inside the training lengths, where one string in 100 is already 1 %
                "inside_curve": {"n_per_length": INSIDE_N, "seed": INSIDE_SEED,
                                 **length_curve(model, range(3, 11), INSIDE_N, seed=INSIDE_SEED)},
                "every_string_3": every_string_score(model, 3),  # all 17,576 strings of 3 letters
                "train_seconds": round(history.seconds, 1),
            }
            out = args.out.with_name(checkpoint_file(name)) if args.out else asset_path(checkpoint_file(name))
            _report(name, save(model, recipe, out, results), history)
        return
    recipe, file = ((FAST_RECIPE, REVERSAL_CHECKPOINT) if args.run == "reversal"
                    else (DECODER_ONLY_RECIPE, DECODER_ONLY_CHECKPOINT))
    model, history, recipe = run_reversal(recipe, progress=True, steps=args.steps)
    results = {"train_loss": [round(x, 5) for x in history.losses]}  # the training log, for the loss curve
    path = save(model, recipe, args.out or asset_path(file), results)
    _report(args.run, path, history)
    if not args.no_eval:
        print(results_table(evaluate_by_length(model, range(3, 16), 200), (recipe["min_len"], recipe["max_len"])))


if __name__ == "__main__":
    main()
