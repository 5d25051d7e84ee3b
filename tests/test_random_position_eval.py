"""Tests for course_utils.random_position_eval: Ruoss et al.'s evaluation with random positions."""

from __future__ import annotations

import pytest
import torch
from conftest import tiny_transformer

from course_utils.data import make_batch
from course_utils.decoding import greedy_decode
from course_utils.model import Transformer
from course_utils.random_position_eval import greedy_random_positions, reverse_with_random_positions


def _model(**kw: object) -> Transformer:
    return tiny_transformer(vocab=29, d_model=32, d_ff=64, **kw)


@pytest.mark.parametrize("positional", ["rope", "t5", "alibi"])
def test_relative_schemes_ignore_a_uniform_shift(positional: str) -> None:
    # a map that only shifts every position by the same amount leaves relative schemes unchanged,
    # so with max_position = n (the only subset is 0..n-1) the result equals plain greedy decoding
    model = _model(positional=positional)
    src = make_batch(["abcde", "xyz"])[0]
    n = max(src.shape[1], 8 + 1)
    got = greedy_random_positions(model, src, 8, n, torch.Generator().manual_seed(0))
    assert torch.equal(got, greedy_decode(model, src, 8))


def test_full_map_equals_plain_decoding_for_absolute_positions() -> None:
    model = _model(positional="sinusoidal", source_positions="end")
    src = make_batch(["hello", "ab"])[0]
    got = greedy_random_positions(model, src, 7, 8, torch.Generator().manual_seed(1))
    assert torch.equal(got, greedy_decode(model, src, 7))


def test_each_step_matches_a_full_forward_with_the_same_map() -> None:
    # the cached steps keep one map: their tokens equal the argmax of one full pass with that map
    from course_utils.data import SOS_ID
    from course_utils.positional import random_positions

    model = _model(positional="sinusoidal")
    src = make_batch(["hello", "abcdefg"])[0]
    max_len = 6
    ids = greedy_random_positions(model, src, max_len, 64, torch.Generator().manual_seed(3))
    n = max(src.shape[1], max_len + 1)
    plain_src, plain_tgt = model.positions(src != 0, n)
    table = random_positions(2, n, 64, torch.Generator().manual_seed(3))  # the same draw
    src_pos, tgt_pos = table.gather(1, plain_src), table.gather(1, plain_tgt)
    tgt = torch.cat([torch.full((2, 1), SOS_ID), ids[:, :-1]], dim=1)  # (2, T): SOS + all but the last
    with torch.no_grad():
        from course_utils.masks import causal_mask, padding_mask

        src_mask = padding_mask(src, 0)
        memory = model.encode(src, src_mask, positions=src_pos)
        logits = model.decode(tgt, memory, src_mask, tgt_mask=causal_mask(tgt.shape[1]),
                              positions=(src_pos, tgt_pos[:, : tgt.shape[1]]))
    full = logits.argmax(-1)
    for row in range(2):  # up to and including the first PAD an untrained model may emit (then masks differ)
        pads = (ids[row] == 0).nonzero()
        k = int(pads[0]) + 1 if len(pads) else ids.shape[1]
        assert torch.equal(full[row, :k], ids[row, :k])
    assert (ids[1] != 0).all()  # one row is compared over every step
    again = greedy_random_positions(model, src, max_len, 64, torch.Generator().manual_seed(3))
    assert torch.equal(ids, again)  # seeded: the same generator seed gives the same tokens


def test_reverse_with_random_positions_returns_strings_and_checks_inputs() -> None:
    model = _model(positional="rope", source_positions="end")
    out = reverse_with_random_positions(model, ["abc", "hello"], max_position=64, seed=0)
    assert len(out) == 2 and all(isinstance(s, str) for s in out)
    with pytest.raises(ValueError, match="max_position must be an int >= "):
        reverse_with_random_positions(model, ["hello"], max_position=3)
    with pytest.raises(TypeError, match="model must be a Transformer"):
        greedy_random_positions(torch.nn.Linear(2, 2), make_batch(["ab"])[0], 4, 64)


def test_shipped_extra_rows_match_the_experiment() -> None:
    """Chapter 9 compares these rows with its main table: same budget, lengths and number of strings."""
    import json
    from importlib.resources import files

    from course_utils.runs.length import STEPS, TEST_LENGTHS, load_results

    extra = json.loads(files("course_utils.assets").joinpath("length_extra_rows.json").read_text())
    assert extra["steps"] == STEPS and extra["train_lengths"] == load_results()["train_lengths"]
    curves = [extra["rows"]["randomized"]["plain_positions"], extra["rows"]["randomized"]["random_positions_at_test"],
              extra["rows"]["sinusoidal-end"]]
    for curve in curves:
        assert set(curve["exact_match"]) == {str(n) for n in TEST_LENGTHS}
        assert all(0 <= v <= 100 for v in curve["exact_match"].values())
