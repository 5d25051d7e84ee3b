"""Tests for course_utils.exercises.core: a checker never lets a traceback out."""

from __future__ import annotations

import pytest
import torch

from course_utils.exercises.core import (
    FAIL,
    PASS,
    CheckFailed,
    CheckResult,
    call_student,
    checker,
    close,
    describe,
    expect_close,
    expect_tensor,
)


@checker("0.1", "double")
def check_double(fn) -> str:
    x = torch.arange(6.0).view(2, 3)
    got = call_student(fn, x, what="double")
    expect_close(got, 2 * x, "double(x)", mistakes={"Did you add 2 instead of multiplying?": x + 2})
    return "Nice."


def test_pass_prints_one_line_and_is_truthy(capsys: pytest.CaptureFixture[str]) -> None:
    result = check_double(lambda x: x * 2)
    assert isinstance(result, CheckResult) and result and result.passed
    out = capsys.readouterr().out
    assert out == f"{PASS} Exercise 0.1 (double): all checks passed. Nice.\n"


def test_known_mistake_is_named() -> None:
    result = check_double(lambda x: x + 2)
    assert not result
    want = f"{FAIL} Exercise 0.1 (double): double(x) is not right. Did you add 2 instead of multiplying?"
    assert result.message == want


def test_unknown_wrong_answer_reports_largest_difference() -> None:
    result = check_double(lambda x: x * 2 + torch.tensor([[0, 0, 0], [0, 0.5, 0]]))
    assert "largest difference 0.5 at index (1, 1) (got 8.5, expected 8)" in result.message


def test_learner_exception_becomes_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    def broken(x):
        return x @ torch.ones(5)

    result = check_double(broken)
    assert not result and not result.not_implemented
    out = capsys.readouterr().out
    assert "double raised RuntimeError" in out and "called with tensor of shape (2, 3) (float32)" in out
    assert "Traceback" not in out and out.count("\n") == 1


@pytest.mark.parametrize(
    ("fn", "text"),
    [
        (lambda x: None, "double(x) should be a torch.Tensor, got NoneType"),
        (lambda x: x.tolist(), "should be a torch.Tensor, got list"),
        (lambda x: 2 * x.T, "should have shape (2, 3), got (3, 2)"),
        (42, "expected a function or class, got 42"),
        (lambda x: x * float("nan"), "contains NaN where the reference has numbers"),
    ],
)
def test_wrong_type_shape_none_not_callable(fn, text: str) -> None:
    result = check_double(fn)
    assert not result and text in result.message


def test_stub_is_not_implemented(capsys: pytest.CaptureFixture[str]) -> None:
    def stub(x):
        raise NotImplementedError("your code here")

    result = check_double(stub)
    assert result.not_implemented and not result
    assert "not implemented yet" in capsys.readouterr().out


def test_stub_reached_outside_call_student_is_not_implemented() -> None:
    class Stub(torch.nn.Module):
        def forward(self, x):
            raise NotImplementedError

    @checker("0.2", "module")
    def check_module(cls) -> None:
        module = call_student(cls, what="Stub()")
        module.forward(torch.zeros(1))  # called directly, not through call_student

    assert check_module(Stub).not_implemented


def test_bug_in_checker_itself_is_caught() -> None:
    @checker("0.3", "buggy")
    def check_buggy(fn) -> None:
        {}["missing"]

    result = check_buggy(lambda: None)
    assert not result and "checking stopped with KeyError" in result.message


def test_nan_in_both_tensors_at_different_places_is_a_clean_failure() -> None:
    want = torch.tensor([float("nan"), 1.0])
    with pytest.raises(CheckFailed, match="largest difference inf at index"):
        expect_close(torch.tensor([1.0, float("nan")]), want, "x")
    expect_close(torch.tensor([float("nan"), 1.0]), want, "x")  # same NaN pattern: equal


def test_helpers() -> None:
    assert close(torch.ones(2), torch.ones(2) + 1e-7)
    assert not close(torch.ones(2), torch.ones(3))
    assert not close(torch.ones(2), [1.0, 1.0])  # type: ignore[arg-type]
    assert describe(torch.zeros(2, 3)) == "tensor of shape (2, 3) (float32)"
    assert describe((torch.zeros(1), 3)) == "(tensor of shape (1,) (float32), 3)"
    with pytest.raises(CheckFailed, match="got tuple"):
        expect_tensor((1, 2), "out")
    with pytest.raises(CheckFailed, match="my_fn raised ValueError: bad .called with 1, k=2"):
        call_student(lambda a, k: (_ for _ in ()).throw(ValueError("bad")), 1, k=2, what="my_fn")


