"""course_utils.evaluation: metrics by hand and an oracle that scores 100 %."""

from __future__ import annotations

import pytest

from course_utils.evaluation import evaluate_by_length, exact_match, results_table, token_accuracy


def test_metrics_by_hand():
    preds, targets = ["cba", "olleh", "xy"], ["cba", "olleb", "xyz"]
    assert exact_match(preds, targets) == pytest.approx(1 / 3)
    assert token_accuracy(preds, targets) == pytest.approx((3 + 4 + 2) / 11)
    assert token_accuracy(["abcdef"], ["abc"]) == 1.0  # extra characters are exact match's business


def test_metric_errors():
    with pytest.raises(ValueError, match="equally long"):
        exact_match(["a"], ["a", "b"])
    with pytest.raises(TypeError, match="predictions must be a list"):
        token_accuracy("abc", ["abc"])


def test_oracle_scores_100_and_wrong_model_less():
    oracle = evaluate_by_length(lambda xs: [s[::-1] for s in xs], lengths=(3, 10, 15), n_per_length=20)
    assert all(r == {"exact_match": 1.0, "token_accuracy": 1.0} for r in oracle.values())
    identity = evaluate_by_length(lambda xs: list(xs), lengths=(5,), n_per_length=50)
    assert identity[5]["exact_match"] < 0.05 and 0.1 < identity[5]["token_accuracy"] < 0.4  # only the middle letter
    table = results_table(oracle, train_range=(3, 10))
    assert "100.0%" in table and "longer than any training string" in table


def test_same_strings_every_call():
    seen = []
    evaluate_by_length(lambda xs: seen.append(list(xs)) or list(xs), lengths=(4,), n_per_length=5)
    evaluate_by_length(lambda xs: seen.append(list(xs)) or list(xs), lengths=(4,), n_per_length=5)
    assert seen[0] == seen[1]
