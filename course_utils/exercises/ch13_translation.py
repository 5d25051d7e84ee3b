"""Checkers for the exercises of Chapter 13 (translation: BPE, the length penalty, checkpoint averaging,
an experiment on what the length penalty changes and a transfer to French)."""

from __future__ import annotations

import functools
import math
import random
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from ..bpe import SPECIAL_TOKENS, WORD_START, BPETokenizer, encode_word, merge_word, merges_from_counts
from ..decoding import beam_search, length_penalty_factor
from ..translation import average_state_dicts, chrf_metric, number_name, pad
from .core import CheckFailed, as_int, as_number, call_student, checker, describe, refuse_library
from .experiment import compare_prediction, read_prediction

Pair = tuple[str, str]


def _lowered(prediction: Any) -> Any:
    """The prediction with case and surrounding spaces ignored ("Longer " reads as "longer")."""
    if callable(prediction):
        prediction = call_student(prediction, what="your prediction")
    return prediction.strip().lower() if isinstance(prediction, str) else prediction


# ---------------------------------------------------------------- 13.1 learning BPE merges
def _join_by_replace(symbols: tuple[str, ...], pair: Pair) -> tuple[str, ...]:
    """A plain ``str.replace`` on the space-separated symbols: also joins inside longer symbols (a mistake)."""
    return tuple(" ".join(symbols).replace(pair[0] + " " + pair[1], pair[0] + pair[1]).split(" "))


def _merges_variant(counts: dict[str, int], n_merges: int, weighted: bool = True, tie: str = "rank",
                    once_per_word: bool = False, min_count: int = 2, recount: bool = True,
                    replace: bool = False) -> list[Pair]:
    """A slow reference with switches that reproduce typical mistakes (recounts every step)."""
    words = {tuple(w): c for w, c in counts.items()}
    rank = {s: i for i, s in enumerate(SPECIAL_TOKENS)}
    for ch in sorted({ch for w in counts for ch in w}):
        rank[ch] = len(rank)
    merges: list[Pair] = []
    static: Counter[Pair] | None = None
    while len(merges) < n_merges:
        pairs: Counter[Pair] = Counter()  # insertion order: the order a learner's loop meets the pairs
        for symbols, c in words.items():
            seq = list(zip(symbols, symbols[1:], strict=False))
            for p in (dict.fromkeys(seq) if once_per_word else seq):
                pairs[p] += c if weighted else 1
        if not recount:  # counted once, before the first merge
            static = pairs if static is None else static
            pairs = Counter({p: n for p, n in static.items() if p not in merges})
        if not pairs:
            break
        if tie == "rank":
            pair, count = max(pairs.items(), key=lambda kv: (kv[1], -rank.get(kv[0][0], len(rank)),
                                                             -rank.get(kv[0][1], len(rank))))
        elif tie == "latest":
            pair, count = max(pairs.items(), key=lambda kv: (kv[1], rank.get(kv[0][0], -1),
                                                             rank.get(kv[0][1], -1)))
        elif tie == "longer":  # the longer joined symbol first, then the vocabulary order
            pair, count = max(pairs.items(), key=lambda kv: (kv[1], len(kv[0][0] + kv[0][1]),
                                                             -rank.get(kv[0][0], len(rank)),
                                                             -rank.get(kv[0][1], len(rank))))
        elif tie == "alphabetical":
            pair = min(pairs, key=lambda p: (-pairs[p], p))
            count = pairs[pair]
        else:  # the first pair met: max() keeps the first of equal keys
            pair = max(pairs, key=lambda p: pairs[p])
            count = pairs[pair]
        if count < min_count:
            break
        merges.append(pair)
        rank.setdefault(pair[0] + pair[1], len(rank))
        words = {(_join_by_replace(s, pair) if replace else merge_word(s, pair)): c for s, c in words.items()}
    return merges


def _number_counts(numbers: list[int]) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for n in numbers:
        for lang in ("en", "de"):
            counts.update(WORD_START + w for w in number_name(n, lang).split(" "))
    return dict(counts)


def _merge_cases() -> list[tuple[dict[str, int], int]]:
    rng = random.Random(13)
    return [
        ({"▁low": 5, "▁lower": 2, "▁newest": 6, "▁widest": 3}, 10),  # Sennrich et al.'s example
        ({"▁ab": 1, "▁ba": 1, "▁abab": 2}, 6),  # ties everywhere
        ({"▁aaaa": 3, "▁ba": 1}, 5),  # a pair twice in one word
        (_number_counts(rng.sample(range(10000), 60)), 40),
        (_number_counts(rng.sample(range(100), 30)), 25),
        ({"▁zwanzig": 1, "▁dreißig": 1}, 4),  # no pair occurs twice beyond the first merges
        ({"▁x": 3}, 0),
    ]


def _as_pairs(got: Any) -> list[Pair]:
    if not isinstance(got, (list, tuple)):
        raise CheckFailed(f"learn_merges should return a list of pairs (left, right), got {describe(got)}")
    out = []
    for i, p in enumerate(got):
        if isinstance(p, str):
            raise CheckFailed(f"merges[{i}] is the string {p!r}: return the pair of symbols that were joined, "
                              "such as ('u', 'nd'), not the joined string")
        if not (isinstance(p, (tuple, list)) and len(p) == 2 and all(isinstance(s, str) for s in p)):
            raise CheckFailed(f"merges[{i}] should be a pair of strings (left, right), got {describe(p)}")
        out.append((p[0], p[1]))
    return out


_TIE_RULE = ("Ties go to the pair whose left symbol came first in the vocabulary (special tokens, characters by "
             "code point, then merged symbols in the order they were made), then its right symbol")
MERGE_MISTAKES: dict[str, tuple[dict[str, Any], str]] = {
    "unweighted": ({"weighted": False}, "You count each distinct word once: a word that occurs c times "
                   "contributes c to each of its pairs."),
    "once_per_word": ({"once_per_word": True}, "You count a pair once per word even where it occurs twice "
                      "('aaaa' holds ('a', 'a') three times): count every adjacent position."),
    "count_once": ({"recount": False}, "You count the pairs once, before the first merge: recount them after "
                   "every merge, because a merge creates new pairs (('e', 's') then ('es', 't'))."),
    "replace": ({"replace": True}, "You join a pair with a plain str.replace on the space-separated symbols, "
                "which also matches inside longer symbols ('a b' inside 'aa b'): join whole symbols only."),
    "alphabetical": ({"tie": "alphabetical"}, _TIE_RULE + ", not the alphabetically first pair."),
    "first_seen": ({"tie": "first"}, _TIE_RULE + ", not the first pair your loop met (max() and "
                   "most_common() keep the first of equal counts)."),
    "longer": ({"tie": "longer"}, _TIE_RULE + "; the length of the joined symbol plays no part (you prefer the "
               "longer one)."),
    "latest": ({"tie": "latest"}, _TIE_RULE + ": you take the one that came last (check the sign in your key)."),
    "no_stop": ({"min_count": 1}, "Stop when the most frequent pair occurs fewer than 2 times: a merge seen "
                "once compresses nothing."),
    "stop_at_two": ({"min_count": 3}, "You stop when the best pair occurs 2 times; stop only below 2 (a pair "
                    "seen twice is still merged)."),
}


