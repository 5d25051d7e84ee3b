"""Input checks with messages that name the argument, what was expected and what came.

Every public function of ``course_utils`` checks its arguments with these helpers, so a bad
input raises TypeError (wrong kind of value) or ValueError (right kind, wrong value) with one
message of the form ``"<argument> must be <what is expected>, got <what came>"``.

The rules, one per class of bad input:

- sizes and counts: anything integral counts (int, NumPy integers, 0-d integer tensors:
  :func:`as_index`); True/False and floats such as 4.0 do not. Seeds are non-negative ints
  (:func:`check_seed`); flags are True or False, never a truthy string (:func:`check_bool`).
- NaN and infinity: modules (attention, LayerNorm, the blocks) pass them through as PyTorch
  does; where they can only mean a bug upstream they are an error (:func:`check_finite`): a
  loss's logits, a sampling distribution, a decoder's memory.
- sizes that do not fit (a sequence longer than a table, more tokens than the context):
  :func:`check_fits` names the limit and where it comes from.
- right type, wrong meaning: a lone str where a list of str is expected
  (:func:`check_str_list`), low > high (:func:`check_order`), empty lists, ids outside the
  vocabulary (:func:`check_token_ids`), a device this machine lacks (:func:`check_device`).
- masks: the course's are keep-masks (True = attend); the one mask of the other convention
  that can be recognised, a causal mask with True above the diagonal, is an error that says
  which convention is expected (:func:`check_keep_mask_convention`).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from numbers import Real
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


def as_index(value: object) -> int | None:
    """``value`` as an int when it is integral (int, NumPy integer, 0-d integer tensor), else None.

    The one rule for sizes and counts: anything Python itself accepts as an index
    (``operator.index``) counts, except True/False; a float such as 4.0 does not.
    """
    if isinstance(value, bool) or (isinstance(value, Tensor) and (value.dtype == torch.bool or value.dim() != 0)):
        return None
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        return None


def check_int(name: str, value: object, low: int | None = None, high: int | None = None) -> int:
    """Raise unless ``value`` is integral (see :func:`as_index`) in [low, high]; return it as int."""
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
    index = as_index(value)
    if index is None:
        raise TypeError(f"{name} must be {want}, got {_got(value)}")
    value = index
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"{name} must be {want}, got {value}")
    return value


def check_seed(name: str, value: object) -> int:
    """Raise unless ``value`` is a seed: a non-negative int (see :func:`as_index`); return it."""
    return check_int(name, value, low=0)


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


def check_model_tokens(name: str, tokens: object, vocab_size: int, max_len: int | None = None, offset: int = 0,
                       shape_hint: str = "(B, T) of token ids") -> Tensor:
    """A model's input ids: :func:`check_token_ids` for ``torch.long`` ids that fit the context ``max_len``
    after ``offset`` cached tokens (None: no limit). The one check of every model's forward pass."""
    tokens = check_rank(name, tokens, 2, shape_hint)
    if tokens.dtype != torch.long:
        raise TypeError(f"{name} must hold token ids as torch.long, got dtype {tokens.dtype}")
    if max_len is not None and offset + tokens.shape[1] > max_len:
        raise ValueError(
            f"{name} has length {tokens.shape[1]}" + (f" after {offset} cached tokens" if offset else "")
            + f", beyond max_len={max_len} (the context); build the model with a larger max_len"
        )
    return check_token_ids(name, tokens, vocab_size, shape_hint)


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


def check_bool_mask(name: str, mask: object, convention: bool = True) -> Tensor:
    """Raise unless ``mask`` is a boolean keep-mask tensor (True = keep). Chapter 4.

    ``convention=True`` also rejects the mask of the opposite convention that can be recognised
    (:func:`check_keep_mask_convention`); displays of any mask pass False.
    """
    mask = check_tensor(name, mask)
    if mask.dtype != torch.bool:
        raise TypeError(
            f"{name} must be a boolean keep-mask (True = attend, False = masked), "
            f"got dtype {mask.dtype}; build one with course_utils.masks"
        )
    return check_keep_mask_convention(name, mask) if convention else mask


def broadcast_shape(*shapes: Sequence[int]) -> tuple[int, ...] | None:
    """The shape that ``shapes`` broadcast to under PyTorch's rules, or None where they do not. Chapter 4.

    Plain Python (``torch.broadcast_shapes`` costs tens of microseconds a call): the checks of every
    attention call use it, and a training step makes dozens of them.
    """
    out: list[int] = []
    for shape in shapes:
        shape = tuple(shape)
        if len(shape) > len(out):
            out = [1] * (len(shape) - len(out)) + out
        for i, size in enumerate(shape, start=len(out) - len(shape)):
            if size != out[i] and size != 1:
                if out[i] != 1:
                    return None
                out[i] = size
    return tuple(out)


