"""Checkers for the exercises of Chapter 8 (the decoder-only Transformer)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any, cast

import torch
from torch import Tensor, nn

from ..attention import scaled_dot_product_attention
from ..charlm import ngram_bits_per_char
from ..data import PAD_ID, SEP_ID, make_one_sequence_batch
from ..gpt import DecoderOnly, DecoderOnlyConfig
from ..masks import causal_mask
from ..model import EncoderBlock
from ..sampling import top_k_filter, top_p_filter
from .core import CheckFailed, call_student, checker, describe, expect_close, expect_tensor, fail_on_mistake
from .experiment import Expected


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
        if len(strings) > 1 and not bool((sep == sep[0]).all()):
            mistakes["Every row used the separator position of the first row: find SEP in each row (it moves "
                     "with the length of the source), e.g. (seq == sep_id).long().argmax(dim=1, keepdim=True)."] = (
                shifted.masked_fill(pos < sep[:1], PAD_ID))
        expect_close(got.long(), want, "target_only_targets(seq)", mistakes=mistakes, atol=0, rtol=0)


# ----------------------------------------------------------------- 8.2 the inside of a KV cache
def _tiny_model(seed: int, norm_first: bool = True) -> DecoderOnly:
    torch.manual_seed(seed)
    model = DecoderOnly(DecoderOnlyConfig(vocab_size=11, d_model=16, n_heads=2, d_ff=32, n_layers=2, max_len=64,
                                          norm_first=norm_first))
    with torch.no_grad():  # larger weights: every position and every key matters to the logits
        for p in model.parameters():
            p.mul_(3.0)
    return model.eval()


def new_dict_cache(n_layers: int) -> dict[str, Any]:
    """The cache of Exercise 8.2: keys and values per layer (None until the first call) and the length fed so far."""
    return {"k": [None] * n_layers, "v": [None] * n_layers, "length": 0}


@torch.no_grad()
def _blocks(model: DecoderOnly) -> list[EncoderBlock]:
    """``model.layers`` as what they are: a DecoderOnly's blocks are EncoderBlocks under a causal mask."""
    return [cast(EncoderBlock, block) for block in model.layers]


def cached_forward(model: DecoderOnly, tokens: Tensor, cache: dict[str, Any], mistake: str | None = None) -> Tensor:
    """Logits (B, T_new, V) of the new tokens of a pre-LN DecoderOnly, filling ``cache`` (a dict). Chapter 8.

    ``mistake`` computes a typical wrong version instead (used by the checker to name it).
    """
    offset = cache["length"]
    T_new = tokens.shape[1]
    x = model.embed(tokens, 0 if mistake == "no_offset" else offset)  # (B, T_new, d_model)
    mask: Tensor | None = causal_mask(offset + T_new)[:, :, offset:]  # (1, 1, T_new, offset + T_new)
    if mistake == "no_mask":
        mask = None
    if mistake == "no_append":  # the cache is overwritten: the new queries see the new keys only
        mask = causal_mask(T_new)  # (1, 1, T_new, T_new)
    for layer, block in enumerate(_blocks(model)):
        mha, h = block.self_attn, block.norm1(x)
        q = mha.split_heads(mha.W_Q(h))  # (B, heads, T_new, d_k)
        k = mha.split_heads(mha.W_K(h))  # (B, heads, T_new, d_k)
        v = mha.split_heads(mha.W_V(h))  # (B, heads, T_new, d_k)
        if cache["k"][layer] is not None and mistake != "no_append":
            k = torch.cat([cache["k"][layer], k], dim=2)  # (B, heads, t + T_new, d_k)
            v = torch.cat([cache["v"][layer], v], dim=2)
        cache["k"][layer], cache["v"][layer] = k, v
        a, _ = scaled_dot_product_attention(q, k, v, mask)  # (B, heads, T_new, d_k)
        x = x + mha.W_O(mha.merge_heads(a))
        x = x + block.ffn(block.norm2(x))
    cache["length"] = offset if mistake == "no_length" else offset + T_new
    return model.output_projection(model.final_norm(x))  # (B, T_new, V)


def _run_cached(fn: Callable[..., Tensor], model: DecoderOnly, chunks: list[Tensor], mistake: str | None = None
                ) -> list[Tensor]:
    cache = new_dict_cache(len(model.layers))
    return [fn(model, chunk, cache, mistake) for chunk in chunks]


class _RowCounter:
    """Counts the positions each layer's key projection computes per call: the spy of Exercise 8.2."""

    def __init__(self, model: DecoderOnly):
        self.rows: list[int] = []
        self.handles = [block.self_attn.W_K.register_forward_hook(self._hook) for block in _blocks(model)]

    def _hook(self, module: nn.Module, inputs: tuple[Tensor, ...], output: Tensor) -> None:
        self.rows.append(int(inputs[0].shape[1]))

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