def _named_mistake(got: list[Any], cases: list[Any], variants: dict[str, tuple[Callable[..., Any], str]]) -> str | None:
    """The hint of the first variant that reproduces the learner's output on every case, if any."""
    for fn, hint in variants.values():
        if all(g == fn(*case) for g, case in zip(got, cases, strict=True)):
            return hint
    return None


@checker("13.1", "learning BPE merges")
def check_learn_merges(fn: Callable[[dict[str, int], int], list[Pair]]) -> str:
    """Check ``fn(counts, n_merges)`` against :func:`course_utils.bpe.merges_from_counts`."""
    refuse_library(fn, (merges_from_counts, BPETokenizer),
                    "count the pairs and join them yourself (dicts and loops are enough).")
    cases = _merge_cases()
    got_all = []
    for counts, n in cases:
        given = dict(counts)
        got = _as_pairs(call_student(fn, given, n, what="your learn_merges"))
        if given != counts:
            raise CheckFailed("Your learn_merges changed the counts it was given in place (popped or rewrote "
                              "words): copy them into your own dict of symbol tuples first.")
        got_all.append(got)
    wants = [merges_from_counts(counts, n) for counts, n in cases]
    if got_all == wants:
        return "Your merges equal the tokenizers-compatible reference on every test corpus."
    variants = {key: ((lambda c, n, kw=kw: _merges_variant(c, n, **kw)), hint)
                for key, (kw, hint) in MERGE_MISTAKES.items()}
    hint = _named_mistake(got_all, cases, variants)
    if hint:
        raise CheckFailed(hint)
    crossing = next(((a, b) for got in got_all for a, b in got if WORD_START in (a + b)[1:]), None)
    if crossing:
        raise CheckFailed(f"Your merge {crossing} joins the end of one word to the start of the next: a merge never "
                          "crosses a word boundary. Count pairs inside each word of counts separately.")
    k = next(k for k in range(len(cases)) if got_all[k] != wants[k])
    (counts, n), got, want = cases[k], got_all[k], wants[k]
    if len(got) != len(want) and got[: len(want)] == want[: len(got)]:
        raise CheckFailed(f"With n_merges={n} on {len(counts)} words you return {len(got)} merges, expected "
                          f"{len(want)}. Learn exactly n_merges, or fewer only when no pair occurs twice.")
    i = next(i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b)
    raise CheckFailed(f"On {len(counts)} words, merge {i + 1} is {got[i]}, expected {want[i]}: after the first {i} "
                      "merges that pair is the most frequent (weighted by word count), or wins the tie by the "
                      "vocabulary order. Print your pair counts at that step.")


# ---------------------------------------------------------------- 13.2 encoding with merges
def _encode_one_pass(word: str, merges: list[Pair]) -> list[str]:
    symbols: tuple[str, ...] = tuple(word)
    for pair in merges:  # each merge once, first occurrence only
        for i in range(len(symbols) - 1):
            if symbols[i : i + 2] == pair:
                symbols = symbols[:i] + (pair[0] + pair[1],) + symbols[i + 2 :]
                break
    return list(symbols)


def _encode_longest(word: str, merges: list[Pair]) -> list[str]:
    vocab = set(word) | {a + b for a, b in merges}
    out, i = [], 0
    while i < len(word):
        j = max(k for k in range(i + 1, len(word) + 1) if word[i:k] in vocab or k == i + 1)
        out.append(word[i:j])
        i = j
    return out


def _encode_replay(word: str, merges: list[Pair]) -> list[str]:
    symbols: tuple[str, ...] = tuple(word)
    for pair in merges:
        symbols = merge_word(symbols, pair)
    return list(symbols)


def _encode_reverse(word: str, merges: list[Pair]) -> list[str]:
    return encode_word(word, list(reversed(merges)))


def _encode_reverse_replay(word: str, merges: list[Pair]) -> list[str]:
    return _encode_replay(word, list(reversed(merges)))


def _encode_leftmost_any(word: str, merges: list[Pair]) -> list[str]:
    known = set(merges)
    symbols = list(word)
    while True:
        i = next((i for i in range(len(symbols) - 1) if (symbols[i], symbols[i + 1]) in known), None)
        if i is None:
            return symbols
        symbols[i : i + 2] = [symbols[i] + symbols[i + 1]]


def _encode_rightmost(word: str, merges: list[Pair]) -> list[str]:
    rank = {p: r for r, p in reversed(list(enumerate(merges)))}
    symbols = list(word)
    while True:
        found = [(rank[p], -i) for i, p in enumerate(zip(symbols, symbols[1:], strict=False)) if p in rank]
        if not found:
            return symbols
        i = -min(found)[1]
        symbols[i : i + 2] = [symbols[i] + symbols[i + 1]]


def _encode_cases() -> list[tuple[str, list[Pair]]]:
    rng = random.Random(7)
    numbers = rng.sample(range(10000), 400)
    merges = merges_from_counts(_number_counts(numbers), 120)
    words = [WORD_START + w for n in rng.sample(range(10000), 40) for lang in ("en", "de")
             for w in number_name(n, lang).split(" ")]
    toy = merges_from_counts({"▁low": 5, "▁lower": 2, "▁newest": 6, "▁widest": 3}, 10)
    cases = [(w, merges) for w in words] + [(w, toy) for w in ("▁lowest", "▁newer", "▁wider", "▁l", "▁")]
    cases += [("▁aaaaa", [("a", "a"), ("aa", "a")]), ("▁abc", [("b", "c"), ("a", "b")])]
    return cases


ENCODE_MISTAKES: dict[str, tuple[Callable[[str, list[Pair]], list[str]], str]] = {
    "characters": (lambda w, m: list(w), "Your words come back as single characters: apply the merges."),
    "one_pass": (_encode_one_pass, "You apply each merge only at its first occurrence; join every occurrence "
                 "(left to right) of a pair before moving on."),
    "reverse": (_encode_reverse, "You apply the merges in reverse order; the first merge learned goes first."),
    "reverse_replay": (_encode_reverse_replay, "You replay the merges in reverse order; the first merge learned "
                       "goes first."),
    # joining the leftmost learned pair and joining the one that makes the longest symbol split words alike
    "leftmost_any": (_encode_leftmost_any, "You choose the pair to join by where it is (leftmost) or by the size of "
                     "the symbol it makes, not by its rank: BPE joins the pair that was learned earliest first, "
                     "wherever it is in the word."),
    "rightmost": (_encode_rightmost, "You join the earliest-learned pair at its rightmost occurrence; start from "
                  "the left ('aaa' with the merge ('a', 'a') is 'aa' + 'a')."),
    "longest": (_encode_longest, "You take the longest known token from the left (WordPiece-style); BPE replays "
                "the merges in the order they were learned, which can split differently."),
}


