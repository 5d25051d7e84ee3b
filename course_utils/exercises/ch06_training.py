"""Checkers for the exercises of Chapter 6 (training on string reversal): the teacher-forcing
shift, one training step, the training loop, greedy decoding, and an experiment: double the learning rate.

Every check runs in seconds: the training checks use a tiny model (d_model 16, one layer per
stack) and the decoding checks use the shipped checkpoint, so nothing is retrained per attempt.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..data import EOS_ID, PAD_ID, SOS_ID, VOCAB_SIZE, make_batch, random_batch
from ..decoding import greedy_decode
from ..masks import padding_mask
from ..model import Transformer, TransformerConfig
from ..runs.reversal import load_reversal_model
from ..schedules import warmup_cosine_lr
from ..training import TrainConfig, warmup_cosine_scheduler
from .core import CheckFailed, call_student, checker, close, expect_close, expect_tensor, fail_on_mistake, spell
from .experiment import Expected

_STRINGS = (["abc", "hello", "q"], ["xyz"], ["reverse", "me", "please", "now"])


@checker("6.1", "teacher-forcing shift")
def check_shift_right(fn: Callable[[Tensor], Tensor]) -> None:
    """Check ``fn(tgt_out)`` builds the decoder input: SOS, then tgt_out shifted right, EOS -> PAD."""
    for strings in _STRINGS:
        _, want, tgt_out = make_batch(strings)
        got = call_student(fn, tgt_out.clone(), what="your shift_right")
        got = expect_tensor(got, "shift_right(tgt_out)")
        if got.shape != want.shape:
            raise CheckFailed(
                f"shift_right(tgt_out) should keep the shape {tuple(want.shape)} of tgt_out, got {tuple(got.shape)}. "
                "Drop the last column after putting SOS in front."
            )
        B = tgt_out.shape[0]
        sos = torch.full((B, 1), SOS_ID)
        keep_eos = torch.cat([sos, tgt_out[:, :-1]], dim=1)
        mistakes = {
            "The EOS token is still in the decoder input: replace it by PAD (the decoder never reads EOS).":
                keep_eos,
            "Off by one: you shifted left. The decoder input starts with SOS and lags the target by one step.":
                torch.cat([tgt_out[:, 1:], torch.full((B, 1), PAD_ID)], dim=1),
            "The first input token must be SOS (id 1), not PAD.":
                torch.cat([torch.full((B, 1), PAD_ID), tgt_out[:, :-1]], dim=1).masked_fill(keep_eos == EOS_ID, PAD_ID),
            "You returned tgt_out unchanged: the input at step t must be the target of step t - 1.": tgt_out,
            "Drop the last column of tgt_out, not the first: tgt_in = [SOS] + tgt_out[:, :-1].":
                (lambda t: t.masked_fill(t == EOS_ID, PAD_ID))(torch.cat([sos, tgt_out[:, 1:]], dim=1)),
            "EOS became PAD but SOS is missing: put SOS (id 1) in the first column, then tgt_out[:, :-1].":
                tgt_out.masked_fill(tgt_out == EOS_ID, PAD_ID),
        }
        expect_close(got.long(), want, "shift_right(tgt_out)", mistakes=mistakes, atol=0, rtol=0)


# ----- 6.2 one training step -------------------------------------------------------------------

def _tiny_config() -> TransformerConfig:
    return TransformerConfig(
        src_vocab_size=VOCAB_SIZE, tgt_vocab_size=VOCAB_SIZE, d_model=16, n_heads=2, d_ff=32,
        n_encoder_layers=1, n_decoder_layers=1, dropout=0.0, norm_first=True,
    )


def _tiny_model(seed: int = 0) -> Transformer:
    torch.manual_seed(seed)
    return Transformer(_tiny_config())


_STEP_BATCHES = (["hello", "abc", "transformer"], ["xyz", "reverse", "me"], ["attention", "q", "padding"])
_STEP_CLIP = 0.05  # small enough that every step of the check is clipped


def _step_setup() -> tuple[Transformer, torch.optim.Optimizer, torch.optim.lr_scheduler.LambdaLR]:
    # SGD with momentum rather than Adam: a parameter moves in proportion to its gradient, so tiny
    # rounding differences between two correct losses cannot flip the sign of an Adam update
    model = _tiny_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    return model, optimizer, warmup_cosine_scheduler(optimizer, warmup=2, total=6)


def _flat_params(model: nn.Module) -> Tensor:
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def reference_train_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    batch: Sequence[Tensor],
    clip: float,
    mistake: str | None = None,
) -> float:
    """One teacher-forced training step; ``mistake`` imitates a typical wrong version (for the hints)."""
    src, tgt_in, tgt_out = batch
    if mistake != "no_zero_grad":
        optimizer.zero_grad()
    logits = model(src, tgt_in)  # (B, T, V)
    targets = tgt_in if mistake == "target_in" else tgt_out
    flat_logits, flat_targets = logits.reshape(-1, logits.shape[-1]), targets.reshape(-1)  # (B*T, V), (B*T,)
    if mistake == "pad":
        loss = F.cross_entropy(flat_logits, flat_targets)
    else:
        loss = F.cross_entropy(flat_logits, flat_targets, ignore_index=PAD_ID)
    loss.backward()
    if mistake == "clip_value":
        nn.utils.clip_grad_value_(model.parameters(), clip)
    elif mistake != "no_clip":
        nn.utils.clip_grad_norm_(model.parameters(), clip)
    if mistake == "schedule_first":
        scheduler.step()
    optimizer.step()
    if mistake not in ("no_schedule", "schedule_first"):
        scheduler.step()
    return loss.item()


_STEP_MISTAKES = {
    "pad": "The loss counts the PAD positions: pass ignore_index=PAD_ID to F.cross_entropy (or mask them out).",
    "target_in": "The loss compares the logits with tgt_in; the model must predict tgt_out (the next token).",
    "no_clip": "The gradients were not clipped before the update. Call "
               "nn.utils.clip_grad_norm_(model.parameters(), clip) after backward() and before optimizer.step() "
               "(clipping after the step changes nothing).",
    "clip_value": "You clipped each gradient entry (clip_grad_value_); clip the total gradient norm "
                  "(clip_grad_norm_) instead.",
    "no_zero_grad": "The gradients of the previous step were added to this one: call optimizer.zero_grad() "
                    "before backward().",
    "no_schedule": "The learning rate never changed: call scheduler.step() after optimizer.step().",
    "schedule_first": "The schedule ran one step ahead: call scheduler.step() after optimizer.step(), not before.",
}


def _trajectory(mistake: str | None) -> tuple[list[Tensor], list[float]]:
    model, optimizer, scheduler = _step_setup()
    params, losses = [], []
    with warnings.catch_warnings():  # PyTorch warns when the scheduler steps before the optimizer
        warnings.simplefilter("ignore", UserWarning)
        for strings in _STEP_BATCHES:
            losses.append(reference_train_step(model, optimizer, scheduler, make_batch(strings), _STEP_CLIP, mistake))
            params.append(_flat_params(model))
    return params, losses


@checker("6.2", "one training step")
def check_train_step(fn: Callable[..., float]) -> None:
    """Check ``fn(model, optimizer, scheduler, batch, clip)`` does one full step; run three steps from a fixed start.

    After every step the parameters must equal the reference's; if they equal a known wrong
    version's instead, the hint names that mistake. The returned loss must be the batch's loss.
    """
    want_params, want_losses = _trajectory(None)
    model, optimizer, scheduler = _step_setup()
    for i, strings in enumerate(_STEP_BATCHES):
        batch = make_batch(strings)
        before = _flat_params(model)
        got_loss = call_student(
            fn, model, optimizer, scheduler, batch, _STEP_CLIP, what="your train_step", may_modify=True
        )
        got = _flat_params(model)
        step = f"after step {i + 1}"
        if close(got, before, atol=0, rtol=0):
            raise CheckFailed(f"the parameters did not change {step}: call optimizer.step() after backward().")
        if not close(got, want_params[i]):
            def replayed(g: Tensor, name: str, i: int = i) -> bool:  # a mistake is replayed only when needed
                return close(g, _trajectory(name)[0][i])

            fail_on_mistake(got, {hint: name for name, hint in _STEP_MISTAKES.items()}, replayed,
                            f"the parameters {step} are not right. ")
            expect_close(got, want_params[i], f"the parameters {step}")
        if isinstance(got_loss, Tensor):
            if got_loss.numel() != 1:
                raise CheckFailed(
                    f"train_step should return the loss as one number, got shape {tuple(got_loss.shape)}."
                )
            got_loss = got_loss.item()
        if not isinstance(got_loss, (int, float)):
            raise CheckFailed(f"train_step should return the loss (a float), got {type(got_loss).__name__}.")
        if not math.isclose(got_loss, want_losses[i], rel_tol=1e-4, abs_tol=1e-6):
            raise CheckFailed(
                f"the parameters are right but the returned loss {got_loss:.4g} {step} is not the batch's loss "
                f"{want_losses[i]:.4g}: return loss.item() of this step's loss."
            )


# ----- 6.3 the training loop ---------------------------------------------------------------------

_LOOP_STEPS, _LOOP_LR, _LOOP_WARMUP, _LOOP_CLIP = 40, 2e-2, 4, 1.0


@checker("6.3", "the training loop")
def check_train_loop(fn: Callable[..., Sequence[float]]) -> str:
    """Check ``fn(model, batch_fn, steps, lr, warmup, clip, train_step)`` trains a tiny model for ``steps`` steps.

    The checker passes its own correct ``train_step`` and records every call: the loop must
    call it once per step with one optimiser and one scheduler for the whole run, follow the
    warm-up + cosine schedule, return one float loss per step, and the loss must fall.
    """
    model = _tiny_model(1)
    gen = torch.Generator().manual_seed(0)
    batch_steps: list[object] = []
    optimizers: list[object] = []
    calls: list[tuple[int, int, float]] = []  # (id(optimizer), id(scheduler), learning rate) per call

    def batch_fn(step: object) -> tuple[Tensor, Tensor, Tensor]:
        batch_steps.append(step)
        return random_batch(16, 3, 4, gen)

    def train_step(
        model_: nn.Module, optimizer: object, scheduler: object, batch: Sequence[Tensor], clip: float
    ) -> float:
        if model_ is not model:
            raise CheckFailed("train_step must receive the model being trained as its first argument.")
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise CheckFailed(f"train_step's second argument must be the optimizer, got {type(optimizer).__name__}.")
        if not isinstance(scheduler, torch.optim.lr_scheduler.LRScheduler):
            raise CheckFailed(
                f"train_step's third argument must be the scheduler (warmup_cosine_scheduler(optimizer, warmup, "
                f"steps)), got {type(scheduler).__name__}."
            )
        trained = {id(p) for group in optimizer.param_groups for p in group["params"]}
        if any(id(p) not in trained for p in model.parameters()):
            raise CheckFailed("the optimizer does not hold all of the model's parameters: use model.parameters().")
        optimizers.append(optimizer)
        calls.append((id(optimizer), id(scheduler), optimizer.param_groups[0]["lr"]))
        return reference_train_step(model_, optimizer, scheduler, batch, clip)

    losses = call_student(
        fn, model, batch_fn, _LOOP_STEPS, _LOOP_LR, _LOOP_WARMUP, _LOOP_CLIP, train_step, what="your train",
        may_modify=True,
    )
    if len(calls) != _LOOP_STEPS:
        raise CheckFailed(f"train_step was called {len(calls)} times for steps={_LOOP_STEPS}; call it once per step.")
    if len(batch_steps) != _LOOP_STEPS:
        raise CheckFailed(f"batch_fn was called {len(batch_steps)} times for {_LOOP_STEPS} steps; one batch per step.")
    if len({c[0] for c in calls}) > 1:
        raise CheckFailed(
            "a new optimizer was made during the loop: create it once, before the loop (Adam keeps running "
            "averages of the gradients that a new optimizer forgets)."
        )
    if len({c[1] for c in calls}) > 1:
        raise CheckFailed("a new scheduler was made during the loop: create it once, before the loop.")
    lrs = [c[2] for c in calls]
    want_lrs = [warmup_cosine_lr(s, _LOOP_LR, _LOOP_WARMUP, _LOOP_STEPS) for s in range(1, _LOOP_STEPS + 1)]
    if not all(math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12) for a, b in zip(lrs, want_lrs, strict=True)):
        if max(lrs) - min(lrs) < 1e-12:
            raise CheckFailed(
                f"the learning rate stayed at {lrs[0]:.3g} for the whole run: build the optimizer with lr and "
                "wrap it in warmup_cosine_scheduler(optimizer, warmup, steps)."
            )
        if math.isclose(max(lrs), _LOOP_LR * _LOOP_LR, rel_tol=1e-6):
            raise CheckFailed("the peak learning rate is lr squared: the scheduler multiplies the optimizer's lr, "
                              "so give the optimizer lr and the scheduler only warmup and steps.")
        doubled = [warmup_cosine_lr(2 * s - 1, _LOOP_LR, _LOOP_WARMUP, _LOOP_STEPS) for s in range(1, 6)]
        if all(math.isclose(a, b, rel_tol=1e-6) for a, b in zip(lrs[:5], doubled, strict=True)):
            raise CheckFailed("the learning rate moved two schedule steps per training step: train_step already "
                              "calls scheduler.step(), so the loop must not call it again.")
        raise CheckFailed(
            f"the learning rates do not follow warm-up {_LOOP_WARMUP} + cosine over {_LOOP_STEPS} steps with peak "
            f"{_LOOP_LR}: got {lrs[0]:.3g}, {lrs[1]:.3g}, ... for steps 1, 2, ... (expected {want_lrs[0]:.3g}, "
            f"{want_lrs[1]:.3g}, ...). Use warmup_cosine_scheduler(optimizer, warmup, steps)."
        )
    if batch_steps != list(range(1, _LOOP_STEPS + 1)):
        shown = ", ".join(repr(s) for s in batch_steps[:3])
        hint = ("they count from 0: use range(1, steps + 1)" if batch_steps == list(range(_LOOP_STEPS))
                else "pass the step number")
        raise CheckFailed(
            f"batch_fn received the steps {shown}, ...; it should receive 1, 2, ..., {_LOOP_STEPS}: {hint}."
        )
    optimizer = optimizers[0]
    if type(optimizer) is not torch.optim.Adam:
        raise CheckFailed(f"the optimizer is {type(optimizer).__name__}; the exercise asks for "
                          "torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.98)).")
    betas = tuple(optimizer.param_groups[0]["betas"])
    if betas != (0.9, 0.98):
        raise CheckFailed(f"Adam's betas are {betas}; the paper uses betas=(0.9, 0.98): with PyTorch's default "
                          "beta2 = 0.999 the squared-gradient average remembers ten times as many steps.")
    if isinstance(losses, Tensor) or not isinstance(losses, Sequence):
        raise CheckFailed(f"train should return a list with one loss per step, got {type(losses).__name__}.")
    if len(losses) != _LOOP_STEPS:
        raise CheckFailed(f"train returned {len(losses)} losses for {_LOOP_STEPS} steps; keep one per step.")
    for loss in losses:
        if isinstance(loss, Tensor):
            raise CheckFailed(
                "the losses are tensors: store float(loss) (train_step returns loss.item()); a list of tensors "
                "that still require gradients keeps every step's graph in memory."
            )
        if not isinstance(loss, (int, float)):
            raise CheckFailed(f"each loss should be a float, got {type(loss).__name__}.")
    first, last = sum(losses[:5]) / 5, sum(losses[-10:]) / 10
    if not last < 0.85 * first:
        raise CheckFailed(f"the loss did not fall: mean of the first 5 steps {first:.3f}, of the last 10 {last:.3f}.")
    return f"The loss fell by more than 15 % in {_LOOP_STEPS} steps."


# ----- 6.4 greedy decoding, 6.5 with a KV cache ----------------------------------------------------

_DECODE_CASES = (
    (["hello", "abc", "transformer", "reversal", "qwerty"], 12),
    (["attention"], 11),
    (["a", "zz", "abcdefghij"], 12),
    (["hello", "abcdefgh"], 4),  # max_len too short: no EOS, exactly max_len tokens
)


def _pad_to(ids: Tensor, length: int) -> Tensor:
    if ids.shape[1] >= length:
        return ids
    return torch.cat([ids, torch.full((ids.shape[0], length - ids.shape[1]), PAD_ID, dtype=ids.dtype)], dim=1)


class _DecodeSpy:
    """Wraps the shipped model; records every decode call (new tokens fed, cache used)."""

    def __init__(self, model: Transformer):
        self._model = model
        self.decode_calls: list[tuple[int, object]] = []  # (tokens fed, cache object or None)
        self.caches: list[object] = []

    def decode(self, tgt: Tensor, *args: Any, **kwargs: Any) -> Tensor | tuple[Tensor, dict[str, list[Tensor]]]:
        cache = kwargs.get("cache", args[3] if len(args) > 3 else None)
        self.decode_calls.append((int(tgt.shape[1]) if isinstance(tgt, Tensor) and tgt.dim() == 2 else -1, cache))
        return self._model.decode(tgt, *args, **kwargs)

    def new_cache(self) -> object:
        cache = self._model.new_cache()
        self.caches.append(cache)
        return cache

    def __call__(self, *args: object, **kwargs: object) -> object:
        self.decode_calls.append((-2, None))  # a full forward pass (encoder and decoder again)
        return self._model(*args, **kwargs)

    def __getattr__(self, name: str) -> object:
        return getattr(self._model, name)


@torch.no_grad()
def _greedy_variant(
    model: Transformer, src: Tensor, max_len: int, position: int = -1, pad_after_eos: bool = True,
    stop: str = "all", use_src_mask: bool = True,
) -> Tensor:
    """Greedy decoding with one of the usual mistakes switched on; PAD-padded to max_len."""
    src_mask = padding_mask(src, PAD_ID)  # (B, 1, 1, T_src)
    memory = model.encode(src, src_mask)  # (B, T_src, d_model)
    B = src.shape[0]
    ys = torch.full((B, 1), SOS_ID, dtype=torch.long)  # (B, 1)
    finished = torch.zeros(B, dtype=torch.bool)
    for _ in range(max_len):
        logits = model.decode(ys, memory, src_mask if use_src_mask else None)  # (B, t, V)
        next_id = logits[:, position].argmax(dim=-1)  # (B,)
        if pad_after_eos:
            next_id = next_id.masked_fill(finished, PAD_ID)
        ys = torch.cat([ys, next_id[:, None]], dim=1)  # (B, t + 1)
        finished |= next_id == EOS_ID
        if (stop == "all" and bool(finished.all())) or (stop == "any" and bool(finished.any())):
            break
    return _pad_to(ys[:, 1:], max_len)


_GREEDY_MISTAKES: dict[str, dict[str, Any]] = {
    "After a row's EOS put PAD, not more predictions (that row is finished).":
        {"pad_after_eos": False},
    "After a row's EOS put PAD, not more predictions (that row is finished; stop once every row has).":
        {"pad_after_eos": False, "stop": "never"},
    "You took the logits of the first position at every step; the next token comes from the last "
    "position: logits[:, -1].": {"position": 0},
    "You stopped when the first row finished; stop only when every row has produced EOS "
    "(or after max_len tokens).": {"stop": "any"},
    "The decoder attended to the source's padding: pass the source padding mask to model.decode "
    "(padding_mask(src, PAD_ID)).": {"use_src_mask": False},
}


def _check_greedy(fn: Callable[[nn.Module, Tensor, int], Tensor], what: str, cached: bool) -> None:
    model = load_reversal_model()
    for strings, max_len in _DECODE_CASES:
        src = make_batch(strings)[0]  # (B, T_src)
        spy = _DecodeSpy(model)
        got = call_student(fn, spy, src.clone(), max_len, what=f"your {what}")
        got = expect_tensor(got, f"{what}(model, src, max_len={max_len})")
        if got.dim() != 2 or got.shape[0] != src.shape[0]:
            raise CheckFailed(f"the output should have shape (B={src.shape[0]}, <= max_len), got {tuple(got.shape)}.")
        if got.dtype != torch.long:
            raise CheckFailed(f"the output should hold token ids (torch.long), got {got.dtype}.")
        want = greedy_decode(model, src, max_len, use_cache=False)  # (B, <= max_len)
        if got.shape[1] == max_len + 1 and bool((got[:, 0] == SOS_ID).all()):
            raise CheckFailed("the output starts with SOS: return only the generated tokens (drop the first column).")
        if got.shape[1] > max_len:
            raise CheckFailed(f"the output has {got.shape[1]} tokens per row for max_len={max_len}; "
                              "generate at most max_len tokens.")
        if not torch.equal(_pad_to(got, max_len), _pad_to(want, max_len)):
            def decoded(g: Tensor, options: dict[str, Any], src: Tensor = src, max_len: int = max_len) -> bool:
                return torch.equal(g, _greedy_variant(model, src, max_len, **options))

            fail_on_mistake(_pad_to(got, max_len), _GREEDY_MISTAKES, decoded, f"{what} on {strings} is not right. ")
            row = int((_pad_to(got, max_len) != _pad_to(want, max_len)).any(1).nonzero()[0])
            raise CheckFailed(
                f"{what} on {strings} (max_len={max_len}) gives {spell(got[row])} for {strings[row]!r}, "
                f"expected {spell(want[row])} (the reversal, then EOS, then PAD)."
            )
        if not cached:
            continue
        if not spy.caches:
            raise CheckFailed("the tokens are right but no cache was made: start with cache = model.new_cache().")
        if len(spy.caches) > 1:
            raise CheckFailed(
                f"a new cache was made {len(spy.caches)} times; make one before the loop and pass the same one "
                "to every decode call."
            )
        fed = [n for n, c in spy.decode_calls if c is not None]
        if any(n == -2 for n, _ in spy.decode_calls) or any(c is None for _, c in spy.decode_calls):
            raise CheckFailed("some steps ran without the cache: pass cache=cache to every model.decode call.")
        if any(n != 1 for n in fed):
            raise CheckFailed(
                "the tokens are right, but some steps fed more than the newest token: with a cache, decode "
                "only ys[:, -1:], the earlier tokens' keys and values are already cached."
            )


@checker("6.4", "greedy decoding")
def check_greedy_decode(fn: Callable[[nn.Module, Tensor, int], Tensor]) -> None:
    """Check ``fn(model, src, max_len)`` returns the shipped model's greedy tokens (B, <= max_len), PAD after EOS."""
    _check_greedy(fn, "greedy_decode", cached=False)