@checker("0.2", "use a module")
def check_uses_module(fn) -> None:
    module = torch.nn.Sequential(*(torch.nn.Linear(4, 4) for _ in range(12)))  # a 26-line repr
    call_student(fn, module, torch.zeros(2, 4), what="apply")


def test_module_argument_is_described_in_one_line() -> None:
    def broken(module, x):
        raise ValueError("no")

    result = check_uses_module(broken)
    assert "\n" not in result.message and "called with a Sequential module, tensor of shape (2, 4)" in result.message


def test_in_place_change_of_an_input_is_named() -> None:
    def sneaky(x):
        x *= 2  # right value, but the caller's tensor changed
        return x

    result = check_double(sneaky)
    assert not result and "modified its input (argument 1" in result.message and "in place" in result.message


def test_module_weights_changed_in_place_are_named() -> None:
    def zeroes(module, x):
        with torch.no_grad():
            module[0].bias.zero_()
        return module(x)

    result = check_uses_module(zeroes)
    assert not result and "modified 0.bias of the Sequential passed as argument 1 in place" in result.message


def test_integers_are_printed_exactly() -> None:
    with pytest.raises(CheckFailed, match=r"got 3152384, expected 3152896"):
        expect_close(torch.tensor([3152384.0]), torch.tensor([3152896.0]), "count", atol=0.5, rtol=0)


def test_close_floats_get_enough_digits_to_differ() -> None:
    with pytest.raises(CheckFailed, match=r"got 0\.500013, expected 0\.5\b"):
        expect_close(torch.tensor([0.500013]), torch.tensor([0.5]), "x", atol=1e-6, rtol=0)


# --- messages a learner tripped over (issue 20, item 8) -------------------------------------------------

def test_equal_infinities_count_as_equal_and_the_real_difference_is_reported() -> None:
    want = torch.tensor([[0.5, float("-inf"), 0.25], [float("-inf"), 1.0, 2.0]])
    got = want.clone()
    got[1, 2] = 2.5  # the one real difference
    with pytest.raises(CheckFailed) as failure:
        expect_close(got, want, "scores")
    message = str(failure.value)
    assert "largest difference 0.5 at index (1, 2)" in message and "got 2.5, expected 2" in message
    assert "inf" not in message
    expect_close(want.clone(), want, "scores")  # -inf == -inf everywhere: passes


def test_infinity_on_one_side_only_is_the_largest_difference() -> None:
    want = torch.tensor([0.0, 1.0])
    with pytest.raises(CheckFailed, match=r"largest difference inf at index \(1,\) \(got -inf, expected 1\)"):
        expect_close(torch.tensor([0.0, float("-inf")]), want, "x")


def test_no_memory_address_and_no_garbled_argument_list() -> None:
    p = torch.nn.Parameter(torch.zeros(2))
    optimizer = torch.optim.SGD([p], lr=0.1)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0)
    assert describe(optimizer) == "a SGD optimizer" and describe(scheduler) == "a LambdaLR scheduler"
    assert describe(object()) == "a object" and describe(torch.Generator()) == "a torch.Generator"

    def crash(opt, sched):
        raise RuntimeError(f"bad {opt!r}")  # the learner's error message holds an address too

    @checker("0.4", "addresses")
    def check_addresses(fn) -> None:
        call_student(fn, optimizer, scheduler, what="train_step")

    message = check_addresses(crash).message
    assert "0x" not in message and "(called with a SGD optimizer, a LambdaLR scheduler)" in message


def test_messages_agree_in_number_and_spell_tokens_as_letters() -> None:
    from course_utils.exercises.core import _verb, spell

    assert _verb("the generated tokens") == "are" and _verb("the parameters after step 1") == "are"
    assert _verb("my_alibi_bias(slopes, q_pos, k_pos)") == "is" and _verb("the loss") == "is"
    with pytest.raises(CheckFailed, match="the generated tokens are not right"):
        expect_close(torch.ones(2), torch.zeros(2), "the generated tokens", {"Hint.": torch.ones(2)})
    assert spell([5, 4, 3, 2, 0, 0]) == "'cba' EOS PAD PAD"
    assert spell(torch.tensor([1, 3, 99])) == "SOS 'a' <id 99>"