@checker("13.2", "encoding a word with the merges")
def check_encode_word(fn: Callable[[str, list[Pair]], list[str]]) -> str:
    """Check ``fn(word, merges)`` returns the BPE symbols of ``word`` (merges applied in the order learned)."""
    refuse_library(fn, (encode_word, merge_word, BPETokenizer),
                    "start from list(word) and join pairs yourself, by their rank in merges.")
    cases = _encode_cases()
    got_all = []
    for word, merges in cases:
        given = list(merges)
        got = call_student(fn, word, given, what="your encode_word")
        if given != merges:
            raise CheckFailed("Your encode_word changed the list of merges it was given in place (pop() or "
                              "del?): the same merges encode every word, so read them without consuming them.")
        if isinstance(got, str) or not isinstance(got, (list, tuple)) or not all(isinstance(s, str) for s in got):
            raise CheckFailed(f"encode_word should return a list of strings (the symbols), got {describe(got)}")
        got = list(got)
        if "".join(got) != word:
            if "".join(got) == word.lstrip(WORD_START) and word != WORD_START:
                raise CheckFailed(f"The symbols {got} drop the word marker of {word!r}: '▁' is a character of "
                                  "the word like any other, and merges join it ('▁t', '▁thirty').")
            raise CheckFailed(f"The symbols {got} do not spell the word {word!r} again: every character must end "
                              "up in exactly one symbol, in order.")
        got_all.append(got)
    wants = [encode_word(w, m) for w, m in cases]
    if got_all == wants:
        return "Every word splits as the merges dictate, and the symbols spell the word again."
    hint = _named_mistake(got_all, cases, ENCODE_MISTAKES)
    if hint:
        raise CheckFailed(hint)
    k = next(k for k in range(len(cases)) if got_all[k] != wants[k])
    raise CheckFailed(f"{cases[k][0]!r} with these merges should split into {wants[k]}, got {got_all[k]}: join "
                      "the earliest-learned pair present, at its leftmost occurrence, until no learned pair is left.")


# ---------------------------------------------------------------- 13.3 the length penalty (derive)
def _lp(length: float, alpha: float) -> float:
    return ((5 + length) / 6) ** alpha


def _break_even_alpha(logp_short: float, len_short: int, logp_long: float, len_long: int) -> float:
    """The alpha at which the GNMT-penalised scores of the two hypotheses are equal (reference)."""
    return math.log(logp_short / logp_long) / math.log((5 + len_short) / (5 + len_long))


@checker("13.3", "the alpha where a longer hypothesis starts to win")
def check_break_even_alpha(fn: Callable[[float, int, float, int], float]) -> str:
    """Check ``fn(logp_short, len_short, logp_long, len_long)`` returns the break-even alpha."""
    rng = random.Random(3)
    cases = [(-1.2, 4, -1.5, 8), (-0.3, 3, -0.9, 12)]
    for _ in range(6):
        ls, ll = rng.randint(2, 8), rng.randint(9, 30)
        s = -rng.uniform(0.1, 3.0)
        cases.append((s, ls, s * rng.uniform(1.05, 2.5), ll))
    for s, ls, l_, ll in cases:
        want = _break_even_alpha(s, ls, l_, ll)
        try:
            raw = call_student(fn, s, ls, l_, ll, what="your break_even_alpha")
        except CheckFailed as failure:
            if "math domain error" in str(failure):
                raise CheckFailed("Your code takes the logarithm of a negative number: log-probabilities are "
                                  "negative, so take the log of their ratio, log(s / l), which is positive.") from None
            raise
        got = as_number(raw, "the alpha")
        if math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-9):
            continue
        if math.isclose(got, 0.6, rel_tol=1e-9):
            raise CheckFailed("You return 0.6, the paper's alpha: compute the break-even alpha from the four "
                              "arguments (it changes with them).")
        if math.isclose(got, -want, rel_tol=1e-6):
            raise CheckFailed("Your alpha has the wrong sign: the log-probabilities are negative, so dividing "
                              "by a larger penalty raises a score; check which ratio goes on top.")
        power = math.log(s / l_) / math.log(ls / ll)
        if math.isclose(got, power, rel_tol=1e-6) or math.isclose(got, -power, rel_tol=1e-6):
            raise CheckFailed("This is the alpha for the penalty length ** alpha; the paper's penalty is "
                              "((5 + length) / 6) ** alpha (Wu et al., 2016): keep the 5.")
        if want and math.isclose(got, 1 / want, rel_tol=1e-6):
            raise CheckFailed("You return 1 / alpha: from s / l = ((5 + a) / (5 + b)) ** alpha, alpha is "
                              "log(s / l) divided by log((5 + a) / (5 + b)), not the other way round.")
        shifted = [math.log(s / l_) / math.log((5 + ls + d) / (5 + ll + d)) for d in (-1, 1)]
        if any(math.isclose(got, x, rel_tol=1e-6) for x in shifted):
            raise CheckFailed("Your lengths are off by one: the penalty uses the lengths you are given, "
                              "lp(L) = ((5 + L) / 6) ** alpha with L = a and L = b, not L - 1 or L + 1.")
        if math.isclose(abs(got), abs((s - l_) / math.log((5 + ls) / (5 + ll))), rel_tol=1e-6):
            raise CheckFailed("You use the difference of the log-probabilities, s - l: the penalty divides a "
                              "log-probability, so compare the scores by their ratio, log(s / l).")
        raise CheckFailed(f"For log-probabilities {s:.3f} (length {ls}) and {l_:.3f} (length {ll}) the scores "
                          f"s / lp(len) are equal at alpha = {want:.4f}, got {got:.4f}. Set the two penalised "
                          "scores equal and solve for alpha with a logarithm.")
    return (f"With alpha = 0.6, a hypothesis of 8 tokens beats one of 4 tokens when its log-probability is less "
            f"than {_lp(8, 0.6) / _lp(4, 0.6):.2f} times as negative.")


# ---------------------------------------------------------------- 13.4 checkpoint averaging
def _states(seed: int, k: int, shapes: dict[str, tuple[int, ...]]) -> list[dict[str, Tensor]]:
    g = torch.Generator().manual_seed(seed)
    return [{name: torch.randn(shape, generator=g) for name, shape in shapes.items()} for _ in range(k)]