# ----------------------------------------------------------------- 6.5 experiment: double the learning rate
SHORT_RUN: dict[str, Any] = {"steps": 150, "warmup": 15, "lr": 3e-3, "batch_size": 64, "min_len": 3, "max_len": 6}


def short_run_loss(config: TrainConfig, seed: int = 0) -> float:
    """Held-out teacher-forced loss of a tiny pre-LN Transformer after a short run with ``config``. Chapter 6.

    d_model 32, one encoder and one decoder block, strings of 3-6 letters, batch 64; the loss is measured
    on 256 fixed strings that training never draws. Two seconds of one CPU core.
    """
    from ..training import masked_cross_entropy, train

    torch.manual_seed(seed)
    model = Transformer(TransformerConfig(VOCAB_SIZE, VOCAB_SIZE, d_model=32, n_heads=4, d_ff=64, n_encoder_layers=1,
                                          n_decoder_layers=1, dropout=0.0, norm_first=True))
    g = torch.Generator().manual_seed(seed)
    r = SHORT_RUN
    train(model, lambda step: random_batch(r["batch_size"], r["min_len"], r["max_len"], g), config, progress=False)
    src, tgt_in, tgt_out = random_batch(256, r["min_len"], r["max_len"], torch.Generator().manual_seed(1234))
    model.eval()
    with torch.no_grad():
        return float(masked_cross_entropy(model(src, tgt_in), tgt_out))


