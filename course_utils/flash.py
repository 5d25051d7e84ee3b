"""FlashAttention's idea on a CPU: exact attention tile by tile with the online softmax, and the
memory the T x T matrix would have taken. Chapter 11.

``tiled_attention`` never holds more than one (block x block) tile of scores per head: for every
block of queries it walks over the blocks of keys, keeping a running maximum m, a running sum l
of exponentials and an unnormalised output acc; ``online_softmax_update`` is that one step
(Milakov and Gimelshein 2018; Dao et al. 2022). In Python on a CPU the loop is slower than one
big matrix product; on a GPU the fused kernel wins because the tile stays in on-chip memory.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
from collections.abc import Callable, Iterator

import torch
from torch import Tensor

from .attention import scaled_dot_product_attention
from .masks import causal_mask
from .validate import check_bool, check_callable, check_float_tensor, check_positive_int


def online_softmax_update(
    m: Tensor, l: Tensor, acc: Tensor, scores: Tensor, v: Tensor  # noqa: E741
) -> tuple[Tensor, Tensor, Tensor]:
    """One tile of the online softmax: fold scores (..., q, k) and values v (..., k, d) into (m, l, acc). Chapter 11.

    m (..., q): running maximum of the scores seen so far (-inf before the first tile); l (..., q):
    running sum of exp(score - m); acc (..., q, d): running sum of exp(score - m) v. Masked scores
    are -inf. After the last tile the attention output is acc / l.
    """
    for name, x, rank in (("m", m, 1), ("l", l, 1), ("acc", acc, 2), ("scores", scores, 2), ("v", v, 2)):
        check_float_tensor(name, x, range(rank, 9), "(..., q)" if rank == 1 else "(..., rows, cols)")
    if scores.shape[:-1] != m.shape or scores.shape[-1] != v.shape[-2] or acc.shape[-1] != v.shape[-1]:
        raise ValueError(f"scores must be (..., q, k) for m (..., q), v (..., k, d) and acc (..., q, d), got scores "
                         f"{tuple(scores.shape)}, m {tuple(m.shape)}, v {tuple(v.shape)}, acc {tuple(acc.shape)}")
    m_new = torch.maximum(m, scores.amax(dim=-1))  # (..., q)
    m_safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)  # rows with no key yet: no shift
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
    check_float_tensor("q", q, range(2, 6), "(..., T_q, d_k)")
    check_float_tensor("k", k, range(2, 6), "(..., T_k, d_k)")
    check_float_tensor("v", v, range(2, 6), "(..., T_k, d_v)")
    check_bool("causal", causal)
    check_positive_int("block", block)
    step = online_softmax_update if update is None else check_callable("update", update)
    T_q, T_k, d_k = q.shape[-2], k.shape[-2], q.shape[-1]
    if k.shape[-1] != d_k or v.shape[-2] != T_k:
        raise ValueError(f"q, k, v must be (..., T_q, d_k), (..., T_k, d_k), (..., T_k, d_v), got "
                         f"{tuple(q.shape)}, {tuple(k.shape)} and {tuple(v.shape)}")
    if causal and T_q != T_k:
        raise ValueError(f"causal tiled attention needs T_q == T_k, got T_q={T_q} and T_k={T_k}")
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


def plain_attention(q: Tensor, k: Tensor, v: Tensor, causal: bool = False) -> Tensor:
    """Chapter 1's attention, which holds the whole (..., T_q, T_k) weight matrix: the reference. Chapter 11."""
    mask = causal_mask(q.shape[-2], q.device)[0, 0] if causal else None  # (T, T) broadcasts to any batch shape
    return scaled_dot_product_attention(q, k, v, mask)[0]


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
    unlike the process's resident size. tracemalloc does not see torch's allocator.
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