@checker("13.4", "averaging checkpoints")
def check_average_checkpoints(fn: Callable[[list[dict[str, Tensor]]], dict[str, Tensor]]) -> str:
    """Check ``fn(states)`` returns the element-wise mean of a list of state dicts, inputs untouched."""
    refuse_library(fn, (average_state_dicts,), "add the tensors of every checkpoint and divide yourself.")
    shapes = {"embed.weight": (7, 4), "layer.bias": (4,), "norm.gamma": (4,)}
    for seed, k in ((0, 5), (1, 2), (2, 1), (3, 3)):
        states = _states(seed, k, shapes)
        copies = [{n: t.clone() for n, t in s.items()} for s in states]
        got = call_student(fn, states, what="your average_checkpoints")
        for s, c in zip(states, copies, strict=True):
            if any(not torch.equal(s[n], c[n]) for n in s):
                raise CheckFailed("Your function changed the checkpoints it was given in place (a += or "
                                  ".add_ on the tensors of states[0]?): build new tensors for the average.")
        if not isinstance(got, dict):
            raise CheckFailed(f"average_checkpoints should return a state dict (a dict of tensors), "
                              f"got {describe(got)}")
        if set(got) != set(shapes):
            raise CheckFailed(f"The average should have the same keys as the checkpoints {sorted(shapes)}, "
                              f"got {sorted(got)}")
        want = {n: torch.stack([s[n] for s in states]).mean(0) for n in shapes}
        for n in shapes:
            t = got[n]
            stacked = torch.stack([s[n] for s in states])
            if isinstance(t, Tensor) and t.numel() == 1 and torch.allclose(t.float(), stacked.mean(), atol=1e-6):
                raise CheckFailed(f"{n!r} is one number, the mean of all its elements: average over the "
                                  "checkpoints only (stack them on a new dim 0 and take mean(dim=0)).")
            if (isinstance(t, Tensor) and len(shapes[n]) > 1 and tuple(t.shape) == shapes[n][1:]
                    and torch.allclose(t, torch.cat([s[n] for s in states]).mean(0), atol=1e-6)):
                raise CheckFailed(f"{n!r} has lost its first dimension: torch.cat joins the checkpoints along "
                                  "an existing dim; torch.stack puts them on a new dim 0 to average over.")
            if not isinstance(t, Tensor) or tuple(t.shape) != shapes[n]:
                raise CheckFailed(f"{n!r} should be a tensor of shape {shapes[n]}, got {describe(t)}")
            if torch.allclose(t, want[n], atol=1e-6):
                continue
            if torch.allclose(t, want[n] * k, atol=1e-5):
                raise CheckFailed("You return the sum of the checkpoints: divide by their number.")
            if torch.allclose(t, states[-1][n]):
                raise CheckFailed("You return the last checkpoint: average all of them.")
            if k > 1 and torch.allclose(t, (states[0][n] + states[-1][n]) / 2, atol=1e-6):
                raise CheckFailed("You average only the first and the last checkpoint: every one counts.")
            if k > 2 and torch.allclose(t, torch.stack([s[n] for s in states[-2:]]).mean(0), atol=1e-6):
                raise CheckFailed("You average only the last two checkpoints: every one in the list counts.")
            if len(shapes) != k and torch.allclose(t, want[n] * k / len(shapes), atol=1e-5):
                raise CheckFailed(f"You divide by the number of tensors in one checkpoint ({len(shapes)}), not "
                                  f"by the number of checkpoints ({k}): use len(states).")
            running = states[0][n]
            for s in states[1:]:
                running = (running + s[n]) / 2
            if k > 2 and torch.allclose(t, running, atol=1e-6):
                raise CheckFailed("You halve a running average at every checkpoint ((avg + s) / 2), which weights "
                                  "the last checkpoints most: sum all of them and divide once by their number.")
            raise CheckFailed(f"{n!r} is not the element-wise mean of the {k} checkpoints: add the tensors of "
                              "every checkpoint and divide by how many there are.")
        if any(got[n] is s[n] for s in states for n in shapes):
            raise CheckFailed("Your average hands back a tensor of one of the inputs: return new tensors.")
    return "Your average equals the element-wise mean and leaves the checkpoints unchanged."


# ---------------------------------------------------------------- 13.5 experiment: what the length penalty changes
Winner = tuple[str, int, float]  # (output text, len(ids) with the end token, log-probability)
Change = tuple[Winner, Winner, float]  # (at_0, at_2, break-even alpha of the pair)

CHANGE_OPTIONS = {
    "none": "none of the outputs changes",
    "a few, closer": "a few outputs (at most half) change, and most new winners are closer to the reference",
    "a few, further": "a few outputs (at most half) change, and most new winners are further from the reference",
    "most, closer": "most outputs (more than half) change, and most new winners are closer to the reference",
    "most, further": "most outputs (more than half) change, and most new winners are further from the reference",
}
_HOW_MANY_WHY = ("A penalty hands the win to another output only where a longer finished hypothesis comes close to "
                 "the best one in log-probability (its break-even alpha below 2); where the best output leads by "
                 "a wide margin, as on most of these numbers, alpha 2 does not move it.")
_NONE_WHY = ("Some outputs do change: where a longer finished hypothesis comes close enough to the best one in "
             "log-probability (its break-even alpha below 2), alpha 2 hands it the win, as in the example above.")
_CLOSER_WHY = ("At alpha 0 some winners here stop early ('zehn' for 10149); a longer output keeps more pieces of "
               "the long reference name, and chrF, which weights recall twice as much as precision, rewards that "
               "even when the output is still wrong.")
ALPHAS = (0.0, 2.0)
# Numbers beyond the training range that the checker asks about (as English names): 10149, 11630, 30108 and
# 56812 change their beam-4 output between alpha 0 and alpha 2, the other eight do not. The second call, which
# catches answers written into the code, draws two numbers of CHANGE_POOL (each changes its output) and one of
# STABLE_POOL (none does) afresh at every call. For every number here the best two finished hypotheses differ
# in score by at least 0.02 at both alphas, so the same outputs change on every CPU, and every change is to a
# longer, less probable output (tests/test_exercises_ch13.py checks all three).
CHANGE_NUMBERS = (10149, 11630, 27068, 30108, 34823, 37242, 56812, 76576, 80816, 91954, 95899, 99206)
CHANGE_POOL = (10217, 10273, 30139, 30950, 33503, 46309, 46756, 48691, 53258, 54695, 57008, 69198, 69838, 75293,
               79538, 97109)
STABLE_POOL = (21549, 23610, 27765, 28209, 32369, 43278, 45447, 61849, 62468, 71595, 72440, 87283)


def _second_sources(rng: random.Random | None = None) -> list[str]:
    """The second call's sources: two of CHANGE_POOL and one of STABLE_POOL, drawn afresh (system entropy)."""
    rng = rng or random.Random()
    numbers = rng.sample(CHANGE_POOL, 2) + rng.sample(STABLE_POOL, 1)
    rng.shuffle(numbers)
    return [number_name(n, "en") for n in numbers]


