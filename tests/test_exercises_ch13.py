"""Tests for the Chapter 13 checkers: pass the notebook's solutions and other right answers, fail the
mistakes a learner plausibly makes with a hint that names them, and say "not implemented yet" for stubs.

The answers are module-level functions so that tests/checker_mistakes_ch13.py can list them as rows."""

from __future__ import annotations

import math
from collections import Counter

import pytest
import torch
from conftest import fails_with
from conftest import stub as _stub

from course_utils import bpe
from course_utils.bpe import SOS_ID, BPETokenizer
from course_utils.decoding import beam_search, length_penalty_factor
from course_utils.exercises.ch13_translation import (
    check_alpha_changes,
    check_average_checkpoints,
    check_break_even_alpha,
    check_encode_word,
    check_learn_merges,
    check_transfer,
)
from course_utils.translation import number_name, pad

SPECIALS = ["<pad>", "<sos>", "<eos>"]


# ================================================================ 13.1 learning BPE merges
def _join(symbols, best):
    out, i = [], 0
    while i < len(symbols):
        if tuple(symbols[i : i + 2]) == best:
            out.append(best[0] + best[1])
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return tuple(out)


def merges_ref(counts, n_merges):
    """The notebook's solution: a vocabulary list ranks the symbols."""
    words = {tuple(w): c for w, c in counts.items()}
    vocab = SPECIALS + sorted({ch for w in counts for ch in w})
    merges = []
    for _ in range(n_merges):
        pairs = {}
        for symbols, c in words.items():
            for pair in zip(symbols, symbols[1:], strict=False):
                pairs[pair] = pairs.get(pair, 0) + c
        if not pairs:
            break
        best = max(pairs, key=lambda p: (pairs[p], -vocab.index(p[0]), -vocab.index(p[1])))
        if pairs[best] < 2:
            break
        merges.append(best)
        if best[0] + best[1] not in vocab:
            vocab.append(best[0] + best[1])
        words = {_join(s, best): c for s, c in words.items()}
    return merges


def merges_counter_rank(counts, n_merges):
    """Another right answer: a Counter, a rank dict, sorted by (-count, rank) and the loop as while."""
    rank = {s: i for i, s in enumerate(SPECIALS + sorted(set("".join(counts))))}
    words = [(list(w), c) for w, c in counts.items()]
    merges = []
    while len(merges) < n_merges:
        pairs = Counter()
        for symbols, c in words:
            for i in range(len(symbols) - 1):
                pairs[symbols[i], symbols[i + 1]] += c
        ranked = sorted(pairs.items(), key=lambda kv: (-kv[1], rank[kv[0][0]], rank[kv[0][1]]))
        if not ranked or ranked[0][1] < 2:
            break
        best = ranked[0][0]
        merges.append(best)
        rank.setdefault(best[0] + best[1], len(rank))
        words = [(list(_join(s, best)), c) for s, c in words]
    return merges


def merges_regex(counts, n_merges):
    """A third right answer, Sennrich et al.'s style: words as space-separated strings, a guarded regex."""
    import re

    vocab = {" ".join(w): c for w, c in counts.items()}
    order = SPECIALS + sorted(set("".join(counts)))
    merges = []
    for _ in range(n_merges):
        pairs = Counter()
        for word, c in vocab.items():
            s = word.split(" ")
            for i in range(len(s) - 1):
                pairs[s[i], s[i + 1]] += c
        if not pairs:
            break
        top = max(pairs.values())
        if top < 2:
            break
        best = min((p for p, n in pairs.items() if n == top), key=lambda p: (order.index(p[0]), order.index(p[1])))
        merges.append(best)
        if "".join(best) not in order:
            order.append("".join(best))
        pattern = re.compile(r"(?<!\S)" + re.escape(" ".join(best)) + r"(?!\S)")
        vocab = {pattern.sub("".join(best), w): c for w, c in vocab.items()}
    return merges


def _variant(tie="rank", weighted=True, once=False, min_count=2, recount=True, replace=False, joined=False,
             reverse_tie=False):
    """A learner's learn_merges with one switch flipped (a realistic mistake each)."""

    def learn(counts, n_merges):
        words = {" ".join(w): c for w, c in counts.items()}
        vocab = SPECIALS + sorted({ch for w in counts for ch in w})
        merges = []
        first = None
        for _ in range(n_merges):
            if recount or first is None:
                pairs = Counter()
                for word, c in words.items():
                    s = word.split(" ")
                    seq = list(zip(s, s[1:], strict=False))
                    for p in (dict.fromkeys(seq) if once else seq):
                        pairs[p] += c if weighted else 1
                first = pairs
            else:
                pairs = first
            pairs = {p: n for p, n in pairs.items() if p not in merges}
            if not pairs:
                break
            if tie == "rank":
                sign = 1 if reverse_tie else -1
                def at(x, sign=sign):
                    return vocab.index(x) if x in vocab else (len(vocab) if sign < 0 else -1)

                best = max(pairs, key=lambda p: (pairs[p], sign * at(p[0]), sign * at(p[1])))
            elif tie == "alphabetical":
                best = min(pairs, key=lambda p: (-pairs[p], p))
            else:  # the first pair met: max() keeps the first of equal keys
                best = max(pairs, key=pairs.get)
            if pairs[best] < min_count:
                break
            merges.append("".join(best) if joined else best)
            if best[0] + best[1] not in vocab:
                vocab.append(best[0] + best[1])
            if replace:  # a plain string replace: also joins across symbol boundaries
                words = {w.replace(" ".join(best), "".join(best)): c for w, c in words.items()}
            else:
                words = {" ".join(_join(w.split(" "), best)): c for w, c in words.items()}
        return merges

    return learn


