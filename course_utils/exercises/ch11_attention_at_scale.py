"""Checkers for the exercises of Chapter 11 (attention at scale and the modern block).

11.1 the online-softmax update (implement), 11.2 your tiled attention timed against plain attention
(experiment), 11.3 mean-pooling key/value heads (implement), 11.4 multi-query attention from the
trained model against the control (experiment), 11.5 linear attention (implement).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.overrides import TorchFunctionMode

from ..flash import interleaved_times, linear_attention, online_softmax_update, plain_attention, tiled_attention
from .core import CheckFailed, as_number, call_student, checker, describe, expect_close, expect_tensor
from .experiment import Expected, compare_prediction, judge_range, read_prediction


def _calls_the_book(fn: Any, name: str) -> bool:
    """True when the learner's function refers to ``name`` (the book's own answer) in its code."""
    code = getattr(fn, "__code__", None)
    return name in (*getattr(code, "co_names", ()), *getattr(code, "co_freevars", ()))


# ----------------------------------------------------------------- 11.1 (implement) the online-softmax update
def _state(shape: tuple[int, ...], d: int, g: torch.Generator, first: bool) -> tuple[Tensor, Tensor, Tensor]:
    if first:
        return (torch.full(shape, float("-inf"), dtype=torch.float64), torch.zeros(shape, dtype=torch.float64),
                torch.zeros((*shape, d), dtype=torch.float64))
    m = torch.randn(shape, generator=g, dtype=torch.float64)
    l = torch.rand(shape, generator=g, dtype=torch.float64) * 3 + 0.5  # noqa: E741
    return m, l, torch.randn((*shape, d), generator=g, dtype=torch.float64)


def _wrong_updates(m: Tensor, l: Tensor, acc: Tensor, s: Tensor, v: Tensor) -> dict[str, tuple[Tensor, ...]]:
    m_new = torch.maximum(m, s.amax(-1))
    r = torch.exp(m - m_new)
    p = torch.exp(s - m_new[..., None])
    return {
        "acc is not rescaled: multiply the old acc by exp(m_old - m_new) before adding the new tile.":
            (m_new, l * r + p.sum(-1), acc + p @ v),
        "l is not rescaled: multiply the old sum by exp(m_old - m_new) before adding the new tile's sum.":
            (m_new, l + p.sum(-1), acc * r[..., None] + p @ v),
        "The rescale factor is upside down: it is exp(m_old - m_new) (<= 1), not exp(m_new - m_old).":
            (m_new, l / r + p.sum(-1), acc / r[..., None] + p @ v),
        "You return the normalised output: keep acc unnormalised (divide by l only after the last tile).":
            (m_new, l * r + p.sum(-1), (acc * r[..., None] + p @ v) / (l * r + p.sum(-1))[..., None]),
    }


@checker("11.1", "the online-softmax update")
def check_online_softmax(fn: Callable[..., Any]) -> str:
    """Check ``fn(m, l, acc, scores, v) -> (m, l, acc)`` on single tiles and inside tiled attention."""
    if _calls_the_book(fn, "online_softmax_update"):
        raise CheckFailed("your update calls course_utils' online_softmax_update: write the step yourself.")
    g = torch.Generator().manual_seed(11)
    for shape, k, d, first in (((4,), 5, 3, True), ((2, 3), 6, 2, False), ((1,), 1, 4, False), ((2, 5), 4, 3, True)):
        m, l, acc = _state(shape, d, g, first)  # noqa: E741
        s = torch.randn((*shape, k), generator=g, dtype=torch.float64) * 2
        v = torch.randn((*shape[:-1], k, d) if len(shape) > 1 else (k, d), generator=g, dtype=torch.float64)
        got = call_student(fn, m, l, acc, s, v, what="your online_softmax_update")
        if not isinstance(got, (tuple, list)) or len(got) != 3:
            raise CheckFailed(f"online_softmax_update should return the tuple (m, l, acc), got {type(got).__name__}")
        want = online_softmax_update(m, l, acc, s, v)
        wrong = _wrong_updates(m, l, acc, s, v)
        for i, name in enumerate(("m", "l", "acc")):
            expect_close(got[i], want[i], f"the new {name}", atol=1e-10, rtol=1e-10,
                         mistakes={hint: w[i] for hint, w in wrong.items()})
    # a later tile whose scores are far below the running maximum: the new max must include the old one
    m = torch.tensor([500.0], dtype=torch.float64)
    l, acc = torch.ones(1, dtype=torch.float64), torch.ones(1, 2, dtype=torch.float64)
    s, v = torch.full((1, 3), -400.0, dtype=torch.float64), torch.ones(3, 2, dtype=torch.float64)
    got = call_student(fn, m, l, acc, s, v, what="your online_softmax_update")
    got_m = expect_tensor(got[0], "the new m")
    if not torch.isfinite(expect_tensor(got[2], "the new acc")).all() or float(got_m) != 500.0:
        raise CheckFailed("with a running max of 500 and a new tile of scores -400, the new max must stay 500 "
                          "and acc finite: take m_new = max(m_old, max of the tile), not the tile's max alone.")
    # a row whose scores are all -inf so far (a fully masked first tile, as under a sliding window or padding):
    # the state must stay (-inf, 0, 0), and a later tile must then give the softmax of its scores alone
    m = torch.full((2,), float("-inf"), dtype=torch.float64)
    l, acc = torch.zeros(2, dtype=torch.float64), torch.zeros(2, 3, dtype=torch.float64)
    s = torch.tensor([[float("-inf")] * 4, [0.5, -1.0, float("-inf"), 2.0]], dtype=torch.float64)
    v = torch.randn(4, 3, generator=g, dtype=torch.float64)  # (k, d): the keys' values, shared by the rows
    got = call_student(fn, m, l, acc, s, v, what="your online_softmax_update")
    if not isinstance(got, (tuple, list)) or len(got) != 3:
        raise CheckFailed(f"online_softmax_update should return the tuple (m, l, acc), got {type(got).__name__}")
    if any(torch.isnan(expect_tensor(t, f"the new {n}")).any() for t, n in zip(got, ("m", "l", "acc"), strict=True)):
        raise CheckFailed("a row whose scores are all -inf so far (a fully masked tile before any key) gives NaN: "
                          "exp(m_old - m_new) = exp(-inf - (-inf)) is NaN. When m_new is -inf, shift by 0 instead "
                          "(torch.where(torch.isinf(m_new), 0, m_new)), so the row keeps l = 0 and acc = 0.")
    s2 = torch.randn(2, 4, generator=g, dtype=torch.float64)
    v2 = torch.randn(4, 3, generator=g, dtype=torch.float64)
    m2, l2, acc2 = call_student(fn, *got, s2, v2, what="your online_softmax_update")
    seen = torch.isfinite(s[1])
    want_out = torch.stack([
        torch.softmax(s2[0], -1) @ v2,
        torch.softmax(torch.cat([s[1][seen], s2[1]]), -1) @ torch.cat([v[seen], v2]),
    ])  # (2, 3)
    expect_close(expect_tensor(acc2, "acc") / expect_tensor(l2, "l")[..., None], want_out,
                 "acc / l after a fully masked tile and a normal one", atol=1e-10, rtol=1e-10)
    # end to end: tiled attention with the learner's step equals plain attention, causal and not
    for causal in (False, True):
        q, k_, v_ = (torch.randn(2, 37, 8, generator=g, dtype=torch.float64) for _ in range(3))
        got_out = call_student(tiled_attention, q, k_, v_, causal, block=8, update=fn,
                               what="tiled attention with your update")
        expect_close(got_out, plain_attention(q, k_, v_, causal), "tiled attention with your update",
                     atol=1e-10, rtol=1e-10)
    return "Tiled attention with your update equals plain attention in float64, causal or not."


# ----------------------------------------------------------------- 11.3 (implement) mean-pooling K/V heads
def reference_pool_heads(w: Tensor, n_heads: int, n_kv_heads: int) -> Tensor:
    G = n_heads // n_kv_heads
    rows = w.shape[0] // n_heads  # d_k
    return w.reshape(n_kv_heads, G, rows, *w.shape[1:]).mean(dim=1).reshape(n_kv_heads * rows, *w.shape[1:])


@checker("11.3", "mean-pooling key/value heads")
def check_pool_heads(fn: Callable[[Tensor, int, int], Tensor]) -> str:
    """Check ``fn(w, n_heads, n_kv_heads)``: w (h * d_k, d_model) or a bias (h * d_k,) -> (n_kv * d_k, ...)."""
    g = torch.Generator().manual_seed(3)
    for h, n_kv, d_k, d_model in ((4, 2, 3, 5), (8, 2, 2, 4), (6, 3, 4, 6), (4, 1, 2, 3), (4, 4, 2, 3)):
        for w in (torch.randn(h * d_k, d_model, generator=g, dtype=torch.float64),
                  torch.randn(h * d_k, generator=g, dtype=torch.float64)):
            want = reference_pool_heads(w, h, n_kv)
            G, tail = h // n_kv, w.shape[1:]
            got = call_student(fn, w, h, n_kv, what="your pool_heads")
            mistakes = {
                "Groups are consecutive heads (0..G-1 share KV head 0, as repeat_interleave does), not every "
                "n_kv-th head.": w.reshape(G, n_kv, d_k, *tail).mean(0).reshape(n_kv * d_k, *tail),
                "You summed the heads of a group: take their mean.":
                    w.reshape(n_kv, G, d_k, *tail).sum(1).reshape(n_kv * d_k, *tail),
                "You kept the first head of each group: mean-pool all of them (Ainslie et al. 2023).":
                    w.reshape(n_kv, G, d_k, *tail)[:, 0].reshape(n_kv * d_k, *tail),
                "You kept the first n_kv_heads heads and dropped the others: average each group of G = h / n_kv "
                "consecutive heads.": w[: n_kv * d_k],
            }
            if h // n_kv != 1:
                expect_close(got, want, f"pool_heads(w of shape {tuple(w.shape)}, {h}, {n_kv})", mistakes=mistakes,
                             atol=1e-12, rtol=1e-12)
            else:
                expect_close(got, want, f"pool_heads(w of shape {tuple(w.shape)}, {h}, {n_kv})", atol=1e-12,
                             rtol=1e-12)
    return "With n_kv_heads = n_heads it is the identity, and n_kv_heads = 1 is multi-query attention."


# ----------------------------------------------------------------- 11.2 (experiment) your tiled loop against plain
TILING_PREDICTIONS = {
    "faster": "with tiles of 32, your loop takes less time than plain attention at T = 2048 (causal)",
    "same": "about the same time (within 20 %)",
    "slower": "your loop takes more time than plain attention",
}
SMALL_BLOCK = 32  # the block the prediction is about
LENGTHS = (512, 1024, 2048)  # timed with blocks of 256, as in the chapter


class PairTimer:
    """What the checker hands Exercise 11.2: times two functions interleaved and keeps every result. Chapter 11.

    ``compare(plain_fn, tiled_fn)`` runs both in turn (one warm-up, then ``repeats`` rounds, no
    profiler) and returns their median CPU milliseconds (plain_ms, tiled_ms); ``log`` holds each pair.
    """

    def __init__(self, repeats: int = 3):
        self.repeats = repeats
        self.log: list[tuple[float, float]] = []

    def compare(self, plain_fn: Callable[[], Any], tiled_fn: Callable[[], Any]) -> tuple[float, float]:
        """Median CPU ms of plain_fn() and tiled_fn(), timed in turn."""
        times = interleaved_times({"plain": plain_fn, "tiled": tiled_fn}, self.repeats, clock=time.process_time)
        pair = (1000 * statistics.median(times["plain"]), 1000 * statistics.median(times["tiled"]))
        self.log.append(pair)
        return pair


class _MatmulCounter(TorchFunctionMode):
    """Adds up the multiply-adds of every matrix product (matmul, @, bmm, mm) made while it is active."""

    NAMES = {"matmul", "__matmul__", "__rmatmul__", "bmm", "mm", "baddbmm", "addmm"}

    def __init__(self) -> None:
        super().__init__()
        self.multiply_adds = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        out = func(*args, **(kwargs or {}))
        if getattr(func, "__name__", "") in self.NAMES and isinstance(out, Tensor):
            a = args[0] if getattr(func, "__name__", "") not in ("baddbmm", "addmm") else args[1]
            if isinstance(a, Tensor) and a.dim() >= 1:
                self.multiply_adds += out.numel() * a.shape[-1]
        return out


def _matmul_flops(fn: Callable[..., Any], *args: Any) -> int:
    """The multiply-adds of the matrix products in fn(*args) (einsum and elementwise sums are not seen)."""
    counter = _MatmulCounter()
    with counter:
        call_student(fn, *args, what="your tiled attention")
    return counter.multiply_adds


def _check_tiled(fn: Callable[..., Any]) -> None:
    """The learner's tiled attention equals plain attention and skips the tiles above the diagonal."""
    if _calls_the_book(fn, "tiled_attention"):
        raise CheckFailed("my_tiled_attention calls course_utils' tiled_attention: write the loop yourself, "
                          "or the experiment times the book's loop, not yours.")
    g = torch.Generator().manual_seed(12)
    for shape, causal, block in (((1, 1, 40, 8), True, 16), ((2, 3, 37, 4), False, 8), ((1, 2, 5, 4), True, 16),
                                 ((1, 1, 1, 4), True, 4), ((2, 1, 48, 8), True, 16), ((1, 1, 33, 8), False, 64)):
        q, k, v = (torch.randn(*shape, generator=g, dtype=torch.float64) for _ in range(3))
        got = call_student(fn, q, k, v, causal, block, what="your my_tiled_attention")
        want = plain_attention(q, k, v, causal)
        expect_close(got, want, f"my_tiled_attention(q, k, v of shape {shape}, causal={causal}, block={block})",
                     atol=1e-10, rtol=1e-10, mistakes={
                         "Did you forget to divide the scores by sqrt(d_k)?": plain_attention(q * math.sqrt(shape[-1]),
                                                                                               k, v, causal),
                         "Your causal tiles let a query see later keys: on a tile that crosses the diagonal, "
                         "mask the keys after the query (key position > query position) with -inf.":
                             plain_attention(q, k, v, False),
                         "You returned acc without dividing by l after the last tile.": _unnormalised(q, k, v, causal),
                     })
    q, k, v = (torch.randn(1, 1, 64, 8, generator=g) for _ in range(3))
    products, full = _matmul_flops(fn, q, k, v, True, 16), 2 * 64 * 64 * 8  # scores and weights @ V, all tiles
    if products >= 0.95 * full:
        raise CheckFailed("under the causal mask your loop computes every tile, also those entirely above the "
                          "diagonal, whose scores are all masked: stop the loop over key blocks at the query "
                          "block's end (key block start < query block start + block).")