def _beam_winner(model: Any, tokenizer: BPETokenizer, text: str, alpha: float, penalty: str = "gnmt",
                beam_size: int = 4) -> tuple[Winner, float]:
    """Reference: the beam-search winner for ``text`` as (output, len(ids), log-probability), and its score."""
    src = pad([tokenizer.encode(text)])  # (1, T_src)
    ids, score = beam_search(model, src, max_len=src.shape[1] + 50, beam_size=beam_size, length_penalty=alpha,
                             penalty=penalty)[0]
    return (tokenizer.decode(ids), len(ids), score * length_penalty_factor(len(ids), alpha, penalty)), score


def _shipped_model() -> tuple[Any, BPETokenizer]:
    """The chapter's shipped model and its tokenizer, loaded afresh (the learner's code gets its own copy)."""
    from ..runs.translation import load_translation

    model, tokenizer, _ = load_translation()
    return model, tokenizer


_REFERENCE: dict[tuple[str, float, str, int], Winner] = {}


@functools.cache
def _reference_model() -> tuple[Any, BPETokenizer]:
    """The checker's own copy of the shipped model, which no learner's code ever receives."""
    return _shipped_model()


def _reference_winner(text: str, alpha: float, penalty: str = "gnmt", beam_size: int = 4) -> Winner:
    """:func:`_beam_winner` on the checker's own model, each decoding done once per session."""
    key = (text, alpha, penalty, beam_size)
    if key not in _REFERENCE:
        _REFERENCE[key] = _beam_winner(*_reference_model(), text, alpha, penalty, beam_size)[0]
    return _REFERENCE[key]


def _read_change_prediction(prediction: Any) -> str:
    """The learner's prediction as a key of CHANGE_OPTIONS ("A few; closer.", "None at all" and a count of the 12,
    "4, closer", read as keys)."""
    said = _lowered(prediction)
    if isinstance(said, str):
        words = re.findall(r"[a-z]+", said)
        how_many = [w for w in words if w in ("none", "few", "most")]
        counts = re.findall(r"\d+(?![\d.]*\s*%)", re.sub(r"(?:of(?: the)?|/)\s*12\b", "", said))  # "4 of 12": 4
        if not how_many and len(counts) == 1 and int(counts[0]) <= len(CHANGE_NUMBERS):  # "4, closer": a count
            n = int(counts[0])
            how_many = ["none" if n == 0 else "few" if 2 * n <= len(CHANGE_NUMBERS) else "most"]
        direction = ["further" if w == "farther" else w for w in words if w in ("closer", "further", "farther")]
        if how_many == ["none"] and len(direction) <= 1:
            said = "none"
        elif len(how_many) == 1 and len(direction) == 1 and "not" not in words:
            said = f"{'a few' if how_many[0] == 'few' else how_many[0]}, {direction[0]}"
    return read_prediction(said, CHANGE_OPTIONS)


def _as_winner(x: Any, where: str) -> Winner:
    if not isinstance(x, (tuple, list)) or len(x) != 3:
        raise CheckFailed(f"{where} should be (output, length, log_prob), got {describe(x)}")
    output, length, log_prob = x
    if not isinstance(output, str):
        raise CheckFailed(f"In {where} the output should be the German text, tok.decode(ids), got {describe(output)}")
    return output, as_int(length, f"the length in {where}"), as_number(log_prob, f"the log_prob in {where}")


def _change_records(got: Any, sources: list[str]) -> dict[str, Change]:
    """The learner's list as {source: (at_0, at_2, alpha_star)}, every entry checked for its form."""
    if not isinstance(got, (list, tuple)):
        raise CheckFailed("alpha_changes should return a list of (source, at_0, at_2, alpha_star) entries, one per "
                          f"source whose output changes, got {describe(got)}")
    records: dict[str, Change] = {}
    for i, entry in enumerate(got):
        if isinstance(entry, dict):
            raise CheckFailed(f"Entry {i} of your list is a dict with the keys {sorted(map(str, entry))}: make each "
                              "entry the tuple (source, at_0, at_2, alpha_star), in that order.")
        if isinstance(entry, (tuple, list)) and len(entry) == 3:
            raise CheckFailed(f"Entry {i} of your list has three parts: add the fourth, alpha_star, the break-even "
                              "alpha of the two winners from your break_even_alpha of Exercise 13.3, to make it "
                              "(source, at_0, at_2, alpha_star).")
        if not isinstance(entry, (tuple, list)) or len(entry) != 4:
            raise CheckFailed(f"Entry {i} of your list should be (source, at_0, at_2, alpha_star), got "
                              f"{describe(entry)}")
        text = entry[0]
        if not isinstance(text, str) or text not in sources:
            raise CheckFailed(f"Entry {i} starts with {describe(text)}, which is not one of the sources you were "
                              "given: start each entry with the English source text, exactly as given.")
        if text in records:
            raise CheckFailed(f"{text!r} appears twice in your list: one entry per source.")
        records[text] = (_as_winner(entry[1], f"the at_0 of {text!r}"), _as_winner(entry[2], f"the at_2 of {text!r}"),
                         as_number(entry[3], f"the alpha_star of {text!r}"))
    return records


_GREEDY = ("greedy output (beam size 1, as translate() decodes by default), which has no length penalty: decode "
           "with beam_size=4.")
_POWER = ("beam_search's default penalty, Chapter 6's length ** alpha: pass penalty=\"gnmt\" for the paper's "
          "((5 + length) / 6) ** alpha.")
_PAPER_ALPHA = "alpha 0.6, the paper's value: this experiment compares alpha 0 with alpha 2."


def _explain_output(text: str, alpha: float, got: str, ref: Callable[..., Winner]) -> None:
    """Raise the hint for an output that is not the beam-4 winner at ``alpha`` (GNMT penalty)."""
    where = f"For {text!r} your output at alpha {alpha:g}, {got!r},"
    if got == ref(text, 2.0 - alpha)[0]:
        raise CheckFailed(f"{where} is the winner at alpha {2.0 - alpha:g}: pass length_penalty=alpha to "
                          "beam_search for each of the two runs (the entry is (source, at_0, at_2)).")
    if got == ref(text, 0.0, beam_size=1)[0]:
        raise CheckFailed(f"{where} is the {_GREEDY}")
    if alpha and got == ref(text, alpha, penalty="power")[0]:
        raise CheckFailed(f"{where} comes from {_POWER}")
    if alpha and got == ref(text, 0.6)[0]:
        raise CheckFailed(f"{where} is the winner at {_PAPER_ALPHA}")
    raise CheckFailed(f"{where} is not the winner of beam_search with beam_size=4, penalty=\"gnmt\" and "
                      f"length_penalty={alpha:g}: decode each source once per alpha and take hyps[0].")


