"""Checkers for the exercises of Chapter 11 (attention at scale and the modern block).

11.1 the online-softmax update (implement), 11.2 your tiled attention timed against plain attention
(experiment), 11.3 mean-pooling key/value heads (implement), 11.4 multi-query attention from the
trained model against the control (experiment), 11.5 linear attention (implement), 11.6 a rolling cache that
generates under a sliding window (implement).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.overrides import TorchFunctionMode

from ..flash import interleaved_times, linear_attention, online_softmax_update, plain_attention, tiled_attention
from .core import (
    CheckFailed,
    as_number,
    call_student,
    checker,
    close,
    describe,
    expect_close,
    expect_tensor,
    fail_on_mistake,
)
from .experiment import Expected, compare_prediction, judge_range, read_prediction, shown


def _calls_the_book(fn: Any, name: str) -> bool:
    """True when the learner's function is the book's own answer ``name``, or refers to it in its code."""
    from .. import flash

    book = getattr(flash, name, None)
    if fn is book or getattr(fn, "__code__", None) is getattr(book, "__code__", False):
        return True
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
    p_old = torch.exp(s - torch.where(torch.isinf(m), torch.zeros_like(m), m)[..., None])  # the old max's shift
    return {
        "The tile's exponentials are taken relative to the old maximum: exponentiate the tile relative to m_new, "
        "exp(scores - m_new), as the rescaled old sums are.":
            (m_new, l * r + p_old.sum(-1), acc * r[..., None] + p_old @ v),
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
    for shape, k, d, first in (((2, 3), 6, 2, False), ((4,), 5, 3, True), ((1,), 1, 4, False), ((2, 5), 4, 3, True)):
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

    ``compare(plain_fn, tiled_fn)`` first runs each once and keeps what it returned and which calls of the
    checker's ``tiled`` it made (``probes``), then times both in turn (one warm-up, then ``repeats`` rounds,
    no profiler) and returns their median CPU milliseconds (plain_ms, tiled_ms); ``log`` holds each pair.
    """

    def __init__(self, repeats: int = 3, calls: list[Any] | None = None):
        self.repeats = repeats
        self.calls: list[Any] = [] if calls is None else calls  # the checker's record of calls to `tiled`
        self.log: list[tuple[float, float]] = []
        self.probes: list[dict[str, Any]] = []

    def compare(self, plain_fn: Callable[[], Any], tiled_fn: Callable[[], Any]) -> tuple[float, float]:
        """Median CPU ms of plain_fn() and tiled_fn(), timed in turn."""
        first = len(self.calls)
        plain_out = plain_fn()
        middle = len(self.calls)
        tiled_out = tiled_fn()
        self.probes.append({"plain": plain_out, "tiled": tiled_out, "calls_in_plain": self.calls[first:middle],
                            "calls_in_tiled": self.calls[middle:]})
        pair = self._time(plain_fn, tiled_fn)
        self.log.append(pair)
        return pair

    def _time(self, plain_fn: Callable[[], Any], tiled_fn: Callable[[], Any]) -> tuple[float, float]:
        times = interleaved_times({"plain": plain_fn, "tiled": tiled_fn}, self.repeats, clock=time.process_time)
        return 1000 * statistics.median(times["plain"]), 1000 * statistics.median(times["tiled"])


class _MatmulCounter(TorchFunctionMode):
    """Adds up the multiply-adds of every matrix product (matmul, @, bmm, mm, einsum) made while it is active,
    and the elements every exp and softmax sees (one per score computed)."""

    NAMES = {"matmul", "__matmul__", "__rmatmul__", "bmm", "mm", "baddbmm", "addmm"}

    def __init__(self) -> None:
        super().__init__()
        self.multiply_adds = 0
        self.exponentials = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        out = func(*args, **(kwargs or {}))
        name = getattr(func, "__name__", "")
        if name in self.NAMES and isinstance(out, Tensor):
            a = args[0] if name not in ("baddbmm", "addmm") else args[1]
            if isinstance(a, Tensor) and a.dim() >= 1:
                self.multiply_adds += out.numel() * a.shape[-1]
        elif name == "einsum" and isinstance(out, Tensor) and args and isinstance(args[0], str):
            self.multiply_adds += _einsum_multiply_adds(args[0], args[1:], out)
        elif name in ("exp", "exp_", "softmax", "_softmax", "log_softmax") and args and isinstance(args[0], Tensor):
            self.exponentials += args[0].numel()
        return out