@checker("8.2", "the inside of a KV cache")
def check_kv_cache(fn: Callable[[nn.Module, Tensor, dict[str, Any]], Tensor]) -> None:
    """Check ``fn(model, tokens, cache)``: logits of the new tokens equal a full recompute's last rows, the cache
    holds every layer's keys and values so far, and each call computes keys for the new tokens only."""
    for seed, sizes in enumerate(((2, 3, 1, 1, 1), (1, 1, 1, 1), (3, 4, 3, 1, 2))):
        model = _tiny_model(seed)
        B = sizes[0]
        tokens = torch.randint(0, 11, (B, sum(sizes[1:])), generator=torch.Generator().manual_seed(seed))
        chunks = list(torch.split(tokens, list(sizes[1:]), dim=1))
        cache = new_dict_cache(len(model.layers))
        seen = 0
        for i, chunk in enumerate(chunks):
            spy = _RowCounter(model)
            try:
                got = call_student(fn, model, chunk.clone(), cache, what="your cached_forward", may_modify=True)
            finally:
                spy.remove()
            seen += chunk.shape[1]
            with torch.no_grad():
                want = model(tokens[:, :seen])[:, -chunk.shape[1]:]  # (B, T_new, V): the full recompute
            got = expect_tensor(got, "cached_forward(model, tokens, cache)", want.shape)
            if not torch.allclose(got, want, atol=1e-4, rtol=1e-4):
                hints = {
                    "no_offset": "The new tokens got positions 0, 1, ... again: embed them at positions "
                                 "continuing from cache['length'] (model.embed(tokens, offset)).",
                    "no_length": "cache['length'] was not advanced: add the number of new tokens after each call, "
                                 "or the next tokens get the positions of earlier ones.",
                    "no_append": "The new queries saw only the new keys: append the new keys and values to the "
                                 "cached ones of the same layer (torch.cat along the position dimension, dim=2).",
                    "no_mask": "Several new tokens at once saw each other's future: the mask of the new queries is "
                               "the last T_new rows of causal_mask(t + T_new).",
                }
                for mistake, hint in hints.items():
                    wrong = _run_cached(cached_forward, model, chunks[: i + 1], mistake)[-1]
                    if wrong.shape == got.shape and torch.allclose(got, wrong, atol=1e-4, rtol=1e-4):
                        raise CheckFailed(hint)
                if i == 0:
                    raise CheckFailed("the logits of the prompt (first call, empty cache) differ from model(prompt): "
                                      "check the blocks (pre-LN: x + attention(norm1(x)), then x + ffn(norm2(x))) "
                                      "and the final LayerNorm before the output projection.")
                raise CheckFailed(f"call {i + 1} (after {seen - chunk.shape[1]} cached tokens) gives logits that "
                                  "differ from a full recompute; the first call was right, so look at what you keep "
                                  "in the cache between calls.")
            per_layer = spy.rows
            if per_layer and max(per_layer) > chunk.shape[1]:
                raise CheckFailed(f"the logits are right, but call {i + 1} computed keys for {max(per_layer)} "
                                  f"positions where only {chunk.shape[1]} are new: keep the old keys and values in "
                                  "the cache instead of recomputing the whole sequence.")
            if not isinstance(cache, dict) or cache.get("length") != seen:
                raise CheckFailed(f"after {seen} tokens cache['length'] should be {seen}, got "
                                  f"{cache.get('length') if isinstance(cache, dict) else cache!r}.")
            for layer in range(len(model.layers)):
                k, v = cache["k"][layer], cache["v"][layer]
                if not isinstance(k, Tensor) or not isinstance(v, Tensor) or k.shape[2] != seen or v.shape[2] != seen:
                    raise CheckFailed(f"cache['k'][{layer}] and cache['v'][{layer}] should hold the keys and values "
                                      f"of all {seen} tokens so far, (B, heads, {seen}, d_k); got "
                                      f"{describe(k)} and {describe(v)}.")


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


def _top_p_not_unsorted(logits: Tensor, p: float) -> Tensor:
    """Mistake: the drop mask is computed in sorted order and applied to the logits in vocabulary order."""
    probs = torch.softmax(logits, -1).sort(-1, descending=True).values
    return logits.masked_fill(probs.cumsum(-1) - probs >= p, float("-inf"))


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
            mistakes["The drop mask is in sorted order but was applied to the logits in vocabulary order: map it "
                     "back with the sort's indices (mask.scatter(-1, order, mask), or gather with "
                     "order.argsort())."] = _top_p_not_unsorted(base, top_p)
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