def _explain_choice(chosen: set[str], sources: list[str], ref: Callable[..., Winner]) -> None:
    """Raise a hint when the learner's set of sources is the one a typical wrong decoding would find."""
    variants = (
        (lambda s: ref(s, 0.0, beam_size=1)[0] != ref(s, 2.0)[0], f"at alpha 0 you compare with the {_GREEDY}"),
        (lambda s: ref(s, 0.0)[0] != ref(s, 0.6)[0], f"you compare with the winners at {_PAPER_ALPHA}"),
        (lambda s: ref(s, 0.0)[0] != ref(s, 2.0, penalty="power")[0], f"at alpha 2 you use {_POWER}"),
    )
    for differs, hint in variants:
        if chosen == {s for s in sources if differs(s)}:
            raise CheckFailed(f"Your list holds the sources whose output changes if {hint}")


def _explain_length(where: str, got: int, want: Winner) -> None:
    output, length, _ = want
    if got == length:
        return
    if got == length - 1:
        raise CheckFailed(f"The length in {where} leaves out the end token: the penalty counts len(ids), the "
                          "end-of-sentence token included.")
    if got == length + 1:
        raise CheckFailed(f"The length in {where} counts one token too many (the start token?): use len(ids) "
                          "of the hypothesis beam_search returns.")
    if got == len(output):
        raise CheckFailed(f"The length in {where} counts characters; the penalty counts tokens: len(ids).")
    raise CheckFailed(f"The length in {where} should be len(ids) of the winning hypothesis, the end token "
                      "included: the length the penalty counts.")


def _explain_log_prob(where: str, alpha: float, got: float, want: Winner) -> None:
    _, length, log_prob = want

    def same(x: float) -> bool:
        return math.isclose(got, x, rel_tol=1e-4, abs_tol=1e-3)

    if same(log_prob):
        return
    lp = length_penalty_factor(length, alpha, "gnmt")
    score = log_prob / lp
    if alpha and same(score):
        raise CheckFailed(f"The log_prob in {where} is beam_search's score, the log-probability divided by the "
                          "penalty: undo it, log_prob = score * ((5 + len(ids)) / 6) ** alpha.")
    if alpha and same(score / lp):
        raise CheckFailed(f"The log_prob in {where} divides the score by the penalty once more; to undo a "
                          "division, multiply: log_prob = score * ((5 + len(ids)) / 6) ** alpha.")
    undone_wrong = (score * length_penalty_factor(length, alpha, "power"),
                    score * length_penalty_factor(max(length - 1, 1), alpha, "gnmt"))
    if alpha and any(same(x) for x in undone_wrong):
        raise CheckFailed(f"The log_prob in {where} undoes another penalty than the one beam_search applied: "
                          "multiply the score by ((5 + len(ids)) / 6) ** alpha, with the end token counted.")
    if same(-log_prob):
        raise CheckFailed(f"The log_prob in {where} has the wrong sign: a log-probability is at most 0.")
    if same(math.exp(log_prob)):
        raise CheckFailed(f"The log_prob in {where} is a probability: report its logarithm, the sum of the "
                          "tokens' log-probabilities.")
    if same(log_prob / length):
        raise CheckFailed(f"The log_prob in {where} is a mean per token: report the sum over the tokens, which "
                          "is what beam search compares.")
    raise CheckFailed(f"The log_prob in {where} is not the log-probability of that output: it is "
                      "score * ((5 + len(ids)) / 6) ** alpha for the score beam_search returns with it.")


def _undefined(f: Callable[[], float]) -> float:
    """``f()``, or NaN where a wrong formula takes the logarithm of a negative number or divides by zero."""
    try:
        return f()
    except (ValueError, ZeroDivisionError):
        return math.nan


def _explain_break_even(text: str, got: float, at0: Winner, at2: Winner) -> None:
    """Raise the hint for an alpha_star that is not the break-even alpha of the entry's two (checked) winners."""
    (_, a, s), (_, b, l_) = at0, at2
    want = _break_even_alpha(s, a, l_, b)

    def same(x: float) -> bool:
        return math.isfinite(x) and math.isclose(got, x, rel_tol=1e-4, abs_tol=1e-6)

    if same(want):
        return
    where = f"The alpha_star of {text!r}, {got:.4g},"
    call = ("call break_even_alpha(s, a, l, b) with s and a the log_prob and length of at_0, l and b those of at_2 "
            f"(here {s:.3f}, {a}, {l_:.3f}, {b})")
    call_sentence = call[0].upper() + call[1:]  # the same advice as a sentence of its own
    if not math.isfinite(got):
        raise CheckFailed(f"{where} is not a finite number: {call}.")
    if same(-want):
        raise CheckFailed(f"{where} is negative: you swapped one pair only, the two lengths or the two "
                          f"log-probabilities, so the longer output would win below it. {call_sentence}.")
    if same(2.0) or same(0.6):
        raise CheckFailed(f"{where} is an alpha you decode with, not the break-even alpha of the two winners, which "
                          f"follows from their lengths and log-probabilities: {call}.")
    if same(_break_even_alpha(s, a, l_ / _lp(b, 2.0), b)):
        raise CheckFailed(f"{where} comes from at_2's score, the log-probability divided by the penalty at alpha 2: "
                          "give break_even_alpha the log-probabilities, the penalty undone, as in your at_0 and at_2.")
    if same(_undefined(lambda: math.log(a / b) / math.log((5 + s) / (5 + l_)))):
        raise CheckFailed(f"{where} passes each winner as (length, log_prob): Exercise 13.3's order is "
                          f"(log-probability, length) per hypothesis. {call_sentence}.")
    if same(_undefined(lambda: math.log(s / l_) / math.log(a / b))):
        raise CheckFailed(f"{where} is the break-even alpha of the penalty length ** alpha: your break_even_alpha "
                          "leaves out the 5 of ((5 + length) / 6) ** alpha (run Exercise 13.3's checker on it).")
    def shifted(d: int) -> float:
        return _undefined(lambda: math.log(s / l_) / math.log((5 + a + d) / (5 + b + d)))

    if same(shifted(-1)) or same(shifted(1)):
        raise CheckFailed(f"{where} shifts both lengths by one: pass len(ids) as it is, the end token included, "
                          "the length the penalty counts.")
    if same(_undefined(lambda: math.log((s / a) / (l_ / b)) / math.log((5 + a) / (5 + b)))):
        raise CheckFailed(f"{where} uses log-probabilities per token: pass the sums, log_prob as in the entry.")
    if want and same(1 / want):
        raise CheckFailed(f"{where} is 1 / alpha: your break_even_alpha divides log((5 + a) / (5 + b)) by log(s / l), "
                          "the other way round (run Exercise 13.3's checker on it).")
    if same(_undefined(lambda: (s - l_) / math.log((5 + a) / (5 + b)))):
        raise CheckFailed(f"{where} uses the difference of the log-probabilities, s - l: the penalty divides a "
                          "log-probability, so your break_even_alpha should take log(s / l) (Exercise 13.3).")
    if got >= 2:
        raise CheckFailed(f"{where} is at or above 2, yet the longer output won at alpha 2, so the two penalised "
                          f"scores cross below 2: {call}.")
    raise CheckFailed(f"{where} should be {want:.4f}, the alpha at which at_0 and at_2 score the same: {call}.")


