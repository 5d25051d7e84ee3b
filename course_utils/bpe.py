"""Byte-pair encoding (Sennrich et al., 2016): learn merges, encode, decode, one shared vocabulary. Chapter 13.

Pre-tokenisation: the text is split at every space and each piece becomes a *word* that starts
with the marker ``▁`` (U+2581), so ``"one thousand"`` is the two words ``▁one`` and ``▁thousand``.
The marker keeps the spaces inside the tokens, so decoding is exact: join the tokens, turn every
``▁`` back into a space and drop the one in front.

Learning: every word starts as its characters. At each step, count every pair of adjacent
symbols over the corpus (a word that occurs c times counts c times; a pair that occurs twice in
one word counts twice), merge the most frequent pair everywhere into one new symbol, and record
the merge. Among pairs of equal count, the pair whose left symbol came first in the vocabulary
wins (then its right symbol), where the vocabulary is the special tokens, then the characters
sorted by code point, then the merged symbols in the order they were made. This is the tie rule
of the ``tokenizers`` package's BPE trainer, so the two learn the same merges (Chapter 13 checks
it). Learning stops after ``n_merges`` merges or when no pair occurs ``min_count`` times.

Encoding a word: start from its characters and apply the learned merges in the order they were
learned (the earliest-learned pair present first, leftmost occurrence first).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

import torch

from .validate import as_index, check_int, check_str_list

WORD_START = "\u2581"  # "▁": marks the start of every word (the space before it)
SPECIAL_TOKENS = ("<pad>", "<sos>", "<eos>")  # ids 0, 1, 2: the same ids as Chapter 6 (course_utils.data)
PAD_ID, SOS_ID, EOS_ID = 0, 1, 2

Pair = tuple[str, str]


def _check_pair(name: str, pair: object) -> Pair:
    if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and all(isinstance(s, str) and s for s in pair)):
        raise ValueError(f"{name} must be a pair of non-empty strings such as ('u', 'nd'), got {pair!r:.60}")
    return pair[0], pair[1]


def _check_text(name: str, text: object) -> str:
    if not isinstance(text, str):
        raise TypeError(f"{name} must be a str, got {type(text).__name__}")
    if WORD_START in text:
        raise ValueError(f"{name} must not contain the word marker {WORD_START!r} (U+2581), got {text[:60]!r}")
    return text


def pretokenize(text: str) -> list[str]:
    """The words of ``text``: split at every space, each piece prefixed with ``▁``. Chapter 13."""
    _check_text("text", text)
    return [WORD_START + piece for piece in text.split(" ")]


def word_counts(texts: Iterable[str]) -> Counter[str]:
    """How often each pre-tokenised word occurs in ``texts``. Chapter 13."""
    texts = check_str_list("texts", list(texts) if not isinstance(texts, str) else texts)
    counts: Counter[str] = Counter()
    for i, text in enumerate(texts):
        _check_text(f"texts[{i}]", text)
        counts.update(pretokenize(text))
    return counts


def _pair_counts(words: dict[tuple[str, ...], int]) -> Counter[Pair]:
    counts: Counter[Pair] = Counter()
    for symbols, c in words.items():
        for pair in zip(symbols, symbols[1:], strict=False):
            counts[pair] += c
    return counts


def merge_word(symbols: Sequence[str], pair: Pair) -> tuple[str, ...]:
    """``symbols`` with every occurrence of ``pair`` (left to right, not overlapping) joined. Chapter 13."""
    if isinstance(symbols, str) or not isinstance(symbols, (list, tuple)):
        raise TypeError(f"symbols must be a list or tuple of str, got {type(symbols).__name__}")
    a, b = _check_pair("pair", pair)
    out: list[str] = []
    i = 0
    while i < len(symbols):
        if i + 1 < len(symbols) and symbols[i] == a and symbols[i + 1] == b:
            out.append(a + b)
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return tuple(out)


def learn_merges(texts: Iterable[str], n_merges: int, min_count: int = 2) -> list[Pair]:
    """The first ``n_merges`` BPE merges learned from ``texts`` (fewer if no pair occurs ``min_count`` times). Ch 13.

    Ties between pairs of equal count go to the pair whose symbols came first in the
    vocabulary (see the module docstring). Counts are updated only for the words a merge
    touches, so learning a few hundred merges from thousands of words takes a moment.
    """
    return merges_from_counts(word_counts(texts), n_merges, min_count)


def merges_from_counts(counts: dict[str, int], n_merges: int, min_count: int = 2) -> list[Pair]:
    """:func:`learn_merges` from word counts {pre-tokenised word: count} instead of texts. Chapter 13."""
    if not isinstance(counts, dict) or not all(isinstance(w, str) and w for w in counts):
        raise TypeError(f"counts must be a dict of non-empty word -> count, got {type(counts).__name__}")
    for w, c in counts.items():
        check_int(f"counts[{w!r}]", c, low=1)
    n_merges = check_int("n_merges", n_merges, low=0)
    min_count = check_int("min_count", min_count, low=1)
    rank = {s: i for i, s in enumerate(SPECIAL_TOKENS)}
    for ch in sorted({ch for w in counts for ch in w}):
        rank[ch] = len(rank)
    words: list[tuple[str, ...]] = [tuple(w) for w in counts]  # each distinct word as its symbols
    freq: list[int] = list(counts.values())
    pairs: Counter[Pair] = Counter()
    where: dict[Pair, set[int]] = {}  # pair -> indices of the words that hold it (may hold stale ones)
    for i, symbols in enumerate(words):
        for pair in zip(symbols, symbols[1:], strict=False):
            pairs[pair] += freq[i]
            where.setdefault(pair, set()).add(i)
    merges: list[Pair] = []
    while len(merges) < n_merges and pairs:
        pair, count = max(pairs.items(), key=lambda kv: (kv[1], -rank[kv[0][0]], -rank[kv[0][1]]))
        if count < min_count:
            break
        merges.append(pair)
        joined = pair[0] + pair[1]
        rank.setdefault(joined, len(rank))  # a merge that spells a known symbol keeps its rank
        for i in where.pop(pair, ()):
            old = words[i]
            new = merge_word(old, pair)
            if new == old:  # a stale index: the pair left this word in an earlier merge
                continue
            c = freq[i]
            for p in zip(old, old[1:], strict=False):  # take the old word's pairs away
                pairs[p] -= c
            for p in zip(new, new[1:], strict=False):  # and count the new word's
                pairs[p] += c
                if joined in p:
                    where.setdefault(p, set()).add(i)
            words[i] = new
        for p in [p for p, n in pairs.items() if n <= 0]:
            del pairs[p]
    return merges


def encode_word(word: str, merges: Sequence[Pair] | dict[Pair, int]) -> list[str]:
    """The BPE symbols of one pre-tokenised word: its characters, merged in the order learned. Chapter 13."""
    if not isinstance(word, str) or not word:
        raise TypeError(f"word must be a non-empty str, got {type(word).__name__} {word!r:.40}")
    if isinstance(merges, dict):
        ranks = merges
    elif isinstance(merges, (list, tuple)):
        ranks = {}
        for i, p in enumerate(merges):
            ranks.setdefault(_check_pair(f"merges[{i}]", p), i)
    else:
        raise TypeError(f"merges must be a list of pairs (or a dict pair -> rank), got {type(merges).__name__}")
    symbols: tuple[str, ...] = tuple(word)
    while len(symbols) > 1:
        present = [(ranks[p], p) for p in zip(symbols, symbols[1:], strict=False) if p in ranks]
        if not present:
            break
        symbols = merge_word(symbols, min(present)[1])
    return list(symbols)


def detokenize(tokens: Iterable[str]) -> str:
    """The text spelled by BPE token strings: join, ``▁`` -> space, drop the leading space. Chapter 13."""
    tokens = check_str_list("tokens", list(tokens) if not isinstance(tokens, str) else tokens, allow_empty=True)
    text = "".join(tokens).replace(WORD_START, " ")
    return text[1:] if text.startswith(" ") else text


class BPETokenizer:
    """A byte-pair vocabulary shared by source and target: special tokens, characters, merges. Chapter 13.

    ids: 0 ``<pad>``, 1 ``<sos>``, 2 ``<eos>`` (as in Chapter 6, so its decoders work unchanged),
    then the characters sorted by code point, then one token per merge in the order learned.
    With no merges it is a character vocabulary (with the ``▁`` marker for spaces).
    """

    def __init__(self, alphabet: Iterable[str], merges: Sequence[Pair]):
        if isinstance(alphabet, str) or not isinstance(alphabet, (set, frozenset, list, tuple)):
            raise TypeError(f"alphabet must be a set or list of characters, got {type(alphabet).__name__}")
        if isinstance(merges, (str, dict)) or not isinstance(merges, (list, tuple)):
            raise TypeError(f"merges must be a list of pairs, got {type(merges).__name__}")
        alphabet = sorted(set(alphabet) | {WORD_START})
        for ch in alphabet:
            if not isinstance(ch, str) or len(ch) != 1:
                raise ValueError(f"alphabet must hold single characters, got {ch!r}")
        self.merges: list[Pair] = []
        for i, p in enumerate(merges):
            self.merges.append(_check_pair(f"merges[{i}]", p))
        self.ranks = {p: i for i, p in enumerate(self.merges)}
        self.itos: list[str] = list(SPECIAL_TOKENS) + alphabet + [a + b for a, b in self.merges]
        self.stoi: dict[str, int] = {}
        for i, s in enumerate(self.itos):
            self.stoi.setdefault(s, i)  # a merge that spells an existing token keeps the first id
        self.alphabet = set(alphabet)
        self._words: dict[str, list[str]] = {}  # word -> its symbols, filled as words are met (speed only)

    @classmethod
    def train(cls, texts: Sequence[str], n_merges: int, min_count: int = 2) -> BPETokenizer:
        """Learn ``n_merges`` merges from ``texts`` (source and target together). Chapter 13."""
        texts = check_str_list("texts", texts)
        merges = learn_merges(texts, n_merges, min_count)
        return cls({ch for t in texts for ch in t if ch != " "}, merges)

    def __len__(self) -> int:
        return len(self.itos)

    @property
    def vocab_size(self) -> int:
        """Number of token ids (V)."""
        return len(self.itos)

    def tokens(self, text: str) -> list[str]:
        """The BPE token strings of ``text`` (no special tokens). Chapter 13."""
        words = pretokenize(text)
        out: list[str] = []
        for w in words:
            for pos, ch in enumerate(w):
                if ch not in self.alphabet:
                    raise ValueError(f"text holds {ch!r} (at word {w!r}, position {pos}), which is not in the "
                                     "vocabulary's alphabet; learn the vocabulary from text that has it")
            if w not in self._words:
                self._words[w] = encode_word(w, self.ranks)
            out.extend(self._words[w])
        return out

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (no SOS or EOS added). Chapter 13."""
        return [self.stoi[t] for t in self.tokens(text)]

    def decode(self, ids: Iterable[int]) -> str:
        """The text spelled by ``ids``: stops at the first EOS, skips PAD and SOS. Chapter 13."""
        if isinstance(ids, (str, bytes)):
            raise TypeError(f"ids must be a sequence of token ids, got {type(ids).__name__}")
        out = []
        for i in ids:
            if isinstance(i, bool) or not isinstance(i, (int, torch.Tensor)) and as_index(i) is None:
                raise TypeError(f"ids must hold integer token ids, got {type(i).__name__} {i!r:.20}")
            i = int(i)
            if i == EOS_ID:
                break
            if i in (PAD_ID, SOS_ID):
                continue
            if not 0 <= i < len(self.itos):
                raise ValueError(f"ids must be token ids in [0, {len(self.itos)}), got {i}")
            out.append(self.itos[i])
        return detokenize(out)

    def __repr__(self) -> str:
        return f"BPETokenizer(V={self.vocab_size}, merges={len(self.merges)})"