def _einsum_multiply_adds(equation: str, operands: Any, out: Tensor) -> int:
    """Multiply-adds of one einsum: the output's size times the sizes of the letters summed over."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = operands[0]
    lhs, _, rhs = equation.replace(" ", "").partition("->")
    sizes: dict[str, int] = {}
    for spec, x in zip(lhs.split(","), operands, strict=False):
        if not isinstance(x, Tensor):
            return 0
        letters = spec.replace("...", "")
        tail = x.shape[x.dim() - len(letters):] if "..." in spec else x.shape
        for letter, size in zip(letters, tail, strict=False):
            sizes[letter] = max(sizes.get(letter, 1), int(size))
    if not _:
        rhs = "".join(sorted(c for c in sizes if lhs.count(c) == 1))
    summed = math.prod(size for letter, size in sizes.items() if letter not in rhs)
    return out.numel() * summed


def _work(fn: Callable[..., Any], *args: Any) -> _MatmulCounter:
    """The multiply-adds of the matrix products and the exponentials in fn(*args)."""
    counter = _MatmulCounter()
    with counter:
        call_student(fn, *args, what="your tiled attention")
    return counter


def _block_masked(q: Tensor, k: Tensor, v: Tensor, block: int, keep: str) -> Tensor:
    """Attention under the mask a mistaken causal tile loop applies (the checker's wrong answers).

    ``keep="diagonal tile unmasked"``: the tiles above the diagonal skipped, no mask inside the diagonal tile;
    ``keep="same triangle in every tile"``: the tiles above skipped, every computed tile masked with the
    triangle of local positions (key index in the tile > query index in the tile).
    """
    T = q.shape[-2]
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    below = j // block <= i // block
    allowed = below if keep == "diagonal tile unmasked" else below & (j % block <= i % block)
    s = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(~allowed, float("-inf"))
    return torch.softmax(s, dim=-1) @ v


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
        mistakes = {
            "Did you forget to divide the scores by sqrt(d_k)?": plain_attention(q * math.sqrt(shape[-1]), k, v,
                                                                                  causal),
            "You returned acc without dividing by l after the last tile.": _unnormalised(q, k, v, causal),
        }
        if causal:
            mistakes = {
                "Your causal loop lets every query see every key, also the later ones: skip the tiles above the "
                "diagonal, and in a tile that crosses it mask the keys after the query (key position > query "
                "position) with -inf.": plain_attention(q, k, v, False),
                "You skip the tiles above the diagonal but leave the tile on the diagonal unmasked, so a query "
                "still sees the later keys of its own block: mask key position > query position with -inf in a "
                "tile that crosses the diagonal.": _block_masked(q, k, v, block, "diagonal tile unmasked"),
                "You mask every tile with the same triangle of positions inside the tile: only a tile that crosses "
                "the diagonal needs a mask, and it compares global positions (j0 + column > i0 + row); the tiles "
                "below the diagonal are all visible.": _block_masked(q, k, v, block, "same triangle in every tile"),
                **mistakes,
            }
        expect_close(got, want, f"my_tiled_attention(q, k, v of shape {shape}, causal={causal}, block={block})",
                     atol=1e-10, rtol=1e-10, mistakes=mistakes)
    T, block = 64, 16
    q, k, v = (torch.randn(1, 1, T, 8, generator=g) for _ in range(3))
    work, full = _work(fn, q, k, v, True, block), 2 * T * T * 8  # scores and weights @ V, all tiles
    if work.multiply_adds >= 0.95 * full or work.exponentials >= 0.95 * T * T:
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
                          1.0, 10.0,
                          "the causal loop skips the tiles above the diagonal and its tiles stay in the cache.",
                          below="Skipping the tiles above the diagonal alone saves almost half the work, so your "
                                "loop should not be slower than plain attention here: a loop over single rows "
                                "instead of tiles, .item() calls inside the loop, or was something else running "
                                "while it was timed? Run the experiment again.",
                          above="Plain attention took unusually long: was something else running while it was "
                                "timed? Run the experiment again.")


def _check_probe(probe: dict[str, Any], key: tuple[int, int]) -> None:
    """The pair timed for ``key`` compared plain causal attention (first) with the checker's tiled (second)."""
    T, block = key
    if probe["calls_in_plain"] and not probe["calls_in_tiled"]:
        raise CheckFailed(f"for {key} the first function you gave timer.compare runs your tiled loop and the "
                          "second does not: the order is timer.compare(plain_fn, tiled_fn), so your speed-up is "
                          "upside down.")
    if probe["calls_in_plain"]:
        raise CheckFailed(f"for {key} the plain function you timed also calls your tiled loop: time "
                          "plain_attention(q, k, v, True) alone as timer.compare's first function.")
    if not any(c[:3] == (T, True, block) for c in probe["calls_in_tiled"]):
        raise CheckFailed(f"your tiled function was never timed at T = {T}, causal, with blocks of {block}: "
                          "time the `tiled` function the checker passes in, with causal=True.")
    q, k, v = next(c[3] for c in probe["calls_in_tiled"] if c[:3] == (T, True, block))
    plain_out = probe["plain"]
    if not isinstance(plain_out, Tensor) or plain_out.shape != v.shape:
        raise CheckFailed(f"for {key} your plain function returned {describe(plain_out)}, not plain attention's "
                          f"output of shape {tuple(v.shape)}: time plain_attention(q, k, v, True) on the same q, k, "
                          "v as your tiled loop.")
    with torch.no_grad():
        if torch.allclose(plain_out, plain_attention(q, k, v, True), atol=1e-4, rtol=1e-4):
            return
        if torch.allclose(plain_out, plain_attention(q, k, v, False), atol=1e-4, rtol=1e-4):
            raise CheckFailed(f"for {key} your plain baseline runs without the causal mask while your loop is "
                              "causal: they compute different things. Time plain_attention(q, k, v, True).")
    raise CheckFailed(f"for {key} your plain function does not compute causal attention of the q, k, v your tiled "
                      "loop was timed on: draw q, k, v once per (T, block) and time both on them.")


@checker("11.2", "your tiled attention against plain attention as T grows")
def check_tiling_experiment(prediction_fn: Callable[[], str], tiled_fn: Callable[..., Any],
                            experiment: Callable[..., Any], reference_speedup: float | None = None,
                            repeats: int = 3) -> str:
    """Check the prediction, the learner's tiled loop, then experiment(tiled, timer) -> {(T, block): (ms, ms)}.

    ``repeats``: the timed rounds of each pair after the warm-up (the tests take 1).
    """
    from ..validate import check_positive_int

    repeats = check_positive_int("repeats", repeats)
    prediction = read_prediction(prediction_fn, TILING_PREDICTIONS)
    _check_tiled(tiled_fn)
    calls: list[tuple[Any, ...]] = []

    def tiled(q: Tensor, k: Tensor, v: Tensor, causal: bool, block: int) -> Any:
        calls.append((int(q.shape[-2]), bool(causal), int(block), (q, k, v)))
        return tiled_fn(q, k, v, causal, block)

    timer = PairTimer(repeats, calls=calls)
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
    for key in needed:
        numbers = (float(got[key][0]), float(got[key][1]))
        _check_probe(timer.probes[timer.log.index(numbers)], key)
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
    "closer": "at your largest length MQA trails its control by less than GQA-2 did after the recipe's steps",
    "same": "about as much as GQA-2 (within 0.05 bits/char)",
    "further": "MQA trails its control by more than GQA-2 did",
}


