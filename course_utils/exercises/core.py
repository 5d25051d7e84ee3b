"""The checking machinery every chapter's exercises use.

A checker takes the learner's function or class, runs it on random and edge-case inputs,
compares with the reference, and explains the likely mistake. It never lets a traceback
escape: a wrong answer, a crash inside the learner's code and an unfinished stub all end in
one readable line.
"""

from __future__ import annotations

import functools
import inspect
import math
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any, ParamSpec

import numpy as np
import torch
from torch import Tensor, nn
from torch.overrides import TorchFunctionMode

P = ParamSpec("P")

PASS, FAIL, TODO = "\u2713", "\u2717", "\u2026"  # check mark, ballot x, ellipsis: in every system font


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
                    f"{TODO} {label}: not implemented yet. Replace the `raise NotImplementedError` "
                    "line with your code and run the cell again.",
                    not_implemented=True,
                )
            except CheckFailed as failure:
                result = CheckResult(exercise, False, f"{FAIL} {label}: {failure}")
            except Exception as error:  # a bug we did not foresee: still no traceback
                result = CheckResult(
                    exercise, False,
                    f"{FAIL} {label}: checking stopped with {type(error).__name__}: {_one_line(error)}. "
                    "Check that your code returns what the exercise asks for.",
                )
            else:
                tail = f" {extra}" if extra else ""
                result = CheckResult(exercise, True, f"{PASS} {label}: all checks passed.{tail}")
            result.message = _ADDRESS.sub("", result.message)  # never a memory address in a message
            print(result.message)
            return result

        run.exercise = exercise  # type: ignore[attr-defined]  # lets course_utils.student find the solution
        return run

    return wrap


_ADDRESS = re.compile(r" (?:object )?at 0x[0-9a-fA-F]+")


def _one_line(error: BaseException, limit: int = 200) -> str:
    """The first line of an exception's message, clipped: never a multi-line module repr."""
    text = str(error).strip()
    first = text.splitlines()[0] if text else type(error).__name__
    return first if len(first) <= limit else first[: limit - 3] + "..."


def describe(x: Any) -> str:
    """Short description of an argument for messages: tensors by shape and dtype, modules by class, one line."""
    if isinstance(x, Tensor):
        return f"tensor of shape {tuple(x.shape)} ({str(x.dtype).replace('torch.', '')})"
    if isinstance(x, nn.Module):
        return f"a {type(x).__name__} module"
    if isinstance(x, (list, tuple)):
        return "(" + ", ".join(describe(v) for v in x) + ")"
    if isinstance(x, type):
        return f"the class {x.__name__}"
    if isinstance(x, torch.optim.Optimizer):
        return f"a {type(x).__name__} optimizer"
    if isinstance(x, torch.optim.lr_scheduler.LRScheduler):
        return f"a {type(x).__name__} scheduler"
    if isinstance(x, torch.Generator):
        return "a torch.Generator"
    if callable(x):
        return f"the function {getattr(x, '__name__', type(x).__name__)}"
    text = repr(x)
    if "\n" in text.strip() or _ADDRESS.search(text) or not text:  # a multi-line or default repr: name the type
        return f"a {type(x).__name__}"
    return text if len(text) <= 60 else text[:57] + "..."


def spell(ids: Any) -> str:
    """Token ids of the reversal vocabulary as letters, for messages: [5, 4, 3, 2, 0] -> "'cba' EOS PAD"."""
    from course_utils.data import EOS_ID, PAD_ID, SOS_ID, VOCAB_SIZE  # late: data imports nothing from here

    if isinstance(ids, Tensor):
        ids = ids.tolist()
    words, letters = [], ""
    for i in ids:
        if isinstance(i, int) and 3 <= i < VOCAB_SIZE:
            letters += chr(ord("a") + i - 3)
            continue
        if letters:
            words.append(repr(letters))
            letters = ""
        words.append({SOS_ID: "SOS", EOS_ID: "EOS", PAD_ID: "PAD"}.get(i, f"<id {i}>"))
    if letters:
        words.append(repr(letters))
    return " ".join(words) if words else "nothing"


def _verb(what: str) -> str:
    """ "is" or "are" for the head noun of ``what`` ("the generated tokens" -> "are")."""
    head = re.split(r" (?:after|on|for|of|at|with|in) |\(", what, maxsplit=1)[0].strip().split(" ")[-1]
    plural = head.endswith("s") and not head.endswith(("ss", "us", "is")) and head.isalpha()
    return "are" if plural else "is"


