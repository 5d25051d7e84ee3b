"""Sliding-window attention (Chapter 11): the mask, leakage, cost, and the LM under a window."""

import pytest
import torch

from course_utils.gpt import DecoderOnly, DecoderOnlyConfig
from course_utils.masks import causal_mask
from course_utils.positions import POSITIONAL_SCHEMES
from course_utils.sliding_window import keys_per_query, masked_logits, sliding_window_mask, windowed_bits_per_char


def test_mask_by_hand():
    m = sliding_window_mask(4, 2)[0, 0].int().tolist()
    assert m == [[1, 0, 0, 0], [1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]]
    assert torch.equal(sliding_window_mask(6, 6), causal_mask(6))
    assert torch.equal(sliding_window_mask(6, 100), causal_mask(6))
    with pytest.raises(ValueError, match="window"):
        sliding_window_mask(4, 0)


def test_keys_per_query():
    assert keys_per_query(4, None) == (1 + 2 + 3 + 4) / 4
    assert keys_per_query(4, 2) == (1 + 2 + 2 + 2) / 4


def test_no_leakage_outside_the_window():
    torch.manual_seed(0)
    model = DecoderOnly(DecoderOnlyConfig(vocab_size=9, d_model=16, n_heads=2, d_ff=32, n_layers=1, max_len=20))
    tokens = torch.randint(0, 9, (1, 12))
    mask = sliding_window_mask(12, 3)
    base = masked_logits(model, tokens, mask)
    changed = tokens.clone()
    changed[0, 2] = (changed[0, 2] + 1) % 9  # one layer, window 3: positions 2..4 may move, no others
    diff = (masked_logits(model, changed, mask) - base).abs().amax(-1)[0]
    assert (diff[:2] == 0).all() and (diff[5:] == 0).all() and (diff[2:5] > 0).all()


@pytest.mark.parametrize("positional", POSITIONAL_SCHEMES)
def test_full_window_equals_the_model(positional):
    # the sliding-window path is the model's own forward pass: every positional scheme survives it
    torch.manual_seed(0)
    config = DecoderOnlyConfig(vocab_size=9, d_model=16, n_heads=2, d_ff=32, n_layers=2, max_len=20,
                               positional=positional)
    model = DecoderOnly(config).eval()
    if positional == "t5":  # its bias table starts at zero: give it weights that change the logits
        with torch.no_grad():
            model.positional_scheme.t5["decoder"].table.weight.normal_()
    tokens = torch.randint(0, 9, (2, 10))
    torch.testing.assert_close(masked_logits(model, tokens, sliding_window_mask(10, 10)), model(tokens))
    if positional != "none":  # a shorter window changes the logits of the late queries only
        short = masked_logits(model, tokens, sliding_window_mask(10, 3))
        torch.testing.assert_close(short[:, :3], model(tokens)[:, :3])
        assert not torch.allclose(short[:, 3:], model(tokens)[:, 3:])
    val = torch.randint(0, 9, (101,))
    assert windowed_bits_per_char(model, val, 10, None) == pytest.approx(windowed_bits_per_char(model, val, 10, 10))


def test_the_window_keeps_each_scheme_s_positions():
    # the old hand-written forward dropped RoPE/ALiBi/T5: the relative schemes must differ from "none"
    torch.manual_seed(0)
    tokens = torch.randint(0, 9, (1, 8))
    mask = sliding_window_mask(8, 4)
    outs = {}
    for positional in ("rope", "alibi", "none"):
        torch.manual_seed(1)
        model = DecoderOnly(DecoderOnlyConfig(vocab_size=9, d_model=16, n_heads=2, d_ff=32, n_layers=1, max_len=20,
                                              positional=positional)).eval()
        outs[positional] = masked_logits(model, tokens, mask)
    assert not torch.allclose(outs["rope"], outs["none"])
    assert not torch.allclose(outs["alibi"], outs["none"])