merges_unweighted = _variant(weighted=False)
merges_once_per_word = _variant(once=True)
merges_alphabetical = _variant(tie="alphabetical")
merges_first_seen = _variant(tie="first")
merges_latest_first = _variant(reverse_tie=True)
merges_no_stop = _variant(min_count=1)
merges_stop_at_two = _variant(min_count=3)
merges_count_once = _variant(recount=False)
merges_str_replace = _variant(replace=True)
merges_joined_strings = _variant(joined=True)


def merges_one_short(counts, n_merges):
    return merges_ref(counts, n_merges - 1) if n_merges else []


def merges_in_place(counts, n_merges):
    """Rewrites the caller's counts as it merges (pop the old word, store the new spelling)."""
    merges = []
    vocab = SPECIALS + sorted({ch for w in counts for ch in w})
    for w in list(counts):
        counts[" ".join(w)] = counts.pop(w)
    for _ in range(n_merges):
        pairs = Counter()
        for word, c in counts.items():
            s = word.split(" ")
            for p in zip(s, s[1:], strict=False):
                pairs[p] += c
        if not pairs:
            break
        best = max(pairs, key=lambda p: (pairs[p], -vocab.index(p[0]), -vocab.index(p[1])))
        if pairs[best] < 2:
            break
        merges.append(best)
        if best[0] + best[1] not in vocab:
            vocab.append(best[0] + best[1])
        for w in list(counts):
            counts[" ".join(_join(w.split(" "), best))] = counts.pop(w)
    return merges


# ================================================================ 13.2 encoding a word
def merges_library(counts, n_merges):
    """The shortcut: course_utils' own learner, wrapped."""
    return bpe.merges_from_counts(counts, n_merges)


def merges_across_words(counts, n_merges):
    """Joins every word (repeated by its count) into one long sequence, so pairs cross word boundaries."""
    text = "".join(w * c for w, c in counts.items())
    return merges_ref({text: 1}, n_merges)


def encode_library(word, merges):
    """The shortcut: course_utils' own encoder, wrapped."""
    return bpe.encode_word(word, merges)


def encode_ref(word, merges):
    """The notebook's solution: the earliest-learned pair present, leftmost occurrence, one join a step."""
    rank = {tuple(p): i for i, p in enumerate(merges)}
    symbols = list(word)
    while len(symbols) > 1:
        ranked = [(rank[p], i) for i, p in enumerate(zip(symbols, symbols[1:], strict=False)) if p in rank]
        if not ranked:
            break
        _, i = min(ranked)
        symbols[i : i + 2] = [symbols[i] + symbols[i + 1]]
    return symbols


def encode_replay(word, merges):
    """Another right answer: replay each merge over the whole word, in the order learned."""
    symbols = list(word)
    for a, b in merges:
        out, i = [], 0
        while i < len(symbols):
            if i + 1 < len(symbols) and symbols[i] == a and symbols[i + 1] == b:
                out.append(a + b)
                i += 2
            else:
                out.append(symbols[i])
                i += 1
        symbols = out
    return symbols


def encode_tuple(word, merges):
    """A third right answer: tuples, a rank dict and min() with a key, returned as a tuple."""
    ranks = {p: r for r, p in reversed(list(enumerate(map(tuple, merges))))}
    symbols = tuple(word)
    while True:
        pairs = [(symbols[i], symbols[i + 1]) for i in range(len(symbols) - 1)]
        known = [p for p in pairs if p in ranks]
        if not known:
            return symbols
        i = pairs.index(min(known, key=ranks.get))
        symbols = symbols[:i] + (symbols[i] + symbols[i + 1],) + symbols[i + 2 :]


def encode_chars(word, merges):
    return list(word)


def encode_reversed(word, merges):
    return encode_replay(word, list(reversed(merges)))


def encode_first_occurrence(word, merges):
    symbols = list(word)
    for a, b in merges:
        for i in range(len(symbols) - 1):
            if symbols[i] == a and symbols[i + 1] == b:
                symbols[i : i + 2] = [a + b]
                break
    return symbols


def encode_longest(word, merges):
    vocab = set(word) | {a + b for a, b in merges}
    out, i = [], 0
    while i < len(word):
        j = max(k for k in range(i + 1, len(word) + 1) if word[i:k] in vocab or k == i + 1)
        out.append(word[i:j])
        i = j
    return out


def encode_longest_new(word, merges):
    """Joins, among the learned pairs present, the one that makes the longest new symbol (leftmost first)."""
    rank = {tuple(p): i for i, p in enumerate(merges)}
    symbols = list(word)
    while True:
        found = [(len(symbols[i] + symbols[i + 1]), -i) for i in range(len(symbols) - 1)
                 if (symbols[i], symbols[i + 1]) in rank]
        if not found:
            return symbols
        i = -max(found)[1]
        symbols[i : i + 2] = [symbols[i] + symbols[i + 1]]


def merges_longer_symbol(counts, n_merges):
    """Breaks ties by the length of the joined symbol first (a misreading of the rule), then by the vocabulary."""
    words = {tuple(w): c for w, c in counts.items()}
    vocab = SPECIALS + sorted({ch for w in counts for ch in w})
    merges = []
    for _ in range(n_merges):
        pairs = Counter()
        for symbols, c in words.items():
            for pair in zip(symbols, symbols[1:], strict=False):
                pairs[pair] += c
        if not pairs:
            break
        best = max(pairs, key=lambda p: (pairs[p], len(p[0] + p[1]), -vocab.index(p[0]), -vocab.index(p[1])))
        if pairs[best] < 2:
            break
        merges.append(best)
        if best[0] + best[1] not in vocab:
            vocab.append(best[0] + best[1])
        words = {_join(list(w), best): c for w, c in words.items()}
    return merges