def max_sweep_steps() -> int:
    """The longest uptraining Exercise 11.4 allows per model: twice the recipe's steps. Chapter 11."""
    from ..runs.modern import UPTRAIN_RECIPE

    return 2 * UPTRAIN_RECIPE["steps"]


class _LabStop(BaseException):
    """Raised inside the learner's experiment by the checker's uptrain/score to end the run with a hint.

    A BaseException, so that call_student does not turn it into "your function raised ..."."""


class UptrainingLab:
    """The ``uptrain`` and ``score`` Exercise 11.4 hands the learner; it records every call. Chapter 11.

    ``uptrain(model, steps)`` goes on uptraining ``model`` in place (``runs.modern.uptrain_more``), its
    batches seeded by a seed the learner does not see and by the steps the model already had, so two
    models given the same calls see the same batches. ``score(model)`` is its validation bits/char.
    Every model is told apart by its weights when first seen: the shipped model itself, a copy of it
    (the control) or its multi-query conversion.
    """

    def __init__(self, charlm: Any, train_ids: Tensor, val_ids: Tensor, seed: int, max_steps: int):
        from ..modern import convert_to_gqa

        self.charlm, self.train_ids, self.val_ids = charlm, train_ids, val_ids
        self.seed, self.max_steps = seed, max_steps
        self._references = {"control": charlm.state_dict(), "MQA": convert_to_gqa(charlm, 1).state_dict()}
        self.models: dict[int, tuple[Any, str, list[int]]] = {}  # id -> (model, kind, chunks so far)
        self.scores: list[tuple[str, tuple[int, ...], float]] = []  # (kind, chunks, bits/char)
        self.steps_run = 0

    def _entry(self, model: Any) -> tuple[Any, str, list[int]]:
        if id(model) not in self.models:
            if model is self.charlm:
                kind = "shipped"
            elif not isinstance(model, nn.Module):
                raise _LabStop(f"uptrain and score take a model, got {describe(model)}")
            else:
                kind = next((name for name in self._references if self._unchanged(model, name)), "other")
            self.models[id(model)] = (model, kind, [])
        return self.models[id(model)]

    def _unchanged(self, model: Any, kind: str) -> bool:
        """True when ``model`` still has the weights it had when first seen (those of its reference)."""
        state, ref = model.state_dict(), self._references[kind]
        return list(state) == list(ref) and all(
            state[key].shape == ref[key].shape and torch.equal(state[key], ref[key]) for key in ref)

    def uptrain(self, model: Any, steps: int) -> None:
        """Go on uptraining ``model`` in place for ``steps`` more steps (the checker's seed)."""
        from ..runs.modern import uptrain_more

        _, kind, chunks = self._entry(model)
        if kind == "shipped":
            raise _LabStop("you uptrained charlm itself, in place: the control is a copy of it "
                           "(copy.deepcopy(charlm)), and charlm must stay the shipped model.")
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise _LabStop(f"uptrain(model, steps) takes a whole number of steps >= 1, got {describe(steps)}")
        if sum(chunks) + steps > self.max_steps:
            raise _LabStop(f"uptrain: at most {self.max_steps} steps per model in this exercise, and this model "
                           f"would reach {sum(chunks) + steps}. Choose lengths up to {self.max_steps}.")
        if self.steps_run + steps > 4 * self.max_steps:
            raise _LabStop(f"your experiment uptrains more than {4 * self.max_steps} steps in all: uptrain each "
                           "model in chunks (10 steps, score, 20 more, score, ...) instead of starting over for "
                           "each length.")
        uptrain_more(model, self.train_ids, steps, self.seed, sum(chunks))
        chunks.append(steps)
        self.steps_run += steps

    def score(self, model: Any) -> float:
        """Validation bits per character of ``model`` (UPTRAIN_RECIPE's blocks)."""
        from ..runs.modern import score

        _, kind, chunks = self._entry(model)
        if not chunks and kind in self._references and not self._unchanged(model, kind):
            raise _LabStop("a model you scored was trained by something other than the uptrain the checker passes "
                           "in: uptrain every model with uptrain(model, steps), which draws the batches from the "
                           "checker's seed and records the steps.")
        value = score(model, self.val_ids)
        self.scores.append((kind, tuple(chunks), value))
        return value

    def explain(self, steps: int, lost: float) -> str | None:
        """None when ``lost`` is MQA's score minus the control's after the same ``steps`` (same chunks), else a hint."""
        near = lambda x, y: abs(x - y) <= 1e-6 * max(1.0, abs(y))  # noqa: E731
        if not self.scores:
            return ("your sweep never called the score function the checker passes in: return numbers your run "
                    "measured with it, not numbers typed in.")
        mqa = [(c, v) for k, c, v in self.scores if k == "MQA" and sum(c) == steps]
        ctl = [(c, v) for k, c, v in self.scores if k in ("control", "shipped")]
        matches = [(cm, cc) for cm, m in mqa for cc, c in ctl if near(lost, m - c)]
        if any(cm == cc for cm, cc in matches):
            return None
        if steps and any(not cc for _, cc in matches):
            return (f"at {steps} steps you compare MQA with the model before uptraining: compare with the "
                    "control, the copy uptrained by the same calls.")
        if matches:
            cm, cc = matches[0]
            return (f"at {steps} steps your MQA model had the uptrain calls {list(cm)} and your control "
                    f"{list(cc)}: different uptrain calls. Give both the same calls (the same chunks), so they see "
                    "the same batches.")
        if any(near(lost, c - m) for cm, m in mqa for cc, c in ctl if cm == cc):
            return (f"the value at {steps} steps is the control minus MQA: return how much MQA trails, "
                    "score(MQA) - score(control), positive when MQA is worse.")
        if any(near(lost, m) for _, m in mqa):
            return f"the value at {steps} steps is MQA's bits per character, not what it loses against the control."
        other_mqa = [v for k, c, v in self.scores if k == "MQA" and sum(c) != steps]
        if any(near(lost, m - c) for m in other_mqa for _, c in ctl):
            return (f"the value at {steps} steps was measured after another number of steps: score both models "
                    f"after exactly {steps} steps of uptraining.")
        if not mqa:
            if any(k == "other" for k, c, v in self.scores):
                return (f"a model you scored is neither a copy of charlm nor convert_to_gqa(charlm, 1), and no MQA "
                        f"model was scored after {steps} steps: convert the charlm argument to multi-query "
                        "attention (one key/value head) and keep an unconverted copy as the control.")
            return (f"you return a value for {steps} steps, but never scored an MQA model "
                    f"(convert_to_gqa(charlm, 1)) after {steps} steps with the uptrain and score the checker "
                    "passes in; a number typed in or measured another way does not count.")
        return (f"the value at {steps} steps ({shown(lost)}) is not score(MQA) - score(control) of any scores your "
                "run took: return numbers your run measured with the score function passed in, not numbers "
                "typed in or measured another way.")