def _trigram_variant(train: Tensor, val: Tensor, V: int, kind: str) -> float:
    """Bits/char of a typical variant of the add-one trigram (Exercise 8.4's hints and accepted readings)."""
    pair = lambda ids: ids[:-1] * V + ids[1:]  # noqa: E731 (one id per (a, b))
    triple = (train[:-2] * V + train[1:-1]) * V + train[2:]
    counts = torch.bincount(triple, minlength=V**3).double().view(V * V, V)  # (V*V, V): row = (a, b)
    a_b, c = pair(val)[:-1], val[2:]
    probs = (counts + 1) / (counts.sum(dim=1, keepdim=True) + V)  # (V*V, V): the reference p(c | a, b)
    bits = -probs[a_b, c].log2()  # (len(val) - 2,): one prediction per validation triple
    if kind == "context_from_pairs":  # textbook add-one: the context count is the pair count over the text
        context = torch.bincount(pair(train), minlength=V * V).double()  # (V*V,)
        p = (counts[a_b, c] + 1) / (context[a_b] + V)
    elif kind == "across_the_split":  # the two characters before val[0] are the last two of train (one text)
        joined = torch.cat([train[-2:], val])
        return float(-probs[pair(joined)[:-1], joined[2:]].log2().mean())
    elif kind == "plus_one_denominator":  # (count + 1) / (context + 1): probabilities do not sum to 1
        p = (counts[a_b, c] + 1) / (counts.sum(dim=1)[a_b] + 1)
    elif kind == "pairs_plus_one":  # the textbook's pair count, but + 1 instead of + V
        context = torch.bincount(pair(train), minlength=V * V).double()
        p = (counts[a_b, c] + 1) / (context[a_b] + 1)
    elif kind == "middle":  # predicts the middle character b from a and c
        outer = torch.bincount((train[:-2] * V + train[2:]) * V + train[1:-1], minlength=V**3).double().view(V * V, V)
        outer = outer + 1
        p = (outer / outer.sum(dim=1, keepdim=True))[val[:-2] * V + val[2:], val[1:-1]]
    elif kind == "first":  # normalised over the first character a: p(a | b, c)
        cube = counts.view(V, V, V) + 1
        p = (cube / cube.sum(dim=0, keepdim=True))[val[:-2], val[1:-1], val[2:]]
    elif kind == "swapped_context":  # counted as (a, b) but looked up as (b, a)
        p = probs.view(V, V, V)[val[1:-1], val[:-2], val[2:]]
    elif kind == "last_char_context":  # the context count is the count of b alone
        single = torch.bincount(train, minlength=V).double()
        p = (counts[a_b, c] + 1) / (single[val[1:-1]] + V)
    elif kind == "context_from_val":  # the context counts taken from the validation ids
        val_counts = torch.bincount((val[:-2] * V + val[1:-1]) * V + val[2:], minlength=V**3).double().view(V * V, V)
        p = (counts[a_b, c] + 1) / (val_counts.sum(dim=1)[a_b] + V)
    elif kind.startswith("bigram_same_chars"):  # the bigram p(c | b), scored on the len(val) - 2 predictions
        # "_nats": and in nats; "_unsmoothed": and without the added one (a slip on top of the slip)
        pairs = torch.bincount(pair(train), minlength=V * V).double().view(V, V)  # (V, V): row = b
        pairs = pairs if kind.endswith("_unsmoothed") else pairs + 1
        p = (pairs / pairs.sum(dim=1, keepdim=True))[val[1:-1], c]
        if kind.endswith("_nats"):
            return float(-p.log().mean())
    elif kind == "log_of_mean":
        return float(-probs[a_b, c].mean().log2())
    elif kind == "sum":
        return float(bits.sum())
    elif kind == "per_character":  # the sum divided by len(val), not by the len(val) - 2 predictions
        return float(bits.sum() / len(val))
    elif kind == "first_two_uniform":  # the first two validation characters scored as uniform guesses
        return float((bits.sum() + 2 * math.log2(V)) / len(val))
    else:
        raise ValueError(f"kind must be a known variant, got {kind!r}")
    return float(-p.log2().mean())


