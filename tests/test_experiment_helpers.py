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
    assert judge_range(2.2, E, show=True).startswith("The bits per character is 2.2 in your run, between 2 and 2.5")
    with pytest.raises(CheckFailed, match="is 1, below the range .* training text"):
        judge_range(1.0, E)
    with pytest.raises(CheckFailed, match="above the range .* train at all"):
        judge_range(3.0, E)
    with pytest.raises(CheckFailed, match="NaN"):
        judge_range(math.nan, E)
    with pytest.raises(CheckFailed, match="should return a number"):
        judge_range("2.2", E)


def test_verdict_shows_the_measurement_to_two_digits():
    """The learner's number is beside the range, coarse enough to print the same on every CPU."""
    line = judge_range(2.2345, E, show=True)
    assert "2.2 in your run" in line and "2.23" not in line
    from course_utils.exercises.experiment import shown

    tiny = Expected("change", 0.0, 1e-4, "noise.")
    assert "is about 0 in your run" in judge_range(1.2e-6, tiny, show=True)
    assert [shown(v) for v in (0.2241, 1.36, 98.04, 51.0, 0.004321, 3)] == ["0.22", "1.4", "98", "51", "4.3e-03", "3"]


def test_require_own_run_rejects_a_typed_in_number():
    from course_utils.exercises.experiment import require_own_run

    def measured(flag, seed):
        import torch

        return torch.randn(5, generator=torch.Generator().manual_seed(seed)).abs().mean().item()

    value = measured(True, 0)
    assert require_own_run(measured, "train_deep_stack", (True, 0), value) == measured(True, 1)
    with pytest.raises(CheckFailed, match="exactly 0.3 again with seed 1.*not a number typed in"):
        require_own_run(lambda flag, seed: 0.3, "train_deep_stack", (True, 0), 0.3)


def test_traced_call_accepts_measured_numbers_and_rejects_typed_in_ones():
    import torch

    from course_utils.exercises.experiment import RunTrace, traced_call

    def experiment():
        g = torch.Generator().manual_seed(0)
        model = torch.nn.Linear(4, 1)
        x, y = torch.randn(32, 4, generator=g), torch.randn(32, 1, generator=g)
        before = torch.nn.functional.mse_loss(model(x), y).item()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(5):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
        after = float(torch.nn.functional.mse_loss(model(x), y))
        return before / math.log(2), (before - after) / math.log(2), after / before, 1 - after / before

    result, trace = traced_call(experiment)
    for i, value in enumerate(result):  # bits, a difference in bits, a ratio, a relative gain: all explained
        assert trace.require_explains(value, f"value {i}") == value
    for typed in (0.5, 1.4, 0.3, 0.25):
        with pytest.raises(CheckFailed, match="never computed that number"):
            trace.require_explains(typed, "lost_after")
    record = RunTrace.of({"losses": [0.731, 0.52], "best": torch.tensor(0.52)})
    assert record.explains(0.731 - 0.52) and not record.explains(0.6)


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
