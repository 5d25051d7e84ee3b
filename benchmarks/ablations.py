"""Benchmark: Chapter 10's measurements; prints progress lines and ends with one JSON line.

Usage:
    python benchmarks/ablations.py --write               # everything (writes course_utils/assets/ablations.json)
    python benchmarks/ablations.py --rows base,no_residual   # prints only
    python benchmarks/ablations.py --list                # the row names

Three parts:
- ``baselines``: GRU encoder-decoder without and with Bahdanau attention vs the Transformer,
  all trained with Chapter 6's fast recipe (same data, steps, batch, schedule); exact match by
  length 3-15 (greedy, fresh seeded strings).
- ``timing``: time per training step against sequence length for each architecture, next to
  the paper's Table 1 counted analytically (operations per layer, sequential steps, path length).
- ``table3``: the paper's Table 3 in miniature: one small model, a fixed budget, one change
  per row; exact match (mean over lengths 3-10), final loss, steps to 99 %, layer-1 gradient norm.
Timings depend on the machine and on whatever else runs on it.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch

from course_utils.ablations import measurements, measuring_callbacks, seq2seq_counts, table1_counts
from course_utils.baselines import GRUConfig, GRUSeq2Seq
from course_utils.data import VOCAB_SIZE, random_batch
from course_utils.evaluation import evaluate_by_length
from course_utils.runs import asset_path, machine_record, run, write_asset
from course_utils.runs.ablations import (
    ABLATIONS_FILE,
    BASE_MODEL,
    BASE_TRAIN,
    DEPTH_TRAIN,
    QUICK_BUDGET,
    TABLE3_DATA,
    ablations_recipe,
    run_row,
)
from course_utils.runs.reversal import FAST_RECIPE, build_model, reversal_batch_fn
from course_utils.training import masked_cross_entropy
from course_utils.utils import count_params

# -- Table 3 in miniature --------------------------------------------------------------------
# the recipe constants live in course_utils.runs.ablations (the freshness check reads them)


def _row(group: str, change: str, model: dict | None = None, train: dict | None = None,
         variant: dict | None = None, base_train: dict = BASE_TRAIN) -> dict[str, Any]:
    return {"group": group, "change": change, "model": {**BASE_MODEL, **(model or {})},
            "train": {**base_train, **(train or {})}, "variant": variant or {}}


def table3_rows() -> dict[str, dict[str, Any]]:
    """Every row of the miniature Table 3, by name."""
    rows = {"base": _row("base", "d_model 32, h 4, d_ff 64, N 2, post-LN, warm-up 30")}
    for h in (1, 2, 8):
        rows[f"heads_{h}"] = _row("A", f"h = {h} (d_k = {32 // h})", {"n_heads": h})
    for d_k in (2, 16):
        rows[f"dk_{d_k}"] = _row("B", f"d_k = {d_k} for queries and keys (h = 4)", variant={"d_k": d_k})
    rows["size_small"] = _row("C", "d_model 16, d_ff 32", {"d_model": 16, "d_ff": 32})
    rows["size_large"] = _row("C", "d_model 64, d_ff 128", {"d_model": 64, "d_ff": 128})
    rows["layers_1"] = _row("C", "N = 1", {"n_encoder_layers": 1, "n_decoder_layers": 1})
    rows["dropout_0.1"] = _row("D", "dropout 0.1", {"dropout": 0.1})
    rows["dropout_0.3"] = _row("D", "dropout 0.3", {"dropout": 0.3})
    rows["label_smoothing_0.1"] = _row("D", "label smoothing 0.1", train={"label_smoothing": 0.1})
    rows["learned_positions"] = _row("E", "learned positions instead of sinusoidal", variant={"positional": "learned"})
    rows["no_positions"] = _row("no PE", "no positional encoding", variant={"positional": "none"})
    rows["no_residual"] = _row("no residual", "no residual connections (40.2)", variant={"residual": False})
    rows["no_residual_N6"] = _row("no residual", "no residual connections, N = 6 (40.2)",
                                  {"n_encoder_layers": 6, "n_decoder_layers": 6}, variant={"residual": False},
                                  base_train=DEPTH_TRAIN)
    rows["no_layer_norm"] = _row("no LN", "no LayerNorm", variant={"layer_norm": False})
    rows["no_ffn"] = _row("no FFN", "no feed-forward sub-layers", variant={"feed_forward": False})
    for norm_first in (False, True):
        for depth in (2, 6, 12):
            for warmup in (True, False):
                ln = "pre" if norm_first else "post"
                name = f"{ln}_ln_N{depth}_{'warmup' if warmup else 'no_warmup'}"
                rows[name] = _row(
                    "depth", f"{ln}-LN, N = {depth}, {'warm-up 16' if warmup else 'no warm-up'}",
                    {"norm_first": norm_first, "n_encoder_layers": depth, "n_decoder_layers": depth},
                    {"warmup": 16 if warmup else 0}, base_train=DEPTH_TRAIN,
                )
    return rows


# -- baselines ---------------------------------------------------------------------------------
def gru_model(attention: bool) -> GRUSeq2Seq:
    """The GRU baseline, d_embed = d_hidden = 64 like the fast Transformer's d_model."""
    return GRUSeq2Seq(GRUConfig(VOCAB_SIZE, d_embed=64, d_hidden=64, attention=attention))


