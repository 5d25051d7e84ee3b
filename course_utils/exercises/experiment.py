"""What every (experiment) exercise shares: a prediction recorded first, a measurement judged
against a range that the reference run established, and a sentence on what the result means.

An experiment checker is an ordinary ``@checker`` whose body calls :func:`require_prediction`
before it measures anything, then :func:`judge_range` on the measured value. The verdict it
prints shows the learner's number (two significant digits: the printed line stays the same on
every CPU, which nbval compares) beside the range.

The number must come from the learner's own run, not be typed in. Two ways to check that:

- the checker calls the learner's function itself (:func:`measure`), and
  :func:`require_own_run` calls it once more with another seed: a real run gives another number,
  a hard-coded one the same;
- the learner's experiment runs without arguments and returns numbers
  (``def experiment(): ... return lost_before, lost_after``): :func:`traced_call` runs it while
  recording every number its tensors produce (``.item()``, ``float(t)``, ``.tolist()``, 0-d
  results), and :meth:`RunTrace.require_explains` fails when the returned number is none of
  them (nor a difference, ratio, mean, bits/nats or percent conversion of them).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor
from torch.overrides import TorchFunctionMode

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


def judge_range(measured: Any, expected: Expected, *, what: str = "your measurement", show: bool = False) -> str:
    """Fail with the likely cause when ``measured`` is outside the expected range; else return its meaning.

    A failure shows the learner's number beside the range, to two significant digits
    (:func:`shown`). ``show=True`` puts it in the pass line too ("The ... is 0.22 in your run,
    between 0.1 and 0.45 as in the reference run: ..."); it is a switch so that a chapter's stored
    pass lines change only when its notebook is re-executed.
    """
    value = as_number(measured, what)
    if math.isnan(value):
        raise CheckFailed(f"{what} ({expected.quantity}) is NaN: the run diverged or divided by zero.")
    span = f"between {_fmt(expected.low)} and {_fmt(expected.high)}"
    if value < expected.low:
        cause = f" {expected.below}" if expected.below else ""
        raise CheckFailed(f"{what} ({expected.quantity}) is {shown(value)}, below the range the reference run gives "
                          f"({span}).{cause}")
    if value > expected.high:
        cause = f" {expected.above}" if expected.above else ""
        raise CheckFailed(f"{what} ({expected.quantity}) is {shown(value)}, above the range the reference run gives "
                          f"({span}).{cause}")
    if show:
        # a range from 0 and a value within 5 % of its top from 0 (float32 noise, say): "about 0",
        # so the line does not print digits that differ between CPUs
        near_low = expected.low == 0 and abs(value) < 0.05 * expected.high
        yours = f"about {_fmt(expected.low)}" if near_low and value != expected.low else shown(value)
        return (f"The {expected.quantity} is {yours} in your run, {span} as in the reference run: "
                f"{expected.meaning}")
    return f"The {expected.quantity} is {span}, as in the reference run: {expected.meaning}"


def shown(value: float) -> str:
    """A measured number for a printed line: two significant digits, whole numbers from 10 up.

    Coarse on purpose: the last digits of a training run differ between CPUs, and nbval compares
    the printed line.
    """
    if not math.isfinite(value):
        return str(value)
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    if abs(value) >= 10:
        return f"{value:.0f}"
    if abs(value) < 0.01:
        return f"{value:.1e}"
    return f"{value:.2g}"


def require_own_run(fn: Any, name: str, args: tuple[Any, ...], value: float, *, seed_at: int = -1,
                    other_seed: int = 1, what: str = "") -> float:
    """Fail when ``fn`` returns exactly ``value`` again with another seed: a typed-in number, not a run.

    ``args`` are the arguments that gave ``value``; the seed among them (position ``seed_at``) is
    replaced by ``other_seed`` and ``fn`` is called once more. A real measurement of a random
    experiment (a loss, a mean weight) changes with the seed; a number written into the code does
    not. Returns the second measurement (a checker may judge it too). Use it on a measurement whose
    value is continuous (not an accuracy that may be 100 % on every seed).
    """
    again = list(args)
    again[seed_at] = other_seed
    label = what or f"{name}({', '.join(repr(a) for a in args)})"
    second = measure(fn, name, *again)
    if second == value:
        raise CheckFailed(
            f"{label} gives exactly {value!r} again with seed {other_seed}: a run with another seed measures "
            "another number. Return what your code measured (e.g. loss.item()), not a number typed in, and "
            "use the seed argument for every random draw."
        )
    return second


class RunTrace(TorchFunctionMode):
    """Records the numbers that tensors produce while it is active (see :func:`traced_call`)."""

    def __init__(self) -> None:
        super().__init__()
        self._scalars: list[float] = []
        self._zero_d: list[Tensor] = []
        self._means: list[float] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        result = func(*args, **(kwargs or {}))
        name = getattr(func, "__name__", "")
        if isinstance(result, bool):
            return result
        if isinstance(result, (int, float)):
            self._scalars.append(float(result))
        elif name == "tolist" and isinstance(result, list):
            flat = _flatten(result)
            self._scalars.extend(flat[:10_000])
            if flat:
                self._means.append(sum(flat) / len(flat))
        elif isinstance(result, Tensor) and result.dim() == 0 and result.dtype.is_floating_point:
            self._zero_d.append(result.detach())
        return result

    @classmethod
    def of(cls, record: Any) -> RunTrace:
        """A trace holding every number of a run's record (a dict, list, dataclass or tensor it returned).

        For experiments that hand back their run: ``RunTrace.of(history).require_explains(best, "best")``.
        """
        trace = cls()
        trace._scalars.extend(_numbers_of(record))
        return trace

    def values(self) -> list[float]:
        """Every number recorded, once each (0-d tensors read after the run)."""
        with torch._C.DisableTorchFunction():
            zero_d = [float(t) for t in self._zero_d[-5000:]]
        out = {v for v in self._scalars + zero_d + self._means if math.isfinite(v)}
        return sorted(out)

    def explains(self, value: float, rel_tol: float = 1e-6, abs_tol: float = 1e-9) -> bool:
        """Is ``value`` a recorded number, or a difference, ratio or unit conversion of recorded numbers?

        Whole numbers (sizes, counts, constants of the set-up) count alone but take no part in the
        differences and ratios: 1 / 2 would explain a typed-in 0.5. The tolerance is tight because
        the learner's arithmetic repeats the run's own (float32 values read into Python floats).
        """
        import numpy as np

        values = self.values()
        recorded = np.array(values[-5000:], dtype=np.float64)
        if recorded.size == 0:
            return False
        scales = np.array([1.0, 1 / math.log(2), math.log(2), 100.0, 0.01, -1.0])
        candidates = [(recorded[:, None] * scales[None, :]).ravel()]
        fractional = np.array([v for v in values if not float(v).is_integer()][-300:], dtype=np.float64)
        if fractional.size > 1:
            a, b = fractional[:, None], fractional[None, :]
            off = ~np.eye(fractional.size, dtype=bool)
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                pairs = np.concatenate([(a - b)[off], (a / b)[off], (1 - a / b)[off]])
            candidates += [pairs, pairs / math.log(2), 100 * pairs]
        everything = np.concatenate(candidates)
        everything = everything[np.isfinite(everything)]
        return bool(np.any(np.abs(everything - value) <= abs_tol + rel_tol * abs(value)))

    def require_explains(self, value: Any, what: str) -> float:
        """Fail unless the learner's number ``value`` comes from what the run computed; return it as float."""
        v = as_number(value, what)
        if not self.explains(v):
            raise CheckFailed(
                f"{what} is {shown(v)}, but your experiment never computed that number (none of the "
                f"{len(self.values())} numbers its tensors produced, nor a difference or ratio of two of them): "
                "return the value your run measured (e.g. loss.item()), not a number typed in."
            )
        return v


def _numbers_of(record: Any, depth: int = 0) -> list[float]:
    """Every number inside a run's record: dicts, lists, tuples, dataclasses, tensors (at most 10,000 values)."""
    import dataclasses

    if depth > 6 or isinstance(record, bool):
        return []
    if isinstance(record, (int, float)):
        return [float(record)]
    if isinstance(record, Tensor):
        return [float(v) for v in record.detach().flatten()[:10_000].tolist()]
    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        record = {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}
    if isinstance(record, Mapping):
        return [v for item in record.values() for v in _numbers_of(item, depth + 1)]
    if isinstance(record, (list, tuple)):
        return [v for item in record for v in _numbers_of(item, depth + 1)]
    return []


def _flatten(values: Any) -> list[float]:
    if isinstance(values, list):
        return [v for item in values for v in _flatten(item)]
    return [float(values)] if isinstance(values, (int, float)) and not isinstance(values, bool) else []


def traced_call(fn: Any, *args: Any, what: str = "your experiment", **kwargs: Any) -> tuple[Any, RunTrace]:
    """Run the learner's experiment ``fn(*args, **kwargs)`` and record the numbers its tensors produce.

    Returns ``(result, trace)``; check each reported number with ``trace.require_explains(x, "lost_before")``.
    A crash or a stub ends as :func:`call_student` ends it. Recording costs a Python call per torch
    operation: fine for the course's small experiments.
    """
    trace = RunTrace()
    with trace:
        result = call_student(fn, *args, what=what, may_modify=True, **kwargs)
    return result, trace


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