def encode_leftmost_any(word, merges):
    """Joins the leftmost adjacent pair that is any merge, ignoring the order they were learned in."""
    known = {tuple(p) for p in merges}
    symbols = list(word)
    while True:
        for i in range(len(symbols) - 1):
            if (symbols[i], symbols[i + 1]) in known:
                symbols[i : i + 2] = [symbols[i] + symbols[i + 1]]
                break
        else:
            return symbols


def encode_rightmost(word, merges):
    """Joins the earliest-learned pair at its rightmost occurrence."""
    rank = {tuple(p): i for i, p in enumerate(merges)}
    symbols = list(word)
    while True:
        ranked = [(rank[p], -i) for i, p in enumerate(zip(symbols, symbols[1:], strict=False)) if p in rank]
        if not ranked:
            return symbols
        _, i = min(ranked)
        symbols[-i : -i + 2] = [symbols[-i] + symbols[-i + 1]]


def encode_no_marker(word, merges):
    return encode_ref(word.lstrip("\u2581"), merges)


def encode_pop(word, merges):
    """Consumes the caller's list of merges while replaying them."""
    symbols = list(word)
    while merges:
        a, b = merges.pop(0)
        symbols = list(_join(symbols, (a, b)))
    return symbols


def encode_joined_string(word, merges):
    return "".join(encode_ref(word, merges))


# ================================================================ 13.3 the break-even alpha
def alpha_ref(s, a, l, b):  # noqa: E741 - the exercise's names
    return math.log(s / l) / math.log((5 + a) / (5 + b))


def alpha_shifted_down(s, a, l, b):  # noqa: E741
    """Lengths one short: (4 + L)."""
    return math.log(s / l) / math.log((4 + a) / (4 + b))


def alpha_plus_eos(s, a, l, b):  # noqa: E741
    """Lengths one long (an <eos> counted): (6 + L)."""
    return math.log(s / l) / math.log((6 + a) / (6 + b))


def alpha_log10(s, a, l, b):  # noqa: E741
    """Another right answer: base-10 logs, the 6 kept (it cancels)."""
    return math.log10(l / s) / math.log10(((5 + b) / 6) / ((5 + a) / 6))


def alpha_torch(s, a, l, b):  # noqa: E741
    """A third right answer, as a 0-d tensor."""
    s, l = torch.tensor(s, dtype=torch.float64), torch.tensor(l, dtype=torch.float64)  # noqa: E741
    return torch.log(s / l) / math.log((5 + a) / (5 + b))


def alpha_paper(s, a, l, b):  # noqa: E741
    return 0.6


def alpha_sign(s, a, l, b):  # noqa: E741
    return math.log(l / s) / math.log((5 + a) / (5 + b))


def alpha_no_five(s, a, l, b):  # noqa: E741
    return math.log(s / l) / math.log(a / b)


def alpha_reciprocal(s, a, l, b):  # noqa: E741
    return math.log((5 + a) / (5 + b)) / math.log(s / l)


def alpha_log_of_negative(s, a, l, b):  # noqa: E741
    return (math.log(s) - math.log(l)) / (math.log(5 + a) - math.log(5 + b))


def alpha_difference(s, a, l, b):  # noqa: E741
    """Subtracts the penalties instead of dividing by them: s - lp(a) = l - lp(b)."""
    return math.log(s - l + ((5 + a) / 6)) / math.log((5 + b) / 6) if s - l + (5 + a) / 6 > 0 else 0.0


def alpha_probabilities(s, a, l, b):  # noqa: E741
    """Treats s and l as probabilities: exponentiates them first."""
    return math.log(math.exp(s) / math.exp(l)) / math.log((5 + a) / (5 + b))


# ================================================================ 13.4 averaging checkpoints
def average_ref(states):
    return {name: torch.stack([s[name] for s in states]).mean(0) for name in states[0]}


def average_library(states):
    """The shortcut: course_utils' own average."""
    from course_utils.translation import average_state_dicts

    return average_state_dicts(states)


def average_loop(states):
    """Another right answer: a running sum, divided at the end."""
    total = {name: torch.zeros_like(t) for name, t in states[0].items()}
    for state in states:
        for name, t in state.items():
            total[name] = total[name] + t
    return {name: t / len(states) for name, t in total.items()}


def average_sum_builtin(states):
    """A third right answer: sum() over the list per key."""
    return {k: sum(s[k] for s in states) / len(states) for k in states[0]}


def average_sum(states):
    return {k: sum(s[k] for s in states) for k in states[0]}


def average_last(states):
    return {k: v.clone() for k, v in states[-1].items()}


def average_first_last(states):
    return {k: (states[0][k] + states[-1][k]) / 2 for k in states[0]}


def average_in_place(states):
    avg = states[0]
    for s in states[1:]:
        for k in avg:
            avg[k] += s[k]
    for k in avg:
        avg[k] /= len(states)
    return avg


def average_running_half(states):
    avg = {k: v.clone() for k, v in states[0].items()}
    for s in states[1:]:
        avg = {k: (avg[k] + s[k]) / 2 for k in avg}
    return avg


def average_by_keys(states):
    return {k: sum(s[k] for s in states) / len(states[0]) for k in states[0]}


