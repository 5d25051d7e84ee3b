"""The checking machinery every chapter's exercises use.

A checker takes the learner's function or class, runs it on random and edge-case inputs,
compares with the reference, and explains the likely mistake. It never lets a traceback
escape: a wrong answer, a crash inside the learner's code and an unfinished stub all end in
one readable line.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ParamSpec

import torch
from torch import Tensor

P = ParamSpec("P")


class CheckFailed(Exception):
    """Raised inside a checker to fail with a hint for the learner."""


class NotDoneYet(Exception):
    """Raised inside a checker when the learner's code is still the stub."""


@dataclass
class CheckResult:
    """Outcome of one exercise check: ``passed`` and the message that was printed."""

    exercise: str
    passed: bool
    message: str
    not_implemented: bool = False

    def __bool__(self) -> bool:
        return self.passed

    def _ipython_display_(self) -> None:
        """The message is printed already; show nothing more in a notebook."""


def checker(exercise: str, title: str) -> Callable[[Callable[P, str | None]], Callable[P, CheckResult]]:
    """Turn a checking function into a friendly checker that prints one line and returns a CheckResult.

    The wrapped function raises :class:`CheckFailed` with a hint, or returns an optional
    extra sentence for the pass line.
    """

    def wrap(body: Callable[P, str | None]) -> Callable[P, CheckResult]:
        @functools.wraps(body)
        def run(*args: P.args, **kwargs: P.kwargs) -> CheckResult:
            label = f"Exercise {exercise} ({title})"
            try:
                extra = body(*args, **kwargs)
            except (NotDoneYet, NotImplementedError):  # a stub reached directly, not via call_student
                result = CheckResult(
                    exercise, False,
                    f"⏳ {label}: not implemented yet. Replace the `raise NotImplementedError` "
                    "line with your code and run the cell again.",
                    not_implemented=True,
                )
            except CheckFailed as failure:
                result = CheckResult(exercise, False, f"❌ {label}: {failure}")
            except Exception as error:  # a bug we did not foresee: still no traceback
                result = CheckResult(
                    exercise, False,
                    f"❌ {label}: checking stopped with {type(error).__name__}: {error}. "
                    "Check that your code returns what the exercise asks for.",
                )
            else:
                tail = f" {extra}" if extra else ""
                result = CheckResult(exercise, True, f"✅ {label}: all checks passed.{tail}")
            print(result.message)
            return result

        run.exercise = exercise  # type: ignore[attr-defined]  # lets course_utils.student find the solution
        return run

    return wrap


def describe(x: Any) -> str:
    """Short description of an argument for messages: tensors by shape and dtype."""
    if isinstance(x, Tensor):
        return f"tensor of shape {tuple(x.shape)} ({str(x.dtype).replace('torch.', '')})"
    if isinstance(x, (list, tuple)):
        return "(" + ", ".join(describe(v) for v in x) + ")"
    return repr(x)


def call_student(fn: Callable[..., Any], *args: Any, what: str = "your function", **kwargs: Any) -> Any:
    """Call the learner's code; turn a stub into NotDoneYet and any crash into a readable CheckFailed."""
    if not callable(fn):
        raise CheckFailed(f"expected a function or class, got {type(fn).__name__} {fn!r}")
    try:
        return fn(*args, **kwargs)
    except NotImplementedError:
        raise NotDoneYet() from None
    except Exception as error:
        inputs = ", ".join(describe(a) for a in args)
        if kwargs:
            inputs += (", " if inputs else "") + ", ".join(f"{k}={describe(v)}" for k, v in kwargs.items())
        raise CheckFailed(
            f"{what} raised {type(error).__name__}: {error} (called with {inputs})"
        ) from None


def expect_tensor(got: Any, what: str, shape: tuple[int, ...] | torch.Size | None = None) -> Tensor:
    """Fail unless ``got`` is a tensor (of ``shape`` when given); return it."""
    if not isinstance(got, Tensor):
        raise CheckFailed(f"{what} should be a torch.Tensor, got {type(got).__name__}")
    if shape is not None and tuple(got.shape) != tuple(shape):
        raise CheckFailed(f"{what} should have shape {tuple(shape)}, got {tuple(got.shape)}")
    return got


def close(a: Tensor, b: Tensor, atol: float = 1e-5, rtol: float = 1e-4) -> bool:
    """True when two tensors have the same shape and equal values within tolerance (NaN == NaN)."""
    if not (isinstance(a, Tensor) and isinstance(b, Tensor)) or a.shape != b.shape:
        return False
    return bool(torch.allclose(a.detach().double(), b.detach().double(), atol=atol, rtol=rtol, equal_nan=True))


def expect_close(
    got: Any,
    want: Tensor,
    what: str,
    mistakes: Mapping[str, Tensor] | None = None,
    atol: float = 1e-5,
    rtol: float = 1e-4,
) -> None:
    """Fail unless ``got`` equals ``want``; if it equals a known mistake's output, name that mistake.

    ``mistakes`` maps a hint ("Did you divide by d_k instead of sqrt(d_k)?") to what the
    mistaken code would have returned on the same input.
    """
    got = expect_tensor(got, what, want.shape)
    if close(got, want, atol, rtol):
        return
    for hint, wrong in (mistakes or {}).items():
        if close(got, wrong, atol, rtol):
            raise CheckFailed(f"{what} is not right. {hint}")
    if torch.isnan(got).any() and not torch.isnan(want).any():
        raise CheckFailed(f"{what} contains NaN where the reference has numbers.")
    diff = (got.detach().double() - want.detach().double()).abs()
    diff = torch.nan_to_num(diff, nan=float("inf"))  # NaN in either tensor counts as the largest difference
    where = tuple(int(i) for i in torch.nonzero(diff == diff.max())[0])
    raise CheckFailed(
        f"{what} differs from the reference: largest difference {diff.max().item():.3g} "
        f"at index {where} (got {got[where].item():.4g}, expected {want[where].item():.4g})."
    )