def mqa_reference(steps: int) -> tuple[Expected, float]:
    """The range of MQA's loss to the control after ``steps`` steps (shipped curves); GQA-2's after the recipe's.

    Chapter 11.
    """
    from ..runs.modern import load_gqa_uptraining

    shipped = load_gqa_uptraining()
    curves = {(c["variant"], c["seed"]): c for c in shipped["curves"]}
    seeds = sorted({c["seed"] for c in shipped["curves"]})
    gaps = []
    for seed in seeds:
        mqa, ctl = curves[("MQA", seed)], curves[("control (MHA)", seed)]
        xs = mqa["steps"]
        ys = [m - c for m, c in zip(mqa["bits_per_char"], ctl["bits_per_char"], strict=True)]
        i = max(j for j in range(len(xs)) if xs[j] <= steps)
        if xs[i] == steps or i == len(xs) - 1:
            gaps.append(ys[i])
        else:  # linear between the two lengths measured around it
            t = (steps - xs[i]) / (xs[i + 1] - xs[i])
            gaps.append(ys[i] + t * (ys[i + 1] - ys[i]))
    after = {(r["variant"], r["seed"]): r["after"] for r in shipped["rows"]}
    gqa = statistics.mean(after[("GQA-2", s)] - after[("control (MHA)", s)] for s in sorted(
        {r["seed"] for r in shipped["rows"]}))
    expected = Expected(f"bits/char MQA trails the control after {steps} steps",
                        round(min(gaps) - 0.1, 2), round(max(gaps) + 0.1, 2),
                        "uptraining wins back part of what one shared key/value head lost.",
                        below="Did you uptrain MQA for more steps than the control, or score the control before "
                              "its uptraining?",
                        above="Did you score MQA before its uptraining, or uptrain the control for more steps?")
    return expected, gqa