def _check_changes(records: dict[str, Change], sources: list[str], ref: Callable[..., Winner]) -> None:
    """Compare the learner's entries with the checker's own beam search on the same sources."""
    for text, (at0, at2, _) in records.items():
        want0, want2 = ref(text, 0.0), ref(text, 2.0)
        if want0[0] != want2[0] and (at0[0], at2[0]) == (want2[0], want0[0]):
            raise CheckFailed(f"For {text!r} your at_0 is the winner at alpha 2 and your at_2 the one at alpha 0: "
                              "an entry is (source, the winner at alpha 0, the winner at alpha 2, alpha_star).")
        for alpha, got, want in ((0.0, at0, want0), (2.0, at2, want2)):
            if got[0] != want[0]:
                _explain_output(text, alpha, got[0], ref)
    changed = [s for s in sources if ref(s, 0.0)[0] != ref(s, 2.0)[0]]
    extra = [s for s in records if s not in changed]
    missing = [s for s in changed if s not in records]
    if extra and len(records) == len(sources):
        raise CheckFailed("You report every source; keep only those whose decoded output at alpha 2 differs from "
                          "the one at alpha 0 (compare the texts, not the scores, which differ for every source).")
    if (extra or missing) and records:
        _explain_choice(set(records), sources, ref)
    if extra:
        raise CheckFailed(f"{extra[0]!r} is in your list, but its output is the same at alpha 0 and alpha 2: "
                          "report only the sources whose decoded output changes.")
    if missing and not records:
        raise CheckFailed(f"Your list is empty, but some of these sources change their output ({missing[0]!r} is "
                          "one): decode each with beam_size=4 and penalty=\"gnmt\", once with length_penalty=0 "
                          "and once with 2, and compare the two decoded texts.")
    if missing:
        raise CheckFailed(f"Your list misses {missing[0]!r}: its beam-4 output at alpha 2 differs from the one at "
                          "alpha 0. Compare the decoded texts of the two runs for every source.")
    for text, (at0, at2, _) in records.items():
        for alpha, got, want in ((0.0, at0, ref(text, 0.0)), (2.0, at2, ref(text, 2.0))):
            where = f"the at_{alpha:g} of {text!r}"
            _explain_length(where, got[1], want)
            _explain_log_prob(where, alpha, got[2], want)
    for text, (at0, at2, alpha_star) in records.items():
        _explain_break_even(text, alpha_star, at0, at2)


def _call_changes(fn: Callable[..., Any], sources: list[str]) -> Any:
    """The learner's ``alpha_changes`` on a fresh copy of the shipped model; a division by zero gets its cause."""
    try:
        return call_student(fn, *_shipped_model(), list(sources), what="your alpha_changes")
    except CheckFailed as failure:
        if "raised ZeroDivisionError" in str(failure):
            raise CheckFailed("Your alpha_changes raised ZeroDivisionError. Exercise 13.3's alpha divides by "
                              "log((5 + a) / (5 + b)), which is 0 when "
                              "the two lengths are equal (the same output, or two outputs with as many characters): "
                              "compute alpha_star only for the sources whose decoded output changes, with the "
                              "lengths in tokens, len(ids), not in characters.") from None
        raise


@checker("13.5", "what the length penalty changes, and why")
def check_alpha_changes(prediction: Any, fn: Callable[..., Any]) -> str:
    """Prediction first; then ``fn(model, tokenizer, sources)`` must list the sources whose beam-4 output changes
    between alpha 0 and alpha 2, each as (source, at_0, at_2, alpha_star) with the winners as (output, len(ids),
    log-probability) and alpha_star their break-even alpha, as the checker's own beam search finds them on its
    numbers beyond the training range. A second call on sources drawn afresh catches answers written into the
    code; the summary scores the new winners against the reference and compares the outcome with the prediction."""
    key = _read_change_prediction(prediction)
    own = getattr(fn, "__globals__", {}).get("break_even_alpha")
    if callable(own):  # the learner's Exercise 13.3, which alpha_changes calls: not written yet?
        try:
            own(-1.0, 3, -2.0, 5)
        except NotImplementedError:
            raise CheckFailed("your break_even_alpha of Exercise 13.3 is not written yet, and alpha_changes uses "
                              "it: do Exercise 13.3 first, then run this cell again.") from None
        except Exception:  # noqa: BLE001 - its own mistakes are judged below, with the entries
            pass
    first = [number_name(n, "en") for n in CHANGE_NUMBERS]
    records = _change_records(_call_changes(fn, first), first)
    _check_changes(records, first, _reference_winner)
    again = _second_sources()
    raw = _call_changes(fn, again)
    texts = [e[0] for e in raw if isinstance(e, (tuple, list)) and e and isinstance(e[0], str)] \
        if isinstance(raw, (list, tuple)) else []
    if any(t not in again for t in texts) and all(t in first for t in texts):
        raise CheckFailed("Asked about other sources, your alpha_changes answers for the first ones: build the "
                          "list from the sources you are given, not from entries written into the code.")
    second = _change_records(raw, again)
    changed = [s for s in again if _reference_winner(s, 0.0)[0] != _reference_winner(s, 2.0)[0]]
    if not second and changed:
        raise CheckFailed(f"Asked about other numbers beyond the range ({', '.join(map(repr, again))}), your "
                          f"alpha_changes returns an empty list, yet {changed[0]!r} changes its output. It answered "
                          "the first sources right, so it seems to look them up: build the list from the sources "
                          "you are given, not from entries written into the code.")
    _check_changes(second, again, _reference_winner)
    references = {number_name(n, "en"): number_name(n, "de") for n in CHANGE_NUMBERS}
    return _changes_summary([(t, records[t]) for t in first if t in records], len(first), key, references)


def _closer(rows: list[tuple[str, Change]], references: dict[str, str]) -> tuple[int, int, int]:
    """How many new winners score a higher and a lower sentence chrF than the old ones, and how many are exact."""
    chrf = chrf_metric()
    gains = [chrf.sentence_score(b[0], [references[t]]).score - chrf.sentence_score(a[0], [references[t]]).score
             for t, (a, b, _) in rows]
    exact = sum(b[0] == references[t] for t, (_, b, _) in rows)
    return sum(g > 0 for g in gains), sum(g < 0 for g in gains), exact


