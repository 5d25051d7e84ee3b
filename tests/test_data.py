"""course_utils.data: vocabulary, encode/decode, teacher-forcing batches."""

from __future__ import annotations

import pytest
import torch

from course_utils.data import (
    EOS_ID,
    PAD_ID,
    SOS_ID,
    VOCAB_SIZE,
    decode,
    encode,
    make_batch,
    random_batch,
    random_letter_ids,
    random_strings,
)


def test_vocabulary_ids():
    assert (PAD_ID, SOS_ID, EOS_ID, VOCAB_SIZE) == (0, 1, 2, 29)
    assert encode("az") == [3, 28]


@pytest.mark.parametrize("text", ["a", "hello", "zyxwvutsrqponmlkjihgfedcba"])
def test_round_trip(text):
    assert decode(encode(text)) == text
    assert decode(torch.tensor(encode(text))) == text


def test_decode_stops_at_eos_and_skips_specials():
    assert decode([SOS_ID, 3, 4, EOS_ID, 5]) == "ab"
    assert decode([3, PAD_ID, 4]) == "ab"


@pytest.mark.parametrize(("text", "char", "pos"), [("heLlo", "'L'", "position 2"), ("a b", "' '", "position 1")])
def test_encode_error_names_character_and_position(text, char, pos):
    with pytest.raises(ValueError, match=f"{char} at {pos}"):
        encode(text)


def test_bad_inputs():
    with pytest.raises(TypeError, match="text must be a str"):
        encode(["a"])
    with pytest.raises(ValueError, match=r"ids\[1\]"):
        decode([3, 99])
    with pytest.raises(TypeError, match="strings must be"):
        make_batch("abc")
    with pytest.raises(ValueError, match="min_len must be <= max_len"):
        random_strings(3, 5, 2)


def test_make_batch_shapes_padding_and_shift():
    src, tgt_in, tgt_out = make_batch(["abc", "hello"])
    assert src.shape == (2, 5) and tgt_in.shape == tgt_out.shape == (2, 6)
    assert src[0].tolist() == [3, 4, 5, PAD_ID, PAD_ID]
    assert tgt_out[0].tolist() == encode("cba") + [EOS_ID, PAD_ID, PAD_ID]
    assert tgt_in[0].tolist() == [SOS_ID] + encode("cba") + [PAD_ID, PAD_ID]
    assert decode(tgt_out[1]) == "olleh"
    # teacher forcing: tgt_in is tgt_out shifted right by one with SOS in front
    letters = tgt_out[:, :-1] > EOS_ID
    assert torch.equal(tgt_in[:, 1:][letters], tgt_out[:, :-1][letters])
    assert (tgt_in[:, 0] == SOS_ID).all()


def test_random_strings_seeded_and_in_range():
    a = random_strings(50, 3, 10, torch.Generator().manual_seed(0))
    b = random_strings(50, 3, 10, torch.Generator().manual_seed(0))
    assert a == b and all(3 <= len(s) <= 10 for s in a) and len({len(s) for s in a}) > 3


def test_length_draw_frequencies():
    """"uniform" keeps the old stream; "proportional" draws length L with probability L / sum."""
    g = torch.Generator().manual_seed(0)
    _, uniform = random_letter_ids(40_000, 3, 10, torch.Generator().manual_seed(0))
    assert torch.equal(uniform, torch.randint(3, 11, (40_000,), generator=g))  # the stream Chapter 6 was made with
    ids, lengths = random_letter_ids(40_000, 3, 10, torch.Generator().manual_seed(0), "proportional")
    share = torch.bincount(lengths, minlength=11)[3:].double() / 40_000  # (8,)
    want = torch.arange(3, 11, dtype=torch.double) / sum(range(3, 11))
    # 40,000 draws: a share's standard error is at most 0.002, so 0.01 is five of them
    assert torch.allclose(share, want, atol=0.01), share
    assert ((ids != PAD_ID).sum(1) == lengths).all()  # padding starts right after each length
    with pytest.raises(ValueError, match="length_draw must be 'uniform' or 'proportional', got 'linear'"):
        random_letter_ids(4, 3, 10, None, "linear")


def test_random_batch_matches_make_batch():
    g = torch.Generator().manual_seed(3)
    src, tgt_in, tgt_out = random_batch(32, 2, 7, g)
    strings = [decode(row) for row in src]
    for got, want in zip((src, tgt_in, tgt_out), make_batch(strings), strict=False):
        assert torch.equal(got, want)