@checker("11.4", "how much uptraining multi-query attention needs")
def check_mqa_uptraining(prediction_fn: Callable[[], str], experiment: Callable[..., Any], charlm: Any = None,
                         data: tuple[Any, Tensor, Tensor] | None = None, seed: int | None = None) -> str:
    """Check the prediction, then ``experiment(charlm, uptrain, score) -> {steps: lost}``.

    The checker hands in its own ``uptrain`` and ``score`` (:class:`UptrainingLab`) with a seed the learner
    does not see (a fresh one each call unless ``seed`` is given) and records every call: each number
    returned must be MQA's score minus the control's after the same uptraining, in the learner's own run.
    """
    import os

    from ..charlm import charlm_split
    from ..runs.modern import UPTRAIN_RECIPE, load_mha_charlm

    prediction = read_prediction(prediction_fn, MQA_PREDICTIONS)
    charlm = load_mha_charlm() if charlm is None else charlm
    _, train_ids, val_ids = charlm_split() if data is None else data
    seed = int.from_bytes(os.urandom(3), "little") if seed is None else seed
    limit = max_sweep_steps()
    lab = UptrainingLab(charlm, train_ids, val_ids, seed, limit)
    try:
        got = call_student(experiment, charlm, lab.uptrain, lab.score, what="your mqa_sweep")
    except _LabStop as stop:
        raise CheckFailed(str(stop)) from None
    if not isinstance(got, dict):
        raise CheckFailed(f"mqa_sweep should return a dict {{steps: lost}}, got {describe(got)}")
    sweep = {}
    for key, value in got.items():
        if isinstance(key, bool) or not isinstance(key, int) or not 0 <= key <= limit:
            raise CheckFailed(f"the keys of your dict are uptraining lengths, whole numbers from 0 to {limit}, "
                              f"got {key!r}")
        sweep[key] = as_number(value, f"the value at {key} steps")
    if 0 not in sweep or len(sweep) < 3:
        raise CheckFailed(f"measure at least three lengths, 0 among them (MQA right after pooling, against the "
                          f"unconverted model), got {sorted(sweep)}")
    for steps in sorted(sweep):
        hint = lab.explain(steps, sweep[steps])
        if hint:
            raise CheckFailed(hint)
    longest = max(sweep)
    expected, gqa = mqa_reference(longest)
    judge_range(sweep[longest], expected, what=f"your value at {longest} steps")
    outcome = "closer" if sweep[longest] < gqa - 0.05 else "further" if sweep[longest] > gqa + 0.05 else "same"
    why = ("One shared key/value head is a coarser average than two group averages, and a short uptraining does "
           "not give back all that the averaging removed." if outcome == "further" else
           "Given more steps, the uptraining won back enough of MQA's larger first loss to reach GQA-2's level.")
    curve = ", ".join(f"{shown(sweep[s])} at {s}" for s in sorted(sweep))
    recipe_steps = UPTRAIN_RECIPE["steps"]
    return (f"MQA behind its control, bits/char: {curve} steps (the shipped runs give {expected.low:g} to "
            f"{expected.high:g} at {longest}; GQA-2 after {recipe_steps} steps: {gqa:.2f}). "
            + compare_prediction(prediction, outcome, {p: why for p in MQA_PREDICTIONS}))


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
            "No 1/sqrt(d_k) scale at all, on the queries or on the keys: apply phi to them as they are.":
                _linear_variant(q / math.sqrt(shape[-1]), k / math.sqrt(shape[-1]), v, causal),
        }
        if causal:
            fq, fk = _phi(q), _phi(k)
            states = torch.cumsum(fk[..., :, None] * v[..., None, :], dim=-2)  # summed over d_k, not over T
            z = torch.cumsum(fk, dim=-1)
            mistakes["Your running sums run along the feature axis: torch.cumsum over T, the positions (dim -3 of "
                     "phi(k_j) v_j^T of shape (..., T, d_k, d_v), dim -2 of phi(k) of shape (..., T, d_k))."] = (
                (fq[..., None, :] @ states).squeeze(-2) / (fq * z).sum(-1, keepdim=True))
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


# ----------------------------------------------------------------- 11.6 (implement) a rolling cache for a window
def window_reference(q: Tensor, k: Tensor, v: Tensor, window: int, scale: bool = True,
                     empty_slots: bool = False, exclude_self: bool = False) -> Tensor:
    """Outputs (B, h, T, d_v) of attention under a sliding window of ``window`` tokens, with switchable mistakes.

    ``empty_slots``: while fewer than ``window`` tokens are held, the free slots take part in the softmax as
    zero keys and values (a zero key scores 0). ``exclude_self``: each token attends the ``window`` tokens
    before it, not itself (the cache read before this token's key was written). Chapter 11.
    """
    T = q.shape[-2]
    scores = q @ k.transpose(-2, -1) / (math.sqrt(q.shape[-1]) if scale else 1.0)  # (B, h, T, T)
    pos = torch.arange(T)
    distance = pos[:, None] - pos[None, :]  # (T, T): query position minus key position
    keep = (distance >= 1) & (distance <= window) if exclude_self else (distance >= 0) & (distance < window)
    e = torch.exp(scores - scores.amax(-1, keepdim=True)).masked_fill(~keep, 0.0)  # (B, h, T, T)
    norm = e.sum(-1, keepdim=True)  # (B, h, T, 1)
    if empty_slots:  # each free slot adds exp(0 - max) to the sum and nothing to the values
        free = (window - torch.clamp(pos + 1, max=window)).to(q.dtype)[:, None]  # (T, 1)
        norm = norm + free * torch.exp(-scores.amax(-1, keepdim=True))
    return (e @ v) / norm


def _slot_times(buffer: Tensor, seq: Tensor, upto: int) -> Tensor:
    """(B, h, s): for each slot of ``buffer`` (B, h, s, d), the token 0..upto whose row it holds, -1 for none."""
    diff = (buffer.detach().double()[:, :, :, None, :] - seq[:, :, None, : upto + 1, :].double()).abs().amax(-1)
    hit = diff <= 1e-6 * (1 + seq[:, :, None, : upto + 1, :].double().abs().amax(-1))  # (B, h, s, upto + 1)
    latest = torch.where(hit, torch.arange(upto + 1), torch.full_like(diff, -1, dtype=torch.long)).amax(-1)
    return latest  # (B, h, s)