@functools.lru_cache(maxsize=4)
def _short_run_loss_once(settings: tuple[tuple[str, Any], ...]) -> float:
    return short_run_loss(TrainConfig(**dict(settings)))


def _seeded_short_run_loss(config: TrainConfig) -> float:
    """short_run_loss(config), computed once per session for the same settings: the run is seeded, so a
    second check of the same configuration would repeat the same training."""
    settings = tuple(sorted(dataclasses.asdict(config).items()))
    try:
        hash(settings)
    except TypeError:  # a setting that cannot be a cache key: run it
        return short_run_loss(config)
    return _short_run_loss_once(settings)


LR_OPTIONS = {
    "lower": "the doubled learning rate ends with a lower held-out loss",
    "about the same": "the two runs end within a few percent of each other",
    "higher": "the doubled learning rate ends with a higher held-out loss",
    "diverges": "the doubled learning rate blows the run up (NaN or a loss far above the start)",
}
LR_RATIO = Expected(
    "held-out loss after 150 steps with the doubled learning rate, divided by the base run's", 0.4, 0.85,
    "at this short budget the base learning rate is too cautious: every step moves the weights further with the "
    "doubled rate, warm-up and clipping keep that stable, and the loss falls faster. That is the fast recipe's "
    "bet; past some rate the same change makes training diverge, which is what warm-up guards against.",
    below="An improvement that large points to more than one change: double the learning rate only.",
    above="Did the change reach the run? Return a TrainConfig whose lr is twice config.lr.",
)