def average_all_elements(states):
    return {k: torch.stack([s[k] for s in states]).mean() for k in states[0]}


def average_cat(states):
    return {k: torch.cat([s[k] for s in states]).mean(0) for k in states[0]}


def average_last_two(states):
    return {k: torch.stack([s[k] for s in states[-2:]]).mean(0) for k in states[0]}


# ================================================================ 13.5 experiment: what alpha changes
def predict_right():
    return "a few, closer"


def predict_right_loose():
    return "  A few; CLOSER. "


def predict_wrong():
    return "most, further"


def _winner(model, tok, text, alpha, penalty="gnmt", beam_size=4, undo=True):
    src = pad([tok.encode(text)])  # (1, T_src)
    ids, score = beam_search(model, src, max_len=src.shape[1] + 50, beam_size=beam_size, length_penalty=alpha,
                             penalty=penalty)[0]
    log_prob = score * ((5 + len(ids)) / 6) ** alpha if undo else score
    return tok.decode(ids), len(ids), log_prob


def _changes(model, tok, sources, at=_winner, keep=lambda a, b: a[0] != b[0], alphas=(0.0, 2.0), break_even=alpha_ref):
    """One entry (text, at_0, at_2, alpha_star) per kept source, alpha_star from ``break_even`` (Exercise 13.3's)."""
    out = []
    for text in sources:
        a, b = (at(model, tok, text, alpha) for alpha in alphas)
        if keep(a, b):
            out.append((text, a, b, break_even(a[2], a[1], b[2], b[1])))
    return out


def changes_ref(model, tok, sources):
    """The notebook's solution: beam_search twice per source, the penalty undone."""
    return _changes(model, tok, sources)


def changes_teacher_forced(model, tok, sources):
    """Another right answer: the winners' ids from beam_search, their log-probability by teacher forcing."""
    out = []
    for text in sources:
        src = pad([tok.encode(text)])
        entry = [text]
        for alpha in (0.0, 2.0):
            ids = beam_search(model, src, max_len=src.shape[1] + 50, length_penalty=alpha, penalty="gnmt")[0][0]
            tgt_in = torch.tensor([[SOS_ID, *ids[:-1]]])  # (1, T): the decoder's input, shifted right
            with torch.no_grad():
                logp = torch.log_softmax(model(src, tgt_in), dim=-1)[0]  # (T, V)
            entry.append((tok.decode(ids), len(ids), logp[torch.arange(len(ids)), ids].sum()))
        if entry[1][0] != entry[2][0]:
            (_, a, s), (_, b, l) = entry[1:]  # noqa: E741 - Exercise 13.3's names
            entry.append(alpha_torch(s.item(), a, l.item(), b))
            out.append(tuple(entry))
    return out


def changes_dict_style(model, tok, sources):
    """Another right answer: lists instead of tuples, numpy numbers, the ids compared instead of the texts."""
    import numpy as np

    found = []
    for text in sources:
        src = pad([tok.encode(text)])
        hyps = {a: beam_search(model, src, src.shape[1] + 50, 4, a, "gnmt")[0] for a in (0, 2)}
        if hyps[0][0] == hyps[2][0]:
            continue
        row = [text]
        for a, (ids, score) in hyps.items():
            row.append([tok.decode(ids), np.int64(len(ids)), np.float64(score * length_penalty_factor(len(ids), a,
                                                                                                      "gnmt"))])
        row.append(np.float64(alpha_log10(row[1][2], row[1][1], row[2][2], row[2][1])))
        found.append(row)
    return found


def _alpha_or_nan(s, a, l, b):  # noqa: E741
    """Exercise 13.3's alpha, NaN where both lengths are equal (the division by zero avoided)."""
    return alpha_ref(s, a, l, b) if a != b else math.nan


def changes_all_sources(model, tok, sources):
    """Every source reported, alpha_star guarded against equal lengths."""
    return _changes(model, tok, sources, keep=lambda a, b: True, break_even=_alpha_or_nan)


def changes_all_sources_crash(model, tok, sources):
    """Every source reported: alpha_star divides by zero where the output (so its length) does not change."""
    return _changes(model, tok, sources, keep=lambda a, b: True)


def changes_by_score(model, tok, sources):
    """Compares the penalised scores, which differ for every source."""
    return _changes(model, tok, sources, at=lambda m, t, x, a: _winner(m, t, x, a, undo=False),
                    keep=lambda a, b: a[2] != b[2], break_even=_alpha_or_nan)


def changes_power_penalty(model, tok, sources):
    """beam_search's default penalty, length ** alpha."""
    def at(m, t, x, a):
        src = pad([t.encode(x)])
        ids, score = beam_search(m, src, max_len=src.shape[1] + 50, beam_size=4, length_penalty=a)[0]
        return t.decode(ids), len(ids), score * len(ids) ** a
    return _changes(model, tok, sources, at=at)


def changes_no_undo(model, tok, sources):
    return _changes(model, tok, sources, at=lambda m, t, x, a: _winner(m, t, x, a, undo=False))


def changes_divided_twice(model, tok, sources):
    def at(m, t, x, a):
        out, n, score = _winner(m, t, x, a, undo=False)
        return out, n, score / ((5 + n) / 6) ** a
    return _changes(model, tok, sources, at=at)


def changes_no_eos(model, tok, sources):
    def at(m, t, x, a):
        out, n, logp = _winner(m, t, x, a)
        return out, n - 1, logp
    return _changes(model, tok, sources, at=at)


def changes_characters(model, tok, sources):
    def at(m, t, x, a):
        out, n, logp = _winner(m, t, x, a)
        return out, len(out), logp
    return _changes(model, tok, sources, at=at)


