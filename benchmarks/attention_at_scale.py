"""Benchmark: Chapter 11's attention at scale; prints tables and ends with one JSON line.

Usage:
    python benchmarks/attention_at_scale.py                  # measure and print
    python benchmarks/attention_at_scale.py --write          # also write attention_at_scale.json and
                                                             # gqa_uptraining.json to course_utils/assets/
    python benchmarks/attention_at_scale.py --only flash     # one part: flash (time, memory, checkpointing)
                                                             # or gqa (uptraining over seeds)

Parts (recipes in ``course_utils.runs.modern``):
- flash: plain, tiled (FlashAttention-style), PyTorch's fused SDPA and linear attention, float32,
  one head, d_k = 64, causal and not, as T grows. Time: CPU seconds on one thread, the four
  functions interleaved over several rounds after a warm-up, no profiler running (min, median,
  max kept). Peak memory: torch.profiler(profile_memory=True), a separate pass (it counts tensor
  bytes exactly, but it slows the functions unevenly, so it never times them). The tiles tiled
  attention computes. Then one training step of an 8-layer ModernLM with and without gradient
  checkpointing: peak memory and CPU time. The machine's load average is stored beside the times.
- gqa: the shipped character LM converted to GQA-2 and MQA, and the unconverted control, each
  uptrained with UPTRAIN_RECIPE for every seed: bits per character before and after. Then MQA and
  the control uptrained in chunks and scored after each of the recipe's curve_steps (Exercise 11.4's
  reference curve).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from course_utils.charlm import charlm_split  # noqa: E402
from course_utils.flash import (  # noqa: E402
    interleaved_times,
    linear_attention,
    peak_memory_bytes,
    plain_attention,
    tile_counts,
    tiled_attention,
)
from course_utils.modern import ModernLM, ModernLMConfig  # noqa: E402
from course_utils.runs import write_asset  # noqa: E402
from course_utils.runs.modern import (  # noqa: E402
    ATTENTION_AT_SCALE_FILE,
    ATTENTION_AT_SCALE_RECIPE,
    GQA_UPTRAINING_FILE,
    GQA_UPTRAINING_RECIPE,
    load_mha_charlm,
    run_uptraining,
    uptraining_curve,
)


def _stats(values: list[float]) -> dict[str, float]:
    s = sorted(values)
    return {"min": round(s[0], 6), "median": round(s[len(s) // 2], 6), "max": round(s[-1], 6)}


def flash_part() -> dict:
    r = ATTENTION_AT_SCALE_RECIPE
    torch.set_num_threads(r["threads"])
    g = torch.Generator().manual_seed(r["seed"])
    peak_memory_bytes(lambda: torch.ones(1))  # the profiler's first start is slow
    load = [round(x, 2) for x in os.getloadavg()]
    rows = []
    print(f"{'T':>5} {'causal':>6} {'plain ms':>9} {'tiled ms':>9} {'sdpa ms':>8} {'linear ms':>9} "
          f"{'plain MiB':>9} {'tiled MiB':>9} {'linear MiB':>10} {'tiles':>9}")
    for T in r["lengths"]:
        q, k, v = (torch.randn(1, r["heads"], T, r["d_k"], generator=g) for _ in range(3))
        for causal in (False, True):
            fns = {
                "plain": lambda q=q, k=k, v=v, c=causal: plain_attention(q, k, v, c),
                "tiled": lambda q=q, k=k, v=v, c=causal: tiled_attention(q, k, v, c, block=r["block"]),
                "sdpa": lambda q=q, k=k, v=v, c=causal: F.scaled_dot_product_attention(q, k, v, is_causal=c),
                "linear": lambda q=q, k=k, v=v, c=causal: linear_attention(q, k, v, c, chunk=r["linear_chunk"]),
            }
            times = interleaved_times(fns, r["repeats"], clock=time.process_time)
            peaks = {name: peak_memory_bytes(fn) for name, fn in fns.items()}
            computed, total = tile_counts(T, r["block"], causal)
            row = {"T": T, "causal": causal, "seconds": {n: _stats(t) for n, t in times.items()},
                   "peak_bytes": peaks, "tiles_computed": computed, "tiles_total": total}
            rows.append(row)
            med = {n: 1000 * row["seconds"][n]["median"] for n in fns}
            print(f"{T:>5} {causal!s:>6} {med['plain']:>9.1f} {med['tiled']:>9.1f} {med['sdpa']:>8.1f} "
                  f"{med['linear']:>9.1f} {peaks['plain'] / 2**20:>9.1f} {peaks['tiled'] / 2**20:>9.2f} "
                  f"{peaks['linear'] / 2**20:>10.2f} {computed:>4}/{total:<4}", flush=True)
    # gradient checkpointing: one training step of a deeper model
    c = r["checkpointing"]
    vocab_size = 65
    tokens = torch.randint(0, vocab_size, (c["batch_size"], c["block_size"] + 1), generator=g)
    steps = {}
    for flag in (False, True):
        torch.manual_seed(r["seed"])
        model = ModernLM(ModernLMConfig(vocab_size=vocab_size, **c["model"], checkpoint=flag)).train()

        def step(model: ModernLM = model) -> None:
            loss = F.cross_entropy(model(tokens[:, :-1]).reshape(-1, vocab_size), tokens[:, 1:].reshape(-1))
            loss.backward()
            model.zero_grad(set_to_none=True)
        steps["checkpointed" if flag else "stored"] = step
    ck_times = interleaved_times(steps, c["repeats"], clock=time.process_time)
    ck_peaks = {name: peak_memory_bytes(fn) for name, fn in steps.items()}
    checkpointing = {"seconds": {n: _stats(t) for n, t in ck_times.items()}, "peak_bytes": ck_peaks}
    for name in steps:
        print(f"training step, activations {name:<12}: {ck_peaks[name] / 2**20:6.1f} MiB, "
              f"{1000 * checkpointing['seconds'][name]['median']:6.0f} CPU ms (median)")
    load_after = [round(x, 2) for x in os.getloadavg()]
    return {"rows": rows, "checkpointing": checkpointing, "load_average_before": load, "load_average_after": load_after,
            "cpus": os.cpu_count(), "torch": torch.__version__, "machine": platform.machine(),
            "recipe": ATTENTION_AT_SCALE_RECIPE}


def gqa_part() -> dict:
    r = GQA_UPTRAINING_RECIPE
    torch.set_num_threads(r["threads"])
    charlm, data = load_mha_charlm(), charlm_split()
    rows = []
    for name, n_kv in r["kv_heads"].items():
        for seed in r["seeds"]:
            result = run_uptraining(n_kv, seed, charlm, data)
            rows.append({"variant": name, "n_kv_heads": n_kv, "seed": seed, **result})
            print(f"{name:<14} seed {seed}: {result['before']:.3f} -> {result['after']:.3f} bits/char "
                  f"(multi-head {result['base']:.3f})", flush=True)
    curves = []
    for name in ("control (MHA)", "MQA"):
        for seed in r["curve_seeds"]:
            bits = uptraining_curve(r["kv_heads"][name], r["curve_steps"], seed, charlm, data)
            curves.append({"variant": name, "seed": seed, "steps": r["curve_steps"], "bits_per_char": bits})
            print(f"{name:<14} seed {seed}, after {r['curve_steps']} steps: {bits}", flush=True)
    return {"rows": rows, "curves": curves, "torch": torch.__version__, "recipe": GQA_UPTRAINING_RECIPE}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write the results to course_utils/assets/")
    parser.add_argument("--only", choices=("flash", "gqa"), help="run one part")
    args = parser.parse_args()
    results = {}
    if args.only in (None, "flash"):
        results[ATTENTION_AT_SCALE_FILE] = flash_part()
    if args.only in (None, "gqa"):
        results[GQA_UPTRAINING_FILE] = gqa_part()
    if args.write:
        for name, result in results.items():
            write_asset(name, result)
            print(f"wrote {name}")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