def _trigram_mistakes(train: Tensor, val: Tensor, V: int) -> dict[str, float]:
    """{hint: what that mistake returns} for Exercise 8.4, on one corpus."""
    want = trigram_bits(train, val, V)
    variant = lambda kind: _trigram_variant(train, val, V, kind)  # noqa: E731
    mistakes = {
        "That is in nats: use log base 2 for bits (divide by ln 2).": trigram_bits(train, val, V, nats=True),
        "Add one to every count (add-one smoothing): a triple never seen in training would get probability 0.":
            trigram_bits(train, val, V, alpha=0.0),
        "Normalise over the next character for each pair of previous characters: p(c | a, b), not p(a, b, c).":
            trigram_bits(train, val, V, joint=True),
        "Count the triples in the training ids only and score the validation ids with them.":
            trigram_bits(val, val, V),
        "You scored the training ids: count on train_ids, then average over the validation ids.":
            trigram_bits(train, train, V),
        "You counted the validation ids as well: count on train_ids only, or the score is no longer on unseen "
        "text.": trigram_bits(torch.cat([train, val]), val, V),
        "That is the bigram baseline: condition on the two previous characters.":
            ngram_bits_per_char(train, val, 2, V, alpha=1.0),
        "That is the bigram p(c | b), scored on the same characters: condition on both previous characters, "
        "p(c | a, b).": variant("bigram_same_chars"),
        "That is the bigram p(c | b), in nats, scored on the same characters: condition on both previous "
        "characters, p(c | a, b), and take log base 2 for bits.": variant("bigram_same_chars_nats"),
        "That is the bigram p(c | b) without smoothing, scored on the same characters: condition on both previous "
        "characters, p(c | a, b), and add one to every count.": variant("bigram_same_chars_unsmoothed"),
        "Your probabilities do not sum to 1 over the next character: with one added to each of the V counts, "
        "add V (not 1) to the context's count.": variant("plus_one_denominator"),
        "Your probabilities do not sum to 1 over the next character: with one added to each of the V counts, "
        "add V (not 1) to the pair's count.": variant("pairs_plus_one"),
        "You predict the middle character from its two neighbours: the context is the two characters BEFORE "
        "the predicted one, p(ids[t] | ids[t-2], ids[t-1]).": variant("middle"),
        "Your probabilities sum to 1 over the first character a (p(a | b, c)): normalise over the last axis, the "
        "next character c.": variant("first"),
        "You count (a, b) but look up (b, a) when scoring: index the counts in the same order both times.":
            variant("swapped_context"),
        "The context count is the count of b alone: the context is the pair (a, b), so divide by how often the "
        "pair starts a training triple (plus V).": variant("last_char_context"),
        "The context counts come from the validation ids: count everything on train_ids.":
            variant("context_from_val"),
        "That is -log2 of the mean probability: average the bits, -log2 p, over the predictions instead.":
            variant("log_of_mean"),
        "That is the total in bits: divide by the number of predictions to get bits per character.":
            variant("sum"),
        "You divided by len(val_ids): there are len(val_ids) - 2 predictions p(c | a, b), one per validation "
        "triple.": variant("per_character"),
        "You scored the first two validation characters as uniform guesses: they have no two characters before "
        "them in val_ids, so average over the len(val_ids) - 2 triples only.": variant("first_two_uniform"),
        "That is the perplexity, 2 ** bits: return the bits per character themselves.": 2.0**want,
    }
    for alpha in (0.5, 0.1, 0.01, 2.0):
        mistakes[f"That is add-{alpha:g} smoothing: the exercise adds one to every count."] = trigram_bits(
            train, val, V, alpha=alpha)
    return mistakes


TRIGRAM_OPTIONS = {  # option -> why it is wrong, said when the measurement disagrees
    "no better than the bigram": "Most of the 4,225 possible pairs of previous characters never occur, but the common "
                                 "ones are seen thousands of times, and a second character narrows the next one down "
                                 "a lot: after 'th' few characters follow, after 'h' many.",
    "under 0.3 bits better": "A second character narrows the next one down more than that: after 'th' few characters "
                             "follow, after 'h' many; what add-one smoothing spreads over unseen triples costs less.",
    "0.3 bits or more better": "Add-one smoothing over 65 possible next characters costs more than the second "
                               "character of context gives back here.",
}


def _trigram_outcome(gain: float) -> str:
    """The option of TRIGRAM_OPTIONS that ``gain`` (bigram bits - trigram bits) falls in."""
    return "no better than the bigram" if gain < 0.05 else "under 0.3 bits better" if gain < 0.3 else \
        "0.3 bits or more better"


