"""Tests of reversal as one sequence for the decoder-only model (Chapter 8): data layout, batches, decoding."""

from __future__ import annotations

import pytest
import torch

from course_utils.data import EOS_ID, ITOS, PAD_ID, SEP_ID, SOS_ID, make_one_sequence_batch
from course_utils.decoding import reverse_strings_decoder_only
from course_utils.runs.reversal import DECODER_ONLY_RECIPE, build_decoder_only, one_sequence_batch_fn
from course_utils.training import masked_cross_entropy


def test_layout_hand_checked():
    inputs, targets = make_one_sequence_batch(["abc", "hello"])
    assert SEP_ID == SOS_ID
    assert inputs.shape == targets.shape == (2, 11)
    show = lambda row: " ".join(ITOS[i] for i in row.tolist())
    assert show(inputs[0]) == "a b c <sos> c b a <pad> <pad> <pad> <pad>"
    assert show(targets[0]) == "<pad> <pad> <pad> c b a <eos> <pad> <pad> <pad> <pad>"
    assert show(inputs[1]) == "h e l l o <sos> o l l e h"
    assert show(targets[1]) == "<pad> <pad> <pad> <pad> <pad> o l l e h <eos>"


def test_targets_are_inputs_shifted_on_the_target_part():
    inputs, targets = one_sequence_batch_fn(
        {**DECODER_ONLY_RECIPE, "batch_size": 16}, torch.Generator().manual_seed(0))(1)
    for x, y in zip(inputs, targets, strict=True):
        n = int((x == SEP_ID).nonzero()[0])
        assert torch.equal(y[n: 2 * n], x[n + 1: 2 * n + 1])  # y_t = x_{t+1} on the target part
        assert y[2 * n] == EOS_ID and torch.all(y[:n] == PAD_ID) and torch.all(y[2 * n + 1:] == PAD_ID)
        assert torch.equal(x[n + 1: 2 * n + 1], x[:n].flip(0))


def test_loss_ignores_source_and_padding():
    torch.manual_seed(0)
    model = build_decoder_only().eval()
    inputs, targets = make_one_sequence_batch(["abcd", "xy"])
    base = masked_cross_entropy(model(inputs), targets)
    changed = inputs.clone()
    changed[1, 5:] = 7  # padding of the short row: after its last real token, never seen by it
    torch.testing.assert_close(masked_cross_entropy(model(changed), targets), base)


def test_reverse_strings_groups_lengths_and_keeps_order():
    torch.manual_seed(0)
    model = build_decoder_only().eval()
    strings = ["abc", "hello", "xy", "abd"]
    got = reverse_strings_decoder_only(model, strings)
    assert len(got) == 4
    one_by_one = [reverse_strings_decoder_only(model, [s])[0] for s in strings]
    assert got == one_by_one


def test_bad_strings():
    with pytest.raises(TypeError):
        make_one_sequence_batch("abc")
    with pytest.raises(ValueError, match="not in the vocabulary"):
        make_one_sequence_batch(["aBc"])
    with pytest.raises(TypeError, match="model must be a course_utils.gpt.DecoderOnly"):
        reverse_strings_decoder_only(torch.nn.Linear(2, 2), ["abc"])
