"""Checkers for the exercises of Chapter 13 (translation: BPE, the length penalty, checkpoint averaging,
an experiment with the length penalty and a transfer to French)."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from ..bpe import SPECIAL_TOKENS, WORD_START, BPETokenizer, encode_word, merge_word, merges_from_counts
from ..translation import number_name, translate
from .core import CheckFailed, as_number, call_student, checker, describe
from .experiment import compare_prediction, require_prediction

Pair = tuple[str, str]


# ---------------------------------------------------------------- 13.1 learning BPE merges
def _merges_variant(counts: dict[str, int], n_merges: int, weighted: bool = True, tie: str = "rank",
                    once_per_word: bool = False, min_count: int = 2) -> list[Pair]:
    """A slow reference with switches that reproduce typical mistakes (recounts every step)."""
    words = {tuple(w): c for w, c in counts.items()}
    rank = {s: i for i, s in enumerate(SPECIAL_TOKENS)}
    for ch in sorted({ch for w in counts for ch in w}):
        rank[ch] = len(rank)
    first_seen: dict[Pair, int] = {}
    merges: list[Pair] = []
    while len(merges) < n_merges:
        pairs: Counter[Pair] = Counter()
        for symbols, c in words.items():
            seq = list(zip(symbols, symbols[1:], strict=False))
            for p in (dict.fromkeys(seq) if once_per_word else seq):
                pairs[p] += c if weighted else 1
                first_seen.setdefault(p, len(first_seen))
        if not pairs:
            break
        if tie == "rank":
            pair, count = max(pairs.items(), key=lambda kv: (kv[1], -rank[kv[0][0]], -rank[kv[0][1]]))
        elif tie == "alphabetical":
            pair, count = max(pairs.items(), key=lambda kv: (kv[1], [-ord(ch) for ch in kv[0][0] + "\0" + kv[0][1]]))
        else:  # first seen
            pair, count = max(pairs.items(), key=lambda kv: (kv[1], -first_seen[kv[0]]))
        if count < min_count:
            break
        merges.append(pair)
        rank.setdefault(pair[0] + pair[1], len(rank))
        words = {merge_word(s, pair): c for s, c in words.items()}
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


MERGE_HINTS = {
    "unweighted": "You count each distinct word once: a word that occurs c times contributes c to each of its pairs.",
    "once_per_word": "You count a pair once per word even where it occurs twice ('aaaa' holds ('a', 'a') three "
                     "times): count every adjacent position.",
    "alphabetical": "Ties go to the pair whose symbols came first in the vocabulary (characters by code point, "
                    "then merged symbols in the order they were made), not to the alphabetically first pair.",
    "first_seen": "Ties go to the pair whose symbols came first in the vocabulary (characters by code point, "
                  "then merged symbols in the order they were made), not to the first pair you met.",
    "no_stop": "Stop when the most frequent pair occurs fewer than 2 times: a merge seen once compresses nothing.",
}


@checker("13.1", "learning BPE merges")
def check_learn_merges(fn: Callable[[dict[str, int], int], list[Pair]]) -> str:
    """Check ``fn(counts, n_merges)`` against :func:`course_utils.bpe.merges_from_counts`."""
    for counts, n in _merge_cases():
        want = merges_from_counts(counts, n)
        got = _as_pairs(call_student(fn, dict(counts), n, what="your learn_merges"))
        if got == want:
            continue
        for key, kwargs in (("unweighted", {"weighted": False}), ("once_per_word", {"once_per_word": True}),
                            ("alphabetical", {"tie": "alphabetical"}), ("first_seen", {"tie": "first"}),
                            ("no_stop", {"min_count": 1})):
            if got == _merges_variant(counts, n, **kwargs):
                raise CheckFailed(MERGE_HINTS[key])
        if len(got) != len(want):
            raise CheckFailed(f"With n_merges={n} on {len(counts)} words you return {len(got)} merges, expected "
                              f"{len(want)}. Learn exactly n_merges, or fewer only when no pair occurs twice.")
        i = next(i for i, (a, b) in enumerate(zip(got, want, strict=True)) if a != b)
        raise CheckFailed(f"Merge {i + 1} is {got[i]}, expected {want[i]} (the most frequent adjacent pair after "
                          f"the first {i} merges). Recount the pairs after every merge, over every word.")
    return "Your merges equal the tokenizers-compatible reference on every test corpus."


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


def _encode_reverse(word: str, merges: list[Pair]) -> list[str]:
    return encode_word(word, list(reversed(merges)))


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


@checker("13.2", "encoding a word with the merges")
def check_encode_word(fn: Callable[[str, list[Pair]], list[str]]) -> str:
    """Check ``fn(word, merges)`` returns the BPE symbols of ``word`` (merges applied in the order learned)."""
    for word, merges in _encode_cases():
        want = encode_word(word, merges)
        got = call_student(fn, word, list(merges), what="your encode_word")
        if not isinstance(got, (list, tuple)) or not all(isinstance(s, str) for s in got):
            raise CheckFailed(f"encode_word should return a list of strings, got {describe(got)}")
        got = list(got)
        if got == want:
            continue
        if "".join(got) != word:
            raise CheckFailed(f"The symbols {got} do not spell the word {word!r} again: every character must end "
                              "up in exactly one symbol, in order.")
        if got == list(word):
            raise CheckFailed(f"{word!r} came back as single characters: apply the merges.")
        if got == _encode_one_pass(word, merges):
            raise CheckFailed(f"{word!r}: you apply each merge only at its first occurrence; join every "
                              "occurrence (left to right) of a pair before moving on.")
        if got == _encode_reverse(word, merges):
            raise CheckFailed(f"{word!r}: you apply the merges in reverse order; the first merge learned goes first.")
        if got == _encode_longest(word, merges):
            raise CheckFailed(f"{word!r}: you take the longest known token from the left (WordPiece-style); BPE "
                              "replays the merges in the order they were learned, which can split differently.")
        raise CheckFailed(f"{word!r} with these merges should give {want}, got {got}.")
    return "Every word splits as the merges dictate, and the symbols spell the word again."


# ---------------------------------------------------------------- 13.3 the length penalty (derive)
def _lp(length: float, alpha: float) -> float:
    return ((5 + length) / 6) ** alpha


def break_even_alpha(logp_short: float, len_short: int, logp_long: float, len_long: int) -> float:
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
        want = break_even_alpha(s, ls, l_, ll)
        got = as_number(call_student(fn, s, ls, l_, ll, what="your break_even_alpha"), "the alpha")
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
    shapes = {"embed.weight": (7, 4), "layer.bias": (4,), "norm.gamma": (4,)}
    for seed, k in ((0, 5), (1, 2), (2, 1), (3, 3)):
        states = _states(seed, k, shapes)
        copies = [{n: t.clone() for n, t in s.items()} for s in states]
        got = call_student(fn, states, what="your average_checkpoints")
        for s, c in zip(states, copies, strict=True):
            if any(not torch.equal(s[n], c[n]) for n in s):
                raise CheckFailed("Your function changed the checkpoints it was given (an in-place += or "
                                  ".add_ on states[0]?): build new tensors for the average.")
        if not isinstance(got, dict):
            raise CheckFailed(f"average_checkpoints should return a state dict (a dict of tensors), "
                              f"got {describe(got)}")
        if set(got) != set(shapes):
            raise CheckFailed(f"The average should have the same keys as the checkpoints {sorted(shapes)}, "
                              f"got {sorted(got)}")
        want = {n: torch.stack([s[n] for s in states]).mean(0) for n in shapes}
        for n in shapes:
            t = got[n]
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
            raise CheckFailed(f"{n!r} is not the element-wise mean of the {k} checkpoints.")
        if any(got[n] is s[n] for s in states for n in shapes):
            raise CheckFailed("Your average hands back a tensor of one of the inputs: return new tensors.")
    return "Your average equals the element-wise mean and leaves the checkpoints unchanged."


# ---------------------------------------------------------------- 13.5 experiment: alpha and output length
ALPHA_OPTIONS = {"longer": "outputs get longer", "shorter": "outputs get shorter", "same": "lengths do not change"}
ALPHA_EXPLANATIONS = {
    "shorter": "Dividing a negative log-probability by a penalty that grows with length raises long hypotheses' "
               "scores, never short ones'.",
    "same": "On these numbers the model is unsure, so the beam holds hypotheses of several lengths and alpha "
            "decides between them.",
}


def _mean_length(model: Any, tokenizer: BPETokenizer, sources: list[str], alpha: float) -> float:
    outs = translate(model, tokenizer, sources, beam_size=4, alpha=alpha)
    return sum(len(o) for o in outs) / len(outs)


@checker("13.5", "the length penalty beyond the training range")
def check_alpha_experiment(prediction: Any, measure: Callable[..., float], model: Any, tokenizer: BPETokenizer,
                           numbers: list[int]) -> str:
    """Prediction first; then ``measure(model, tokenizer, sources, alpha)`` must equal the reference on the
    checker's own sources at two alphas (so a hard-coded number fails), and the direction is reported."""
    key = require_prediction(prediction() if callable(prediction) else prediction, ALPHA_OPTIONS)
    rng = random.Random(len(numbers))
    picks = rng.sample(list(numbers), min(24, len(numbers)))
    sources = [number_name(n, "en") for n in picks]
    values = {}
    for alpha in (0.0, 2.0):
        got = as_number(call_student(measure, model, tokenizer, list(sources), alpha, what="your measure",
                                     may_modify=True), f"measure(..., alpha={alpha})")
        want = _mean_length(model, tokenizer, sources, alpha)
        if not math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-9):
            if math.isclose(got, _mean_length(model, tokenizer, sources, 0.0), rel_tol=1e-9) and alpha:
                raise CheckFailed("Your measure gives the same number at alpha 2 as at alpha 0: pass alpha on to "
                                  "translate(..., alpha=alpha) with beam_size=4 (greedy decoding has no penalty).")
            raise CheckFailed(f"On the checker's {len(sources)} numbers your measure gives {got:.3f} characters at "
                              f"alpha {alpha}, the reference {want:.3f}: return the mean length in characters "
                              "of the beam-4 translations of the sources you are given (not a number you typed).")
        values[alpha] = got
    diff = values[2.0] - values[0.0]
    outcome = "longer" if diff > 0 else ("shorter" if diff < 0 else "same")
    return (f"Measured on {len(sources)} numbers beyond the training range: mean output "
            f"{'grows' if diff > 0 else 'shrinks' if diff < 0 else 'stays'} from alpha 0 to alpha 2. "
            + compare_prediction(key, outcome, ALPHA_EXPLANATIONS))


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
    on the checker's own numbers."""
    key = require_prediction(prediction() if callable(prediction) else prediction, TRANSFER_OPTIONS)
    numbers = random.Random(61).sample(range(10000), 300)
    values = {}
    for lang in ("fr", "de"):
        got = as_number(call_student(measure, lang, list(numbers), 60, what="your measure"), f"measure({lang!r})")
        want = tokens_per_target(lang, numbers, 60)
        if not math.isclose(got, want, rel_tol=1e-9):
            other = tokens_per_target("de" if lang == "fr" else "fr", numbers, 60)
            if math.isclose(got, other, rel_tol=1e-9):
                raise CheckFailed(f"measure({lang!r}, ...) gives the other language's number: use the lang argument.")
            raise CheckFailed(f"On the checker's 300 numbers with 60 merges, measure({lang!r}) gives {got:.3f} "
                              f"tokens per target, the reference {want:.3f}: learn one BPE on the English and the "
                              f"{lang!r} names together and count the tokens of the {lang!r} names.")
        values[lang] = got
    ratio = values["fr"] / values["de"]
    outcome = "more" if ratio > 1.1 else ("fewer" if ratio < 0.9 else "same")
    return (f"French needs {ratio:.2f} times as many target tokens as German here. "
            + compare_prediction(key, outcome, TRANSFER_EXPLANATIONS))
