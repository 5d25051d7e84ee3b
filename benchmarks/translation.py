"""Benchmark: Chapter 13's Tables 2 and 3 in miniature (English number names into German); ends with one JSON line.

Usage:
    python benchmarks/translation.py              # every row, printed only
    python benchmarks/translation.py --write      # and write translation_table.json and translation_en_de.pt
    python benchmarks/translation.py --jobs 3     # train the variants in 3 processes (one thread each)

Each variant of ``course_utils.runs.translation.VARIANTS`` trains from scratch with the same
seed, steps and batch size (equal budgets) on one CPU thread: the base recipe (shared BPE
vocabulary, tied embeddings, label smoothing 0.1, warm-up schedule, Adam beta2 0.98, the average
of the last 5 checkpoints) and one change at a time (English to German only). Every model is
scored on the same 1,000 held-out numbers below 10,000 and 500 numbers from 10,000 to 99,999
(beyond the training range): BLEU (on characters) and chrF with sacrebleu, with the 95 % intervals
and p-values of sacrebleu's paired bootstrap (1,000 resamples), and exact match with Wilson
intervals. Times are CPU seconds of the training loop (time.process_time, one thread).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from course_utils.runs import asset_path, save, write_asset  # noqa: E402
from course_utils.runs.translation import (  # noqa: E402
    TRANSLATION_CHECKPOINT,
    TRANSLATION_RECIPE,
    TRANSLATION_RESULTS,
    VARIANTS,
    benchmark_recipe,
    run_translation,
    variant,
)
from course_utils.stats import rates_differ  # noqa: E402
from course_utils.translation import (  # noqa: E402
    encode_pairs,
    paired_bootstrap,
    perplexity,
    scores,
    translate,
)

EVAL = benchmark_recipe()["evaluation"]


def train_variant(name: str, steps: int | None = None, n_eval: int | None = None) -> dict[str, Any]:
    """Train one variant on one thread; return its models, data, perplexity and time.

    ``steps`` and ``n_eval`` shorten a smoke run (fewer steps, the first n_eval numbers of each test set).
    """
    torch.set_num_threads(EVAL["torch_threads"])
    r = run_translation(variant(name), progress=False, steps=steps)
    data = r.data
    if n_eval is not None:
        data = data._replace(test=data.test[:n_eval], beyond=data.beyond[:n_eval],
                             test_numbers=data.test_numbers[:n_eval], beyond_numbers=data.beyond_numbers[:n_eval])
    src_rows, tgt_rows = encode_pairs(data.tokenizer, data.test)
    train_src, train_tgt = encode_pairs(data.tokenizer, data.train)
    return {"name": name, "model": r.model, "last": r.last, "data": data,
            "train_cpu_seconds": r.history.cpu_seconds, "train_wall_seconds": r.history.seconds,
            "final_loss": r.history.losses[-1], "vocab_size": data.tokenizer.vocab_size,
            "perplexity": perplexity(r.model, src_rows, tgt_rows),
            "tokens_per_pair": (sum(map(len, train_src)) + sum(map(len, train_tgt))) / len(train_src) + 2,
            "history": {"losses": r.history.losses[::10], "lrs": r.history.lrs[::10]}}


def decode_chunk(job: tuple[nn.Module, Any, list[str], int, float]) -> list[str]:
    """Translate one chunk of sources (one thread)."""
    torch.set_num_threads(EVAL["torch_threads"])
    model, tokenizer, sources, beam, alpha = job
    return translate(model, tokenizer, sources, beam, alpha, EVAL["extra"])


def decode_all(trained: dict[str, dict[str, Any]], pool: Any, chunk: int = 100) -> None:
    """Fill trained[name]["outputs"]["decoding/split"] for every decoding each row needs."""
    jobs, keys = [], []
    for name, t in trained.items():
        t["outputs"] = {}
        decodings = {"greedy": ("model", 1, 0.0), "beam": ("model", EVAL["beam_size"], EVAL["alpha"])}
        if name == "base":
            decodings["beam alpha 0"] = ("model", EVAL["beam_size"], 0.0)
            decodings["last beam"] = ("last", EVAL["beam_size"], EVAL["alpha"])
        for split in ("test", "beyond"):
            sources = [s for s, _ in getattr(t["data"], split)]
            for key, (which, beam, alpha) in decodings.items():
                for i in range(0, len(sources), chunk):
                    jobs.append((t[which], t["data"].tokenizer, sources[i : i + chunk], beam, alpha))
                    keys.append((name, f"{key}/{split}"))
    for (name, key), out in zip(keys, pool.map(decode_chunk, jobs), strict=True):
        trained[name]["outputs"].setdefault(key, []).extend(out)
    for t in trained.values():
        t["references"] = {split: [r for _, r in getattr(t["data"], split)] for split in ("test", "beyond")}
        t["numbers"] = {"test": t["data"].test_numbers, "beyond": t["data"].beyond_numbers}


ROWS = [  # (row, baseline (variant, decoding), system (variant, decoding))
    ("greedy vs beam", ("base", "greedy"), ("base", "beam")),
    ("alpha 0 vs 0.6", ("base", "beam alpha 0"), ("base", "beam")),
    ("label smoothing 0 vs 0.1", ("no label smoothing", "beam"), ("base", "beam")),
    ("last vs averaged", ("base", "last beam"), ("base", "beam")),
    ("characters vs subwords", ("characters", "beam"), ("base", "beam")),
    ("smaller vs base width", ("smaller width", "beam"), ("base", "beam")),
]


def label(system: tuple[str, str]) -> str:
    return f"{system[0]}, {system[1]}"


def table(results: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per row: BLEU/chrF (paired bootstrap), exact match (Wilson), per test set."""
    rows = []
    for row, a, b in ROWS:
        record: dict[str, Any] = {"row": row, "systems": [label(a), label(b)]}
        for split in ("test", "beyond"):
            refs = results["base"]["references"][split]
            hyps = {label(s): results[s[0]]["outputs"][f"{s[1]}/{split}"] for s in (a, b)}
            boot = paired_bootstrap(hyps, refs, EVAL["n_bootstrap"])
            em = {k: scores(v, refs)["exact_match"] for k, v in hyps.items()}
            ka, kb = (em[label(s)]["k"] for s in (a, b))
            n = len(refs)
            record[split] = {
                "bleu": {k: boot[k]["bleu"] for k in hyps},
                "chrf": {k: boot[k]["chrf"] for k in hyps},
                "exact_match": em,
                "exact_match_differs": rates_differ(ka, n, kb, n),
            }
        record["bleu"] = record["test"]["bleu"]
        record["chrf"] = record["test"]["chrf"]
        record["exact_match"] = record["test"]["exact_match"]
        names = sorted({a[0], b[0]})
        record["train_seconds"] = round(sum(results[v]["train_cpu_seconds"] for v in names), 1)
        record["train_seconds_by_variant"] = {v: round(results[v]["train_cpu_seconds"], 1) for v in names}
        if row.startswith("label smoothing"):
            record["perplexity"] = {label(s): results[s[0]]["perplexity"] for s in (a, b)}
        rows.append(record)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write the shipped assets (default: print only)")
    parser.add_argument("--jobs", type=int, default=1, help="processes (one thread each) that train and decode")
    parser.add_argument("--steps", type=int, default=None, help="smoke run: this many steps (never written)")
    parser.add_argument("--n-eval", type=int, default=None, help="smoke run: score this many numbers per set")
    args = parser.parse_args()
    if args.steps is not None or args.n_eval is not None:
        args.write = False
    torch.set_num_threads(EVAL["torch_threads"])
    names = list(VARIANTS)
    start = time.perf_counter()
    load_before = os.getloadavg()[1]
    more = ([args.steps] * len(names), [args.n_eval] * len(names))
    with ProcessPoolExecutor(args.jobs) as pool:
        results = dict(zip(names, pool.map(train_variant, names, *more), strict=True))
        print("trained:", {n: round(r["train_cpu_seconds"], 1) for n, r in results.items()}, flush=True)
        decode_all(results, pool)
    rows = table(results)
    base = results["base"]
    print(f"{'row':<26} {'system':<30} {'BLEU':>11} {'chrF':>11} {'exact':>7}")
    for r in rows:
        for s in r["systems"]:
            b, c, e = r["bleu"][s], r["chrf"][s], r["exact_match"][s]
            print(f"{r['row']:<26} {s:<30} {b['mean']:>5.1f}±{b['ci']:<4.1f} {c['mean']:>5.1f}±{c['ci']:<4.1f}"
                  f" {100 * e['rate']:>6.1f}%")
    variants = {name: {k: results[name][k] for k in ("train_cpu_seconds", "train_wall_seconds", "final_loss",
                                                     "vocab_size", "perplexity", "tokens_per_pair")}
                for name in names}
    for name in names:
        for split in ("test", "beyond"):
            refs = results[name]["references"][split]
            variants[name][split] = scores(results[name]["outputs"][f"beam/{split}"], refs)
            variants[name][split + "_greedy"] = scores(results[name]["outputs"][f"greedy/{split}"], refs)
    failures = {split: [[n, h] for n, h, r in zip(base["numbers"][split], base["outputs"][f"beam/{split}"],
                                                base["references"][split], strict=True) if h != r]
                for split in ("test", "beyond")}
    result = {"rows": rows, "variants": variants, "failures": failures,
              "outputs": {"beyond_beam": base["outputs"]["beam/beyond"][:50],
                          "beyond_numbers": base["numbers"]["beyond"][:50]},
              "wall_seconds_total": round(time.perf_counter() - start, 1), "jobs": args.jobs,
              "load_average_5min": [round(load_before, 1), round(os.getloadavg()[1], 1)],
              "torch": torch.__version__, "machine": platform.machine(), "recipe": benchmark_recipe()}
    if args.write:
        tokenizer = base["data"].tokenizer
        save(base["model"], TRANSLATION_RECIPE, asset_path(TRANSLATION_CHECKPOINT),
             results={"merges": [list(p) for p in tokenizer.merges], "alphabet": sorted(tokenizer.alphabet),
                      "history": base["history"],
                      "train_cpu_seconds": base["train_cpu_seconds"], "train_wall_seconds": base["train_wall_seconds"],
                      "test": variants["base"]["test"], "beyond": variants["base"]["beyond"]})
        write_asset(TRANSLATION_RESULTS, result, ensure_ascii=False)
    print(json.dumps({"rows": [{k: r[k] for k in ("row", "bleu", "chrf", "exact_match", "train_seconds")}
                               for r in rows], "train_seconds": round(base["train_cpu_seconds"], 1)},
                     ensure_ascii=False))


if __name__ == "__main__":
    main()