def _check_buffer(cache: Any, name: str, seq: Tensor, t: int, window: int, step_count: int,
                  slots_for: Callable[[int], int | None]) -> None:
    """Fail with a named mistake unless ``cache.<name>`` holds, at most ``window`` slots, the rows of tokens
    t - window + 1 .. t of ``seq`` (B, h, T, d) (fewer at the start). ``slots_for(w)``: the slots of a fresh
    cache of window w after one token (None when it cannot tell), to spot a hard-coded size."""
    B, h, _, d = seq.shape
    if not hasattr(cache, name):
        raise CheckFailed(f"your WindowCache has no attribute {name}: keep the buffer in cache.keys and "
                          "cache.values, (batch, n_heads, slots, d) each.")
    buffer = getattr(cache, name)
    if not isinstance(buffer, Tensor) or buffer.dim() != 4:
        raise CheckFailed(f"cache.{name} should be a tensor (batch, n_heads, slots, d), got {describe(buffer)}")
    if (buffer.shape[0], buffer.shape[1], buffer.shape[3]) != (B, h, d):
        raise CheckFailed(f"cache.{name} should have shape (batch, n_heads, slots, d) = ({B}, {h}, slots, {d}), "
                          f"got {tuple(buffer.shape)}")
    slots = buffer.shape[2]
    held = min(t + 1, window)
    if slots != window and slots != step_count and slots_for(window + 3) == slots:
        raise CheckFailed(f"your buffer has {slots} slots for window={window} and for window={window + 3}: size it "
                          "from the window argument, not a fixed number.")
    if slots > window:
        if slots == step_count:
            raise CheckFailed(f"after {step_count} tokens with window={window} your buffer holds {slots} tokens, more "
                              "than the window: it must stop growing at window slots (allocate them once and "
                              "overwrite the oldest entry; torch.cat grows it).")
        if slots == window + 1:
            raise CheckFailed(f"with window={window} your buffer has {slots} slots: the window counts the token "
                              f"itself, so it holds tokens t - {window - 1} .. t, {window} of them.")
        raise CheckFailed(f"with window={window} your buffer has {slots} slots: size it from the window argument "
                          f"(window slots, never more).")
    if slots < held:
        raise CheckFailed(f"with window={window} your buffer has {slots} slots, but after {t + 1} tokens it must "
                          f"hold {held}: the token itself and the {held - 1} before it. Size it from the window "
                          "argument.")
    times = _slot_times(buffer, seq, t)  # (B, h, slots)
    need = torch.arange(t - held + 1, t + 1)  # the tokens the window holds now
    present = (times[..., None] == need).any(-2)  # (B, h, held)
    if bool(present.all()):
        return
    if bool((times < 0).all()):
        raise CheckFailed(f"cache.{name} holds none of the {name} it was given (after token {t}): store each "
                          f"token's {name[:-1]} unchanged (not scaled or transposed; keys in keys, values in values).")
    missing = int(need[~present.all(dim=(0, 1))][0])
    older = times[(times >= 0) & (times < t - window + 1)]
    if missing == t:
        raise CheckFailed(f"after token {t} (window={window}) your buffer does not hold that token's {name[:-1]}: "
                          "write the new key and value into the buffer in step, before attending.")
    if older.numel():
        raise CheckFailed(f"after token {t} (window={window}) your buffer still holds token {int(older.min())}'s "
                          f"{name[:-1]}, outside the window ({t - window + 1}..{t}), and lost token {missing}'s: "
                          f"overwrite the oldest entry (in a ring of window slots, token t goes to slot t % window).")
    raise CheckFailed(f"after token {t} (window={window}) your buffer lost token {missing}'s {name[:-1]}, still "
                      f"inside the window ({t - held + 1}..{t}): a new token may overwrite only the oldest entry, "
                      f"token t - window. Do you advance your count of tokens seen (slot t % window)?")


class _EmptyIsNaN(TorchFunctionMode):
    """Fills every float tensor made by torch.empty, empty_like or new_empty with NaN while active: memory that
    was never written holds whatever was there, NaN included, so an answer that lets it through fails every
    time, not only when the garbage happens to be NaN."""

    NAMES = {"empty", "empty_like", "new_empty"}

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        out = func(*args, **(kwargs or {}))
        if getattr(func, "__name__", "") in self.NAMES and isinstance(out, Tensor) and out.is_floating_point():
            with torch.no_grad():
                out.fill_(float("nan"))
        return out


def _window_step(cache: Any, call: str, q: Tensor, k: Tensor, v: Tensor, t: int) -> Tensor:
    """One call of the learner's ``cache.step`` on token ``t`` (q, k: (B, h, d_k), v: (B, h, d_v)) -> (B, h, d_v)."""
    B, h, d_v = v.shape
    with _EmptyIsNaN():
        out = call_student(cache.step, q.clone(), k.clone(), v.clone(), what=f"step of your {call} at token {t}")
    if isinstance(out, Tensor) and tuple(out.shape) == (B, h, 1, d_v):
        out = out[:, :, 0]  # (B, h, 1, d_v): one query kept as a row; the same answer
    return expect_tensor(out, f"the output of step at token {t} (batch={B}, n_heads={h}, d_v={d_v})", (B, h, d_v))