def check_broadcast(name: str, shape: Sequence[int], target: Sequence[int], what: str) -> None:
    """Raise ValueError unless ``shape`` broadcasts to ``target``. Chapter 4."""
    out = broadcast_shape(shape, target)
    if out is None or out != tuple(target):
        raise ValueError(
            f"{name} of shape {tuple(shape)} does not broadcast to {what} {tuple(target)}"
        )


def check_finite(name: str, x: Tensor, why: str = "", allow_neg_inf: bool = False) -> Tensor:
    """Raise ValueError if the float tensor ``x`` holds NaN or infinity; return it.

    Used where a NaN can only mean a bug upstream: a loss, a sampling distribution, the input of
    a decoder. ``why`` says where such values usually come from. ``allow_neg_inf=True`` lets
    -inf through (logits of tokens filtered out), but not a row (last dimension) that is all -inf.
    """
    if not x.dtype.is_floating_point:
        return x
    bad = torch.isnan(x) | (x == float("inf")) if allow_neg_inf else ~torch.isfinite(x)
    tail = f"; {why}" if why else ""
    if bool(bad.any()):
        n_nan, n_inf = int(torch.isnan(x).sum()), int((bad & torch.isinf(x)).sum())
        where = tuple(int(i) for i in torch.nonzero(bad)[0])
        what = "finite numbers or -inf" if allow_neg_inf else "finite numbers"
        raise ValueError(
            f"{name} must hold {what}, got {n_nan} NaN and {n_inf} infinite value(s) (first at index {where}){tail}"
        )
    if allow_neg_inf and x.dim() > 0 and x.shape[-1] > 0:
        dead = (x == float("-inf")).all(dim=-1)
        if bool(dead.any()):
            where = tuple(int(i) for i in torch.nonzero(dead)[0])
            raise ValueError(f"{name} must leave at least one value above -inf in every row, got a row of -inf "
                             f"only at index {where}{tail}")
    return x


def check_order(low_name: str, low: float, high_name: str, high: float) -> None:
    """Raise ValueError unless ``low <= high`` (e.g. min_len <= max_len)."""
    if low > high:
        raise ValueError(f"{low_name} must be <= {high_name}, got {low_name}={low} and {high_name}={high}")


def check_fits(name: str, size: int, limit: int, what: str) -> int:
    """Raise ValueError unless ``size <= limit``; ``what`` names the limit (e.g. "the positional table's max_len")."""
    if size > limit:
        raise ValueError(f"{name} must be at most {limit} ({what}), got {size}")
    return size


def check_device(name: str, device: object) -> torch.device:
    """Raise unless ``device`` names a device this machine has ("cpu", "cuda", "cuda:0", a torch.device)."""
    if not isinstance(device, (str, torch.device)):
        raise TypeError(f"{name} must be a device name such as 'cpu' or 'cuda', got {_got(device)}")
    try:
        dev = torch.device(device)
    except RuntimeError:
        raise ValueError(f"{name} must be a device name such as 'cpu', 'cuda' or 'cuda:0', got {device!r}") from None
    if dev.type == "cuda" and (not torch.cuda.is_available() or (dev.index or 0) >= torch.cuda.device_count()):
        raise ValueError(f"{name} must be a device this machine has, got {device!r} (torch.cuda.is_available() "
                         f"is {torch.cuda.is_available()}); use 'cpu'")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"{name} must be a device this machine has, got {device!r}; use 'cpu'")
    return dev


KEEP_MASK_RULE = (
    "the course's masks are keep-masks: True = may attend, False = blocked (PyTorch's attn_mask uses the opposite)"
)


def check_keep_mask_convention(name: str, mask: Tensor) -> Tensor:
    """Raise ValueError when a boolean ``mask`` is recognisably in the blocked convention (True = blocked).

    Detectable case: the exact complement of a causal keep-mask (True strictly above the
    diagonal: every query would see only its future, never itself). Other masks (a padding mask
    with True at PAD, say) cannot be told apart from a legitimate keep-mask and pass.
    """
    if mask.dtype != torch.bool or mask.numel() == 0:
        return mask
    if mask.dim() >= 2 and mask.shape[-1] == mask.shape[-2] and mask.shape[-1] > 1:
        n = mask.shape[-1]
        blocked_causal = torch.ones(n, n, dtype=torch.bool, device=mask.device).triu(1)
        if bool((mask == blocked_causal).all()):
            raise ValueError(
                f"{name} is True strictly above the diagonal: a causal mask in PyTorch's convention; "
                f"{KEEP_MASK_RULE}. Pass ~{name}, or build it with course_utils.masks.causal_mask"
            )
    return mask
