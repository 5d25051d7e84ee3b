"""Tests for the Chapter 11 checkers: pass the reference and right alternatives, fail known mistakes with the
right hint, say "not implemented yet" for stubs."""

from __future__ import annotations

import copy
import math
from collections import deque

import pytest
import torch
import torch.nn.functional as F

from course_utils.charlm import charlm_split
from course_utils.exercises.ch11_attention_at_scale import (
    PairTimer,
    check_linear_attention,
    check_mqa_uptraining,
    check_online_softmax,
    check_pool_heads,
    check_tiling_experiment,
    check_window_cache,
    reference_pool_heads,
    window_reference,
)
from course_utils.flash import linear_attention, online_softmax_update, plain_attention
from course_utils.gpt import DecoderOnly, DecoderOnlyConfig
from course_utils.modern import convert_to_gqa
from course_utils.runs.modern import UPTRAIN_RECIPE, uptrain


@pytest.fixture(autouse=True)
def one_thread():
    """Timings as the notebook takes them: one thread."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _stub(*args, **kwargs):
    raise NotImplementedError


@pytest.mark.parametrize("check,args", [
    (check_online_softmax, (_stub,)), (check_tiling_experiment, (lambda: "faster", _stub, _stub)),
    (check_pool_heads, (_stub,)), (check_mqa_uptraining, (lambda: "further", _stub)),
    (check_linear_attention, (_stub,)), (check_tiling_experiment, (_stub, _stub, _stub)),
    (check_window_cache, (_stub,)),
])
def test_stub_is_not_implemented_yet(check, args):
    result = check(*args)
    assert not result.passed and result.not_implemented and "not implemented yet" in result.message


def _fails_with(result, *words):
    assert not result.passed, result.message
    for word in words:
        assert word in result.message, result.message


# ----- 11.1 -----------------------------------------------------------------------------------
def online_loop(m, l, acc, s, v):  # noqa: E741
    """Right, written differently: concatenate the old state as one pseudo-score."""
    new_max = torch.maximum(m, s.max(dim=-1).values)
    ref = new_max.masked_fill(new_max == float("-inf"), 0.0)  # rows with nothing seen yet
    keep = torch.exp(m - ref)
    weights = torch.exp(s - ref.unsqueeze(-1))
    return new_max, keep * l + weights.sum(-1), keep.unsqueeze(-1) * acc + torch.matmul(weights, v)


def online_logsumexp(m, l, acc, s, v):  # noqa: E741
    """Right, via logsumexp of the tile."""
    m_new = torch.maximum(m, s.amax(-1))
    ref = torch.where(torch.isfinite(m_new), m_new, torch.zeros_like(m_new))
    p = (s - ref[..., None]).exp()
    return m_new, l * (m - ref).exp() + torch.logsumexp(s - ref[..., None], -1).exp(), \
        acc * (m - ref).exp()[..., None] + p @ v


def no_acc_rescale(m, l, acc, s, v):  # noqa: E741
    m_new = torch.maximum(m, s.amax(-1))
    p = torch.exp(s - m_new[..., None])
    return m_new, l * torch.exp(m - m_new) + p.sum(-1), acc + p @ v


def no_l_rescale(m, l, acc, s, v):  # noqa: E741
    m_new = torch.maximum(m, s.amax(-1))
    p = torch.exp(s - m_new[..., None])
    return m_new, l + p.sum(-1), acc * torch.exp(m - m_new)[..., None] + p @ v


def normalised(m, l, acc, s, v):  # noqa: E741
    m_new = torch.maximum(m, s.amax(-1))
    r = torch.exp(m - m_new)
    p = torch.exp(s - m_new[..., None])
    l_new = l * r + p.sum(-1)
    return m_new, l_new, (acc * r[..., None] + p @ v) / l_new[..., None]


def calls_the_book(m, l, acc, s, v):  # noqa: E741
    return online_softmax_update(m, l, acc, s, v)


def tile_max_only(m, l, acc, s, v):  # noqa: E741
    m_new = s.amax(-1)
    r = torch.exp(m - m_new)
    p = torch.exp(s - m_new[..., None])
    return m_new, l * r + p.sum(-1), acc * r[..., None] + p @ v


def in_place(m, l, acc, s, v):  # noqa: E741
    m_new = torch.maximum(m, s.amax(-1))
    r = torch.exp(m - m_new)
    p = torch.exp(s - m_new[..., None])
    acc.mul_(r[..., None]).add_(p @ v)
    return m_new, l * r + p.sum(-1), acc


def no_guard(m, l, acc, s, v):  # noqa: E741
    """The update without a guard for rows whose scores are all -inf so far: NaN there."""
    m_new = torch.maximum(m, s.amax(-1))
    r = torch.exp(m - m_new)
    p = torch.exp(s - m_new[..., None])
    return m_new, l * r + p.sum(-1), acc * r[..., None] + p @ v


def guard_with_nan_to_num(m, l, acc, s, v):  # noqa: E741
    """Right: the same update, NaNs of fully masked rows replaced by 0."""
    m_new = torch.maximum(m, s.amax(-1))
    r = torch.nan_to_num(torch.exp(m - m_new), nan=0.0)
    p = torch.nan_to_num(torch.exp(s - m_new[..., None]), nan=0.0)
    return m_new, l * r + p.sum(-1), acc * r[..., None] + p @ v


def old_max_exps(m, l, acc, s, v):  # noqa: E741
    """The tile exponentiated relative to the old maximum (guarded for the first tile)."""
    m_new = torch.maximum(m, s.amax(-1))
    shift_old = torch.where(torch.isinf(m), torch.zeros_like(m), m)
    p = torch.exp(s - shift_old[..., None])
    r = torch.exp(m - m_new)
    return m_new, l * r + p.sum(-1), acc * r[..., None] + p @ v


def test_online_right_answers():
    assert check_online_softmax(online_loop).passed
    assert check_online_softmax(online_logsumexp).passed
    assert check_online_softmax(guard_with_nan_to_num).passed


@pytest.mark.parametrize("wrong,words", [
    (no_acc_rescale, ["acc is not rescaled"]),
    (no_l_rescale, ["l is not rescaled"]),
    (normalised, ["normalised output"]),
    (tile_max_only, ["max(m_old"]),
    (in_place, ["in place"]),
    (no_guard, ["all -inf", "NaN", "shift by 0"]),
    (calls_the_book, ["write the step yourself"]),
    (online_softmax_update, ["write the step yourself"]),
    (old_max_exps, ["relative to m_new"]),
])
def test_online_mistakes(wrong, words):
    _fails_with(check_online_softmax(wrong), *words)


# ----- 11.2 -----------------------------------------------------------------------------------
def tiled_loop(q, k, v, causal, block, skip=True, scale=True, scores="matmul", mask="causal"):
    """The learner's tiled attention, with switches for the mistakes: ``skip=False`` computes the tiles above
    the diagonal too; ``scores="einsum"`` takes each tile's scores with einsum; ``mask`` "causal" (right),
    "none" (nothing masked inside the diagonal tile) or "local" (every tile gets the same local triangle)."""
    T, d_k = q.shape[-2], q.shape[-1]
    out = []
    for i0 in range(0, T, block):
        qb = q[..., i0:i0 + block, :] / (math.sqrt(d_k) if scale else 1.0)
        n = qb.shape[-2]
        m = q.new_full((*q.shape[:-2], n), float("-inf"))
        l = q.new_zeros((*q.shape[:-2], n))  # noqa: E741
        acc = q.new_zeros((*q.shape[:-2], n, v.shape[-1]))
        for j0 in range(0, i0 + n if causal and skip else T, block):
            kb = k[..., j0:j0 + block, :]
            s = torch.einsum("...qd,...kd->...qk", qb, kb) if scores == "einsum" else qb @ kb.transpose(-2, -1)
            if causal and mask == "causal":
                rows, cols = torch.arange(i0, i0 + n)[:, None], torch.arange(j0, j0 + s.shape[-1])[None, :]
                s = s.masked_fill(cols > rows, float("-inf"))
            elif causal and mask == "local":
                s = s.masked_fill(torch.ones(n, s.shape[-1], dtype=torch.bool).triu(1), float("-inf"))
            m, l, acc = online_softmax_update(m, l, acc, s, v[..., j0:j0 + block, :])  # noqa: E741
        out.append(acc / l[..., None])
    return torch.cat(out, dim=-2)


def experiment(tiled, timer, cases=((512, 256), (1024, 256), (2048, 256), (2048, 32)), swapped=False,
               plain_causal=True, plain_on_other_q=False):
    """The learner's timing run, with switches for the mistakes: ``swapped`` gives timer.compare the tiled
    loop first; ``plain_causal=False`` times the baseline without the mask; ``plain_on_other_q`` on other q."""
    results = {}
    for T, block in cases:
        q, k, v = (torch.randn(1, 1, T, 64) for _ in range(3))
        q_plain = torch.randn(1, 1, T, 64) if plain_on_other_q else q
        pair = (lambda q=q_plain, k=k, v=v: plain_attention(q, k, v, plain_causal),
                lambda q=q, k=k, v=v, b=block: tiled(q, k, v, True, b))
        results[(T, block)] = timer.compare(*(pair[::-1] if swapped else pair))
    return results


class QuickTimer(PairTimer):
    """A timer for the tests: the checker's probe runs each function once (so it sees the calls and the
    outputs); the times are made up, plain twice as slow as tiled, so the mistake tests do not spend
    minutes timing."""

    def _time(self, plain_fn, tiled_fn):
        return 2.0 + len(self.log), 1.0 + len(self.log)


@pytest.fixture
def quick_timer(monkeypatch):
    import course_utils.exercises.ch11_attention_at_scale as ch11

    monkeypatch.setattr(ch11, "PairTimer", QuickTimer)


def test_pair_timer_logs_every_pair():
    timer = PairTimer(repeats=2)
    pair = timer.compare(lambda: torch.ones(10).sum(), lambda: torch.ones(20).sum())
    assert timer.log == [pair] and all(x >= 0 for x in pair)


def test_tiling_right_answer():
    result = check_tiling_experiment(lambda: "faster", tiled_loop, experiment, 1.4)
    assert result.passed and "at T = 2048" in result.message and "With tiles of 32" in result.message


def einsum_every_tile(q, k, v, causal, block):
    """Right output, but the scores of every tile computed with einsum (masked afterwards): no tile skipped."""
    return tiled_loop(q, k, v, causal, block, skip=False, scores="einsum")


def diagonal_unmasked(q, k, v, causal, block):
    """Skips the tiles above the diagonal but masks nothing inside the diagonal tile."""
    return tiled_loop(q, k, v, causal, block, mask="none")


def local_triangle(q, k, v, causal, block):
    """Skips the tiles above the diagonal and masks every computed tile with the same local triangle."""
    return tiled_loop(q, k, v, causal, block, mask="local")


def swapped_compare(tiled, timer):
    """timer.compare(tiled_fn, plain_fn): the arguments in the wrong order."""
    return experiment(tiled, timer, swapped=True)


def plain_without_mask(tiled, timer):
    """The plain baseline timed without the causal mask, against the causal loop."""
    return experiment(tiled, timer, plain_causal=False)


def other_inputs(tiled, timer):
    """Plain attention timed on other q, k, v than the loop."""
    return experiment(tiled, timer, plain_on_other_q=True)


@pytest.mark.parametrize("tiled,run,words", [
    (lambda q, k, v, c, b: tiled_loop(q, k, v, c, b, skip=False), experiment, ["above the diagonal"]),
    (einsum_every_tile, experiment, ["above the diagonal"]),
    (lambda q, k, v, c, b: tiled_loop(q, k, v, c, b, scale=False), experiment, ["sqrt(d_k)"]),
    (lambda q, k, v, c, b: tiled_loop(q, k, v, False, b), experiment, ["every key", "later"]),
    (diagonal_unmasked, experiment, ["unmasked", "own block"]),
    (local_triangle, experiment, ["same triangle"]),
    (lambda q, k, v, c, b: plain_attention(q, k, v, c), experiment, ["above the diagonal"]),
    (tiled_loop, lambda tiled, timer: {(512, 256): (2.0, 1.5), (1024, 256): (12.0, 8.0), (2048, 256): (40.0, 27.0),
                                       (2048, 32): (40.0, 90.0)}, ["typed in"]),
    (tiled_loop, lambda tiled, timer: {T: p[::-1] for T, p in experiment(tiled, timer).items()}, ["swapped"]),
    (tiled_loop, swapped_compare, ["upside down"]),
    (tiled_loop, plain_without_mask, ["without the causal mask"]),
    (tiled_loop, other_inputs, ["q, k, v your tiled loop"]),
    (tiled_loop, lambda tiled, timer: experiment(tiled, timer, ((512, 256), (1024, 256), (2048, 256))),
     ["blocks of 32"]),
    (tiled_loop, lambda tiled, timer: {T: p for (T, b), p in experiment(tiled, timer).items()}, ["(T, block)"]),
    (tiled_loop, lambda tiled, timer: experiment(lambda q, k, v, c, b: plain_attention(q, k, v, c), timer),
     ["never timed"]),
])
def test_tiling_mistakes(quick_timer, tiled, run, words):
    _fails_with(check_tiling_experiment(lambda: "faster", tiled, run), *words)


def test_tiling_rejects_the_books_loop_and_a_bad_prediction(quick_timer):
    from course_utils.flash import tiled_attention

    def books(q, k, v, causal, block):
        return tiled_attention(q, k, v, causal, block)
    _fails_with(check_tiling_experiment(lambda: "faster", books, experiment), "write the loop yourself")
    _fails_with(check_tiling_experiment(lambda: "quicker", tiled_loop, experiment), "not one of the choices")


# ----- 11.3 -----------------------------------------------------------------------------------
def pool_loop(w, h, n_kv):
    d_k = w.shape[0] // h
    G = h // n_kv
    groups = [torch.stack([w[(j * G + i) * d_k:(j * G + i + 1) * d_k] for i in range(G)]).mean(0) for j in range(n_kv)]
    return torch.cat(groups)


def pool_split(w, h, n_kv):
    return torch.cat([c.reshape(h // n_kv, -1, *w.shape[1:]).mean(0) for c in w.chunk(n_kv)])


def test_pool_right_answers():
    assert check_pool_heads(reference_pool_heads).passed
    assert check_pool_heads(pool_loop).passed
    assert check_pool_heads(pool_split).passed


@pytest.mark.parametrize("wrong,words", [
    (lambda w, h, n: w.reshape(h // n, n, w.shape[0] // h, *w.shape[1:]).mean(0).reshape(-1, *w.shape[1:]),
     ["consecutive heads"]),
    (lambda w, h, n: w.reshape(n, h // n, w.shape[0] // h, *w.shape[1:]).sum(1).reshape(-1, *w.shape[1:]),
     ["summed"]),
    (lambda w, h, n: w.reshape(n, h // n, w.shape[0] // h, *w.shape[1:])[:, 0].reshape(-1, *w.shape[1:]),
     ["first head"]),
    (lambda w, h, n: w[: n * (w.shape[0] // h)], ["dropped the others"]),
    (lambda w, h, n: w, ["shape"]),
])
def test_pool_mistakes(wrong, words):
    _fails_with(check_pool_heads(wrong), *words)


# ----- 11.4 -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny():
    """A small untrained character LM and the data: fast enough to uptrain in the tests (for the mistakes, which
    fail on what the run recorded before any range is judged)."""
    return tiny_charlm()


def tiny_charlm():
    vocab, train_ids, val_ids = charlm_split()
    torch.manual_seed(0)
    model = DecoderOnly(DecoderOnlyConfig(vocab_size=len(vocab), d_model=16, n_heads=4, d_ff=32, n_layers=1,
                                          max_len=128, norm_first=True)).eval()
    return model, (vocab, train_ids[:20000], val_ids[:9000])


def sweep_chunks(charlm, uptrain, score, lengths=None):
    """Right: one control and one MQA model, uptrained in the same chunks, scored between them."""
    s = UPTRAIN_RECIPE["steps"]
    lengths = lengths or (0, s // 6, s // 3)  # lengths the shipped curves hold: nothing interpolated
    control, mqa = copy.deepcopy(charlm), convert_to_gqa(charlm, 1)
    lost, done = {}, 0
    for steps in lengths:
        if steps > done:
            uptrain(control, steps - done)
            uptrain(mqa, steps - done)
            done = steps
        lost[steps] = score(mqa) - score(control)
    return lost


def sweep_fresh(charlm, uptrain, score):
    """Right, another style: a fresh pair of models for every length, uptrained in one call each."""
    s = UPTRAIN_RECIPE["steps"]
    lost = {0: score(convert_to_gqa(charlm, 1)) - score(charlm)}
    for steps in (s // 6, s // 3):
        control, mqa = copy.deepcopy(charlm), convert_to_gqa(charlm, 1)
        uptrain(control, steps)
        uptrain(mqa, steps)
        lost[steps] = score(mqa) - score(control)
    return lost


def sweep_variant(kind):
    """The mistakes of Exercise 11.4, one switch each."""
    def sweep(charlm, uptrain, score):
        control, mqa = copy.deepcopy(charlm), convert_to_gqa(charlm, 2 if kind == "GQA-2" else 1)
        base = score(charlm)
        lost, done, previous = {}, 0, None
        for steps in (0, 4, 10):
            if kind == "scored first":  # scores, then uptrains: each value belongs to the length before
                now = score(mqa) - score(control)
                lost[steps] = now if previous is None else previous
                previous = now
            if steps > done:
                if kind == "in place":
                    uptrain(charlm, steps - done)
                if kind == "control in one go":
                    if done == 0:
                        uptrain(control, 10)
                else:
                    uptrain(control, steps - done)
                uptrain(mqa, steps - done)
                done = steps
            m, c = score(mqa), score(control)
            if kind != "scored first":
                lost[steps] = {"no control": m - base, "absolute": m, "sign": c - m}.get(kind, m - c)
        if kind == "two lengths":
            lost.pop(4)
        if kind == "no zero":
            lost.pop(0)
        return lost
    return sweep


def sweep_outside(charlm, uptrain, score):
    """Uptrains with the book's uptrain on its own data, not with the checker's uptrain."""
    _, train_ids, _ = charlm_split()
    control, mqa = copy.deepcopy(charlm), convert_to_gqa(charlm, 1)
    lost = {0: score(mqa) - score(control)}
    uptrain_book = uptrain_of_the_book()
    for model in (control, mqa):
        uptrain_book(model, train_ids[:20000], 0, {**UPTRAIN_RECIPE, "steps": 4})
    lost[4] = score(mqa) - score(control)
    lost[8] = lost[4]
    return lost


def uptrain_of_the_book():
    return uptrain


def sweep_over_budget(charlm, uptrain, score):
    uptrain(convert_to_gqa(charlm, 1), 3 * UPTRAIN_RECIPE["steps"])
    return {0: 1.0, 1: 1.0, 2: 1.0}


@pytest.mark.parametrize("kind,words", [
    ("no control", ["model before uptraining"]), ("absolute", ["bits per character, not what it loses"]),
    ("sign", ["control minus MQA"]), ("control in one go", ["different uptrain calls"]),
    ("scored first", ["another number of steps"]), ("GQA-2", ["neither a copy of charlm nor"]),
    ("in place", ["in place"]), ("two lengths", ["at least three lengths"]), ("no zero", ["0 among them"]),
])
def test_mqa_mistakes(tiny, kind, words):
    model, data = tiny
    _fails_with(check_mqa_uptraining(lambda: "further", sweep_variant(kind), model, data, 0), *words)


def test_mqa_rejects_typed_in_numbers_other_training_and_a_blown_budget(tiny):
    model, data = tiny
    _fails_with(check_mqa_uptraining(lambda: "further", lambda *a: {0: 1.36, 10: 0.8, 30: 0.62}, model, data),
                "typed in")
    _fails_with(check_mqa_uptraining(lambda: "further", sweep_outside, model, data), "uptrain(model, steps)")
    _fails_with(check_mqa_uptraining(lambda: "further", sweep_over_budget, model, data), "at most")


def test_mqa_checks_the_prediction_first(tiny):
    model, data = tiny
    measured = []
    result = check_mqa_uptraining(lambda: "", lambda *a: measured.append(1) or {0: 1.3}, model, data)
    assert result.not_implemented and not measured
    _fails_with(check_mqa_uptraining(lambda: "bigger", sweep_chunks, model, data), "not one of the choices")


def test_mqa_seed_is_hidden_and_fresh(tiny):
    """Without a seed argument the checker draws a new one each call: the same sweep measures other numbers."""
    model, data = tiny
    seen = []

    def spy(charlm, uptrain, score):
        lost = sweep_chunks(charlm, uptrain, score, (0, 2, 4))
        seen.append(lost[4])
        return lost
    check_mqa_uptraining(lambda: "further", spy, model, data)
    check_mqa_uptraining(lambda: "further", spy, model, data)
    assert seen[0] != seen[1]


def test_mqa_right_answers_on_the_shipped_model():
    for sweep in (sweep_chunks, sweep_fresh):
        result = check_mqa_uptraining(lambda: "further", sweep, seed=7)
        assert result.passed and "shipped runs give" in result.message, result.message


# ----- 11.5 -----------------------------------------------------------------------------------
def linear_cumsum(q, k, v, causal):
    fq, fk = F.elu(q) + 1, F.elu(k) + 1
    if not causal:
        return fq @ (fk.transpose(-2, -1) @ v) / (fq @ fk.sum(-2)[..., None])
    S = torch.cumsum(fk[..., :, None] * v[..., None, :], dim=-3)  # (..., T, d_k, d_v)
    z = torch.cumsum(fk, dim=-2)  # (..., T, d_k)
    return (fq[..., None, :] @ S).squeeze(-2) / (fq * z).sum(-1, keepdim=True)


def linear_rnn(q, k, v, causal):
    """Right, as a recurrent loop over positions (the RNN view of Katharopoulos et al.)."""
    fq, fk = F.elu(q) + 1, F.elu(k) + 1
    if not causal:  # written out: calling the book's linear_attention is what the checker refuses
        return fq @ (fk.transpose(-2, -1) @ v) / (fq @ fk.sum(-2)[..., None])
    S = q.new_zeros((*q.shape[:-2], q.shape[-1], v.shape[-1]))
    z = q.new_zeros((*q.shape[:-2], q.shape[-1]))
    outs = []
    for t in range(q.shape[-2]):
        S = S + fk[..., t, :, None] * v[..., t, None, :]
        z = z + fk[..., t, :]
        outs.append((fq[..., t, None, :] @ S).squeeze(-2) / (fq[..., t, :] * z).sum(-1, keepdim=True))
    return torch.stack(outs, dim=-2)


def quadratic(q, k, v, causal, phi=lambda x: F.elu(x) + 1, norm=True, strict=False):
    a = phi(q) @ phi(k).transpose(-2, -1)
    if causal:
        a = a.tril(-1 if strict else 0)
    return a @ v / a.sum(-1, keepdim=True) if norm else a @ v


def test_linear_right_answers():
    assert check_linear_attention(linear_cumsum).passed
    assert check_linear_attention(linear_rnn).passed
    _fails_with(check_linear_attention(lambda q, k, v, causal: linear_attention(q, k, v, causal)), "yourself")


@pytest.mark.parametrize("wrong,words", [
    (lambda q, k, v, c: F.scaled_dot_product_attention(q, k, v, is_causal=c), ["softmax attention"]),
    (lambda q, k, v, c: linear_cumsum(q - 30, k, v, c) * 0 + quadratic(q, k, v, c, phi=F.elu), ["elu(x) + 1"]),
    (lambda q, k, v, c: quadratic(q, k, v, c, phi=F.relu), ["not relu"]),
    (lambda q, k, v, c: quadratic(q, k, v, c, norm=False), ["not normalised"]),
    (lambda q, k, v, c: linear_cumsum(q, k, v, False), ["j <= i"]),
    (lambda q, k, v, c: quadratic(q, k, v, c, strict=True), ["own key"]),
    (lambda q, k, v, c: linear_cumsum(q / math.sqrt(q.shape[-1]), k, v, c), ["sqrt(d_k)"]),
    (quadratic, ["T x T", "linearly"]),
])
def test_linear_mistakes(wrong, words):
    _fails_with(check_linear_attention(wrong), *words)


# ----- 11.6 -----------------------------------------------------------------------------------
class RingCache:
    """Right: a ring of window slots, token t in slot t % window, the slots not yet written masked."""

    def __init__(self, window, batch, n_heads, d_k, d_v, slot=None, mask=True, scale=True, attend_first=False,
                 wrap_count=False):
        self.window, self.seen, self.wrap_count = window, 0, wrap_count
        self.keys = torch.zeros(batch, n_heads, window, d_k)
        self.values = torch.zeros(batch, n_heads, window, d_v)
        self.slot = slot or (lambda t, w: t % w)
        self.mask, self.scale, self.attend_first = mask, scale, attend_first

    def _attend(self, q, held):
        scores = (self.keys @ q[..., None]).squeeze(-1) / (q.shape[-1] ** 0.5 if self.scale else 1.0)
        if self.mask == "written":  # a slot is held once a key was written into it (random keys are never 0)
            scores = scores.masked_fill(self.keys.abs().sum(-1) == 0, float("-inf"))
        elif self.mask == "up to the slot":  # slots 0..slot: right until the ring wraps around
            scores = scores.masked_fill(~(torch.arange(self.window) <= (self.seen - 1) % self.window), float("-inf"))
        elif self.mask:
            scores = scores.masked_fill(~(torch.arange(self.window) < held), float("-inf"))
        return (scores.softmax(-1)[..., None, :] @ self.values).squeeze(-2)

    def step(self, q, k, v):
        out = self._attend(q, min(self.seen, self.window)) if self.attend_first else None
        slot = self.slot(self.seen, self.window)
        self.keys[:, :, slot] = k
        self.values[:, :, slot] = v
        self.seen = (self.seen + 1) % self.window if self.wrap_count else self.seen + 1
        return out if self.attend_first else self._attend(q, self.seen)


def ring_variant(**mistake):
    """A RingCache class with one mistake switched on."""
    return lambda window, batch, n_heads, d_k, d_v: RingCache(window, batch, n_heads, d_k, d_v, **mistake)


class ShiftCache:
    """Right, another way: append, then drop the oldest (at most window rows), attention by F.sdpa."""

    def __init__(self, window, batch, n_heads, d_k, d_v, keep=None):
        self.keep = window if keep is None else keep
        self.keys = torch.zeros(batch, n_heads, 0, d_k)
        self.values = torch.zeros(batch, n_heads, 0, d_v)

    def step(self, q, k, v):
        self.keys = torch.cat([self.keys, k[:, :, None]], dim=2)[:, :, -self.keep:] if self.keep else torch.cat(
            [self.keys, k[:, :, None]], dim=2)
        self.values = torch.cat([self.values, v[:, :, None]], dim=2)[:, :, -self.keep:] if self.keep else torch.cat(
            [self.values, v[:, :, None]], dim=2)
        return F.scaled_dot_product_attention(q[:, :, None], self.keys, self.values)[:, :, 0]


class RingScaledInPlace(RingCache):
    """Scales the caller's query in place."""

    def step(self, q, k, v):
        q /= q.shape[-1] ** 0.5
        self.scale = False
        return super().step(q, k, v)


