"""FlashAttention's idea on a CPU: exact attention tile by tile with the online softmax, what it
saves in memory and time, and linear attention's O(T) alternative. Chapter 11.

``tiled_attention`` never holds more than one (block x block) tile of scores per head: for every
block of queries it walks over the blocks of keys (the loop order of FlashAttention-2, Dao 2023),
keeping a running maximum m, a running sum l of exponentials and an unnormalised output acc;
``online_softmax_update`` is that one step (Milakov and Gimelshein 2018; Dao et al. 2022).
Under a causal mask it skips the tiles above the diagonal (``tile_counts`` counts them).
``linear_attention`` replaces the softmax by a feature map (Katharopoulos et al. 2020), so the
keys and values fold into a d_k x d_v state and the cost grows linearly in T.
``interleaved_times`` times functions in turn, outside any profiler; ``peak_memory_bytes``
measures the tensor bytes a function holds at its peak.
"""

from __future__ import annotations

import contextlib
import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Mapping

import torch
import torch.nn.functional as F
from torch import Tensor

from .attention import scaled_dot_product_attention
from .masks import causal_mask
from .validate import check_bool, check_callable, check_float_tensor, check_number, check_positive_int


def _check_qkv(q: object, k: object, v: object, causal: object) -> tuple[Tensor, Tensor, Tensor]:
    """Validate q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v) and the causal flag."""
    q = check_float_tensor("q", q, range(2, 6), "(..., T_q, d_k)")
    k = check_float_tensor("k", k, range(2, 6), "(..., T_k, d_k)")
    v = check_float_tensor("v", v, range(2, 6), "(..., T_k, d_v)")
    check_bool("causal", causal)
    for name, x in (("k", k), ("v", v)):
        if x.dtype != q.dtype:
            raise TypeError(f"{name} must have q's dtype {q.dtype}, got {x.dtype}")
    for name, x in (("q", q), ("k", k), ("v", v)):
        if x.shape[-1] == 0 or x.shape[-2] == 0:
            raise ValueError(f"{name} must have at least one position and one feature, got shape {tuple(x.shape)}")
    if k.shape[-1] != q.shape[-1] or v.shape[-2] != k.shape[-2]:
        raise ValueError(f"q, k, v must be (..., T_q, d_k), (..., T_k, d_k), (..., T_k, d_v): as many keys as values "
                         f"and the same d_k for queries and keys, got "
                         f"{tuple(q.shape)}, {tuple(k.shape)} and {tuple(v.shape)}")
    if causal and q.shape[-2] != k.shape[-2]:
        raise ValueError(f"causal attention needs T_q == T_k, got T_q={q.shape[-2]} and T_k={k.shape[-2]}")
    return q, k, v


def online_softmax_update(
    m: Tensor, l: Tensor, acc: Tensor, scores: Tensor, v: Tensor  # noqa: E741
) -> tuple[Tensor, Tensor, Tensor]:
    """One tile of the online softmax: fold scores (..., q, k) and values v (..., k, d) into (m, l, acc). Chapter 11.

    m (..., q): running maximum of the scores seen so far (-inf before the first tile); l (..., q):
    running sum of exp(score - m); acc (..., q, d): running sum of exp(score - m) v. Masked scores
    are -inf. A row with no unmasked score yet keeps m = -inf and l = acc = 0 (no NaN). After the
    last tile the attention output is acc / l.
    """
    for name, x, rank in (("m", m, 1), ("l", l, 1), ("acc", acc, 2), ("scores", scores, 2), ("v", v, 2)):
        check_float_tensor(name, x, range(rank, 9), "(..., q)" if rank == 1 else "(..., rows, cols)")
    if scores.shape[:-1] != m.shape or scores.shape[-1] != v.shape[-2] or acc.shape[-1] != v.shape[-1]:
        raise ValueError(f"scores must be (..., q, k) for m (..., q), v (..., k, d) and acc (..., q, d), got scores "
                         f"{tuple(scores.shape)}, m {tuple(m.shape)}, v {tuple(v.shape)}, acc {tuple(acc.shape)}")
    m_new = torch.maximum(m, scores.amax(dim=-1))  # (..., q)
    # a row whose scores are all -inf so far: shift by 0, so exp(-inf - 0) = 0, never exp(-inf + inf) = NaN
    m_safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
    rescale = torch.exp(m - m_safe)  # (..., q): exp(old max - new max) <= 1, 0 before the first key
    p = torch.exp(scores - m_safe[..., None])  # (..., q, k)
    l_new = l * rescale + p.sum(dim=-1)  # (..., q)
    acc_new = acc * rescale[..., None] + p @ v  # (..., q, d) + (..., q, k) x (..., k, d)
    return m_new, l_new, acc_new


