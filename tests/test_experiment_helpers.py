"""The shared helpers of (experiment) exercises: predictions first, ranges, friendly verdicts."""

import math

import pytest

from course_utils.exercises.core import CheckFailed, NotDoneYet
from course_utils.exercises.experiment import Expected, compare_prediction, judge_range, require_prediction

E = Expected("bits per character", 2.0, 2.5, "the model beats the bigram baseline.",
             below="Did you evaluate on the training text?", above="Did the run train at all?")


def test_prediction_is_required_first():
    for empty in (None, "", "   ", ...):
        with pytest.raises(NotDoneYet):
            require_prediction(empty)
    assert require_prediction(" faster ", {"faster": "", "slower": ""}) == "faster"
    with pytest.raises(CheckFailed, match="not one of the choices 'faster', 'slower'"):
        require_prediction("quicker", {"faster": "", "slower": ""})
    with pytest.raises(CheckFailed, match="as a string"):
        require_prediction(3)


def test_range_verdicts_name_the_range_and_the_cause():
    assert judge_range(2.2, E).startswith("The bits per character is between 2 and 2.5")
    with pytest.raises(CheckFailed, match="below the range .* training text"):
        judge_range(1.0, E)
    with pytest.raises(CheckFailed, match="above the range .* train at all"):
        judge_range(3.0, E)
    with pytest.raises(CheckFailed, match="NaN"):
        judge_range(math.nan, E)
    with pytest.raises(CheckFailed, match="should return a number"):
        judge_range("2.2", E)


def test_verdict_never_prints_the_measured_digits():
    assert "2.2345" not in judge_range(2.2345, E)


def test_expected_rejects_bad_ranges():
    with pytest.raises(ValueError, match="low <= high"):
        Expected("x", 2.0, 1.0, "")


def test_compare_prediction():
    assert "matches" in compare_prediction("a", "a")
    assert compare_prediction("a", "b", {"a": "Why."}).endswith("Why.")


def test_read_prediction_takes_a_string_or_a_function_that_returns_one():
    from course_utils.exercises.experiment import read_prediction

    options = {"faster": "", "slower": ""}
    assert read_prediction("faster", options) == "faster"
    assert read_prediction(lambda: " slower ", options) == "slower"

    def stub():
        raise NotImplementedError

    with pytest.raises(NotDoneYet):
        read_prediction(stub, options)  # the student copy's stub: predict first
    with pytest.raises(NotDoneYet):
        read_prediction(lambda: "", options)
    with pytest.raises(CheckFailed, match="your prediction raised ZeroDivisionError"):
        read_prediction(lambda: 1 / 0, options)
    with pytest.raises(CheckFailed, match="not one of the choices"):
        read_prediction(lambda: "quicker", options)


def test_measure_returns_a_float_and_names_the_call():
    from course_utils.exercises.experiment import measure

    assert measure(lambda flag, seed: 0.25, "train_deep_stack", True, 0) == 0.25
    with pytest.raises(CheckFailed, match=r"train_deep_stack\(False, 0\) should return a number"):
        measure(lambda flag, seed: "0.25", "train_deep_stack", False, 0)
    with pytest.raises(CheckFailed, match="your top_weight raised ZeroDivisionError"):
        measure(lambda d_k: 1 / 0, "top_weight", 4, label="top_weight(4)")

    def stub(*args):
        raise NotImplementedError

    with pytest.raises(NotDoneYet):
        measure(stub, "order_sensitivity", "none", 0)