class RingSoftmaxOverHeads(RingCache):
    """The softmax over the heads (dim 1), not the slots."""

    def _attend(self, q, held):
        scores = (self.keys @ q[..., None]).squeeze(-1) / q.shape[-1] ** 0.5
        scores = scores.masked_fill(~(torch.arange(self.window) < held), -1e9)
        return (scores.softmax(1)[..., None, :] @ self.values).squeeze(-2)


class RingPlusOwnKey(RingCache):
    """Attends the slots held before this token plus its own key (the Chapter's cached_self_attention pattern
    on a ring): window + 1 tokens once the ring is full."""

    def step(self, q, k, v):
        n = min(self.seen, self.window)
        keys = torch.cat([self.keys[:, :, :n], k[:, :, None]], dim=2)
        values = torch.cat([self.values[:, :, :n], v[:, :, None]], dim=2)
        out = F.scaled_dot_product_attention(q[:, :, None], keys, values)[:, :, 0]
        self.keys[:, :, self.seen % self.window], self.values[:, :, self.seen % self.window] = k, v
        self.seen += 1
        return out


class RingDividedByDk(RingCache):
    """Divides the scores by d_k, not sqrt(d_k)."""

    def step(self, q, k, v):
        return super().step(q / q.shape[-1] ** 0.5, k, v)