def _unnormalised(q: Tensor, k: Tensor, v: Tensor, causal: bool) -> Tensor:
    """Plain attention's acc without the division by l (per row, relative to the row's maximum)."""
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:
        T = s.shape[-1]
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
    return torch.exp(s - s.amax(-1, keepdim=True)) @ v


TILING_SPEEDUP = Expected("speed-up of your tiled loop over plain attention at T = 2048, causal, tiles of 256",
                          0.3, 10.0,
                          "the causal loop skips the tiles above the diagonal and its tiles stay in the cache.",
                          below="Your loop is much slower than the book's: a loop over single rows instead of "
                                "tiles, or .item() calls inside the loop?",
                          above="Plain attention took unusually long: was something else running while it was "
                                "timed? Run the experiment again.")


@checker("11.2", "your tiled attention against plain attention as T grows")
def check_tiling_experiment(prediction_fn: Callable[[], str], tiled_fn: Callable[..., Any],
                            experiment: Callable[..., Any], reference_speedup: float | None = None) -> str:
    """Check the prediction, the learner's tiled loop, then experiment(tiled, timer) -> {(T, block): (ms, ms)}."""
    prediction = read_prediction(prediction_fn, TILING_PREDICTIONS)
    _check_tiled(tiled_fn)
    calls: list[tuple[int, bool, int]] = []

    def tiled(q: Tensor, k: Tensor, v: Tensor, causal: bool, block: int) -> Any:
        calls.append((int(q.shape[-2]), bool(causal), int(block)))
        return tiled_fn(q, k, v, causal, block)

    timer = PairTimer()
    got = call_student(experiment, tiled, timer, what="your tiling_experiment", may_modify=True)
    if not isinstance(got, dict) or not got:
        raise CheckFailed("tiling_experiment should return a dict {(T, block): (plain_ms, tiled_ms)}, got "
                          f"{describe(got)}")
    needed = [(T, 256) for T in LENGTHS] + [(2048, SMALL_BLOCK)]
    missing = [key for key in needed if key not in got]
    if missing:
        raise CheckFailed(f"tiling_experiment returned the keys {sorted(got, key=str)}, without {missing}: time "
                          f"T = {', '.join(map(str, LENGTHS))} with blocks of 256, and T = 2048 with blocks of "
                          f"{SMALL_BLOCK}, each key a tuple (T, block).")
    for key in needed:
        pair = got[key]
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise CheckFailed(f"the value for {key} should be the pair (plain_ms, tiled_ms) that timer.compare "
                              f"returned, got {describe(pair)}")
        numbers = (as_number(pair[0], f"plain_ms for {key}"), as_number(pair[1], f"tiled_ms for {key}"))
        if numbers not in timer.log:
            swapped = numbers[::-1] in timer.log
            raise CheckFailed(f"the times for {key} are not what timer.compare measured in your run"
                              + (": you swapped them; return (plain_ms, tiled_ms) in that order." if swapped else
                                 ". Return the pair timer.compare(plain_fn, tiled_fn) gave you, not numbers typed "
                                 "in or measured another way."))
    for T, block in needed:
        if (T, True, block) not in calls:
            raise CheckFailed(f"your tiled function was never timed at T = {T}, causal, with blocks of {block}: "
                              "time the `tiled` function the checker passes in, with causal=True.")
    speedup = {key: float(got[key][0]) / float(got[key][1]) for key in needed}
    judge_range(speedup[(2048, 256)], TILING_SPEEDUP, what="your measured speed-up")
    small = speedup[(2048, SMALL_BLOCK)]
    outcome = "faster" if small > 1.2 else "slower" if small < 1 / 1.2 else "same"
    ref = "" if reference_speedup is None else f"; the book's run: {reference_speedup:.1f}"
    by_length = ", ".join(f"{speedup[(T, 256)]:.2f} at T = {T}" for T in LENGTHS)
    return (f"Your speed-up of the loop over plain attention (causal, tiles of 256): {by_length} (accepted at "
            f"T = 2048: {TILING_SPEEDUP.low:g} to {TILING_SPEEDUP.high:g}{ref}). With tiles of {SMALL_BLOCK}: "
            f"{small:.2f}. " + compare_prediction(prediction, outcome, {
                "faster": f"Tiles of {SMALL_BLOCK} make {(2048 // SMALL_BLOCK) * (2048 // SMALL_BLOCK + 1) // 2} "
                          "tiles, each a handful of Python-dispatched operators on a tiny product: the per-call "
                          "overhead outweighs what the cache saves. A GPU kernel has no such overhead, and its "
                          "tile size is set by the on-chip memory instead.",
                "same": "Smaller tiles mean many more operator calls, and each costs microseconds of overhead.",
                "slower": "The tiles are still large enough for their products to dominate the per-call overhead "
                          "on this machine.",
            }))


