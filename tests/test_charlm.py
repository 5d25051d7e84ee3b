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


def test_previous_token_score_hand_made():
    T = 6
    prev = torch.zeros(1, 2, T, T)
    prev[0, 0, 0, 0] = 1.0
    prev[0, 0, torch.arange(1, T), torch.arange(T - 1)] = 1.0  # head 0: always the previous token
    prev[0, 1] = torch.tril(torch.ones(T, T)) / torch.arange(1, T + 1)[:, None]  # head 1: uniform average
    from course_utils.charlm import previous_token_score

    got = previous_token_score(prev)
    want_uniform = sum(1 / (t + 1) for t in range(1, T)) / (T - 1)
    torch.testing.assert_close(got, torch.tensor([1.0, want_uniform]))


def test_induction_score_hand_made():
    from course_utils.charlm import induction_score

    L = 4
    w = torch.zeros(1, 1, 2 * L, 2 * L)
    w[0, 0, torch.arange(2 * L), torch.arange(2 * L)] = 1.0  # attends to itself: score 0
    assert induction_score(w, L).item() == 0.0
    w2 = torch.zeros(1, 1, 2 * L, 2 * L)
    q = torch.arange(L, 2 * L)
    w2[0, 0, q, q - L + 1] = 1.0  # the token after the earlier occurrence: score 1
    assert induction_score(w2, L).item() == 1.0
    with pytest.raises(ValueError, match="2 \\* length"):
        induction_score(w2, 3)


def test_lm_loss_counts_every_position_the_newline_included():
    """lm_loss is F.cross_entropy over all B*T positions; id 0 (the newline in the character vocabulary)
    is a target like any other, where train()'s default loss would skip it as padding."""
    import torch.nn.functional as F

    from course_utils.charlm import lm_loss

    g = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 5, 7, generator=g)
    targets = torch.zeros(2, 5, dtype=torch.long)  # every target is id 0
    expected = F.cross_entropy(logits.reshape(-1, 7), targets.reshape(-1))
    assert torch.allclose(lm_loss(logits, targets), expected)
    assert float(lm_loss(logits, targets)) > 0
    with pytest.raises(ValueError, match="targets"):
        lm_loss(logits, torch.full((2, 5), 7))  # id out of range
    with pytest.raises(ValueError, match="targets must have shape"):
        lm_loss(logits, torch.zeros(2, 4, dtype=torch.long))
    with pytest.raises(TypeError, match="logits"):
        lm_loss(torch.zeros(2, 5, 7, dtype=torch.long), targets)
    with pytest.raises(ValueError, match="logits"):
        lm_loss(logits[0], targets)


def test_consecutive_windows_is_the_one_rule_of_the_validation_windows():
    from course_utils.charlm import consecutive_windows
    from course_utils.mlm import val_windows

    idx = consecutive_windows(23, 5)  # (23 - 1) // 5 = 4 windows, each with its next id
    assert idx.tolist() == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [10, 11, 12, 13, 14], [15, 16, 17, 18, 19]]
    assert consecutive_windows(23, 5, max_windows=2).shape == (2, 5)
    assert consecutive_windows(23, 5, max_windows=99).shape == (4, 5)
    ids = torch.arange(100, 123)
    assert torch.equal(val_windows(ids, 5, 3), ids[:15].reshape(3, 5))  # what mlm.val_windows returned before
    with pytest.raises(ValueError, match="n_tokens must be"):
        consecutive_windows(5, 5)
    with pytest.raises(ValueError, match="max_windows must be a positive int"):
        consecutive_windows(23, 5, max_windows=0)