class RingCausalSdpa(RingCache):
    """F.sdpa with is_causal=True and one query over the held slots: only the first slot is kept."""

    def step(self, q, k, v):
        super().step(q, k, v)
        n = min(self.seen, self.window)
        return F.scaled_dot_product_attention(q[:, :, None], self.keys[:, :, :n], self.values[:, :, :n],
                                              is_causal=True)[:, :, 0]


class RingOwnValue(RingCache):
    """Fills the ring but returns the token's own value."""

    def step(self, q, k, v):
        super().step(q, k, v)
        return v


class RingEmpty(RingCache):
    """Buffers from torch.empty. ``prefix``: attend only the written prefix, so no unwritten slot is read
    (right); else mask the scores, yet multiply the unwritten values by weight 0 (0 * NaN is NaN: wrong)."""

    def __init__(self, window, batch, n_heads, d_k, d_v, prefix=False):
        super().__init__(window, batch, n_heads, d_k, d_v)
        self.keys, self.values = torch.empty(batch, n_heads, window, d_k), torch.empty(batch, n_heads, window, d_v)
        self.prefix = prefix

    def step(self, q, k, v):
        if not self.prefix:
            return super().step(q, k, v)
        slot = self.seen % self.window
        self.keys[:, :, slot], self.values[:, :, slot] = k, v
        self.seen += 1
        n = min(self.seen, self.window)
        return F.scaled_dot_product_attention(q[:, :, None], self.keys[:, :, :n], self.values[:, :, :n])[:, :, 0]


