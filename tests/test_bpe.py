"""Tests for course_utils.bpe: the learned merges equal the tokenizers trainer's, encoding and decoding. Chapter 13."""

from __future__ import annotations

import json
import random

import pytest
from num2words import num2words
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from course_utils import bpe


def _number_texts(numbers: list[int], lang: str = "de") -> list[str]:
    return [t for n in numbers for t in (num2words(n, lang="en"), num2words(n, lang=lang))]


def _tokenizers_merges(texts: list[str], n_merges: int) -> list[tuple[str, str]]:
    """The `tokenizers` BPE trainer on the same words (pre-tokenised by bpe.pretokenize), same tie rule."""
    words = [" ".join(bpe.pretokenize(t)) for t in texts]
    alphabet = {ch for w in words for ch in w if ch != " "}
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    trainer = trainers.BpeTrainer(vocab_size=len(bpe.SPECIAL_TOKENS) + len(alphabet) + n_merges, min_frequency=2,
                                  special_tokens=list(bpe.SPECIAL_TOKENS), show_progress=False, limit_alphabet=10**6)
    tok.train_from_iterator(words, trainer)
    merges = json.loads(tok.to_str())["model"]["merges"]
    return [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in merges]


@pytest.mark.parametrize("lang,n_numbers,n_merges", [("de", 800, 120), ("fr", 500, 80), ("nl", 300, 60)])
def test_merges_equal_the_tokenizers_bpe_trainer(lang: str, n_numbers: int, n_merges: int) -> None:
    texts = _number_texts(random.Random(0).sample(range(10000), n_numbers), lang)
    assert bpe.learn_merges(texts, n_merges) == _tokenizers_merges(texts, n_merges)


def test_merges_equal_the_tokenizers_trainer_on_ties_and_repeats() -> None:
    texts = ["ab ba abab", "aaaa ba", "low lower newest widest newest newest"]
    assert bpe.learn_merges(texts, 12) == _tokenizers_merges(texts, 12)


def test_each_merge_is_the_most_frequent_pair_when_recounted() -> None:
    """The property that pins BPE down: recount every pair from scratch after each merge."""
    counts = bpe.word_counts(_number_texts(list(range(0, 2000, 7))))
    words = {tuple(w): c for w, c in counts.items()}
    for pair in bpe.merges_from_counts(dict(counts), 60):
        tally: dict[tuple[str, str], int] = {}
        for symbols, c in words.items():
            for p in zip(symbols, symbols[1:], strict=False):
                tally[p] = tally.get(p, 0) + c
        assert tally[pair] == max(tally.values())
        words = {bpe.merge_word(s, pair): c for s, c in words.items()}


def test_merges_learn_the_german_morphemes() -> None:
    texts = _number_texts(list(range(3000)))
    made = {a + b for a, b in bpe.learn_merges(texts, 150)}
    assert {"und", "zig", "hundert", "tausend"} <= made


@pytest.mark.parametrize("text", ["vierunddreißig", "one thousand, two hundred and thirty-four", "", " a", "a  b ",
                                  "quatre-vingt-dix-sept"])
def test_round_trip_is_exact(text: str) -> None:
    tok = bpe.BPETokenizer.train(_number_texts(list(range(200)), "fr") + ["a b, c", "vierunddreißig"], 40)
    assert tok.decode(tok.encode(text)) == text
    assert bpe.detokenize(tok.tokens(text)) == text


def test_ids_are_specials_then_characters_then_merges() -> None:
    tok = bpe.BPETokenizer(["b", "a"], [("a", "b")])
    assert tok.itos == ["<pad>", "<sos>", "<eos>", "a", "b", bpe.WORD_START, "ab"]
    assert (bpe.PAD_ID, bpe.SOS_ID, bpe.EOS_ID) == (0, 1, 2)
    assert tok.encode("ab ab") == [5, 6, 5, 6]
    assert tok.decode([1, 5, 6, 2, 5]) == "ab"  # SOS skipped, stops at EOS


def test_encode_word_applies_merges_in_learned_order() -> None:
    assert bpe.encode_word("▁abc", [("b", "c"), ("a", "b")]) == ["▁", "a", "bc"]
    assert bpe.encode_word("▁abc", [("a", "b"), ("b", "c")]) == ["▁", "ab", "c"]
    assert bpe.encode_word("▁aaaaa", [("a", "a"), ("aa", "a")]) == ["▁", "aa", "aaa"]


def test_unknown_character_is_a_clear_error() -> None:
    tok = bpe.BPETokenizer(["a"], [])
    with pytest.raises(ValueError, match="'z'"):
        tok.encode("az")