def changes_per_token(model, tok, sources):
    def at(m, t, x, a):
        out, n, logp = _winner(m, t, x, a)
        return out, n, logp / n
    return _changes(model, tok, sources, at=at)


def changes_swapped(model, tok, sources):
    return [(text, b, a, x) for text, a, b, x in changes_ref(model, tok, sources)]


def changes_greedy_at_zero(model, tok, sources):
    """translate()'s default beam_size=1 at alpha 0."""
    return _changes(model, tok, sources, at=lambda m, t, x, a: _winner(m, t, x, a, beam_size=1 if a == 0 else 4))


def changes_greedy(model, tok, sources):
    """translate()'s defaults everywhere: greedy decoding never changes with alpha."""
    return _changes(model, tok, sources, at=lambda m, t, x, a: _winner(m, t, x, a, beam_size=1))


def changes_paper_alpha(model, tok, sources):
    return _changes(model, tok, sources, alphas=(0.0, 0.6))


def changes_ids(model, tok, sources):
    def at(m, t, x, a):
        src = pad([t.encode(x)])
        ids, score = beam_search(m, src, max_len=src.shape[1] + 50, beam_size=4, length_penalty=a, penalty="gnmt")[0]
        return ids, len(ids), score * ((5 + len(ids)) / 6) ** a
    return _changes(model, tok, sources, at=at)


_FIRST_ANSWER = []


def changes_typed_in(model, tok, sources):
    """Computes the first list, then answers every later call with it (a list written into the code)."""
    if not _FIRST_ANSWER:
        _FIRST_ANSWER.append(changes_ref(model, tok, sources))
    return _FIRST_ANSWER[0]


def changes_numbers_as_sources(model, tok, sources):
    return [(i, a, b, x) for i, (text, a, b, x) in enumerate(changes_ref(model, tok, sources))]


def changes_three_parts(model, tok, sources):
    """The entries without alpha_star."""
    return [entry[:3] for entry in changes_ref(model, tok, sources)]


_LOOKUP = {}


def changes_lookup(model, tok, sources):
    """A table over the checker's fixed sources (read from its code), filled once by a right run."""
    if not _LOOKUP:
        from course_utils.exercises import ch13_translation as c13

        fixed = [number_name(n, "en") for n in (*c13.CHANGE_NUMBERS, 91954, 69193, 10149)]
        _LOOKUP.update((e[0], e) for e in changes_ref(model, tok, fixed))
    return [_LOOKUP[s] for s in sources if s in _LOOKUP]


def changes_be_one_pair_swapped(model, tok, sources):
    """alpha_star with the two lengths swapped but not the log-probabilities."""
    return _changes(model, tok, sources, break_even=lambda s, a, l, b: alpha_ref(s, b, l, a))  # noqa: E741


def changes_be_from_score(model, tok, sources):
    """alpha_star from at_2's penalised score instead of its log-probability."""
    return _changes(model, tok, sources,
                    break_even=lambda s, a, l, b: alpha_ref(s, a, l / ((5 + b) / 6) ** 2, b))  # noqa: E741


def changes_be_alpha_used(model, tok, sources):
    """alpha_star = the alpha the second run decoded with."""
    return _changes(model, tok, sources, break_even=lambda s, a, l, b: 2.0)  # noqa: E741


def changes_be_length_first(model, tok, sources):
    """Exercise 13.3's arguments as (length, log_prob) per winner."""
    return _changes(model, tok, sources, break_even=lambda s, a, l, b: alpha_ref(a, s, b, l))  # noqa: E741


def changes_be_per_token(model, tok, sources):
    return _changes(model, tok, sources, break_even=lambda s, a, l, b: alpha_ref(s / a, a, l / b, b))  # noqa: E741


def changes_be_no_five(model, tok, sources):
    """Exercise 13.3 done with the power penalty."""
    return _changes(model, tok, sources, break_even=alpha_no_five)


def changes_be_reciprocal(model, tok, sources):
    return _changes(model, tok, sources, break_even=alpha_reciprocal)


def changes_be_shifted(model, tok, sources):
    return _changes(model, tok, sources, break_even=alpha_shifted_down)


def changes_be_difference(model, tok, sources):
    return _changes(model, tok, sources, break_even=alpha_probabilities)


def changes_be_not_done(model, tok, sources):
    """Exercise 13.3 still the stub: its raise NotImplementedError reaches the checker."""
    return _changes(model, tok, sources, break_even=_stub)


def changes_double_model(model, tok, sources):
    """Turns the model to float64 in place, for more exact log-probabilities."""
    model.double()
    return changes_ref(model, tok, sources)


def changes_half_model(model, tok, sources):
    """Turns the model to half precision in place, to decode faster."""
    model.half()
    return changes_ref(model, tok, sources)


# ================================================================ 13.6 transfer: French
def predict_more():
    return "more"


def predict_fewer():
    return "fewer"


def tokens_ref(lang, numbers, n_merges):
    texts = [t for n in numbers for t in (number_name(n, "en"), number_name(n, lang))]
    vocab = BPETokenizer.train(texts, n_merges)
    return sum(len(vocab.encode(number_name(n, lang))) for n in numbers) / len(numbers)


def tokens_two_lists(lang, numbers, n_merges):
    """Another right answer: the two languages listed one after the other, tokens() instead of encode()."""
    english = [number_name(n, "en") for n in numbers]
    target = [number_name(n, lang) for n in numbers]
    vocab = BPETokenizer.train(english + target, n_merges)
    return float(sum(len(vocab.tokens(t)) for t in target)) / len(target)