def _changes_summary(rows: list[tuple[str, Change]], n_sources: int, key: str, references: dict[str, str]) -> str:
    """What the learner's (checked) entries show, and the prediction against it."""
    n = len(rows)
    how_many = "none" if not n else ("a few" if 2 * n <= n_sources else "most")
    if not rows:
        out, outcome = f"None of the {n_sources} outputs changes between alpha 0 and alpha 2.", "none"
    else:
        closer, further, exact = _closer(rows, references)
        direction = "closer" if closer > further else ("further" if further > closer else "mixed")
        outcome = f"{how_many}, {direction}"
        longer_less = all(b[1] > a[1] and b[2] < a[2] for _, (a, b, _) in rows)
        out = (f"{n} of the {n_sources} outputs change between alpha 0 and alpha 2 ({how_many}), "
               + ("each to a longer, less probable translation" if longer_less else
                  f"{sum(b[1] > a[1] for _, (a, b, _) in rows)} to a longer and "
                  f"{sum(b[2] < a[2] for _, (a, b, _) in rows)} to a less probable one")
               + f", and {closer} of these {n} new winners are closer to the reference (a higher chrF), "
               f"{further or 'none'} further; {exact or 'none'} exactly right")
        out += ": the table's 'alpha 0 vs 0.6' row in miniature." if direction == "closer" else "."
        alphas = [x for _, (_, _, x) in rows]
        if longer_less:
            out += (f" Why: your break-even alphas lie between {min(alphas):.2f} and {max(alphas):.2f}, below 2, so "
                    "at alpha 2 the longer output scores higher (Exercise 13.3); "
                    f"{sum(x < 0.6 for x in alphas)} of them lie below 0.6, the paper's alpha.")
        text, (a, b, x) = rows[0]
        out += (f" For example, '{text}' gives {a[0]!r} ({a[1]} tokens, log-probability {a[2]:.2f}) at alpha 0 and "
                f"{b[0]!r} ({b[1]} tokens, {b[2]:.2f}) at alpha 2, break-even at alpha {x:.2f}.")
    if key == outcome:
        return out + f" Your prediction ({key!r}) matches the measurement."
    said_how_many, _, said_direction = key.partition(", ")
    why = ([_NONE_WHY if said_how_many == "none" else _HOW_MANY_WHY]
           if said_how_many != how_many and how_many == "a few" else [])
    if outcome.endswith("closer") and said_direction != "closer":
        why.append(_CLOSER_WHY)
    return out + f" Your prediction, {key!r}, does not match the measurement, {outcome!r}. " + " ".join(why)


# ---------------------------------------------------------------- 13.6 transfer: French
TRANSFER_OPTIONS = {"more": "more tokens per number than German", "fewer": "fewer tokens than German",
                    "same": "about as many as German"}
TRANSFER_EXPLANATIONS = {
    "fewer": "French writes a number as several words ('mille deux cent trente-quatre'), and a merge never "
             "crosses a space, so each word costs at least one token.",
    "same": "French writes a number as several words, and a merge never crosses a space.",
}


def tokens_per_target(lang: str, numbers: list[int], n_merges: int) -> float:
    """Reference: mean target tokens per number with a shared BPE learned on English + ``lang``."""
    texts = [t for n in numbers for t in (number_name(n, "en"), number_name(n, lang))]
    tok = BPETokenizer.train(texts, n_merges)
    return sum(len(tok.encode(number_name(n, lang))) for n in numbers) / len(numbers)


@checker("13.6", "transfer to French")
def check_transfer(prediction: Any, measure: Callable[[str, list[int], int], float]) -> str:
    """Prediction first; then ``measure(lang, numbers, n_merges)`` must match the reference for French and German
    on the checker's own numbers, and once more with other numbers and another number of merges."""
    key = read_prediction(_lowered(prediction), TRANSFER_OPTIONS)
    numbers = random.Random(61).sample(range(10000), 300)
    values: dict[str, float] = {}
    for lang, nums, n_merges in (("fr", numbers, 60), ("de", numbers, 60), ("fr", numbers[:120], 25)):
        got = as_number(call_student(measure, lang, list(nums), n_merges, what="your measure"),
                        f"measure({lang!r}, ...)")
        want = tokens_per_target(lang, nums, n_merges)
        if not math.isclose(got, want, rel_tol=1e-9):
            _explain_tokens(got, lang, nums, n_merges, values)
            raise CheckFailed(f"On the checker's {len(nums)} numbers with {n_merges} merges, measure({lang!r}, ...) "
                              f"gives {got:.3f} tokens per name, not what the checker measures: learn one BPE on the "
                              f"English and the {lang!r} names together and count the tokens of the {lang!r} names.")
        values.setdefault(lang, got)
    ratio = values["fr"] / values["de"]
    outcome = "more" if ratio > 1.1 else ("fewer" if ratio < 0.9 else "same")
    return (f"French needs {ratio:.2f} times as many target tokens as German here. "
            + compare_prediction(key, outcome, TRANSFER_EXPLANATIONS))


def _explain_tokens(got: float, lang: str, numbers: list[int], n_merges: int, earlier: dict[str, float]) -> None:
    """Raise the hint of a typical mistake in the 13.6 measurement, if ``got`` is what it gives."""
    n = len(numbers)
    names = [number_name(k, lang) for k in numbers]

    def same(x: float) -> bool:
        return math.isclose(got, x, rel_tol=1e-9)

    if lang in earlier and same(earlier[lang]):
        raise CheckFailed("Your measure gives the same number for other numbers and another n_merges: use the "
                          "numbers and n_merges you are given.")
    for fixed in (60, 200):
        if n_merges != fixed and same(tokens_per_target(lang, numbers, fixed)):
            raise CheckFailed(f"You learn {fixed} merges whatever n_merges says: pass n_merges on to "
                              "BPETokenizer.train.")
    other = "de" if lang == "fr" else "fr"
    if same(tokens_per_target(other, numbers, n_merges)):
        raise CheckFailed(f"measure({lang!r}, ...) gives the other language's number: use the lang argument.")
    want = tokens_per_target(lang, numbers, n_merges)
    if same(want * n):
        raise CheckFailed("You return the total number of tokens: divide by the number of names.")
    if same(want + 2) or same(want + 1):
        raise CheckFailed("You count <sos> or <eos> too: count only the tokens of the name itself.")
    if same(sum(len(t) for t in names) / n):
        raise CheckFailed("You count characters; count the tokens of the learned BPE vocabulary (tok.encode).")
    if same(sum(len(t.split()) for t in names) / n):
        raise CheckFailed("You count words; count the tokens of the learned BPE vocabulary (tok.encode).")
    alone = BPETokenizer.train(names, n_merges)
    if same(sum(len(alone.encode(t)) for t in names) / n):
        raise CheckFailed(f"You learn the vocabulary on the {lang!r} names alone; the paper's vocabulary is shared: "
                          "learn it on the English and the target names together.")
    if same(_english_tokens(lang, numbers, n_merges)):
        raise CheckFailed("You count the tokens of the English names; count those of the target names.")


def _english_tokens(lang: str, numbers: list[int], n_merges: int) -> float:
    texts = [t for k in numbers for t in (number_name(k, "en"), number_name(k, lang))]
    tok = BPETokenizer.train(texts, n_merges)
    return sum(len(tok.encode(number_name(k, "en"))) for k in numbers) / len(numbers)
