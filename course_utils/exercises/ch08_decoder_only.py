"""Checkers for the exercises of Chapter 8 (the decoder-only Transformer)."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor, nn

from ..charlm import ngram_bits_per_char
from ..data import PAD_ID, SEP_ID, make_one_sequence_batch
from ..gpt import DecoderOnly, DecoderOnlyConfig, generate
from ..model import KVCache
from ..sampling import top_k_filter, top_p_filter
from .core import CheckFailed, call_student, checker, expect_close, expect_tensor


# ----------------------------------------------------------------- 8.1 the target-only loss mask
def _full_sequences(strings: list[str]) -> Tensor:
    inputs, targets = make_one_sequence_batch(strings)
    return torch.cat([inputs, targets[:, -1:]], dim=1)  # (B, L): src SEP rev EOS, then PAD


@checker("8.1", "loss on the target part only")
def check_target_only_targets(fn: Callable[[Tensor, int, int], Tensor]) -> None:
    """Check ``fn(seq, sep_id, pad_id)`` returns seq[:, 1:] with every target before the separator's
    prediction set to pad_id."""
    for strings in (["abc", "hello"], ["xy", "reverse", "q"], ["word"]):
        seq = _full_sequences(strings)
        shifted = seq[:, 1:]
        pos = torch.arange(shifted.shape[1])
        sep = (seq == SEP_ID).long().argmax(dim=1, keepdim=True)  # (B, 1): where SEP sits
        want = shifted.masked_fill(pos < sep, PAD_ID)
        got = call_student(fn, seq.clone(), SEP_ID, PAD_ID, what="your target_only_targets")
        got = expect_tensor(got, "target_only_targets(seq)")
        if got.shape == seq.shape:
            raise CheckFailed(
                f"the targets should have one column fewer than seq, {tuple(want.shape)}: target t is token t + 1 "
                "(drop the first token), got the shape of seq."
            )
        mistakes = {
            "The loss still covers the source: set the targets before the separator's position to PAD.": shifted,
            "Off by one: the first target letter (predicted at SEP) is masked too; keep targets from SEP's position.":
                shifted.masked_fill(pos <= sep, PAD_ID),
            "Off by one: the separator itself is still a target; the model is given SEP, it need not predict it.":
                shifted.masked_fill(pos < sep - 1, PAD_ID),
            "You masked the target part and kept the source: it is the other way round.":
                shifted.masked_fill(pos >= sep, PAD_ID),
        }
        expect_close(got.long(), want, "target_only_targets(seq)", mistakes=mistakes, atol=0, rtol=0)


# ----------------------------------------------------------------- 8.2 generation with a KV cache
class _Spy(nn.Module):
    """Wraps a DecoderOnly and records the number of new tokens of each call and whether a cache came with it."""

    def __init__(self, model: DecoderOnly):
        super().__init__()
        self.model, self.config, self.calls = model, model.config, []

    def new_cache(self) -> KVCache:
        return self.model.new_cache()

    def __repr__(self) -> str:
        return "a DecoderOnly model"

    def forward(self, tokens: Tensor, cache: KVCache | None = None, **kwargs: object) -> Tensor:
        self.calls.append((int(tokens.shape[1]), cache is not None))
        return self.model(tokens, cache=cache, **kwargs)


def _tiny_model(seed: int) -> DecoderOnly:
    torch.manual_seed(seed)
    model = DecoderOnly(DecoderOnlyConfig(vocab_size=11, d_model=16, n_heads=2, d_ff=32, n_layers=2, max_len=128))
    with torch.no_grad():  # larger weights: the greedy path depends strongly on every position
        for p in model.parameters():
            p.mul_(3.0)
    return model.eval()


@torch.no_grad()
def _generate_wrong(model: DecoderOnly, prompt: Tensor, n: int, mistake: str) -> Tensor:
    seq, cache = prompt, model.new_cache()
    step_in = prompt
    for _ in range(n):
        if mistake == "first_row":
            logits = model(step_in, cache=cache)[:, 0]
        elif mistake == "whole_seq_with_cache":
            if cache.length + seq.shape[1] > model.config.max_len:
                break
            logits = model(seq, cache=cache)[:, -1]
        else:  # "no_cache_new_token_only": the newest token alone, at position 0, without its past
            logits = model(step_in)[:, -1]
        nxt = logits.argmax(-1, keepdim=True)
        seq = torch.cat([seq, nxt], dim=1)
        step_in = nxt
    out = seq[:, prompt.shape[1]:]
    return out if out.shape[1] == n else torch.full((prompt.shape[0], n), -1)


_WHOLE_SEQ = ("After the prompt, feed only the newest token: the cache already holds the keys and values of "
              "the others, so feeding the whole sequence again counts them twice.")


@checker("8.2", "greedy generation with a KV cache")
def check_generate(fn: Callable[[nn.Module, Tensor, int], Tensor]) -> None:
    """Check ``fn(model, prompt, n_new)`` returns the n_new greedy tokens (B, n_new), feeding the prompt
    once and then one token per call with the cache."""
    for seed, (B, T0, n) in enumerate(((2, 3, 8), (1, 1, 5), (3, 6, 10))):
        model = _tiny_model(seed)
        prompt = torch.randint(0, 11, (B, T0), generator=torch.Generator().manual_seed(seed))
        want = generate(model, prompt, n, temperature=0)
        spy = _Spy(model)
        try:
            got = call_student(fn, spy, prompt.clone(), n, what="your generate")
        except CheckFailed:
            if any(with_cache and t > 1 for t, with_cache in spy.calls[1:]):
                raise CheckFailed(_WHOLE_SEQ) from None
            raise
        got = expect_tensor(got, "generate(model, prompt, n_new)")
        if got.shape == (B, T0 + n) and torch.equal(got[:, T0:], want):
            raise CheckFailed("return only the n_new generated tokens (B, n_new), without the prompt in front.")
        mistakes = {
            "You took the logits of the first position of each call; the next token comes from the last one, [:, -1].":
                _generate_wrong(model, prompt, n, "first_row"),
            _WHOLE_SEQ: _generate_wrong(model, prompt, n, "whole_seq_with_cache"),
            "The newest token was fed without the cache, so it saw no past and sat at position 0: pass "
            "cache=cache on every call (make it once with model.new_cache()).":
                _generate_wrong(model, prompt, n, "no_cache_new_token_only"),
        }
        expect_close(got.long(), want, "the generated tokens", mistakes=mistakes, atol=0, rtol=0)
        lengths = [t for t, _ in spy.calls]
        if not all(with_cache for _, with_cache in spy.calls) or lengths != [T0] + [1] * (n - 1):
            raise CheckFailed(
                f"the tokens are right, but the calls fed {lengths} tokens (cache used: "
                f"{all(c for _, c in spy.calls)}); with a KV cache feed the prompt once ({T0} tokens), "
                "then one token per call."
            )


# ----------------------------------------------------------------- 8.3 top-k and top-p filtering
def _reference_filter(logits: Tensor, top_k: int | None, top_p: float | None) -> Tensor:
    if top_k is not None:
        logits = top_k_filter(logits, top_k)
    if top_p is not None:
        logits = top_p_filter(logits, top_p)
    return logits


def _top_p_strict(logits: Tensor, p: float) -> Tensor:
    """Mistake: keeps only tokens whose cumulative probability (including themselves) stays <= p."""
    probs, order = torch.softmax(logits, -1).sort(-1, descending=True)
    drop_sorted = probs.cumsum(-1) > p
    return logits.masked_fill(drop_sorted.scatter(-1, order, drop_sorted), float("-inf"))


def _top_p_unsorted(logits: Tensor, p: float) -> Tensor:
    """Mistake: cumulative sum in vocabulary order, not in order of probability."""
    probs = torch.softmax(logits, -1)
    return logits.masked_fill(probs.cumsum(-1) - probs >= p, float("-inf"))


@checker("8.3", "top-k and top-p filtering")
def check_filter_logits(fn: Callable[[Tensor, int | None, float | None], Tensor]) -> None:
    """Check ``fn(logits, top_k, top_p)`` keeps the top_k largest logits, then the nucleus of mass top_p,
    and sets every other logit to -inf (None switches a filter off)."""
    g = torch.Generator().manual_seed(0)
    cases = [(3, None), (None, 0.7), (5, 0.8), (None, 0.3), (1, None), (None, None)]
    for top_k, top_p in cases:
        logits = torch.randn(4, 12, generator=g) * 2  # (B, V)
        want = _reference_filter(logits, top_k, top_p)
        got = call_student(fn, logits.clone(), top_k, top_p, what="your filter_logits")
        got = expect_tensor(got, f"filter_logits(logits, top_k={top_k}, top_p={top_p})", want.shape)
        if torch.isfinite(want).any() and (got == 0).sum() > (want == 0).sum():
            kept_right = torch.equal(torch.isfinite(want), got != 0) or torch.equal(torch.isfinite(want), got > 0)
            if kept_right:
                raise CheckFailed("removed tokens must get the logit -inf (probability 0 after softmax), not 0.")
        mistakes: dict[str, Tensor] = {}
        if top_k is not None:
            smallest = torch.topk(logits, top_k, dim=-1, largest=False).values[..., -1:]
            mistakes["top-k kept the k smallest logits; keep the k largest."] = _reference_filter(
                logits.masked_fill(logits > smallest, float("-inf")), None, top_p)
        if top_p is not None:
            base = top_k_filter(logits, top_k) if top_k is not None else logits
            mistakes["top-p dropped the token that crosses p: keep the smallest set whose mass reaches p "
                     "(a token stays if the mass before it is still below p)."] = _top_p_strict(base, top_p)
            mistakes["top-p must add up probabilities from the most likely token down: sort first."] = (
                _top_p_unsorted(base, top_p))
            if top_k is not None:
                mistakes["Apply top-k first, then top-p on what is left (the nucleus is computed after top-k)."] = (
                    top_k_filter(top_p_filter(logits, top_p), top_k))
        expect_close(got, want, f"filter_logits(logits, top_k={top_k}, top_p={top_p})", mistakes=mistakes)


# ----------------------------------------------------------------- 8.4 the trigram baseline
def trigram_bits(train: Tensor, val: Tensor, V: int, alpha: float = 1.0, nats: bool = False, joint: bool = False
                 ) -> float:
    """Validation cross-entropy of add-alpha trigram counts: p(c | the two characters before). Chapter 8."""
    idx = (train[:-2] * V + train[1:-1]) * V + train[2:]
    counts = torch.bincount(idx, minlength=V**3).double().view(V * V, V) + alpha  # row = the two previous chars
    probs = counts / (counts.sum() if joint else counts.sum(dim=1, keepdim=True))
    p = probs[val[:-2] * V + val[1:-1], val[2:]]
    return float(-(p.log() if nats else p.log2()).mean())


@checker("8.4", "the trigram baseline in bits per character")
def check_trigram_bits(fn: Callable[[Tensor, Tensor, int], float]) -> None:
    """Check ``fn(train_ids, val_ids, vocab_size)``: validation bits/char of add-one trigram counts from train_ids."""
    g = torch.Generator().manual_seed(0)
    for V, n_train, n_val in ((5, 600, 100), (8, 3000, 300), (3, 60, 40)):
        # a chain whose next token depends on the two before, so a trigram beats a bigram
        table = torch.randint(0, V, (V, V), generator=g)
        ids = [0, 1 % V]
        for _ in range(n_train + n_val - 2):
            r = torch.rand(1, generator=g).item()
            ids.append(int(table[ids[-2], ids[-1]]) if r < 0.7 else int(torch.randint(0, V, (1,), generator=g)))
        data = torch.tensor(ids)
        train, val = data[:n_train], data[n_train:]
        got = call_student(fn, train.clone(), val.clone(), V, what="your trigram_bits_per_char")
        if isinstance(got, Tensor):
            got = got.item() if got.numel() == 1 else got
        if not isinstance(got, (int, float)):
            raise CheckFailed(f"return one number (bits per character), got {type(got).__name__}.")
        want = trigram_bits(train, val, V)
        if math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-9):
            continue
        wrong = {
            "That is in nats: use log base 2 for bits (divide by ln 2).": trigram_bits(train, val, V, nats=True),
            "Add one to every count (add-one smoothing): a triple never seen in training would get probability 0.":
                trigram_bits(train, val, V, alpha=0.0),
            "Normalise over the next character for each pair of previous characters: p(c | a, b), not p(a, b, c).":
                trigram_bits(train, val, V, joint=True),
            "Count the triples in the training ids only and score the validation ids with them.":
                trigram_bits(val, val, V),
            "That is the bigram baseline: condition on the two previous characters.":
                ngram_bits_per_char(train, val, 2, V, alpha=1.0),
        }
        for hint, value in wrong.items():
            if math.isfinite(value) and math.isclose(got, value, rel_tol=1e-6, abs_tol=1e-9):
                raise CheckFailed(hint)
        if not math.isfinite(got):
            raise CheckFailed("the result is infinite: a validation triple had probability 0. Add one to every count.")
        raise CheckFailed(f"expected {want:.4f} bits per character on a test corpus, got {got:.4f}.")
