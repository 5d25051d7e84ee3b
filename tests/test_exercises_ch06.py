"""Tests for the Chapter 6 checkers: pass the reference, fail known mistakes with the right hint, stubs."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from course_utils.data import EOS_ID, PAD_ID, SOS_ID, make_batch
from course_utils.decoding import greedy_decode
from course_utils.exercises.ch06_training import (
    _STEP_BATCHES,
    _STEP_CLIP,
    _step_setup,
    check_greedy_decode,
    check_learning_rate_experiment,
    check_shift_right,
    check_train_loop,
    check_train_step,
)
from course_utils.masks import padding_mask
from course_utils.training import warmup_cosine_scheduler

# ----- 6.1 teacher-forcing shift ---------------------------------------------------------------

def shift_ok(tgt_out):
    sos = torch.full((tgt_out.shape[0], 1), SOS_ID)
    tgt_in = torch.cat([sos, tgt_out[:, :-1]], dim=1)
    return tgt_in.masked_fill(tgt_in == EOS_ID, PAD_ID)


def shift_keeps_eos(tgt_out):
    return torch.cat([torch.full((tgt_out.shape[0], 1), SOS_ID), tgt_out[:, :-1]], dim=1)


def shift_left(tgt_out):
    return torch.cat([tgt_out[:, 1:], torch.full((tgt_out.shape[0], 1), PAD_ID)], dim=1)


def shift_pad_first(tgt_out):
    return shift_ok(tgt_out).index_fill(1, torch.tensor([0]), PAD_ID)


def shift_no_drop(tgt_out):
    return torch.cat([torch.full((tgt_out.shape[0], 1), SOS_ID), tgt_out], dim=1)


@pytest.mark.parametrize(("fn", "hint"), [
    (shift_keeps_eos, "EOS token is still"), (shift_left, "Off by one"), (shift_pad_first, "must be SOS"),
    (shift_no_drop, "Drop the last column"), (lambda t: t, "unchanged"),
])
def test_shift_checker_names_mistake(fn, hint):
    result = check_shift_right(fn)
    assert not result.passed and hint in result.message


def test_shift_checker_passes_reference():
    assert check_shift_right(shift_ok).passed


def test_checker_reports_crash_without_traceback():
    def broken(tgt_out):
        raise IndexError("oops")
    result = check_shift_right(broken)
    assert not result.passed and "IndexError" in result.message


# ----- 6.2 one training step -------------------------------------------------------------------

def _loss(model, batch, ignore=True, targets=2):
    src, tgt_in, tgt_out = batch
    logits = model(src, tgt_in)
    t = batch[targets]
    kwargs = {"ignore_index": PAD_ID} if ignore else {}
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), t.reshape(-1), **kwargs)


def step_ok(model, optimizer, scheduler, batch, clip):
    optimizer.zero_grad()
    loss = _loss(model, batch)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    scheduler.step()
    return loss.item()


def step_by_hand_loss(model, optimizer, scheduler, batch, clip):
    """A correct step whose loss is computed with log_softmax + gather + mask (rounds differently)."""
    src, tgt_in, tgt_out = batch
    optimizer.zero_grad(set_to_none=False)
    logp = torch.log_softmax(model(src, tgt_in), dim=-1)
    picked = logp.gather(-1, tgt_out.unsqueeze(-1)).squeeze(-1)
    real = tgt_out != PAD_ID
    loss = -(picked * real).sum() / real.sum()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    scheduler.step()
    return loss


def step_pad(model, optimizer, scheduler, batch, clip):
    optimizer.zero_grad()
    loss = _loss(model, batch, ignore=False)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    scheduler.step()
    return loss.item()


def step_clip_after(model, optimizer, scheduler, batch, clip):
    optimizer.zero_grad()
    loss = _loss(model, batch)
    loss.backward()
    optimizer.step()
    nn.utils.clip_grad_norm_(model.parameters(), clip)
    scheduler.step()
    return loss.item()


def step_no_zero_grad(model, optimizer, scheduler, batch, clip):
    loss = _loss(model, batch)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    scheduler.step()
    return loss.item()


def step_no_schedule(model, optimizer, scheduler, batch, clip):
    optimizer.zero_grad()
    loss = _loss(model, batch)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    return loss.item()


def step_schedule_first(model, optimizer, scheduler, batch, clip):
    optimizer.zero_grad()
    loss = _loss(model, batch)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), clip)
    scheduler.step()
    optimizer.step()
    return loss.item()


def step_target_in(model, optimizer, scheduler, batch, clip):
    optimizer.zero_grad()
    loss = _loss(model, batch, targets=1)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    scheduler.step()
    return loss.item()


def step_returns_nothing(model, optimizer, scheduler, batch, clip):
    step_ok(model, optimizer, scheduler, batch, clip)


def step_no_update(model, optimizer, scheduler, batch, clip):
    optimizer.zero_grad()
    _loss(model, batch).backward()
    return 0.0


@pytest.mark.parametrize(("fn", "hint"), [
    (step_pad, "counts the PAD"), (step_clip_after, "not clipped before"), (step_no_zero_grad, "zero_grad"),
    (step_no_schedule, "scheduler.step()"), (step_schedule_first, "one step ahead"),
    (step_target_in, "tgt_in"), (step_returns_nothing, "return the loss"), (step_no_update, "did not change"),
])
def test_train_step_checker_names_mistake(fn, hint):
    result = check_train_step(fn)
    assert not result.passed and hint in result.message, result.message


@pytest.mark.parametrize("fn", [step_ok, step_by_hand_loss])
def test_train_step_checker_passes_correct_steps(fn):
    assert check_train_step(fn).passed


def test_every_checked_step_is_clipped():
    """The clipping mistake is only detectable if the gradient norm exceeds the clip at every step."""
    model, optimizer, scheduler = _step_setup()
    for strings in _STEP_BATCHES:
        optimizer.zero_grad()
        _loss(model, make_batch(strings)).backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), _STEP_CLIP)
        assert norm > 2 * _STEP_CLIP
        optimizer.step()
        scheduler.step()


def test_train_step_stub_is_not_implemented():
    def stub(model, optimizer, scheduler, batch, clip):
        raise NotImplementedError
    result = check_train_step(stub)
    assert not result.passed and result.not_implemented


# ----- 6.3 the training loop -------------------------------------------------------------------

def loop_ok(model, batch_fn, steps, lr, warmup, clip, train_step):
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.98))
    scheduler = warmup_cosine_scheduler(optimizer, warmup, steps)
    return [float(train_step(model, optimizer, scheduler, batch_fn(step), clip)) for step in range(1, steps + 1)]


def loop_off_by_one(model, batch_fn, steps, lr, warmup, clip, train_step):
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    scheduler = warmup_cosine_scheduler(optimizer, warmup, steps)
    return [train_step(model, optimizer, scheduler, batch_fn(step), clip) for step in range(1, steps)]


def loop_new_optimizer(model, batch_fn, steps, lr, warmup, clip, train_step):
    losses = []
    for step in range(steps):
        optimizer = torch.optim.Adam(model.parameters(), lr=lr)
        scheduler = warmup_cosine_scheduler(optimizer, warmup, steps)
        losses.append(train_step(model, optimizer, scheduler, batch_fn(step), clip))
    return losses


def loop_constant_lr(model, batch_fn, steps, lr, warmup, clip, train_step):
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0)
    return [train_step(model, optimizer, scheduler, batch_fn(step), clip) for step in range(steps)]


def loop_double_schedule(model, batch_fn, steps, lr, warmup, clip, train_step):
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    scheduler = warmup_cosine_scheduler(optimizer, warmup, steps)
    losses = []
    for step in range(steps):
        losses.append(train_step(model, optimizer, scheduler, batch_fn(step), clip))
        scheduler.step()
    return losses


def loop_tensor_losses(model, batch_fn, steps, lr, warmup, clip, train_step):
    return [torch.tensor(x) for x in loop_ok(model, batch_fn, steps, lr, warmup, clip, train_step)]


def loop_some_params(model, batch_fn, steps, lr, warmup, clip, train_step):
    optimizer = torch.optim.Adam(model.decoder_layers.parameters(), lr=lr)
    scheduler = warmup_cosine_scheduler(optimizer, warmup, steps)
    return [train_step(model, optimizer, scheduler, batch_fn(step), clip) for step in range(steps)]


def loop_half_lr(model, batch_fn, steps, lr, warmup, clip, train_step):
    optimizer = torch.optim.Adam(model.parameters(), lr=lr / 2)  # the schedule's shape, the wrong peak
    scheduler = warmup_cosine_scheduler(optimizer, warmup, steps)
    return [train_step(model, optimizer, scheduler, batch_fn(step), clip) for step in range(steps)]


@pytest.mark.parametrize(("fn", "hint"), [
    (loop_off_by_one, "called 39 times"), (loop_new_optimizer, "new optimizer"), (loop_constant_lr, "stayed at"),
    (loop_double_schedule, "two schedule steps"), (loop_tensor_losses, "tensors"),
    (loop_some_params, "all of the model's parameters"), (loop_half_lr, "do not follow"),
])
def test_train_loop_checker_names_mistake(fn, hint):
    result = check_train_loop(fn)
    assert not result.passed and hint in result.message, result.message


def test_train_loop_checker_passes_reference():
    result = check_train_loop(loop_ok)
    assert result.passed and "loss fell" in result.message


def test_train_loop_stub_is_not_implemented():
    def stub(model, batch_fn, steps, lr, warmup, clip, train_step):
        raise NotImplementedError
    assert check_train_loop(stub).not_implemented


# ----- 6.4 greedy decoding, 6.5 with a KV cache --------------------------------------------------

def greedy_ok(model, src, max_len):
    src_mask = padding_mask(src, PAD_ID)
    memory = model.encode(src, src_mask)
    ys = torch.full((src.shape[0], 1), SOS_ID, dtype=torch.long)
    finished = torch.zeros(src.shape[0], dtype=torch.bool)
    with torch.no_grad():
        for _ in range(max_len):
            next_id = model.decode(ys, memory, src_mask)[:, -1].argmax(-1).masked_fill(finished, PAD_ID)
            ys = torch.cat([ys, next_id[:, None]], dim=1)
            finished |= next_id == EOS_ID
            if finished.all():
                break
    return ys[:, 1:]


def greedy_full_length(model, src, max_len):
    """Correct but never stops early: PAD columns to max_len are accepted."""
    out = greedy_ok(model, src, max_len)
    return torch.cat([out, torch.full((out.shape[0], max_len - out.shape[1]), PAD_ID)], dim=1)


def greedy_forward(model, src, max_len):
    """Correct, recomputing encoder and decoder with model(src, ys) at every step."""
    ys = torch.full((src.shape[0], 1), SOS_ID, dtype=torch.long)
    finished = torch.zeros(src.shape[0], dtype=torch.bool)
    with torch.no_grad():
        for _ in range(max_len):
            next_id = model(src, ys)[:, -1].argmax(-1).masked_fill(finished, PAD_ID)
            ys = torch.cat([ys, next_id[:, None]], dim=1)
            finished |= next_id == EOS_ID
            if finished.all():
                break
    return ys[:, 1:]


def greedy_with_sos(model, src, max_len):
    out = greedy_ok(model, src, max_len)
    return torch.cat([torch.full((out.shape[0], 1), SOS_ID), out], dim=1)


def greedy_no_pad(model, src, max_len):
    src_mask = padding_mask(src, PAD_ID)
    memory = model.encode(src, src_mask)
    ys = torch.full((src.shape[0], 1), SOS_ID, dtype=torch.long)
    with torch.no_grad():
        for _ in range(max_len):
            next_id = model.decode(ys, memory, src_mask)[:, -1].argmax(-1)
            ys = torch.cat([ys, next_id[:, None]], dim=1)
            if (ys == EOS_ID).any(1).all():
                break
    return ys[:, 1:]


def greedy_stop_any(model, src, max_len):
    src_mask = padding_mask(src, PAD_ID)
    memory = model.encode(src, src_mask)
    ys = torch.full((src.shape[0], 1), SOS_ID, dtype=torch.long)
    with torch.no_grad():
        for _ in range(max_len):
            next_id = model.decode(ys, memory, src_mask)[:, -1].argmax(-1)
            ys = torch.cat([ys, next_id[:, None]], dim=1)
            if (next_id == EOS_ID).any():
                break
    return ys[:, 1:]


def greedy_first_position(model, src, max_len):
    src_mask = padding_mask(src, PAD_ID)
    memory = model.encode(src, src_mask)
    ys = torch.full((src.shape[0], 1), SOS_ID, dtype=torch.long)
    finished = torch.zeros(src.shape[0], dtype=torch.bool)
    with torch.no_grad():
        for _ in range(max_len):
            next_id = model.decode(ys, memory, src_mask)[:, 0].argmax(-1).masked_fill(finished, PAD_ID)
            ys = torch.cat([ys, next_id[:, None]], dim=1)
            finished |= next_id == EOS_ID
            if finished.all():
                break
    return ys[:, 1:]


def greedy_no_src_mask(model, src, max_len):
    memory = model.encode(src)
    ys = torch.full((src.shape[0], 1), SOS_ID, dtype=torch.long)
    finished = torch.zeros(src.shape[0], dtype=torch.bool)
    with torch.no_grad():
        for _ in range(max_len):
            next_id = model.decode(ys, memory)[:, -1].argmax(-1).masked_fill(finished, PAD_ID)
            ys = torch.cat([ys, next_id[:, None]], dim=1)
            finished |= next_id == EOS_ID
            if finished.all():
                break
    return ys[:, 1:]


@pytest.mark.parametrize(("fn", "hint"), [
    (greedy_with_sos, "starts with SOS"), (greedy_no_pad, "put PAD"), (greedy_stop_any, "first row finished"),
    (greedy_first_position, "first position"), (lambda m, s, n: greedy_ok(m, s, n).float(), "torch.long"),
])
def test_greedy_checker_names_mistake(fn, hint):
    result = check_greedy_decode(fn)
    assert not result.passed and hint in result.message, result.message


def test_greedy_no_src_mask_is_caught():
    """Without the source mask the shipped model still reverses; if its tokens change, the hint says why."""
    result = check_greedy_decode(greedy_no_src_mask)
    assert result.passed or "padding" in result.message


@pytest.mark.parametrize("fn", [greedy_ok, greedy_full_length, greedy_forward,
                                lambda m, s, n: greedy_decode(m, s, n, use_cache=True)])
def test_greedy_checker_passes_correct_versions(fn):
    assert check_greedy_decode(fn).passed


def cached_ok(model, src, max_len):
    src_mask = padding_mask(src, PAD_ID)
    memory = model.encode(src, src_mask)
    cache = model.new_cache()
    ys = torch.full((src.shape[0], 1), SOS_ID, dtype=torch.long)
    finished = torch.zeros(src.shape[0], dtype=torch.bool)
    with torch.no_grad():
        for _ in range(max_len):
            logits = model.decode(ys[:, -1:], memory, src_mask, cache=cache)  # (B, 1, V)
            next_id = logits[:, -1].argmax(-1).masked_fill(finished, PAD_ID)
            ys = torch.cat([ys, next_id[:, None]], dim=1)
            finished |= next_id == EOS_ID
            if finished.all():
                break
    return ys[:, 1:]


def cached_new_cache_each_step(model, src, max_len):
    src_mask = padding_mask(src, PAD_ID)
    memory = model.encode(src, src_mask)
    ys = torch.full((src.shape[0], 1), SOS_ID, dtype=torch.long)
    finished = torch.zeros(src.shape[0], dtype=torch.bool)
    with torch.no_grad():
        for _ in range(max_len):
            logits = model.decode(ys, memory, src_mask, cache=model.new_cache())
            next_id = logits[:, -1].argmax(-1).masked_fill(finished, PAD_ID)
            ys = torch.cat([ys, next_id[:, None]], dim=1)
            finished |= next_id == EOS_ID
            if finished.all():
                break
    return ys[:, 1:]


def cached_feeds_prefix(model, src, max_len):
    """Feeds the whole prefix into the cache every step: positions and keys pile up, tokens go wrong."""
    src_mask = padding_mask(src, PAD_ID)
    memory = model.encode(src, src_mask)
    cache = model.new_cache()
    ys = torch.full((src.shape[0], 1), SOS_ID, dtype=torch.long)
    finished = torch.zeros(src.shape[0], dtype=torch.bool)
    with torch.no_grad():
        for _ in range(max_len):
            if cache.length + ys.shape[1] > model.config.max_len:
                break
            next_id = model.decode(ys, memory, src_mask, cache=cache)[:, -1].argmax(-1).masked_fill(finished, PAD_ID)
            ys = torch.cat([ys, next_id[:, None]], dim=1)
            finished |= next_id == EOS_ID
            if finished.all():
                break
    return ys[:, 1:]


@pytest.mark.parametrize("checker", [check_greedy_decode])
def test_decoding_stubs_are_not_implemented(checker):
    def stub(model, src, max_len):
        raise NotImplementedError
    assert checker(stub).not_implemented


# ----- 6.5 experiment: double the learning rate ---------------------------------------------------

def test_lr_experiment_accepts_alternatives():
    import dataclasses

    result = check_learning_rate_experiment(lambda c: dataclasses.replace(c, lr=2 * c.lr), "lower")
    assert result.passed and "between 0.4 and 0.85" in result.message and "matches" in result.message

    def copy_and_set(config):
        new = copy.deepcopy(config)
        new.lr = config.lr * 2
        return new

    result = check_learning_rate_experiment(copy_and_set, lambda: "higher")
    assert result.passed and "You predicted 'higher'" in result.message


@pytest.mark.parametrize(("fn", "prediction", "hint"), [
    (lambda c: __import__("dataclasses").replace(c, lr=2 * c.lr, warmup=0), "lower", "also changed warmup"),
    (lambda c: __import__("dataclasses").replace(c, lr=c.lr**2), "lower", "squared"),
    (lambda c: c, "lower", "unchanged"),
    (lambda c: {"lr": 2 * c.lr}, "lower", "return a TrainConfig"),
    (lambda c: __import__("dataclasses").replace(c, lr=2 * c.lr, steps=300), "lower", "also changed steps"),
    (lambda c: c, "faster", "not one of the choices"),
])
def test_lr_experiment_names_mistake(fn, prediction, hint):
    result = check_learning_rate_experiment(fn, prediction)
    assert not result.passed and hint in result.message, result.message


def test_lr_experiment_needs_the_prediction_first():
    def stub(config):
        raise NotImplementedError

    assert check_learning_rate_experiment(stub, "lower").not_implemented
    assert check_learning_rate_experiment(lambda c: c, "").not_implemented