@checker("6.5", "double the learning rate")
def check_learning_rate_experiment(fn: Callable[[TrainConfig], TrainConfig], prediction: object) -> str:
    """Record the prediction, check ``fn(config)`` doubles the learning rate and changes nothing else, then train
    the base and the changed configuration for 150 steps and judge the ratio of their held-out losses."""
    from dataclasses import fields

    from .experiment import compare_prediction, judge_range, read_prediction

    guess = read_prediction(prediction, LR_OPTIONS)
    r = SHORT_RUN
    base = TrainConfig(steps=r["steps"], lr=r["lr"], warmup=r["warmup"])
    changed = call_student(fn, TrainConfig(steps=r["steps"], lr=r["lr"], warmup=r["warmup"]),
                           what="your changed_config")
    if not isinstance(changed, TrainConfig):
        raise CheckFailed(f"return a TrainConfig (dataclasses.replace(config, ...)), got {type(changed).__name__}")
    if not math.isclose(changed.lr, 2 * base.lr, rel_tol=1e-9):
        squared = math.isclose(changed.lr, base.lr**2, rel_tol=1e-9)
        hint = " (you squared it)" if squared else " (unchanged)" if changed.lr == base.lr else ""
        raise CheckFailed(f"the learning rate should be twice {base.lr}, got {changed.lr}{hint}.")
    other = [f.name for f in fields(TrainConfig)
             if f.name != "lr" and getattr(changed, f.name) != getattr(base, f.name)]
    if other:
        raise CheckFailed(f"change one thing only: you also changed {', '.join(other)}, so the experiment could not "
                          "say which change did what.")
    ratio = _seeded_short_run_loss(changed) / _seeded_short_run_loss(base)
    if not math.isfinite(ratio) or ratio > 2:
        outcome = "diverges"
    else:
        outcome = "lower" if ratio < 0.95 else "higher" if ratio > 1.05 else "about the same"
    verdict = judge_range(ratio, LR_RATIO, what="the ratio of the losses", show=True)
    return f"{verdict} {compare_prediction(guess, outcome)}"