def tiled_attention(q: Tensor, k: Tensor, v: Tensor, causal: bool = False, block: int = 64,
                    update: Callable[..., tuple[Tensor, Tensor, Tensor]] | None = None) -> Tensor:
    """softmax(Q K^T / sqrt(d_k)) V computed one (block x block) tile at a time, as plain attention. Chapter 11.

    q: (..., T_q, d_k), k: (..., T_k, d_k), v: (..., T_k, d_v) -> (..., T_q, d_v). causal=True
    lets query i see keys 0..i (T_q must equal T_k) and skips the tiles above the diagonal.
    ``update`` replaces online_softmax_update (the exercise plugs the learner's step in here).
    """
    q, k, v = _check_qkv(q, k, v, causal)
    check_positive_int("block", block)
    step = online_softmax_update if update is None else check_callable("update", update)
    T_q, T_k, d_k = q.shape[-2], k.shape[-2], q.shape[-1]
    scale = 1.0 / math.sqrt(d_k)
    outputs = []
    for i0 in range(0, T_q, block):
        q_blk = q[..., i0:i0 + block, :] * scale  # (..., bq, d_k)
        bq = q_blk.shape[-2]
        m = q.new_full((*q.shape[:-2], bq), float("-inf"))  # (..., bq)
        l = q.new_zeros((*q.shape[:-2], bq))  # noqa: E741  (..., bq)
        acc = q.new_zeros((*q.shape[:-2], bq, v.shape[-1]))  # (..., bq, d_v)
        last_key = min(T_k, i0 + bq) if causal else T_k  # causal: tiles right of the diagonal are all masked
        for j0 in range(0, last_key, block):
            scores = q_blk @ k[..., j0:j0 + block, :].transpose(-2, -1)  # (..., bq, bk)
            if causal and j0 + scores.shape[-1] > i0:  # a tile on the diagonal: mask keys after the query
                rows = torch.arange(i0, i0 + bq)[:, None]
                cols = torch.arange(j0, j0 + scores.shape[-1])[None, :]
                scores = scores.masked_fill(cols > rows, float("-inf"))
            m, l, acc = step(m, l, acc, scores, v[..., j0:j0 + block, :])  # noqa: E741
        outputs.append(acc / l[..., None])  # (..., bq, d_v)
    return torch.cat(outputs, dim=-2)  # (..., T_q, d_v)