def tokens_target_only(lang, numbers, n_merges):
    target = [number_name(n, lang) for n in numbers]
    vocab = BPETokenizer.train(target, n_merges)
    return sum(len(vocab.encode(t)) for t in target) / len(target)


def tokens_english(lang, numbers, n_merges):
    texts = [t for n in numbers for t in (number_name(n, "en"), number_name(n, lang))]
    vocab = BPETokenizer.train(texts, n_merges)
    return sum(len(vocab.encode(number_name(n, "en"))) for n in numbers) / len(numbers)


def tokens_characters(lang, numbers, n_merges):
    return sum(len(number_name(n, lang)) for n in numbers) / len(numbers)


def tokens_words(lang, numbers, n_merges):
    return sum(len(number_name(n, lang).split()) for n in numbers) / len(numbers)


def tokens_always_french(lang, numbers, n_merges):
    return tokens_ref("fr", numbers, n_merges)


def tokens_fixed_merges(lang, numbers, n_merges):
    return tokens_ref(lang, numbers, 60)


def tokens_fixed_200(lang, numbers, n_merges):
    return tokens_ref(lang, numbers, 200)


def tokens_with_eos(lang, numbers, n_merges):
    return tokens_ref(lang, numbers, n_merges) + 2


def tokens_total(lang, numbers, n_merges):
    return tokens_ref(lang, numbers, n_merges) * len(numbers)



# ================================================================ the tests
@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize("check", [check_learn_merges, check_encode_word, check_break_even_alpha,
                                   check_average_checkpoints])
def test_stub_is_not_implemented_yet(check):
    result = check(_stub)
    assert not result.passed and result.not_implemented and "not implemented yet" in result.message


def test_experiment_stubs_are_not_implemented_yet():
    assert check_transfer(_stub, tokens_ref).not_implemented
    assert check_transfer(predict_more, _stub).not_implemented


IMPLEMENT = {  # checker -> (right answers, [(wrong answer, words its hint must contain)])
    check_learn_merges: (
        [merges_ref, merges_counter_rank, merges_regex],
        [(merges_unweighted, "distinct word once"), (merges_once_per_word, "once per word"),
         (merges_alphabetical, "alphabetically"), (merges_first_seen, "first pair your loop met"),
         (merges_latest_first, "came last"), (merges_no_stop, "fewer than 2"), (merges_stop_at_two, "only below 2"),
         (merges_count_once, "recount"), (merges_str_replace, "str.replace"), (merges_joined_strings, "string"),
         (merges_one_short, "exactly n_merges"), (merges_in_place, "in place"),
         (merges_library, "which is the answer"), (merges_across_words, "word boundary"),
         (merges_longer_symbol, "length of the joined symbol")],
    ),
    check_encode_word: (
        [encode_ref, encode_replay, encode_tuple],
        [(encode_chars, "single characters"), (encode_reversed, "reverse order"),
         (encode_first_occurrence, "first occurrence"), (encode_longest, "longest"),
         (encode_leftmost_any, "where it is (leftmost)"), (encode_rightmost, "rightmost"),
         (encode_longest_new, "size of the symbol it makes"),
         (encode_no_marker, "word marker"), (encode_pop, "in place"), (encode_joined_string, "list of strings"),
         (encode_library, "which is the answer")],
    ),
    check_break_even_alpha: (
        [alpha_ref, alpha_log10, alpha_torch],
        [(alpha_paper, "paper's alpha"), (alpha_sign, "wrong sign"), (alpha_no_five, "keep the 5"),
         (alpha_reciprocal, "1 / alpha"), (alpha_log_of_negative, "logarithm of a negative"),
         (alpha_probabilities, "difference of the log-probabilities"), (alpha_shifted_down, "off by one"),
         (alpha_plus_eos, "off by one")],
    ),
    check_average_checkpoints: (
        [average_ref, average_loop, average_sum_builtin],
        [(average_sum, "sum"), (average_last, "last checkpoint"), (average_first_last, "first and the last"),
         (average_in_place, "in place"), (average_running_half, "running average"),
         (average_by_keys, "len(states)"), (average_all_elements, "one number"), (average_cat, "torch.stack"),
         (average_last_two, "last two"), (average_library, "which is the answer")],
    ),
}


@pytest.mark.parametrize("check,fn", [(c, f) for c, (rights, _) in IMPLEMENT.items() for f in rights],
                         ids=lambda x: getattr(x, "__name__", ""))
def test_right_answers_pass(check, fn):
    result = check(fn)
    assert result.passed, result.message


@pytest.mark.parametrize("check,fn,words", [(c, f, w) for c, (_, wrongs) in IMPLEMENT.items() for f, w in wrongs],
                         ids=lambda x: getattr(x, "__name__", "") if callable(x) else "")
def test_mistakes_get_their_hint(check, fn, words):
    fails_with(check(fn), words)


def test_the_library_functions_are_refused_but_a_same_named_helper_is_not():
    from course_utils.bpe import encode_word, merges_from_counts
    from course_utils.translation import average_state_dicts

    fails_with(check_learn_merges(merges_from_counts), "which is the answer")
    fails_with(check_encode_word(encode_word), "which is the answer")
    fails_with(check_average_checkpoints(average_state_dicts), "which is the answer")

    def encode_word(word, merges):  # the learner's own function, named like the library's
        return encode_ref(word, merges)

    assert check_encode_word(encode_word).passed