@checker("8.4", "the trigram baseline in bits per character")
def check_trigram_bits(fn: Callable[[Tensor, Tensor, int], float], prediction: Any = None) -> str | None:
    """Check ``fn(train_ids, val_ids, vocab_size)``: validation bits/char of add-one trigram counts from train_ids.

    With ``prediction`` (an option of TRIGRAM_OPTIONS, or a function returning one) the function is then
    run on tiny Shakespeare and its gain over the bigram compared with the prediction.
    """
    from ..runs.charlm import charlm_split
    from .core import as_number, refuse_library
    from .experiment import compare_prediction, read_prediction

    guess = None if prediction is None else read_prediction(prediction, TRIGRAM_OPTIONS)
    refuse_library(fn, (trigram_bits, ngram_bits_per_char), "count the triples yourself.")
    g = torch.Generator().manual_seed(0)
    corpora = []
    for V, n_train, n_val in ((5, 600, 100), (8, 3000, 300), (3, 60, 40)):
        # a chain whose next token depends on the two before, so a trigram beats a bigram
        table = torch.randint(0, V, (V, V), generator=g)
        ids = [0, 1 % V]
        for _ in range(n_train + n_val - 2):
            r = torch.rand(1, generator=g).item()
            ids.append(int(table[ids[-2], ids[-1]]) if r < 0.7 else int(torch.randint(0, V, (1,), generator=g)))
        data = torch.tensor(ids)
        corpora.append((V, data[:n_train], data[n_train:]))
    gots = [as_number(call_student(fn, train.clone(), val.clone(), V, what="your trigram_bits_per_char"),
                      "my_trigram_bits(train_ids, val_ids, vocab_size)") for V, train, val in corpora]
    if max(gots) - min(gots) <= 1e-9:
        raise CheckFailed(f"your function returned {gots[0]:.4f} for three different test corpora: it must compute "
                          "the bits from the train_ids and val_ids it is given, not return a fixed number.")
    for (V, train, val), got in zip(corpora, gots, strict=True):
        want = trigram_bits(train, val, V)
        # correct readings the text leaves open: the textbook's context count (the pair's count over the
        # training text, one more than the sum over c where the pair ends the text), and scoring val_ids[0]
        # and val_ids[1] with the last two training characters before them (the split cuts one text)
        if any(math.isclose(got, value, rel_tol=1e-6, abs_tol=1e-9) for value in (
                want, _trigram_variant(train, val, V, "context_from_pairs"),
                _trigram_variant(train, val, V, "across_the_split"))):
            continue
        fail_on_mistake(got, _trigram_mistakes(train, val, V),
                        lambda a, b: math.isfinite(b) and math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9))
        if not math.isfinite(got):
            raise CheckFailed("the result is infinite: a validation triple had probability 0. Add one to every count.")
        if got < 0:
            raise CheckFailed(f"your bits per character are negative ({got:.4f}): some probability is above 1, so a "
                              "denominator is too small. Divide count(a, b, c) + 1 by count(a, b) + V.")
        if got > math.log2(V) + 1e-9:
            raise CheckFailed(f"your {got:.4f} bits per character are worse than a uniform guess over the {V} "
                              f"characters ({math.log2(V):.4f} bits): the counts and the scored text do not line up "
                              "(check which ids you count and which you score, and the order of a, b, c).")
        raise CheckFailed(f"expected {want:.4f} bits per character on a test corpus of {V} characters, got "
                          f"{got:.4f}, and none of the usual slips gives your number: p(c | a, b) is "
                          "(count(a, b, c) + 1) / (count(a, b) + V), counted on train_ids, averaged as -log2 p over "
                          "the validation triples.")
    if guess is None:
        return None
    vocab, train_ids, val_ids = charlm_split()
    V = len(vocab)
    bigram = ngram_bits_per_char(train_ids, val_ids, 2, V)
    mine = as_number(call_student(fn, train_ids.clone(), val_ids.clone(), V, what="your trigram_bits_per_char"),
                     "my_trigram_bits(train_ids, val_ids, vocab_size)")
    gain = bigram - mine
    return (f"On tiny Shakespeare your function gives {mine:.3f} bits per character, the bigram {bigram:.3f}: "
            f"{gain:.2f} bits better. " + compare_prediction(guess, _trigram_outcome(gain), TRIGRAM_OPTIONS))


# ----------------------------------------------------------------- 8.5 assemble the decoder-only model
_PARTS = ("embedding", "layers", "final_norm", "output_projection")


@torch.no_grad()
def assembled_logits(ref: DecoderOnly, tokens: Tensor, scale: bool = True, final_norm: bool = True,
                     mask: bool = True, post_ln: bool = False, transposed_mask: bool = False,
                     scale_after_positions: bool = False) -> Tensor:
    """Logits of ``ref``'s weights wired as in Exercise 8.5, or with one typical mistake. Chapter 8."""
    d, pe = ref.config.d_model, ref.pe
    if pe is None:
        raise ValueError(f"ref must add an absolute positional table (sinusoidal or learned), "
                         f"got positional={ref.config.positional!r}")
    x = pe(ref.embedding(tokens) * (math.sqrt(d) if scale else 1.0))  # (B, T, d_model)
    if scale_after_positions:
        x = pe(ref.embedding(tokens)) * math.sqrt(d)
    keep = causal_mask(tokens.shape[1]) if mask else None  # (1, 1, T, T)
    if transposed_mask:
        keep = causal_mask(tokens.shape[1]).transpose(-1, -2)  # keys at or AFTER the query: the future
    for block in _blocks(ref):
        if post_ln:
            x = block.norm1(x + block.self_attn(x, x, x, mask=keep)[0])
            x = block.norm2(x + block.ffn(x))
        else:
            x, _ = block(x, keep)
    return ref.output_projection(ref.final_norm(x) if final_norm else x)


