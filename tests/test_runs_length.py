"""Tests of course_utils.runs.length (Chapter 9): recipes, shipped checkpoints and results."""

from __future__ import annotations

import pytest
import torch

from course_utils.runs import read_checkpoint
from course_utils.runs.length import (
    CAUSAL_SCHEMES,
    LOSER,
    SCHEMES,
    STEPS,
    WINNER,
    WINNER_STEPS,
    checkpoint_path,
    length_curve,
    load_results,
    load_scheme_model,
    scheme_recipe,
)
from course_utils.runs.reversal import DECODER_ONLY_RECIPE, FAST_RECIPE, checkpoint_recipe


def test_every_scheme_shares_the_model_and_budget():
    base = {k: v for k, v in FAST_RECIPE["model"].items()}
    for name in SCHEMES:
        recipe = scheme_recipe(name)
        assert recipe["train"]["steps"] == STEPS and recipe["batch_size"] == FAST_RECIPE["batch_size"]
        assert (recipe["min_len"], recipe["max_len"]) == (3, 10)
        for key, value in base.items():  # only positional fields may differ from Chapter 6's model
            if key not in ("positional", "max_len"):
                assert recipe["model"][key] == value, (name, key)
    short = scheme_recipe("rope", 1, 4, steps=20)
    assert (short["train"]["steps"], short["train"]["warmup"], short["min_len"], short["max_len"]) == (20, 2, 1, 4)
    with pytest.raises(ValueError, match="name must be one of"):
        scheme_recipe("rotary")
    with pytest.raises(ValueError, match="name must be one of"):
        checkpoint_path("nope-causal")
    assert set(CAUSAL_SCHEMES).isdisjoint(SCHEMES)
    causal = scheme_recipe("nope-causal")  # Chapter 8's decoder-only recipe, same budget
    assert causal["model"]["n_layers"] == DECODER_ONLY_RECIPE["model"]["n_layers"] and causal["train"]["steps"] == STEPS


def test_shipped_checkpoints_load_with_their_recipes():
    for name in (WINNER, LOSER):
        model = load_scheme_model(name)
        assert not model.training
        assert checkpoint_recipe(checkpoint_path(name))["scheme"] == name
        for key, value in SCHEMES[name].items():
            assert getattr(model.config, key) == value


def test_winner_reverses_long_strings_and_loser_does_not():
    strings = {n: s for n, s in ((12, "abcdefghijkl"), (20, "lengthgeneralisation"))}
    winner, loser = load_scheme_model(WINNER), load_scheme_model(LOSER)
    from course_utils.decoding import reverse_strings

    assert reverse_strings(winner, list(strings.values())) == [s[::-1] for s in strings.values()]
    assert reverse_strings(loser, ["lengthgeneralisation"]) != ["noitasilareneghtgnel"]
    curve = length_curve(winner, [4, 16], n_per_length=20)
    assert set(curve) == {"exact_match", "token_accuracy"} and curve["exact_match"]["16"] >= 90


def test_results_asset_has_every_scheme_and_length():
    results = load_results()
    assert results["train_lengths"] == [3, 10]
    assert set(SCHEMES) <= set(results["schemes"])
    for r in results["schemes"].values():
        assert list(r["exact_match"]) == [str(n) for n in range(3, 41)]
        assert all(0 <= v <= 100 for v in r["exact_match"].values())
        assert all(r["token_accuracy"][k] >= r["exact_match"][k] - 1e-9 for k in r["exact_match"])
    win = results["schemes"][WINNER]["exact_match"]
    assert min(win[str(n)] for n in range(11, 21)) >= 95  # at the experiment's budget
    assert max(results["schemes"][LOSER]["exact_match"][str(n)] for n in range(12, 41)) <= 5
    assert "variant_40_5" in results and results["recipe"]["schemes"][WINNER] == scheme_recipe(WINNER)


def test_shipped_winner_curve():
    shipped = read_checkpoint(checkpoint_path(WINNER))
    recipe, results = shipped["recipe"], shipped["results"]
    curve = results["curve"]["exact_match"]
    assert recipe["train"]["steps"] == WINNER_STEPS
    # the bar: >= 99.5 % at every training length 3-10 and >= 95 % at every length 11-20. On the
    # curve's 100 strings per length 99.5 % would mean no miss at all, so the training lengths are
    # judged on the 1000 other strings per length of "inside_curve" (one miss is 0.1 %), and the
    # 100-string curve there only has to show no more than one miss per length
    inside = results["inside_curve"]
    assert inside["n_per_length"] == 1000 and list(inside["exact_match"]) == [str(n) for n in range(3, 11)]
    assert min(inside["exact_match"].values()) >= 99.5
    assert min(curve[str(n)] for n in range(3, 11)) >= 99 and min(curve[str(n)] for n in range(11, 21)) >= 95
    assert min(curve[str(n)] for n in range(21, 41)) >= 90  # and the curve out to 40 holds up


def test_random_positions_only_in_training():
    model = load_scheme_model(WINNER)
    keep = torch.ones(1, 5, dtype=torch.bool)
    assert model.positions(keep, 6)[1].tolist() == [list(range(6))]


def test_position_gap_compares_training_and_plain_positions():
    from course_utils.runs.length import position_gap

    winner = load_scheme_model(WINNER)
    gap = position_gap(winner, n_strings=64)
    assert set(gap) == {"loss_training_positions", "loss_plain_positions"} and not winner.training
    assert gap["loss_plain_positions"] < 0.05  # the shipped winner reverses strings of 3-10 letters
    assert position_gap(winner, n_strings=64) == gap  # seeded: the same random positions each time
    torch.manual_seed(3)
    want = torch.rand(3)
    torch.manual_seed(3)
    position_gap(winner, n_strings=8)
    assert torch.equal(torch.rand(3), want)  # the caller's random state is untouched
    with pytest.raises(ValueError, match="random_positions > 0"):
        position_gap(load_scheme_model(LOSER))


def test_every_string_score_counts_every_string():
    from course_utils.evaluation import every_string_score

    perfect = every_string_score(lambda strings: [s[::-1] for s in strings], 2)
    assert (perfect["strings"], perfect["wrong"], perfect["exact_match"], perfect["misses"]) == (676, 0, 100.0, [])
    # a predictor that gets every string with a repeated letter wrong: 26 of the 676 two-letter strings
    no_repeats = every_string_score(lambda strings: [s[::-1] if len(set(s)) == len(s) else "" for s in strings], 2)
    assert no_repeats["wrong"] == 26 and no_repeats["misses"][0] == ["aa", ""]
    assert no_repeats["exact_match"] == round(100 * 650 / 676, 2)
    with pytest.raises(ValueError, match="length must be at most 4"):
        every_string_score(perfect, 5)


def test_shipped_winner_every_three_letter_string():
    score = read_checkpoint(checkpoint_path(WINNER))["results"]["every_string_3"]
    assert score["strings"] == 26**3 and score["wrong"] == len(score["misses"])
    assert score["exact_match"] >= 99.5