# ----------------------------------------------------------------- 11.4 (experiment) MQA against the control
MQA_PREDICTIONS = {
    "smaller": "after the uptraining MQA loses less against the control than GQA-2 does",
    "same": "about the same as GQA-2 (within 0.05 bits/char)",
    "larger": "MQA loses more against the control than GQA-2",
}
CHECK_SEED = 3  # the uptraining seed the checker asks for (the chapter's own runs use seed 0)


def _uptraining_reference(charlm: Any, train_ids: Tensor, val_ids: Tensor, seed: int) -> dict[str, float]:
    """The reference experiment: MQA and the control, uptrained with the same seed, scored before and after."""
    from ..runs.modern import run_uptraining

    data = (None, train_ids, val_ids)
    mqa = run_uptraining(1, seed, charlm, data)  # type: ignore[arg-type]
    control = run_uptraining(charlm.config.n_heads, seed, charlm, data)  # type: ignore[arg-type]
    return {"base": mqa["base"], "mqa_before": mqa["before"], "mqa_after": mqa["after"],
            "control_after": control["after"]}


def mqa_ranges() -> tuple[Expected, float]:
    """The range of MQA's loss against the control after uptraining, and GQA-2's mean, from the shipped runs."""
    from ..runs.modern import load_gqa_uptraining

    rows = load_gqa_uptraining()["rows"]
    after = {(r["variant"], r["seed"]): r["after"] for r in rows}
    seeds = sorted({r["seed"] for r in rows})
    mqa = [after[("MQA", s)] - after[("control (MHA)", s)] for s in seeds]
    gqa = [after[("GQA-2", s)] - after[("control (MHA)", s)] for s in seeds]
    expected = Expected("bits/char MQA loses against the control after the uptraining",
                        round(min(mqa) - 0.1, 2), round(max(mqa) + 0.1, 2),
                        "a short uptraining wins back most, not all, of what one shared head lost.",
                        below="Did you uptrain the MQA model for more steps, or at a higher learning rate, than "
                              "uptrain() does?",
                        above="Did you score MQA before uptraining it, or uptrain a copy other than the one you "
                              "scored?")
    return expected, statistics.mean(gqa)