@checker("8.5", "assemble the decoder-only model")
def check_decoder_only(cls: Callable[[DecoderOnlyConfig], nn.Module]) -> str:
    """Check ``cls(config)`` builds a pre-LN decoder-only model with the reference's parts and wiring:
    scaled embedding + sinusoidal positions, EncoderBlocks under a causal mask, final LayerNorm, tied head."""
    for seed, (V, d, h, n) in enumerate(((13, 16, 2, 2), (7, 8, 4, 3))):
        config = DecoderOnlyConfig(vocab_size=V, d_model=d, n_heads=h, d_ff=2 * d, n_layers=n, max_len=32)
        torch.manual_seed(seed)
        ref = DecoderOnly(config).eval()
        torch.manual_seed(seed)
        model = call_student(cls, config, what="your DecoderOnly class")
        if not isinstance(model, nn.Module):
            raise CheckFailed(f"MyDecoderOnly(config) should be an nn.Module, got {describe(model)}")
        model.eval()
        missing = [name for name in _PARTS if not hasattr(model, name)]
        if missing == ["final_norm"]:
            raise CheckFailed("There is no final LayerNorm (self.final_norm): a pre-LN stack never normalises its "
                              "residual stream, so the output projection would read an unnormalised sum.")
        if missing:
            raise CheckFailed(f"name the parts {', '.join(_PARTS)} (as in course_utils.gpt) so that the checker "
                              f"can load the reference weights; missing: {', '.join(missing)}.")
        if not isinstance(model.layers, nn.ModuleList) or len(model.layers) != n:
            raise CheckFailed(f"self.layers should be an nn.ModuleList of config.n_layers = {n} EncoderBlocks, "
                              f"got {describe(model.layers)}.")
        head_weight = getattr(model.output_projection, "weight", None)
        if head_weight is None or head_weight is not getattr(model.embedding, "weight", None):
            raise CheckFailed("The head is not tied: set self.output_projection.weight = self.embedding.weight, "
                              "one (V, d_model) matrix used twice (Press and Wolf).")
        result = model.load_state_dict(ref.state_dict(), strict=False)
        if result.unexpected_keys == ["output_projection.bias"] and not result.missing_keys:
            raise CheckFailed("Your output projection has no bias; the course's has one: nn.Linear(d_model, "
                              "vocab_size) with its default bias=True, the weight tied to the embedding.")
        if result.missing_keys or result.unexpected_keys:
            names = (result.missing_keys + result.unexpected_keys)[:4]
            raise CheckFailed(f"your parameters do not line up with the reference's (for example {names}): build "
                              "the blocks with EncoderBlock(d_model, n_heads, d_ff, norm_first=True) and the final "
                              "norm with LayerNorm(d_model).")
        tokens = torch.randint(0, V, (3, 9), generator=torch.Generator().manual_seed(seed))
        want = ref(tokens)
        try:
            got = call_student(model, tokens.clone(), what="your DecoderOnly's forward")
        except CheckFailed as failure:
            if "got tuple" in str(failure):
                raise CheckFailed("A block received a tuple: EncoderBlock returns (x, weights), so unpack it, "
                                  "x, _ = block(x, mask), before the next block.") from None
            raise
        if isinstance(got, tuple):
            got = got[0]
        got = expect_tensor(got, "model(tokens)", want.shape)
        mistakes = {
            "The embedding is not scaled: multiply it by sqrt(d_model) before adding the positions, as in the paper "
            "(section 3.4), or the positions drown the tokens.": assembled_logits(ref, tokens, scale=False),
            "The causal mask is missing: every position sees the future, so training would teach it to copy the next "
            "token. Pass causal_mask(T) to every block.": assembled_logits(ref, tokens, mask=False),
            "The final LayerNorm is not applied: with pre-LN blocks, normalise x once more before the output "
            "projection.": assembled_logits(ref, tokens, final_norm=False),
            "The blocks run post-LN: build them with norm_first=True (GPT-2's pre-LN).":
                assembled_logits(ref, tokens, post_ln=True),
            "Your model sees the future: the mask is transposed (True above the diagonal). causal_mask(T) keeps "
            "key s for query t only when s <= t.": assembled_logits(ref, tokens, transposed_mask=True),
            "The scale sqrt(d_model) multiplies the positions too: scale the token embedding first, then add the "
            "positional encoding.": assembled_logits(ref, tokens, scale_after_positions=True),
        }
        expect_close(got, want, "model(tokens)", mistakes=mistakes, atol=1e-4, rtol=1e-4)
    return "Your model computes the same logits as course_utils.gpt.DecoderOnly, with the same parameters."


# ----------------------------------------------------------------- 8.6 experiment: one layer or two
def reference_copy_gain(model: nn.Module, tokens: Tensor) -> float:
    """1 - (mean loss on the second copy) / (mean loss on the first copy), as in Exercise 8.6. Chapter 8."""
    from ..induction import copy_losses

    first, second = copy_losses(model, tokens)
    return 1.0 - second / first


