"""Benchmark: Chapter 11's attention at scale; prints tables and ends with one JSON line.

Usage:
    python benchmarks/attention_at_scale.py

Three parts:
- tiled (FlashAttention-style) attention against plain attention in float64, with and without a
  causal mask: the largest absolute difference;
- peak memory of plain vs tiled causal attention (float32, one head, d_k = 64, tiles of 256) as T
  grows from 512 to 8192, measured with torch.profiler(profile_memory=True) (deterministic: it
  sums the bytes of every tensor allocation and free), next to the size of one T x T matrix, and
  the CPU seconds each took (one thread);
- the KV cache of the shipped character LM after 128 tokens as multi-head attention, as GQA
  (2 KV heads) and as MQA (1 KV head): bytes held by the cache, equal to the formula.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from course_utils.flash import peak_memory_bytes, plain_attention, tiled_attention  # noqa: E402
from course_utils.kv_memory import cache_bytes_held, generate_into_cache, kv_cache_bytes  # noqa: E402
from course_utils.modern import convert_to_gqa  # noqa: E402
from course_utils.runs.modern import load_mha_charlm  # noqa: E402

LENGTHS = (512, 1024, 2048, 4096, 8192)
BLOCK = 256
CACHE_TOKENS = 128  # the character LM's whole context window


def main() -> None:
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    peak_memory_bytes(lambda: torch.ones(1))  # the profiler's first start is slow: keep it out of the timings
    # 1) exactness in float64
    q, k, v = (torch.randn(1, 2, 1000, 64, generator=g, dtype=torch.float64) for _ in range(3))
    error = max(float((tiled_attention(q, k, v, causal, block=128) - plain_attention(q, k, v, causal)).abs().max())
                for causal in (False, True))
    print(f"tiled vs plain attention, float64, T=1000, with and without causal mask: max |diff| {error:.1e}")
    # 2) peak memory as T grows
    peaks: dict[str, dict[int, int]] = {"plain": {}, "tiled": {}}
    print(f"{'T':>5} {'T x T fp32':>12} {'plain peak':>12} {'tiled peak':>12} {'ratio':>6} {'CPU s plain':>11} "
          f"{'tiled':>6}")
    for T in LENGTHS:
        q, k, v = (torch.randn(1, 1, T, 64, generator=g) for _ in range(3))
        t0 = time.process_time()
        peaks["plain"][T] = peak_memory_bytes(lambda q=q, k=k, v=v: plain_attention(q, k, v, causal=True))
        t1 = time.process_time()
        peaks["tiled"][T] = peak_memory_bytes(
            lambda q=q, k=k, v=v: tiled_attention(q, k, v, causal=True, block=BLOCK))
        t2 = time.process_time()
        print(f"{T:>5} {T * T * 4 / 2**20:>8.0f} MiB {peaks['plain'][T] / 2**20:>8.1f} MiB "
              f"{peaks['tiled'][T] / 2**20:>8.1f} MiB {peaks['plain'][T] / peaks['tiled'][T]:>6.0f} "
              f"{t1 - t0:>11.2f} {t2 - t1:>6.2f}")
    # 3) KV cache bytes of the character LM: MHA, GQA, MQA
    model = load_mha_charlm()
    c = model.config
    prompt = torch.zeros(1, 1, dtype=torch.long)
    cache_bytes = {}
    for name, n_kv in (("mha", c.n_heads), ("gqa", 2), ("mqa", 1)):
        m = model if n_kv == c.n_heads else convert_to_gqa(model, n_kv)
        _, cache = generate_into_cache(m, prompt, CACHE_TOKENS)
        held = cache_bytes_held(cache)
        formula = kv_cache_bytes(c.n_layers, n_kv, c.d_model // c.n_heads, cache.length, 1, 4)
        assert held == formula, (name, held, formula)
        cache_bytes[name] = held
        heads = f"{n_kv} KV head" + ("s" if n_kv > 1 else "")
        print(f"KV cache, {name.upper()} ({heads}), {cache.length} tokens, float32: {held:,} bytes = formula")
    result = {"tiled_vs_plain_max_abs_error": error, "peak_bytes": peaks, "kv_cache_bytes": cache_bytes,
              "kv_cache_model": {"n_layers": c.n_layers, "n_heads": c.n_heads, "d_head": c.d_model // c.n_heads,
                                 "tokens": CACHE_TOKENS, "bytes_per_value": 4},
              "peak_memory_setup": {"dtype": "float32", "heads": 1, "d_k": 64, "block": BLOCK, "causal": True,
                                    "method": "torch.profiler profile_memory"}}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