@checker("11.4", "multi-query attention from a trained multi-head model")
def check_mqa_uptraining(prediction_fn: Callable[[], str], experiment: Callable[..., Any], charlm: Any = None,
                         data: tuple[Any, Tensor, Tensor] | None = None) -> str:
    """Check the prediction, then ``experiment(charlm, train_ids, val_ids, seed) -> (lost_before, lost_after)``.

    The checker asks for seed ``CHECK_SEED`` and runs the same uptraining itself: the learner's numbers
    must be what their experiment gives, within 0.01 bits/char.
    """
    from ..runs.modern import charlm_data, load_mha_charlm

    prediction = read_prediction(prediction_fn, MQA_PREDICTIONS)
    charlm = load_mha_charlm() if charlm is None else charlm
    _, train_ids, val_ids = charlm_data() if data is None else data
    got = call_student(experiment, charlm, train_ids, val_ids, CHECK_SEED, what="your mqa_experiment")
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise CheckFailed(f"mqa_experiment should return (lost_before, lost_after), got {describe(got)}")
    before, after = as_number(got[0], "lost_before"), as_number(got[1], "lost_after")
    ref = _uptraining_reference(charlm, train_ids, val_ids, CHECK_SEED)
    want_before, want_after = ref["mqa_before"] - ref["base"], ref["mqa_after"] - ref["control_after"]
    near = lambda x, y: abs(x - y) < 0.01  # noqa: E731
    if not near(before, want_before):
        if near(after, want_before) and near(before, want_after):
            raise CheckFailed("lost_before and lost_after are swapped: return (lost_before, lost_after).")
        if near(before, ref["mqa_before"]):
            raise CheckFailed("lost_before is MQA's bits per character, not what it loses: subtract the "
                              "multi-head model's score.")
        raise CheckFailed(f"lost_before is not what converting the model passed in loses (the checker measured it "
                          f"again with seed {CHECK_SEED}). Convert the charlm argument with convert_to_gqa(charlm, 1) "
                          "and return numbers your function measured, not numbers typed in.")
    if not near(after, want_after):
        if near(after, ref["mqa_after"] - ref["base"]):
            raise CheckFailed("lost_after compares with the shipped model: compare with the control, the "
                              "multi-head model uptrained the same way (same steps, learning rate and seed).")
        if near(after, ref["mqa_after"]):
            raise CheckFailed("lost_after is MQA's bits per character, not what it loses against the control.")
        if near(after, want_before):
            raise CheckFailed("lost_after equals lost_before: did you score the model before uptraining it?")
        raise CheckFailed(f"lost_after is not what your experiment gives with seed {CHECK_SEED}: the checker ran "
                          "the same uptraining and got another number. Use the seed argument for uptrain(), uptrain "
                          "both models with uptrain(), and return numbers measured, not typed in.")
    expected, gqa_after = mqa_ranges()
    judge_range(after, expected, what="lost_after")
    outcome = "larger" if after > gqa_after + 0.05 else "smaller" if after < gqa_after - 0.05 else "same"
    return (f"MQA loses {before:.2f} bits/char right after pooling and {after:.2f} after the uptraining, against "
            f"the control (accepted range {expected.low:g} to {expected.high:g}; GQA-2 in the shipped runs: "
            f"{gqa_after:.2f}). " + compare_prediction(prediction, outcome, {
                "smaller": "One key/value head per layer has half the room of two heads, and 30 steps do not "
                           "refill it.",
                "same": "The shared head is a worse average than two group averages, and it shows after "
                        "uptraining too.",
                "larger": "The 30 steps recover more of MQA's larger initial loss than expected.",
            }))