LAYER_OPTIONS = {
    "one layer is enough": "a single attention layer also predicts the second copy",
    "two layers needed": "with one layer the second copy stays nearly as hard as the first",
    "neither learns it": "300 steps are too few for both",
}
# The ranges rest on the chapter's recipe (course_utils.induction.INDUCTION_RECIPE, 300 steps) run with
# seeds 0-7, on this machine's kernels and again with ATEN_CPU_CAPABILITY=default: one layer 0.20-0.28,
# two layers 0.65-0.79 (the same eight runs in both settings, within 0.02). Each bound leaves at least
# 0.1 of headroom (an untrained one-layer model gains about 0, below ONE_LAYER_GAIN's range);
# TWO_LAYER_GAIN's lower bound is also where the verdict says the two-layer model learnt it.
ONE_LAYER_GAIN = Expected(
    "copy gain of the one-layer attention-only model after 300 steps", 0.1, 0.45,
    "one layer cannot form an induction head: finding 'the token after the earlier occurrence of this token' "
    "needs a first layer that writes each token's predecessor into its position and a second layer that matches "
    "on it. What one layer can learn is where to look without knowing what to copy: in the second copy only "
    "the 12 tokens already seen occur, and spreading over them instead of all 24 gives 1 - ln 12 / ln 24, "
    "about 0.22.",
    above="Was the model really given one layer? The gain of the two-layer model is far higher.",
    below="An untrained model gains about 0: was your one-layer model trained, 300 steps as the two-layer one?",
)
TWO_LAYER_GAIN = Expected(
    "copy gain of the two-layer model after 300 steps", 0.55, 1.0,
    "the two-layer model predicts a repeat it has never seen: an induction head.",
    below="Measure the gain on the second copy against the first: 1 - second / first.",
)


@torch.no_grad()
def _copy_gain_mistakes(model: nn.Module, tokens: Tensor) -> dict[str, float]:
    """{hint: what that mistake returns} for Exercise 8.6 on one model."""
    import torch.nn.functional as F

    from ..induction import copy_losses, per_position_loss

    first, second = copy_losses(model, tokens)
    half = tokens.shape[1] // 2
    loss = per_position_loss(model, tokens)  # (2 half - 1,): loss[p] predicts token p + 1
    was_training = model.training
    model.eval()
    logits = model(tokens[:, :-1]).transpose(1, 2)  # (B, V, 2 half - 1)
    model.train(was_training)
    per_sequence = F.cross_entropy(logits, tokens[:, 1:], reduction="none")  # (B, 2 half - 1)
    unshifted = F.cross_entropy(logits, tokens[:, :-1], reduction="none").mean(0)  # (2 half - 1,): own token
    gain = 1 - second / first
    return {
        "You indexed the losses by token, not by the position that predicts it: loss[p] is the prediction "
        "of token p + 1, so the first copy's tokens 1..half-1 are loss[:half - 1] and the second copy's "
        "loss[half:].": 1 - float(loss[half + 1:].mean()) / float(loss[1:half].mean()),
        "The second copy's first token was counted: it follows nothing repeated yet, so skip it "
        "(loss[half:], not loss[half - 1:]).": 1 - float(loss[half - 1:].mean()) / first,
        "The first copy's first prediction is of its second token already: use loss[:half - 1] "
        "(you kept one prediction of the second copy).": 1 - second / float(loss[:half].mean()),
        "You skipped two predictions at the start of the second copy: loss[half] predicts its second token "
        "(half + 1), the first one worth counting, so take loss[half:].": 1 - float(loss[half + 1:].mean()) / first,
        "You dropped loss[0] from the first copy: it is the prediction of token 1, the first copy's second token, "
        "so the first copy is loss[:half - 1].": 1 - second / float(loss[1:half - 1].mean()),
        "You compared the second copy with the mean loss over the whole sequence: divide by the first copy's "
        "loss, loss[:half - 1].": 1 - second / float(loss.mean()),
        "You averaged 1 - second / first over the sequences: the gain is one ratio of the two mean losses, "
        "1 - (mean second) / (mean first).": float((1 - per_sequence[:, half:].mean(1)
                                                   / per_sequence[:, : half - 1].mean(1)).mean()),
        "Your losses score each position against its own token: the logits at position p predict token p + 1 "
        "(compare with tokens[:, 1:]).": 1 - float(unshifted[half:].mean()) / float(unshifted[: half - 1].mean()),
        "That is second / first; the gain is 1 - second / first (0: no help from the repeat, 1: perfect).":
            second / first,
        "The sign is flipped: that is second / first - 1; the gain is 1 - second / first.": -gain,
        "That is the gain in percent: return the fraction, 1 - second / first (between 0 and 1).": 100 * gain,
        "That is the difference of the losses in nats; divide by the first copy's loss.": first - second,
        "Compare the second copy with the first, not the other way round: 1 - second / first.":
            1 - first / second if second else math.inf,
    }


def _learner_one_layer(one_layer_model: Any, probe: Tensor) -> nn.Module | None:
    """The learner's one-layer model: a model, or a function that trains and returns one (None: not given).

    ``probe`` (1, T): one of the checker's sequences, run through the model so that a model that cannot
    run is named as such, not blamed on the learner's copy_gain.
    """
    from ..induction import AttentionOnly

    if one_layer_model is None:
        return None
    if isinstance(one_layer_model, nn.Module):
        return _runs_on(one_layer_model, probe)
    if not callable(one_layer_model):
        raise CheckFailed(f"one_layer_model must be your trained one-layer model or a function that returns it, got "
                          f"{describe(one_layer_model)}")
    model = call_student(one_layer_model, what="your one-layer model")
    if isinstance(model, tuple) and model and isinstance(model[0], AttentionOnly):
        raise CheckFailed("your one-layer model function returns a tuple: reference_attention_only returns (model, "
                          "losses); return the model, its first element.")
    if not isinstance(model, AttentionOnly):
        raise CheckFailed(f"your one-layer model should be the chapter's AttentionOnly model with one layer, trained "
                          f"as the two-layer one (reference_attention_only(n_layers=1) returns (model, losses)), got "
                          f"{describe(model)}")
    if len(model.attn) != 1:
        raise CheckFailed(f"your one-layer model has {len(model.attn)} layers: change that one thing, n_layers=1.")
    return _runs_on(model, probe)