def run_baseline(name: str, n_per_length: int, quick: bool = False) -> dict[str, Any]:
    """Train one architecture with the fast recipe's data, steps, batch and schedule; evaluate 3-15.

    quick=True shrinks the common budget (steps, warm-up, batch) for all three alike.
    """
    recipe = copy.deepcopy(FAST_RECIPE)
    if quick:
        recipe["train"].update(steps=QUICK_BUDGET["steps"], warmup=QUICK_BUDGET["warmup"])
        recipe["batch_size"] = QUICK_BUDGET["batch_size"]
    build = build_model if name == "transformer" else (lambda _: gru_model(attention=name == "gru_bahdanau"))
    accuracy, grads = measuring_callbacks()
    model, history, _ = run(recipe, build, reversal_batch_fn, progress=False, callbacks=[accuracy, grads])
    measured = measurements(history, accuracy, grads)
    results = evaluate_by_length(model, range(3, 16), n_per_length)
    return {
        "params": count_params(model),
        "train_seconds": round(history.seconds, 1),
        "steps": len(history.losses),
        "batch_size": recipe["batch_size"],
        "final_loss": round(sum(history.losses[-50:]) / 50, 4),
        "steps_to_99": measured["steps_to_99"],
        "exact_match": {str(n): round(100 * r["exact_match"], 1) for n, r in results.items()},
    }


# -- timing and Table 1 ------------------------------------------------------------------------
def time_step(model: torch.nn.Module, T: int, batch_size: int, repeats: int) -> float:
    """Median seconds of one training step (forward, loss, backward) on a batch of length-T strings."""
    generator = torch.Generator().manual_seed(T)
    src, tgt_in, tgt_out = random_batch(batch_size, T, T, generator)
    model.train()
    times = []
    for i in range(repeats + 1):
        start = time.perf_counter()
        loss = masked_cross_entropy(model(src, tgt_in), tgt_out)
        model.zero_grad(set_to_none=True)
        loss.backward()
        if i:  # the first step warms up the allocator
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def run_timing(lengths: list[int], batch_size: int, repeats: int) -> dict[str, Any]:
    """Time per training step against length for the three architectures, plus the analytic counts.

    Timed twice: with one torch thread, where nothing can run in parallel, and with one thread
    per CPU core, where the Transformer's large matrix products can use every core and a GRU's
    many small sequential steps cannot. ``ms_per_step`` is keyed by the thread count.
    """
    recipe = copy.deepcopy(FAST_RECIPE)
    recipe["model"]["dropout"] = 0.0
    torch.manual_seed(0)
    models = {"transformer": build_model(recipe), "gru": gru_model(False), "gru_bahdanau": gru_model(True)}
    n_layers = recipe["model"]["n_encoder_layers"]
    d = recipe["model"]["d_model"]
    threads = sorted({1, os.cpu_count() or 1})
    out: dict[str, Any] = {"lengths": lengths, "batch_size": batch_size, "threads": threads, "ms_per_step": {},
                           "counts": {}, "table1": {str(T): table1_counts(T, d) for T in lengths}}
    before = torch.get_num_threads()
    try:
        for n_threads in threads:
            torch.set_num_threads(n_threads)
            out["ms_per_step"][str(n_threads)] = {
                name: [round(1000 * time_step(model, T, batch_size, repeats), 2) for T in lengths]
                for name, model in models.items()
            }
    finally:
        torch.set_num_threads(before)
    out["counts"] = {str(T): seq2seq_counts(T, n_layers) for T in lengths}
    return out