def tile_counts(T: int, block: int, causal: bool) -> tuple[int, int]:
    """(tiles tiled_attention computes, tiles of the whole T x T grid) for T queries and keys. Chapter 11.

    Under the causal mask the tiles entirely above the diagonal are skipped: with n = ceil(T / block)
    blocks a side, n (n + 1) / 2 of the n^2 tiles are computed.
    """
    check_positive_int("T", T)
    check_positive_int("block", block)
    check_bool("causal", causal)
    n = -(-T // block)
    return (n * (n + 1) // 2 if causal else n * n), n * n


def plain_attention(q: Tensor, k: Tensor, v: Tensor, causal: bool = False) -> Tensor:
    """Chapter 1's attention, which holds the whole (..., T_q, T_k) weight matrix: the reference. Chapter 11."""
    q, k, v = _check_qkv(q, k, v, causal)
    mask = causal_mask(q.shape[-2], q.device)[0, 0] if causal else None  # (T, T) broadcasts to any batch shape
    return scaled_dot_product_attention(q, k, v, mask)[0]


def elu_feature_map(x: Tensor) -> Tensor:
    """phi(x) = elu(x) + 1 > 0, the feature map of Katharopoulos et al. (2020). Chapter 11."""
    return F.elu(check_float_tensor("x", x)) + 1


def linear_attention(q: Tensor, k: Tensor, v: Tensor, causal: bool = False, chunk: int = 64) -> Tensor:
    """Linear attention: out_i = phi(q_i) S_i / phi(q_i) z_i with phi = elu + 1 (Katharopoulos et al. 2020). Chapter 11.

    The softmax's exp(q . k) is replaced by phi(q) . phi(k), so the sum over keys factors:
    S = sum_j phi(k_j) v_j^T (d_k x d_v) and z = sum_j phi(k_j) (d_k), over all keys, or over
    keys j <= i under the causal mask. Causal: the keys are read in chunks of ``chunk``; within a
    chunk a small masked (chunk x chunk) product, across chunks the running state (S, z), so time
    and memory grow linearly in T. q: (..., T, d_k), k: (..., T, d_k), v: (..., T, d_v).
    """
    q, k, v = _check_qkv(q, k, v, causal)
    check_positive_int("chunk", chunk)
    fq, fk = elu_feature_map(q), elu_feature_map(k)  # (..., T, d_k), positive
    if not causal:
        state = fk.transpose(-2, -1) @ v  # (..., d_k, d_v): sum_j phi(k_j) v_j^T
        z = fk.sum(dim=-2)  # (..., d_k)
        return (fq @ state) / (fq @ z[..., None])  # (..., T, d_v) / (..., T, 1)
    T = q.shape[-2]
    state = q.new_zeros((*fk.shape[:-2], fk.shape[-1], v.shape[-1]))  # (..., d_k, d_v): keys of earlier chunks
    z = q.new_zeros((*fk.shape[:-2], fk.shape[-1]))  # (..., d_k)
    outputs = []
    for i0 in range(0, T, chunk):
        fq_c, fk_c, v_c = fq[..., i0:i0 + chunk, :], fk[..., i0:i0 + chunk, :], v[..., i0:i0 + chunk, :]
        local = (fq_c @ fk_c.transpose(-2, -1)).tril()  # (..., c, c): phi(q_i) . phi(k_j) for j <= i in the chunk
        num = fq_c @ state + local @ v_c  # (..., c, d_v)
        den = fq_c @ z[..., None] + local.sum(dim=-1, keepdim=True)  # (..., c, 1)
        outputs.append(num / den)
        state = state + fk_c.transpose(-2, -1) @ v_c  # fold this chunk's keys into the state
        z = z + fk_c.sum(dim=-2)
    return torch.cat(outputs, dim=-2)  # (..., T, d_v)


def interleaved_times(fns: Mapping[str, Callable[[], object]], repeats: int = 5,
                      clock: Callable[[], float] = time.perf_counter) -> dict[str, list[float]]:
    """Seconds of each fn() over ``repeats`` rounds, run in turn A, B, A, B, ... after one warm-up each. Chapter 11.

    Interleaving puts a busy moment of a shared machine on every function alike, so ratios of the
    medians are fairer than timings taken one function after another. No profiler is running.
    """
    if not isinstance(fns, Mapping) or not fns:
        raise TypeError(f"fns must be a non-empty dict of name -> function, got {type(fns).__name__}")
    for name, fn in fns.items():
        check_callable(f"fns[{name!r}]", fn)
    check_positive_int("repeats", repeats)
    check_callable("clock", clock)
    for fn in fns.values():
        fn()  # warm-up: first-call allocations and caches
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = clock()
            fn()
            times[name].append(clock() - start)
    return times


def median(values: list[float]) -> float:
    """The median of a non-empty list of numbers (timings are quoted as medians). Chapter 11."""
    if not isinstance(values, (list, tuple)) or not values:
        raise TypeError(f"values must be a non-empty list of numbers, got {values!r}")
    for i, x in enumerate(values):
        check_number(f"values[{i}]", x)
    return float(statistics.median(values))


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Silence the profiler's start/stop lines, which its C++ side writes straight to file descriptor 2."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def peak_memory_bytes(fn: Callable[[], object]) -> int:
    """Peak bytes allocated by torch on the CPU while fn() runs, above what was held before. Chapter 11.

    Measured with torch.profiler(profile_memory=True): every allocation is charged to the operator
    that made it and every free is a "[memory]" event, so their running sum in time order is the
    memory held. It counts tensor bytes only (not Python objects) and is the same on every run,
    unlike the process's resident size. tracemalloc does not see torch's allocator. The profiler
    slows fn down, unevenly (per operator): never time a function inside it.
    """
    from torch.profiler import ProfilerActivity, profile

    check_callable("fn", fn)
    with _quiet_stderr(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    changes = []
    for event in prof.events():
        delta = event.cpu_memory_usage if event.name == "[memory]" else event.self_cpu_memory_usage
        if delta:
            changes.append((event.time_range.start, delta))
    held = peak = 0
    for _, delta in sorted(changes, key=lambda c: c[0]):
        held += delta
        peak = max(peak, held)
    return int(peak)