def _check_reads_buffers(cache: Any, call: str, q: Tensor, k: Tensor, v: Tensor, window: int,
                         g: torch.Generator) -> None:
    """After T tokens, halve ``cache.keys`` and double ``cache.values`` in place, step one more token and fail
    unless its output follows the tampered buffers: a cache that attends copies kept elsewhere (every token in
    a hidden list, the window only mirrored into ``.keys``) fails here. q, k: (B, h, T, d_k), v: (B, h, T, d_v)."""
    B, h, T, d_k = k.shape
    qx, kx = (torch.randn(B, h, 1, d_k, generator=g) * 1.5 for _ in range(2))  # (B, h, 1, d_k)
    vx = torch.randn(B, h, 1, v.shape[-1], generator=g)  # (B, h, 1, d_v)
    try:
        with torch.no_grad():
            cache.keys.mul_(0.5)
            cache.values.mul_(2.0)
    except RuntimeError as error:
        raise CheckFailed(f"the checker could not scale cache.keys and cache.values in place ({error}): keep them as "
                          "two plain tensors that step writes into, not views made by expand.") from None
    out = _window_step(cache, call, qx[:, :, 0], kx[:, :, 0], vx[:, :, 0], T).detach().double()
    q_all, k_all, v_all = torch.cat([q, qx], 2), torch.cat([k, kx], 2), torch.cat([v, vx], 2)
    held = slice(max(0, T - window + 1), T)  # the tokens still in the window at token T, before it
    k_tampered, v_tampered = k_all.clone(), v_all.clone()
    k_tampered[:, :, held] *= 0.5
    v_tampered[:, :, held] *= 2.0
    if close(out, window_reference(q_all, k_tampered, v_tampered, window)[:, :, -1].double()):
        return
    followed = "" if not close(out, window_reference(q_all, k_all, v_all, window)[:, :, -1].double()) else (
        ": it is the output of the untouched keys and values, so step attends copies kept elsewhere")
    raise CheckFailed(f"after {T} tokens the checker halved cache.keys and doubled cache.values in place, and the "
                      f"output of your {call} at the next token did not follow{followed}. Attend what cache.keys "
                      "and cache.values hold, and keep nothing more: the point of the cache is that memory stops "
                      "growing at window tokens.")