def _runs_on(model: nn.Module, probe: Tensor) -> nn.Module:
    """``model``, after checking that its forward pass runs on ``probe`` (1, T), one of the checker's inputs."""
    try:
        with torch.no_grad():
            call_student(model, probe, what="your one-layer model's forward pass")
    except CheckFailed as failure:
        raise CheckFailed(f"{failure} Build it with reference_attention_only(n_layers=1) and train it as the "
                          "two-layer one.") from None
    return model


@checker("8.6", "one layer or two for induction")
def check_induction_layers(fn: Callable[[nn.Module, Tensor], Any], prediction: Any,
                           two_layer_model: nn.Module | None = None, one_layer_model: Any = None) -> str:
    """Record the prediction, check ``fn(model, tokens)`` measures the copy gain on the learner's one-layer model
    (``one_layer_model``: the model, or a function that trains and returns it; default: the chapter's recipe
    with one layer, course_utils.induction.INDUCTION_RECIPE, 300 steps) and the two-layer model (trained here
    unless given as ``two_layer_model``), and judge the two gains against the reference ranges."""
    from ..induction import copy_losses, reference_attention_only, repeated_sequences
    from .core import as_number, refuse_library
    from .experiment import compare_prediction, judge_range, read_prediction

    guess = read_prediction(prediction, LAYER_OPTIONS)
    refuse_library(fn, (copy_losses, reference_copy_gain),
                   "take the per-position losses from per_position_loss(model, tokens) and average each copy "
                   "yourself.")
    tokens = repeated_sequences(256, 12, 24, torch.Generator().manual_seed(99))  # (256, 24)
    one_layer_model = _learner_one_layer(one_layer_model, tokens[:1, :-1])  # (1, 23): what the model is fed
    models = {}
    for n_layers in (1, 2):
        given = two_layer_model if n_layers == 2 else one_layer_model
        models[n_layers] = given if given is not None else reference_attention_only(n_layers)[0]
    gots = {}
    for n, model in models.items():
        got = call_student(fn, model, tokens.clone(), what="your copy_gain")
        if isinstance(got, (tuple, list)) and len(got) == 2:
            raise CheckFailed("Your copy_gain returned two numbers (the two copies' losses?): return the one gain, "
                              "1 - second / first.")
        gots[n] = as_number(got, "copy_gain(model, tokens)")
        if math.isnan(gots[n]):
            raise CheckFailed(f"your copy_gain returned NaN on the {n}-layer model: is one of your two means taken "
                              "over an empty slice (check the index ranges of the two copies)?")
    wants = {n: reference_copy_gain(model, tokens) for n, model in models.items()}
    if abs(gots[1] - gots[2]) <= 1e-9 and abs(wants[1] - wants[2]) > 1e-3:
        raise CheckFailed("Your copy_gain returned the same number for two different models: it must measure "
                          "the model and tokens it is given, not return a fixed value.")
    gains = {}
    for n_layers in (2, 1):  # a mistake is told apart best on the model that learnt the repeat
        model, got, want = models[n_layers], gots[n_layers], wants[n_layers]
        if abs(got - want) > 1e-4:
            fail_on_mistake(got, _copy_gain_mistakes(model, tokens), lambda a, b: abs(a - b) <= 1e-4)
            raise CheckFailed(f"on the {n_layers}-layer model your gain is {got:.3f}, expected {want:.3f}, and none of "
                              "the usual slips gives your number: average the next-token loss over the predictions "
                              "inside each copy (loss[p] predicts token p + 1; skip each copy's first token), then "
                              "return 1 - second / first.")
        gains[n_layers] = got
    learnt = TWO_LAYER_GAIN.low
    outcome = ("neither learns it" if gains[2] < learnt else
               "one layer is enough" if gains[1] >= learnt else "two layers needed")
    # the quantity names whose model was measured: the learner's (trained as they chose) or the checker's
    ranges = {1: ONE_LAYER_GAIN, 2: TWO_LAYER_GAIN}
    for n, given in ((1, one_layer_model), (2, two_layer_model)):
        if given is not None:
            ranges[n] = dataclasses.replace(ranges[n], quantity=f"copy gain of your {'one' if n == 1 else 'two'}"
                                                                f"-layer model")
    return (f"{judge_range(gains[1], ranges[1], what='the one-layer gain', show=True)} "
            f"{judge_range(gains[2], ranges[2], what='the two-layer gain', show=True)} "
            f"{compare_prediction(guess, outcome)}")
