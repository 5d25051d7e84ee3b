"""Input checks with messages that name the argument, what was expected and what came.

Every public function of ``course_utils`` checks its arguments with these helpers, so a bad
input raises TypeError (wrong kind of value) or ValueError (right kind, wrong value) with one
message of the form ``"<argument> must be <what is expected>, got <what came>"``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from numbers import Integral, Real
from typing import Any

import torch
from torch import Tensor, nn


def _got(value: object) -> str:
    """A short description of a value for messages: type and a clipped repr."""
    if isinstance(value, Tensor):
        return f"a tensor of shape {tuple(value.shape)} ({str(value.dtype).replace('torch.', '')})"
    if isinstance(value, nn.Module):
        return f"a {type(value).__name__} module"
    text = " ".join(repr(value).split())  # one line, even for a tensor or module repr
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


def check_tensor(name: str, x: object) -> Tensor:
    """Raise TypeError unless ``x`` is a tensor; return it. Used by every chapter."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    return x


def check_rank(name: str, x: object, ranks: int | Sequence[int], shape_hint: str = "") -> Tensor:
    """Raise ValueError unless ``x`` has one of ``ranks`` dimensions. Used by every chapter."""
    x = check_tensor(name, x)
    allowed = (ranks,) if isinstance(ranks, int) else tuple(ranks)
    if x.dim() not in allowed:
        want = " or ".join(str(r) for r in allowed)
        hint = f" {shape_hint}" if shape_hint else ""
        raise ValueError(
            f"{name} must have {want} dimensions{hint}, got shape {tuple(x.shape)}"
        )
    return x


def check_float_tensor(name: str, x: object, ranks: int | Sequence[int] | None = None, shape_hint: str = "") -> Tensor:
    """Raise unless ``x`` is a floating-point tensor (of one of ``ranks`` dimensions); return it."""
    x = check_tensor(name, x) if ranks is None else check_rank(name, x, ranks, shape_hint)
    if not x.dtype.is_floating_point:
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {x.dtype}")
    if x.numel() == 0:
        raise ValueError(f"{name} must not be empty, got shape {tuple(x.shape)}")
    return x


def check_int(name: str, value: object, low: int | None = None, high: int | None = None) -> int:
    """Raise unless ``value`` is an int (NumPy ints too) in [low, high]; return it as int."""
    if low is not None and high is not None:
        want = f"an int in [{low}, {high}]"
    elif low == 0:
        want = "a non-negative int"
    elif low == 1:
        want = "a positive int"
    elif low is not None:
        want = f"an int >= {low}"
    elif high is not None:
        want = f"an int <= {high}"
    else:
        want = "an int"
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{name} must be {want}, got {_got(value)}")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"{name} must be {want}, got {value}")
    return value


def check_positive_int(name: str, value: object) -> int:
    """Raise unless ``value`` is a positive int; return it. Used by every chapter."""
    return check_int(name, value, low=1)


def check_number(
    name: str,
    value: object,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Raise unless ``value`` is a finite real number in the given range; return it as float.

    ``low_open``/``high_open`` exclude the bound itself, e.g. (0, inf) for a learning rate.
    """
    if low is not None and high is not None:
        want = f"a number in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    elif low == 0:
        want = "a positive number" if low_open else "a non-negative number"
    elif low is not None:
        want = f"a number {'>' if low_open else '>='} {low:g}"
    elif high is not None:
        want = f"a number {'<' if high_open else '<='} {high:g}"
    else:
        want = "a finite number"
    if isinstance(value, Tensor) and value.numel() == 1 and value.dim() == 0:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be {want}, got {_got(value)}")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be {want}, got {v}")
    if low is not None and (v < low or (low_open and v == low)):
        raise ValueError(f"{name} must be {want}, got {value!r}")
    if high is not None and (v > high or (high_open and v == high)):
        raise ValueError(f"{name} must be {want}, got {value!r}")
    return v


def check_probability(name: str, p: object) -> float:
    """Raise unless ``p`` is a dropout-like probability in [0, 1); return it as float."""
    return check_number(name, p, 0.0, 1.0, high_open=True)


def check_bool(name: str, value: object) -> bool:
    """Raise TypeError unless ``value`` is True or False (the string "False" is not)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {_got(value)}")
    return value


def check_choice(name: str, value: object, choices: Sequence[Any]) -> Any:
    """Raise ValueError unless ``value`` is one of ``choices``; return it."""
    if not any(value == c and type(value) is type(c) for c in choices):
        names = [repr(c) for c in choices]
        options = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
        if len(names) > 2:
            options = "one of " + options
        raise ValueError(f"{name} must be {options}, got {value!r:.60}")
    return value


def check_str_list(name: str, value: object, allow_empty: bool = False) -> list[str]:
    """Raise unless ``value`` is a list/tuple of str (a lone str is not); return it as a list."""
    if isinstance(value, str):
        raise TypeError(
            f"{name} must be a list of str, got the str {value!r:.40}; wrap one string in a list: [{value!r:.30}]"
        )
    if not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a list of str, got {_got(value)}")
    for i, s in enumerate(value):
        if not isinstance(s, str):
            raise TypeError(f"{name}[{i}] must be a str, got {_got(s)}")
    if not allow_empty and len(value) == 0:
        raise ValueError(f"{name} must be a non-empty list of str, got an empty {type(value).__name__}")
    return list(value)


def check_token_ids(name: str, tokens: object, vocab_size: int | None = None, shape_hint: str = "(B, T)") -> Tensor:
    """Raise unless ``tokens`` is a 2-D integer tensor of ids in [0, vocab_size); return it."""
    tokens = check_rank(name, tokens, 2, shape_hint)
    if tokens.dtype.is_floating_point or tokens.dtype.is_complex or tokens.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer token ids, got dtype {tokens.dtype}")
    if tokens.numel() == 0:
        raise ValueError(f"{name} must hold at least one token, got shape {tuple(tokens.shape)}")
    if vocab_size is not None and (tokens.min() < 0 or tokens.max() >= vocab_size):
        raise ValueError(
            f"{name} must hold token ids in [0, {vocab_size}), got min {int(tokens.min())} and max {int(tokens.max())}"
        )
    return tokens


def check_module(name: str, value: object) -> nn.Module:
    """Raise TypeError unless ``value`` is an ``nn.Module``; return it."""
    if not isinstance(value, nn.Module):
        raise TypeError(f"{name} must be a torch.nn.Module, got {_got(value)}")
    return value


def check_callable(name: str, value: object, what: str = "a function") -> Callable[..., Any]:
    """Raise TypeError unless ``value`` can be called; return it."""
    if not callable(value):
        raise TypeError(f"{name} must be {what}, got {_got(value)}")
    return value


def check_bool_mask(name: str, mask: object) -> Tensor:
    """Raise unless ``mask`` is a boolean keep-mask tensor (True = keep). Chapter 4."""
    mask = check_tensor(name, mask)
    if mask.dtype != torch.bool:
        raise TypeError(
            f"{name} must be a boolean keep-mask (True = attend, False = masked), "
            f"got dtype {mask.dtype}; build one with course_utils.masks"
        )
    return mask


def check_broadcast(name: str, shape: Sequence[int], target: Sequence[int], what: str) -> None:
    """Raise ValueError unless ``shape`` broadcasts to ``target``. Chapter 4."""
    try:
        out = torch.broadcast_shapes(tuple(shape), tuple(target))
    except RuntimeError:
        out = None
    if out is None or tuple(out) != tuple(target):
        raise ValueError(
            f"{name} of shape {tuple(shape)} does not broadcast to {what} {tuple(target)}"
        )