def _snapshot(args: tuple[Any, ...], kwargs: dict[str, Any], fn: Any) -> list[tuple[str, Tensor, Tensor]]:
    """(label, live tensor, copy) for every tensor argument and every parameter/buffer of a module argument."""
    out: list[tuple[str, Tensor, Tensor]] = []
    items = [(f"argument {i + 1}", a) for i, a in enumerate(args)] + [(f"argument {k}", v) for k, v in kwargs.items()]
    for label, value in items:
        if isinstance(value, Tensor):
            out.append((f"its input ({label}, {describe(value)})", value, value.detach().clone()))
        elif isinstance(value, nn.Module) and value is not fn:
            for name, t in list(value.named_parameters()) + list(value.named_buffers()):
                out.append((f"{name} of the {type(value).__name__} passed as {label}", t, t.detach().clone()))
    return out


def call_student(
    fn: Callable[..., Any], *args: Any, what: str = "your function", may_modify: bool = False, **kwargs: Any
) -> Any:
    """Call the learner's code; turn a stub into NotDoneYet and any crash into a readable CheckFailed.

    Tensor arguments (and the weights of module arguments) must come back unchanged: a function
    that modifies its input in place fails with a message that says so. ``may_modify=True``
    skips that rule for code whose job is to change its inputs (a training step).
    """
    if not callable(fn):
        raise CheckFailed(f"expected a function or class, got {describe(fn)}")
    before = [] if may_modify else _snapshot(args, kwargs, fn)
    try:
        result = fn(*args, **kwargs)
    except NotImplementedError:
        raise NotDoneYet() from None
    except Exception as error:
        inputs = ", ".join(describe(a) for a in args)
        if kwargs:
            inputs += (", " if inputs else "") + ", ".join(f"{k}={describe(v)}" for k, v in kwargs.items())
        raise CheckFailed(
            f"{what} raised {type(error).__name__}: {_one_line(error)} (called with {inputs})"
        ) from None
    for label, live, copy in before:
        now = live.detach()
        if now.dtype != copy.dtype:  # compared below, a float16 copy would raise and a float64 one pass
            raise CheckFailed(
                f"{what} changed {label} from {copy.dtype} to {now.dtype} in place (module.half(), .double() "
                "and .to(dtype) convert the module's own weights): leave the inputs as they are."
            )
        same = now.shape == copy.shape and (
            torch.equal(now, copy)
            or (now.is_floating_point() and bool(torch.allclose(now, copy, rtol=0.0, atol=0.0, equal_nan=True)))
        )
        if not same:
            raise CheckFailed(
                f"{what} modified {label} in place. Leave the inputs unchanged: write y = x - m instead "
                "of x -= m, and avoid in-place methods such as x.sub_(...), x.masked_fill_(...) or x[...] = ..."
            )
    return result


class _Recorder(TorchFunctionMode):
    """Records which torch functions are called while it is active."""

    def __init__(self, names: set[str]):
        super().__init__()
        self.names = names
        self.seen: set[str] = set()

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        name = getattr(func, "__name__", "")
        if name in self.names:
            self.seen.add(name)
        return func(*args, **(kwargs or {}))


def call_student_without(
    forbidden: set[str], rule: str, fn: Callable[..., Any], *args: Any, what: str = "your function", **kwargs: Any
) -> Any:
    """Like :func:`call_student`, but fail with ``rule`` when the learner calls a ``forbidden`` torch function."""
    recorder = _Recorder(forbidden)
    with recorder:
        result = call_student(fn, *args, what=what, **kwargs)
    if recorder.seen:
        raise CheckFailed(f"{what} calls {', '.join(sorted(recorder.seen))}. {rule}")
    return result


def as_int(got: Any, what: str) -> int:
    """The learner's integer answer as an int: Python, NumPy and 0-d torch integers all count."""
    if isinstance(got, Tensor) and got.numel() == 1 and not got.is_floating_point() and got.dtype != torch.bool:
        return int(got.item())
    if isinstance(got, Tensor) and got.numel() == 1 and got.is_floating_point() and float(got.item()).is_integer():
        return int(got.item())
    if isinstance(got, (float, np.floating)) and math.isfinite(got) and float(got).is_integer():
        return int(got)
    if isinstance(got, (bool, np.bool_)) or not isinstance(got, (Integral, np.integer)):
        raise CheckFailed(f"{what} should return an int, got {type(got).__name__} {describe(got)}")
    return int(got)