def main() -> None:
    rows = table3_rows()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="all",
                        help="comma-separated Table 3 row names, 'all', or 'none'; see --list")
    parser.add_argument("--parts", default="baselines,timing,table3", help="which parts to run")
    parser.add_argument("--baselines", default="transformer,gru,gru_bahdanau", help="which baselines to train")
    parser.add_argument("--n-per-length", type=int, default=100, help="test strings per length (baselines)")
    parser.add_argument("--quick", action="store_true",
                        help="baselines with a smaller common budget (150 steps of batch 64), not the fast recipe's")
    parser.add_argument("--list", action="store_true", help="print the row names and exit")
    parser.add_argument("--write", action="store_true", help="write the shipped result (default: print only)")
    parser.add_argument("--out", default=str(asset_path(ABLATIONS_FILE)), help="where to write the JSON asset")
    args = parser.parse_args()
    if args.list:
        print("\n".join(f"{k:28s} {v['group']:12s} {v['change']}" for k, v in rows.items()))
        return
    if any(p not in ("baselines", "timing", "table3") for p in args.parts.split(",")):
        sys.exit(f"--parts: choose from baselines,timing,table3, got {args.parts!r}")
    chosen = list(rows) if args.rows == "all" else [] if args.rows == "none" else args.rows.split(",")
    unknown = [r for r in chosen if r not in rows]
    if unknown:
        sys.exit(f"--rows: unknown row(s) {unknown}; run with --list to see the names")
    start = time.perf_counter()
    out = Path(args.out)
    previous = json.loads(out.read_text(encoding="utf-8")) if out.exists() and args.write else {}

    def save() -> None:  # after every part and row, so an interrupted run keeps what it measured
        if not args.write:
            return
        merged = {**previous, **result}
        if "table3" in result and "table3" in previous:
            merged["table3"] = {**previous["table3"], **result["table3"]}  # a subset updates its rows only
        # the parts not run this time keep their record: results and seconds
        merged["part_seconds"] = {**previous.get("part_seconds", {}), **result.get("part_seconds", {})}
        write_asset(out, merged)

    result: dict[str, Any] = {
        "machine": machine_record(),
        "recipe": ablations_recipe(args.quick),
    }

    def part_baselines() -> None:
        result["baselines"] = dict(previous.get("baselines", {}))  # a subset keeps the others
        for name in args.baselines.split(","):
            result["baselines"][name] = run_baseline(name, args.n_per_length, args.quick)
            print(f"baseline {name}: {json.dumps(result['baselines'][name])}", file=sys.stderr, flush=True)
            save()

    def part_timing() -> None:
        result["timing"] = run_timing([8, 16, 32, 64, 128], batch_size=16, repeats=5)
        print(f"timing: {json.dumps(result['timing']['ms_per_step'])}", file=sys.stderr, flush=True)
        save()

    def part_table3() -> None:
        result["table3"] = {}
        for name in chosen:
            spec = rows[name]
            measured = run_row(spec["model"], spec["train"], spec["variant"], **TABLE3_DATA)
            result["table3"][name] = {"group": spec["group"], "change": spec["change"], **measured}
            print(f"row {name}: {json.dumps(measured)}", file=sys.stderr, flush=True)
            save()

    runners = {"baselines": part_baselines, "timing": part_timing, "table3": part_table3}
    for part in args.parts.split(","):  # in the order given
        if part == "table3" and not chosen:
            continue
        part_start = time.perf_counter()
        runners[part]()
        result.setdefault("part_seconds", {})[part] = round(time.perf_counter() - part_start, 1)
        save()
    result["total_seconds"] = round(time.perf_counter() - start, 1)
    save()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