class DequeCache:
    """Right outputs from a deque of tokens, keys/values stacked anew on every read: never one buffer."""

    def __init__(self, window, batch, n_heads, d_k, d_v):
        self.k_list, self.v_list = deque(maxlen=window), deque(maxlen=window)

    keys = property(lambda self: torch.stack(list(self.k_list), dim=2))
    values = property(lambda self: torch.stack(list(self.v_list), dim=2))

    def step(self, q, k, v):
        self.k_list.append(k)
        self.v_list.append(v)
        return F.scaled_dot_product_attention(q[:, :, None], self.keys, self.values)[:, :, 0]


class RollCache(RingCache):
    """A shift register in time order: roll the slots by one, write the newest last. ``in_place``: copy the
    rolled slots back into the same buffers (right) or rebind to torch.roll's new tensors (a copy per step)."""

    def __init__(self, window, batch, n_heads, d_k, d_v, in_place=True):
        super().__init__(window, batch, n_heads, d_k, d_v)
        self.in_place = in_place

    def step(self, q, k, v):
        for name, new in (("keys", k), ("values", v)):
            rolled = torch.roll(getattr(self, name), -1, dims=2)
            if self.in_place:
                getattr(self, name).copy_(rolled)
            else:
                setattr(self, name, rolled)
            getattr(self, name)[:, :, -1] = new
        self.seen += 1
        held = torch.arange(self.window) >= self.window - self.seen  # (w,): the last min(seen, w) slots
        return F.scaled_dot_product_attention(q[:, :, None], self.keys, self.values,
                                              attn_mask=held[None, :])[:, :, 0]  # (1 query, w slots)