def as_number(got: Any, what: str) -> float:
    """The learner's numeric answer as a float: Python, NumPy and 0-d torch numbers all count."""
    if isinstance(got, Tensor) and got.numel() == 1:
        got = got.item()
    if isinstance(got, np.generic) and not isinstance(got, np.bool_):
        got = got.item()
    if isinstance(got, bool) or not isinstance(got, Real):
        raise CheckFailed(f"{what} should return a number, got {type(got).__name__} {describe(got)}")
    return float(got)


def fmt_number(value: float, other: float | None = None) -> str:
    """A number for messages: integers exactly, else as many digits as it takes to differ from ``other``."""
    if math.isfinite(value) and float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    for digits in (4, 6, 8, 10, 12, 17):
        text = f"{value:.{digits}g}"
        if other is None or text != f"{other:.{digits}g}":
            return text
    return repr(value)


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


def fail_on_mistake(got: Any, mistakes: Mapping[str, Any], same: Callable[[Any, Any], bool] = operator.eq,
                    prefix: str = "") -> None:
    """Raise CheckFailed(prefix + hint) for the first known mistake whose answer matches ``got``; else return.

    ``mistakes`` maps a hint to what the mistaken code returns on the same input (a tensor, a
    number, a list, ...) and ``same(got, wrong)`` says whether two answers match: the one loop
    behind every "name the likely mistake", for tensors (:func:`expect_close`) and other answers.
    A checker drops beforehand a mistake whose answer equals the right one on this input.
    """
    for hint, wrong in mistakes.items():
        if same(got, wrong):
            raise CheckFailed(prefix + hint)


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
    fail_on_mistake(got, mistakes or {}, lambda g, w: close(g, w, atol, rtol), f"{what} {_verb(what)} not right. ")
    if torch.isnan(got).any() and not torch.isnan(want).any():
        raise CheckFailed(f"{what} contains NaN where the reference has numbers.")
    g_all, w_all = got.detach().double(), want.detach().double()
    same = (g_all == w_all) | (torch.isnan(g_all) & torch.isnan(w_all))  # -inf == -inf counts as equal
    diff = (g_all - w_all).abs().masked_fill(same, 0.0)
    diff = torch.nan_to_num(diff, nan=float("inf"), posinf=float("inf"))  # NaN or inf on one side only: largest
    where = tuple(int(i) for i in torch.nonzero(diff == diff.max())[0])
    g, w = float(got[where].item()), float(want[where].item())
    raise CheckFailed(
        f"{what} differs from the reference: largest difference {fmt_number(diff.max().item())} "
        f"at index {where} (got {fmt_number(g, w)}, expected {fmt_number(w, g)})."
    )


def _code_objects(fn: Any) -> list[Any]:
    """The code of the learner's function and of every function defined inside it."""
    code = getattr(fn, "__code__", None)
    stack = [code] if code is not None else []
    found = []
    while stack:
        code = stack.pop()
        found.append(code)
        stack += [k for k in code.co_consts if hasattr(k, "co_names")]
    return found


def names_used(fn: Any) -> set[str]:
    """Global and attribute names the learner's function (and the functions defined inside it) refers to: a
    checker refuses the library function that is the answer when the learner calls it."""
    return {name for code in _code_objects(fn) for name in code.co_names}


def refuse_library(fn: Any, libraries: tuple[Any, ...], how: str) -> None:
    """Fail when the learner's function is, or calls, a course_utils object that is the exercise's answer.

    A name counts when it resolves, in the function's globals, to the library object or to a module
    that holds it under that name (``bpe.encode_word``), or when the function imports it from its module
    itself; a learner's own helper of the same name passes.
    """
    names = names_used(fn)
    if "getattr" in names:  # getattr(induction, "copy_losses") spells the attribute as a string
        names |= {k for code in _code_objects(fn) for k in code.co_consts if isinstance(k, str) and k.isidentifier()}
    g = getattr(fn, "__globals__", {})
    for lib in libraries:
        name = lib.__name__
        hit = fn is lib or getattr(fn, "__wrapped__", None) is lib or any(g.get(k) is lib for k in names)
        hit = hit or (name in names and (lib.__module__ in names  # imported inside the function
                                         or any(inspect.ismodule(g.get(k)) and getattr(g.get(k), name, None) is lib
                                                for k in names)))
        if hit:
            raise CheckFailed(f"your function uses course_utils' {name}, which is the answer: {how}")
