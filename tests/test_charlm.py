"""Tests of the tiny-Shakespeare character LM pieces (Chapter 8): checksum, vocabulary, batches,
n-gram baselines by hand, head scores on hand-made attention."""

from __future__ import annotations

import gzip
import math

import pytest
import torch

from course_utils.charlm import (
    CORPUS_PATH,
    CharVocab,
    lm_batch,
    load_corpus,
    ngram_bits_per_char,
    train_val_ids,
)


def test_corpus_checksum_and_facts():
    text = load_corpus()
    assert len(text) == 1_115_394
    assert len(CharVocab(text)) == 65
    assert text.startswith("First Citizen:")


def test_corpus_checksum_mismatch_is_refused(tmp_path):
    bad = tmp_path / "bad.txt.gz"
    bad.write_bytes(gzip.compress(gzip.decompress(CORPUS_PATH.read_bytes())[:-1] + b"?"))
    with pytest.raises(ValueError, match="checksum mismatch"):
        load_corpus(bad)


def test_vocab_round_trip_and_split():
    vocab = CharVocab("hello world")
    assert vocab.chars == [" ", "d", "e", "h", "l", "o", "r", "w"]
    assert vocab.decode(vocab.encode("low")) == "low"
    with pytest.raises(ValueError, match="not in the vocabulary"):
        vocab.encode("x")
    train, val = train_val_ids("hello world", vocab, 0.2)
    assert len(train) == 8 and len(val) == 3


def test_lm_batch_targets_shifted():
    data = torch.arange(100)
    x, y = lm_batch(data, 4, 10, torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (4, 10)
    assert torch.equal(y, x + 1)


def test_ngram_baselines_by_hand():
    train = torch.tensor([0, 1, 0, 1, 0, 0])  # unigram counts 4, 2; bigrams 0->1 x2, 1->0 x2, 0->0 x1
    val = torch.tensor([0, 1, 1])
    assert ngram_bits_per_char(train, val, 0, 2) == pytest.approx(1.0)
    # unigram, alpha=0: p(0) = 4/6, p(1) = 2/6
    want1 = -(math.log2(4 / 6) + 2 * math.log2(2 / 6)) / 3
    assert ngram_bits_per_char(train, val, 1, 2, alpha=0.0) == pytest.approx(want1)
    # bigram, alpha=1: row 0 counts (1+1, 2+1), row 1 counts (2+1, 0+1); pairs in val: 0->1, 1->1
    want2 = -(math.log2(3 / 5) + math.log2(1 / 4)) / 2
    assert ngram_bits_per_char(train, val, 2, 2, alpha=1.0) == pytest.approx(want2)
    with pytest.raises(ValueError, match="order"):
        ngram_bits_per_char(train, val, 3, 2)