class CatThenRing(RingCache):
    """Right: grows by torch.cat until it holds window tokens, then overwrites the oldest slot in place."""

    def __init__(self, window, batch, n_heads, d_k, d_v):
        super().__init__(window, batch, n_heads, d_k, d_v)
        self.keys, self.values = self.keys[:, :, :0], self.values[:, :, :0]

    def step(self, q, k, v):
        if self.keys.shape[2] < self.window:
            self.keys = torch.cat([self.keys, k[:, :, None]], dim=2)
            self.values = torch.cat([self.values, v[:, :, None]], dim=2)
        else:
            self.keys[:, :, self.seen % self.window], self.values[:, :, self.seen % self.window] = k, v
        self.seen += 1
        weights = ((self.keys @ q[..., None]).squeeze(-1) / q.shape[-1] ** 0.5).softmax(-1)
        return (weights[..., None, :] @ self.values).squeeze(-2)


class LazyFloat64Ring:
    """Right: buffers allocated at the first step, float64, empty slots masked by -1e9 and a flag per slot."""

    def __init__(self, window, batch, n_heads, d_k, d_v):
        self.window, self.seen, self.keys = window, 0, None

    def step(self, q, k, v):
        if self.keys is None:
            self.keys = torch.zeros(*k.shape[:2], self.window, k.shape[-1], dtype=torch.float64)
            self.values = torch.zeros(*v.shape[:2], self.window, v.shape[-1], dtype=torch.float64)
            self.filled = torch.zeros(self.window, dtype=torch.bool)
        slot = self.seen % self.window
        self.keys[:, :, slot], self.values[:, :, slot], self.filled[slot] = k, v, True
        self.seen += 1
        scores = (self.keys @ q.double()[..., None]).squeeze(-1) * q.shape[-1] ** -0.5
        scores = torch.where(self.filled, scores, torch.tensor(-1e9, dtype=torch.float64))
        return (scores.softmax(-1)[..., None, :] @ self.values).squeeze(-2)


