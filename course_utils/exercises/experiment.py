"""What every (experiment) exercise shares: a prediction recorded first, a measurement judged
against a range that the reference run established, and a sentence on what the result means.

An experiment checker is an ordinary ``@checker`` whose body calls :func:`require_prediction`
before it measures anything, then :func:`judge_range` on the measured value. The verdict it
prints names the range, never the low-order digits of the measurement, so the printed line is
the same on every CPU (nbval compares it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .core import CheckFailed, NotDoneYet, as_number, call_student


@dataclass(frozen=True)
class Expected:
    """The range ``[low, high]`` a correct experiment lands in, and what each outcome means.

    ``low``/``high`` come from the reference run (with the spread seen over seeds and the
    numerics settings `make test` runs), never from a single measured number.
    """

    quantity: str  # "bits per character after 200 steps"
    low: float
    high: float
    meaning: str  # printed on a pass: what the measured outcome says
    below: str = ""  # likely cause when the value is under ``low``
    above: str = ""  # likely cause when the value is over ``high``

    def __post_init__(self) -> None:
        if not (math.isfinite(self.low) and math.isfinite(self.high) and self.low <= self.high):
            raise ValueError(f"Expected range must be finite with low <= high, got [{self.low}, {self.high}]")


def require_prediction(prediction: Any, options: Mapping[str, str] | None = None) -> str:
    """The learner's recorded prediction, checked before anything is measured.

    ``prediction`` is a string; with ``options`` (key -> description) it must be one of the keys.
    An empty or missing prediction counts as not done yet: predict first, then measure.
    """
    if prediction is None or (isinstance(prediction, str) and not prediction.strip()) or prediction is ...:
        raise NotDoneYet()
    if not isinstance(prediction, str):
        raise CheckFailed(f"write your prediction as a string before you measure, got {type(prediction).__name__}")
    key = prediction.strip()
    if options is not None and key not in options:
        choices = ", ".join(repr(k) for k in options)
        raise CheckFailed(f"your prediction {key!r} is not one of the choices {choices}: pick one of them.")
    return key


def judge_range(measured: Any, expected: Expected, *, what: str = "your measurement") -> str:
    """Fail with the likely cause when ``measured`` is outside the expected range; else return its meaning.

    The message states the range and which side the value fell on, never the value's last digits.
    """
    value = as_number(measured, what)
    if math.isnan(value):
        raise CheckFailed(f"{what} ({expected.quantity}) is NaN: the run diverged or divided by zero.")
    span = f"between {_fmt(expected.low)} and {_fmt(expected.high)}"
    if value < expected.low:
        cause = f" {expected.below}" if expected.below else ""
        raise CheckFailed(f"{what} ({expected.quantity}) is below the range the reference run gives ({span}).{cause}")
    if value > expected.high:
        cause = f" {expected.above}" if expected.above else ""
        raise CheckFailed(f"{what} ({expected.quantity}) is above the range the reference run gives ({span}).{cause}")
    return f"The {expected.quantity} is {span}, as in the reference run: {expected.meaning}"


def measure(fn: Any, name: str, *args: Any, label: str | None = None) -> float:
    """The learner's measurement ``fn(*args)`` as a float; a crash or a non-number fails with a readable hint.

    ``name`` is the function's name in the exercise ("train_deep_stack"); ``label`` names the call in
    messages (default ``name(arg, ...)``). A measurement may train a model, so its inputs may change.
    """
    label = label or f"{name}({', '.join(repr(a) for a in args)})"
    return as_number(call_student(fn, *args, what=f"your {name}", may_modify=True), label)


def compare_prediction(prediction: str, outcome: str, explanations: Mapping[str, str] | None = None) -> str:
    """One sentence on the learner's prediction against the measured outcome (both option keys)."""
    if prediction == outcome:
        return f"Your prediction ({prediction!r}) matches the measurement."
    why = (explanations or {}).get(prediction, "")
    return f"You predicted {prediction!r}; the measurement says {outcome!r}." + (f" {why}" if why else "")


def _fmt(x: float) -> str:
    """A range end for messages: at most three significant digits, integers as integers."""
    if float(x).is_integer() and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.3g}"


def read_prediction(prediction: Any, options: Mapping[str, str] | None = None) -> str:
    """Like :func:`require_prediction`, but ``prediction`` may also be a function that returns the string.

    A solution cell writes the prediction as ``def my_prediction(): return "..."`` so that the
    student copy's stub (``raise NotImplementedError``) leaves it blank: that counts as not done yet.
    """
    if callable(prediction):
        prediction = call_student(prediction, what="your prediction")
    return require_prediction(prediction, options)