# ----- 13.5: what the length penalty changes, on the shipped model ------------------------------
ALPHA_MISTAKES = [  # (answer, words its hint must contain); tests/checker_mistakes_ch13.py lists them too
    (changes_all_sources, "every source"), (changes_by_score, "every source"),
    (changes_all_sources_crash, "only for the sources whose decoded output changes"),
    (changes_power_penalty, 'penalty="gnmt"'), (changes_no_undo, "undo it"),
    (changes_divided_twice, "once more"), (changes_no_eos, "end token"), (changes_characters, "characters"),
    (changes_per_token, "mean per token"), (changes_swapped, "at_0 is the winner at alpha 2"),
    (changes_greedy_at_zero, "greedy"), (changes_greedy, "list is empty"), (changes_paper_alpha, "alpha 0.6"),
    (changes_ids, "tok.decode(ids)"), (changes_typed_in, "written into the code"),
    (changes_numbers_as_sources, "English source text"), (changes_half_model, "in place"),
    (changes_double_model, "to torch.float64 in place"), (changes_three_parts, "has three parts"),
    (changes_lookup, "seems to look them up"), (changes_be_one_pair_swapped, "swapped one pair only"),
    (changes_be_from_score, "at_2's score"), (changes_be_alpha_used, "alpha you decode with"),
    (changes_be_length_first, "(length, log_prob)"), (changes_be_per_token, "per token"),
    (changes_be_no_five, "leaves out the 5"), (changes_be_reciprocal, "1 / alpha"),
    (changes_be_shifted, "shifts both lengths"), (changes_be_difference, "difference of the log-probabilities"),
]


@pytest.mark.parametrize("fn", [changes_ref, changes_teacher_forced, changes_dict_style], ids=lambda f: f.__name__)
def test_alpha_changes_right_answers(fn):
    result = check_alpha_changes(predict_right, fn)
    assert result.passed and "matches the measurement" in result.message, result.message
    for words in ("4 of the 12 outputs change", "(a few)", "each to a longer, less probable", "between 0.10 and 1.20",
                  "2 of them lie below 0.6", "4 of these 4 new winners are closer", "none exactly right",
                  "'alpha 0 vs 0.6' row"):
        assert words in result.message, (words, result.message)


def test_alpha_changes_prediction_ignores_case_spaces_and_joining_words():
    result = check_alpha_changes(predict_right_loose, changes_ref)
    assert result.passed and "Your prediction ('a few, closer') matches" in result.message, result.message


def test_alpha_changes_explains_a_wrong_prediction():
    result = check_alpha_changes(predict_wrong, changes_ref)
    assert result.passed and "Your prediction, 'most, further', does not match the measurement, 'a few, closer'" \
        in result.message, result.message
    assert "wide margin" in result.message and "weights recall" in result.message
    half = check_alpha_changes("a few, further", changes_ref)
    assert half.passed and "weights recall" in half.message and "wide margin" not in half.message
    none = check_alpha_changes("None at all", changes_ref)
    assert none.passed and "Your prediction, 'none', does not match" in none.message, none.message
    assert "Some outputs do change" in none.message and "wide margin" not in none.message, none.message


@pytest.mark.parametrize("said,key", [("4, closer", "a few, closer"), ("0", "none"), ("6, closer", "a few, closer"),
                                      ("9 of 12, further", "most, further"), ("7/12 closer", "most, closer"),
                                      ("4 of the 12, closer", "a few, closer")])
def test_alpha_changes_reads_a_count_as_its_word(said, key):
    result = check_alpha_changes(said, changes_ref)
    assert result.passed and (f"({key!r})" in result.message or f"{key!r}, does not match" in result.message), \
        result.message


@pytest.mark.parametrize("said", ["longer, less probable", "a few", "a few, not closer", "most, closer or further",
                                  "13, closer", "4 or 5, closer", "10%, closer", "30 %, further"])
def test_alpha_changes_prediction_must_say_how_many_and_which_way(said):
    fails_with(check_alpha_changes(said, changes_ref), "not one of the choices", "'a few, closer'")


def test_alpha_changes_a_missing_exercise_13_3_is_not_done_yet():
    assert check_alpha_changes(predict_right, changes_be_not_done).not_implemented


def test_the_second_call_draws_its_sources_afresh():
    from course_utils.exercises import ch13_translation as c13

    pool, stable = ({number_name(n, "en") for n in p} for p in (c13.CHANGE_POOL, c13.STABLE_POOL))
    draws = [c13._second_sources() for _ in range(30)]
    assert all(len(d) == 3 and len(set(d) & pool) == 2 and len(set(d) & stable) == 1 for d in draws)
    assert len({frozenset(d) for d in draws}) > 10


@pytest.mark.parametrize("fn,words", ALPHA_MISTAKES, ids=lambda x: getattr(x, "__name__", ""))
def test_alpha_changes_mistakes(fn, words):
    fails_with(check_alpha_changes(predict_right, fn), words)


def test_alpha_changes_prediction_first():
    assert check_alpha_changes(lambda: "", changes_ref).not_implemented
    assert check_alpha_changes(_stub, changes_ref).not_implemented
    assert check_alpha_changes(predict_right, _stub).not_implemented
    fails_with(check_alpha_changes("much longer", changes_ref), "not one of the choices")
    fails_with(check_alpha_changes(predict_right, lambda m, t, s: []), "list is empty")