class HiddenHistory(RingCache):
    """Keeps every token in a hidden list and only mirrors the last window into keys/values."""

    def __init__(self, window, batch, n_heads, d_k, d_v):
        super().__init__(window, batch, n_heads, d_k, d_v)
        self.all_k, self.all_v = [], []

    def step(self, q, k, v):
        self.all_k.append(k)
        self.all_v.append(v)
        keys, values = (torch.stack(seq[-self.window:], dim=2) for seq in (self.all_k, self.all_v))
        self.keys[:, :, : keys.shape[2]], self.values[:, :, : values.shape[2]] = keys, values
        return F.scaled_dot_product_attention(q[:, :, None], keys, values)[:, :, 0]


window_right = [
    RingCache,
    ring_variant(slot=lambda t, w: (t + 1) % w, mask="written"),  # another ring, masked by what was written
    RollCache,  # time order kept by copying the rolled slots back in place
    CatThenRing,
    LazyFloat64Ring,
    lambda w, b, h, dk, dv: RingEmpty(w, b, h, dk, dv, prefix=True),  # torch.empty, unwritten slots never read
]
window_wrong = [
    (ring_variant(mask=False), "slots that hold no token yet"),
    (ring_variant(scale=False), "1/sqrt(d_k)"),
    (ring_variant(attend_first=True), "but not itself"),
    (ring_variant(slot=lambda t, w: min(t, w - 1)), "overwrite the oldest entry"),
    (ring_variant(slot=lambda t, w: 0), "advance your count"),
    (ring_variant(slot=lambda t, w: (t + 1) % w), "slots you wrote"),  # ring from slot 1, mask from slot 0
    (lambda w, b, h, dk, dv: ShiftCache(w, b, h, dk, dv, keep=0), "stop growing"),
    (lambda w, b, h, dk, dv: RingCache(w + 1, b, h, dk, dv), "counts the token itself"),
    (lambda w, b, h, dk, dv: RingCache(max(w - 1, 1), b, h, dk, dv), "the token itself and the"),
    (lambda w, b, h, dk, dv: RingCache(4, b, h, dk, dv), "not a fixed number"),
    (RingScaledInPlace, "in place"),
    (ring_variant(wrap_count=True), "wrap around to 0"),
    (ring_variant(mask="up to the slot"), "until the buffer wraps around"),
    (RingSoftmaxOverHeads, "sum to 1 over the slots"),
    (RingPlusOwnKey, "plus the new key"),
    (RingDividedByDk, "divided the scores by d_k"),
    (RingCausalSdpa, "is_causal=True"),
    (RingOwnValue, "token's own value v"),
    (lambda w, b, h, dk, dv: RingEmpty(w, b, h, dk, dv), "torch.empty"),
    (lambda w, b, h, dk, dv: ShiftCache(w, b, h, dk, dv), "a new tensor"),  # cat, then keep the last window
    (DequeCache, "a new tensor"),
    (lambda w, b, h, dk, dv: RollCache(w, b, h, dk, dv, in_place=False), "a new tensor"),
    (HiddenHistory, "copies kept elsewhere"),
]


@pytest.mark.parametrize("right", window_right)
def test_window_cache_right_answers(right):
    result = check_window_cache(right)
    assert result.passed, result.message


@pytest.mark.parametrize("wrong,words", window_wrong)
def test_window_cache_mistakes(wrong, words):
    _fails_with(check_window_cache(wrong), words)


def test_window_cache_stub_and_reference():
    assert check_window_cache(_stub).not_implemented
    q, k, v = (torch.randn(2, 3, 9, 4) for _ in range(3))
    from course_utils.sliding_window import sliding_window_mask

    scores = (q @ k.transpose(-2, -1) / 2).masked_fill(~sliding_window_mask(9, 3), float("-inf"))
    torch.testing.assert_close(window_reference(q, k, v, 3), scores.softmax(-1) @ v)