@checker("11.6", "a rolling cache for a sliding window")
def check_window_cache(cache_class: Callable[..., Any]) -> str:
    """Check ``cache_class(window, batch, n_heads, d_k, d_v)`` with ``.step(q, k, v) -> (batch, n_heads, d_v)``:
    fed token by token, it holds at most ``window`` tokens in ``.keys``/``.values``, keeps the same two tensors
    once they are full, attends what they hold, and its outputs equal attention under ``sliding_window_mask``
    over the whole sequence."""
    def slots_for(window: int) -> int | None:
        """Slots of cache.keys in a fresh cache of this window after one token; None if that fails."""
        try:
            probe = cache_class(window, 1, 1, 2, 2)
            probe.step(torch.ones(1, 1, 2), torch.ones(1, 1, 2), torch.ones(1, 1, 2))
            return int(probe.keys.shape[2])
        except Exception:
            return None

    g = torch.Generator().manual_seed(16)
    cases = ((2, 3, 4, 5, 3, 10), (1, 2, 8, 8, 4, 13), (2, 2, 4, 3, 6, 5), (1, 1, 6, 2, 1, 4), (1, 2, 4, 4, 2, 7),
             (1, 2, 4, 3, 5, 12))
    for B, h, d_k, d_v, window, T in cases:
        q, k = (torch.randn(B, h, T, d_k, generator=g) * 1.5 for _ in range(2))  # (B, h, T, d_k)
        v = torch.randn(B, h, T, d_v, generator=g)  # (B, h, T, d_v)
        call = f"WindowCache(window={window}, batch={B}, n_heads={h}, d_k={d_k}, d_v={d_v})"
        with _EmptyIsNaN():
            cache = call_student(cache_class, window, B, h, d_k, d_v, what=f"your {call}")
        if not callable(getattr(cache, "step", None)):
            raise CheckFailed(f"{call} has no method step(q, k, v): add it to the class.")
        outputs = []
        full: tuple[Tensor, Tensor] | None = None  # the two buffers once full, held so their memory is not reused
        garbage = None  # the first token after which a buffer held NaN or Inf
        for t in range(T):
            out = _window_step(cache, call, q[:, :, t], k[:, :, t], v[:, :, t], t)
            _check_buffer(cache, "keys", k, t, window, t + 1, slots_for)
            _check_buffer(cache, "values", v, t, window, t + 1, slots_for)
            if garbage is None and not (bool(torch.isfinite(cache.keys).all())
                                        and bool(torch.isfinite(cache.values).all())):
                garbage = t
            if full is not None and (cache.keys.data_ptr(), cache.values.data_ptr()) != (
                    full[0].data_ptr(), full[1].data_ptr()):
                raise CheckFailed(
                    f"at token {t} (window={window}) cache.keys or cache.values is a new tensor, though the buffer "
                    "was already full: allocate the window slots once and write each new token into the oldest "
                    "slot in place (self.keys[:, :, slot] = k). torch.cat, torch.roll or torch.stack (of a list or "
                    "deque) make a new tensor, a copy of the whole window, at every step.")
            if full is None and cache.keys.shape[2] == window:
                full = (cache.keys, cache.values)
            outputs.append(out.detach().double())
        got = torch.stack(outputs, dim=2)  # (B, h, T, d_v)
        want = window_reference(q, k, v, window).double()
        if close(got, want):
            _check_reads_buffers(cache, call, q, k, v, window, g)
            continue
        what = f"your outputs ({call}, {T} tokens)"
        mistakes = {
            "Scale the scores by 1/sqrt(d_k), as in every attention of this book.":
                (window_reference(q, k, v, window, scale=False), 0),
            "You divided the scores by d_k: scale them by 1/sqrt(d_k), the square root.":
                (window_reference(q / math.sqrt(d_k), k, v, window), 0),
            "While the buffer fills, the slots that hold no token yet took part in the softmax (a zero key scores "
            "0, not -inf, and takes weight): attend only the slots written so far.":
                (window_reference(q, k, v, window, empty_slots=True), 0),
            "Each token attended the window before it but not itself: write the token's key and value into the "
            "buffer first, then attend (its own key is one of the window's).":
                (window_reference(q, k, v, window, exclude_self=True), 1),
            f"You attended {window + 1} tokens, not {window}: the window counts the token itself. Write k and v "
            f"into the ring first, then attend its {window} slots, not the {window} slots plus the new key.":
                (window_reference(q, k, v, window + 1), 0),
            "Each output is the token's own value v: attention weighs the values of every token in the window by "
            "softmax(q k / sqrt(d_k)) over the slots.":
                (v, 0),
        }
        if window > 1:
            mistakes[f"You attended {window - 1} tokens, not {window}: the window counts the token itself and the "
                     f"{window - 1} before it."] = (window_reference(q, k, v, window - 1), 0)
        # a mistake judged from token `start` on takes the learner's own outputs before it
        fail_on_mistake(got, {hint: torch.cat([got[:, :, :start], wrong.double()[:, :, start:]], dim=2)
                              for hint, (wrong, start) in mistakes.items()}, close, prefix=f"{what} are not right. ")
        bad = [t for t in range(T) if not close(got[:, :, t], want[:, :, t])] or [0]
        if bad[0] == 0 and bool((got[:, :, 0] == 0).all()):
            raise CheckFailed(f"{what} are 0 at token 0, where the output must be the token's own value v: all the "
                              "weight went to slots that hold no token. Attend the slots you wrote (token 0's slot "
                              "is the one step just filled), not a fixed range of slot numbers.")
        nan = [t for t in bad if bool(torch.isnan(got[:, :, t]).any())]
        if nan and garbage is not None and garbage <= nan[0]:
            raise CheckFailed(f"{what} are NaN at token {nan[0]}, and your buffers held NaN or Inf after token "
                              f"{garbage}, in slots no token was written to yet (torch.empty leaves whatever was in "
                              "memory; the checker fills it with NaN): a masked weight of 0 times NaN is still NaN. "
                              "Start the buffers at zeros (torch.zeros).")
        if nan:
            wrapped = (" At that token the buffer has just filled: did your count of tokens seen wrap around to 0? "
                       "Keep counting; only the slot is t % window." if nan[0] == window - 1 else "")
            raise CheckFailed(f"{what} are NaN at token {nan[0]}: every slot was masked there (a softmax over a row "
                              f"of -inf), though the token's own key is always in the window.{wrapped}")
        one = (got[:, :, :, None, :] - v.double()[:, :, None, :, :]).abs().amax(-1) <= 1e-6  # (B, h, T, T)
        if bool(one.tril().any(-1).all()):
            raise CheckFailed(f"{what} are each exactly one token's value v: all the weight went to one slot. "
                              "F.scaled_dot_product_attention(..., is_causal=True) does this with one query: its "
                              "mask is aligned top-left, so the query keeps only the first slot. The cache holds only "
                              "tokens of the window: mask only the slots that hold no token yet, and no more.")
        if max(bad) < window - 1:
            raise CheckFailed(f"{what} are right once the buffer is full (from token {window - 1} on) but not while "
                              f"it fills (tokens {', '.join(map(str, bad))}): with t + 1 < window tokens seen, attend "
                              "only the slots that hold a token.")
        if bad[0] == 0:
            raise CheckFailed(f"{what} are not right at token 0, where the only key is the token's own, so the "
                              "output must be its value v whatever the scores: your weights do not sum to 1 over "
                              "the slots that hold a token (softmax over the last axis, the slots).")
        if min(bad) >= window:
            raise CheckFailed(f"{what} are right until the buffer wraps around (token {window}) and wrong from token "
                              f"{min(bad)} on: after an overwrite, attend every slot (all of them hold a token of the "
                              "window), whatever order they are in.")
        expect_close(got[:, :, bad[0]], want[:, :, bad[0]], f"your output at token {bad[0]} ({call})")
    return ("Your cache never held more than window tokens, kept the same two buffers once they were full and "
            "attended what they hold, and token by token it equals attention under sliding_window_mask over the "
            "whole sequence, for windows 1 to 6, shorter and longer than the sequence. A ring never has to put its "
            "slots back in time order: the softmax's weighted sum does not depend on the order of the keys, and a "
            "position lives inside each key (RoPE rotates it before it is cached).")