@pytest.mark.parametrize("answer,words", [
    (None, "list of (source, at_0, at_2, alpha_star)"), ({"x": 1}, "list of (source, at_0, at_2, alpha_star)"),
    ([("ten",)], "(source, at_0, at_2, alpha_star)"),
    ([(number_name(10149, "en"), "zehn", "x", 0.5)], "(output, length, log_prob)"),
    ([(number_name(10149, "en"), ("zehn", 2.5, -1.0), ("a", 5, -2.0), 0.5)], "int"),
    ([(number_name(10149, "en"), ("zehn", 2, "low"), ("a", 5, -2.0), 0.5)], "number"),
    ([(number_name(10149, "en"), ("zehn", 2, torch.tensor([1.0, 2.0])), ("a", 5, -2.0), 0.5)], "number"),
    ([(number_name(10149, "en"), ("zehn", 2, -1.0), ("a", 5, -2.0), "low")], "alpha_star"),
    ([(number_name(10149, "en"),) * 4], "(output, length, log_prob)"),
    ([(number_name(10149, "en"), ("zehn", 2, -1.0), ("a", 5, -2.0))], "has three parts"),
    ([{"source": number_name(10149, "en"), "at_0": None, "at_2": None}], "is a dict with the keys"),
])
def test_alpha_changes_odd_answers_get_a_sentence_not_a_crash(answer, words):
    result = check_alpha_changes(predict_right, lambda m, t, s: answer)
    fails_with(result, words)
    assert "\n" not in result.message and "Traceback" not in result.message


def test_alpha_changes_duplicate_and_crash():
    ten = number_name(10149, "en")
    fails_with(check_alpha_changes(predict_right, lambda m, t, s: [(ten, ("a", 2, -1.0), ("b", 5, -2.0), 0.5)] * 2),
               "appears twice")
    fails_with(check_alpha_changes(predict_right, lambda m, t, s: 1 / 0), "ZeroDivisionError")


def test_the_changed_numbers_have_margins_on_any_cpu():
    """The checker's numbers, the fixed twelve and both pools of the second call: which outputs change is decided
    by margins of at least 0.02 in score, far above what another CPU's rounding moves; the comment's list of
    changed numbers is right; every change is to a longer, less probable output with its break-even alpha
    between 0 and 2; and alpha 0.6 changes fewer of the twelve than alpha 2 (the exercise's text says so)."""
    from course_utils.exercises import ch13_translation as c13

    model, tok = c13._reference_model()
    changed, changed_at_paper_alpha = set(), set()
    for n in (*c13.CHANGE_NUMBERS, *c13.CHANGE_POOL, *c13.STABLE_POOL):
        src = pad([tok.encode(number_name(n, "en"))])
        best = {}
        for alpha in (*c13.ALPHAS, 0.6):
            if alpha == 0.6 and n not in c13.CHANGE_NUMBERS:
                continue
            hyps = beam_search(model, src, max_len=src.shape[1] + 50, beam_size=4, length_penalty=alpha,
                               penalty="gnmt")
            assert hyps[0][1] - hyps[1][1] >= 0.02, (n, alpha, hyps[:2])
            ids, score = hyps[0]
            best[alpha] = (ids, len(ids), score * length_penalty_factor(len(ids), alpha, "gnmt"))
        (ids0, a, s), (ids2, b, l) = best[0.0], best[2.0]  # noqa: E741 - Exercise 13.3's names
        if ids0 != ids2:
            changed.add(n)
            assert b > a and l < s and 0 < alpha_ref(s, a, l, b) < 2, (n, best)
        if 0.6 in best and best[0.6][0] != ids0:
            changed_at_paper_alpha.add(n)
    assert changed == {10149, 11630, 30108, 56812} | set(c13.CHANGE_POOL)
    assert changed_at_paper_alpha == {10149, 30108}


def test_the_learner_gets_a_fresh_model_and_cannot_spoil_the_reference():
    fails_with(check_alpha_changes(predict_right, changes_half_model), "in place")
    assert check_alpha_changes(predict_right, changes_ref).passed


# ----- 13.6: transfer to French -------------------------------------------------------------------
@pytest.mark.parametrize("fn", [tokens_ref, tokens_two_lists])
def test_transfer_right_answers(fn):
    result = check_transfer(predict_more, fn)
    assert result.passed and "matches the measurement" in result.message, result.message


def test_transfer_reports_a_wrong_prediction():
    result = check_transfer(predict_fewer, tokens_ref)
    assert result.passed and "You predicted 'fewer'" in result.message, result.message


@pytest.mark.parametrize("fn,words", [
    (tokens_target_only, "alone"), (tokens_english, "English names"), (tokens_characters, "characters"),
    (tokens_words, "count words"), (tokens_always_french, "lang argument"), (tokens_fixed_merges, "60 merges"),
    (tokens_fixed_200, "200 merges"),
    (tokens_with_eos, "<eos>"), (tokens_total, "total"),
], ids=lambda x: getattr(x, "__name__", ""))
def test_transfer_mistakes(fn, words):
    fails_with(check_transfer(predict_more, fn), words)


def test_transfer_prediction_must_be_a_choice():
    fails_with(check_transfer("lots", tokens_ref), "not one of the choices")


def test_transfer_failures_do_not_print_the_reference():
    result = check_transfer(predict_more, tokens_total)
    assert not result.passed and "reference" not in result.message, result.message


def test_alpha_changes_names_exercise_13_3_when_the_learners_is_a_stub():
    """In the notebook alpha_changes calls the learner's break_even_alpha by name: a stub there is named."""
    namespace = {"break_even_alpha": _stub, "changes_ref": changes_ref}
    exec("def alpha_changes(model, tok, sources):\n    return changes_ref(model, tok, sources)\n", namespace)
    fails_with(check_alpha_changes(predict_right, namespace["alpha_changes"]), "Exercise 13.3 is not written yet")