# ----------------------------------------------------------------- 11.5 (implement) linear attention
def _phi(x: Tensor) -> Tensor:
    return F.elu(x) + 1


def _linear_variant(q: Tensor, k: Tensor, v: Tensor, causal: bool, phi_q: Callable[[Tensor], Tensor] = _phi,
                    phi_k: Callable[[Tensor], Tensor] = _phi, normalise: bool = True, strict: bool = False) -> Tensor:
    """Quadratic-form linear attention with switchable mistakes (the checker's wrong answers)."""
    a = phi_q(q) @ phi_k(k).transpose(-2, -1)  # (..., T, T)
    if causal:
        a = a.tril(-1 if strict else 0)
    num = a @ v
    return num / a.sum(-1, keepdim=True) if normalise else num


@checker("11.5", "linear attention")
def check_linear_attention(fn: Callable[..., Any]) -> str:
    """Check ``fn(q, k, v, causal) -> (..., T, d_v)`` against phi(q) S / phi(q) z with phi = elu + 1."""
    from ..flash import peak_memory_bytes

    if _calls_the_book(fn, "linear_attention"):
        raise CheckFailed("my_linear_attention calls course_utils' linear_attention: write it yourself.")
    g = torch.Generator().manual_seed(15)
    for shape, d_v, causal in (((2, 3, 12, 4), 5, False), ((2, 3, 12, 4), 5, True), ((1, 1, 1, 8), 8, True),
                               ((3, 20, 6), 2, True), ((1, 2, 30, 8), 3, False)):
        q, k = (torch.randn(*shape, generator=g, dtype=torch.float64) for _ in range(2))
        v = torch.randn(*shape[:-1], d_v, generator=g, dtype=torch.float64)
        want = linear_attention(q, k, v, causal)
        mistakes = {
            "That is softmax attention: linear attention replaces exp(q . k / sqrt(d_k)) by phi(q) . phi(k).":
                F.scaled_dot_product_attention(q, k, v, is_causal=causal),
            "phi must be elu(x) + 1: plain elu(x) can be negative, so the weights are no longer positive.":
                _linear_variant(q, k, v, causal, F.elu, F.elu),
            "phi is elu(x) + 1 in Katharopoulos et al., not relu(x).":
                _linear_variant(q, k, v, causal, F.relu, F.relu),
            "The output is not normalised: divide phi(q) S by phi(q) z, the sum of the weights.":
                _linear_variant(q, k, v, causal, normalise=False),
            "Under the causal mask query i may read keys 0..i only: sum phi(k_j) v_j^T over j <= i, not over all "
            "keys.": _linear_variant(q, k, v, False),
            "Your causal sums leave out the query's own key: key i belongs to the sums of query i (j <= i).":
                _linear_variant(q, k, v, causal, strict=True),
            "Apply phi to the queries and keys as they are: no 1/sqrt(d_k) scale (the normalisation by "
            "phi(q) z already makes the weights sum to 1).":
                _linear_variant(q / math.sqrt(shape[-1]), k, v, causal),
            "phi goes on the keys too: phi(q) . phi(k), not phi(q) . k.":
                _linear_variant(q, k, v, causal, phi_k=lambda x: x),
        }
        if shape[-2] == 1 and causal:
            mistakes = {h: w for h, w in mistakes.items() if "own key" in h}
        got = call_student(fn, q, k, v, causal, what="your my_linear_attention")
        expect_close(got, want, f"my_linear_attention(q, k of shape {shape}, v with d_v={d_v}, causal={causal})",
                     mistakes=mistakes, atol=1e-9, rtol=1e-9)
    T, d = 2048, 8
    q, k, v = (torch.randn(1, 1, T, d, generator=g) for _ in range(3))
    peak = peak_memory_bytes(lambda: call_student(fn, q, k, v, True, what="your my_linear_attention"))
    if peak >= T * T * 4 / 2:
        raise CheckFailed(f"at T = {T} your causal version holds {peak / 2**20:.0f} MiB, at least half a T x T "
                          "matrix: it is right but quadratic. Keep running sums over the keys instead "
                          "(torch.cumsum of phi(k_j) v_j^T and of phi(k_j) along T), so memory grows linearly in T.")
    return ("Your linear attention equals phi(q) S / phi(q) z, causal or not, and its causal form grows linearly "
            f"in T ({peak / 2**20:.1f} MiB at T = {T}, where one T x T matrix would take {T * T * 4 / 2**20:.0f}).")
