"""Bad input by class, by construction: every public callable of course_utils, every parameter.

The callables are found by walking the package (a function or class added tomorrow is covered the
day it is added); nobody keeps a list of them. For each one the test builds a valid call from
the signature (defaults, and examples chosen by parameter name and annotation: :data:`EXAMPLES`,
:data:`BY_ANNOTATION`), checks that this call is accepted, then replaces one parameter at a time
by one value of each class of bad input that the parameter's annotation admits (:func:`classes_for`):

- sizes and counts (``int``): True/False, 4.0 and 2.5, 0 and -1, NaN, inf, "4", None;
- rates and other reals (``float``): NaN, inf, "0.5", None, True; an int must work (1 for 1.0);
- probabilities (``dropout``, ``p``, ``top_p``, ``*_rate``, ...): -0.1 and 1.5;
- flags (``bool``): the truthy strings "no" and "False", the int 1, None;
- options (``str`` with a fixed set of values): an unknown option, an int, None;
- tensors: None, a NumPy array, an empty tensor, one dimension more, float64 where float32
  is expected; token ids (``tokens``, ``ids``, ``src``, ...): an id at the vocabulary size and -1;
  masks: the opposite convention (True = blocked).

A call passes when it raises TypeError or ValueError whose message names the parameter and what
was expected ("d_model must be a positive int, got True"), or, for the classes that may have a
valid answer (an int for a float, float64, NumPy where documented, an empty batch), returns a
result. It fails as **obscure** (another exception, or a message that does not name the
parameter) or **silent** (an invalid hyper-parameter accepted without a word, or a call that runs
on for more than :data:`BUDGET_S`).

Exemptions (a callable or a parameter that cannot be judged this way) need a reason in
:data:`EXEMPT` (a whole parameter, or one class of it: ``module.qualname:parameter[class]``).
:data:`PENDING` is empty: a failure found is fixed, not listed. Run the file as a script for the
counts: ``.venv/bin/python tests/test_bad_input_classes.py``.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import math
import os
import pkgutil
import re
import signal
import typing
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
import torch

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import course_utils  # noqa: E402

BUDGET_S = 1.0  # a bad hyper-parameter must be refused before any work starts


# ---------------------------------------------------------------- what is exempt, and why
WRITES = "writes files or starts processes (notebooks, checkpoints, assets, a server): not called from a unit test"
EXEMPT_MODULES: dict[str, str] = {
    "course_utils.exercises": "the checkers take the learner's functions, not data: tests/test_checker_mistakes.py "
                              "judges them by their own table of wrong answers",
    "course_utils.validate": "the rules themselves, tested rule by rule in tests/test_validate.py",
    "course_utils.student": WRITES,
    "course_utils.runs.__main__": WRITES,
}
EXEMPT: dict[str, str] = {
    # name (module.qualname, or module.qualname:parameter) -> reason
    "course_utils.masks.mask_to_text:mask": "draws any boolean mask as text, of either convention: a display",
    "course_utils.masks.padding_mask:tokens": "compares each id with pad_id only: every integer id has an answer "
                                              "(the vocabulary is not one of its arguments)",
    "course_utils.positional.shift_rotation:k": "an offset, not a size: a negative k rotates backwards",
    "course_utils.training.TrainHistory": "a record that train() fills with what it measured; not a setting",
    # one class of one parameter: module.qualname:parameter[class]
    "course_utils.charlm.ngram_bits_per_char:order[zero size]": "order 0 is the uniform model, a valid baseline",
    "course_utils.translation.number_name:n[zero size]": "0 is a number with a name (zero), not a size",
    "course_utils.translation.units_tens_spans:n[zero size]": "0 is a number with a name (zero), not a size",
    "course_utils.mlm.val_windows:val_ids[token id out of range (too large)]":
        "no vocabulary among its arguments: the model that reads the windows checks the ids",
    "course_utils.runs.charlm.ValidationBitsPerChar:val_ids[token id out of range (too large)]":
        "no vocabulary among its arguments: model_bits_per_char checks the ids against the model's",
}
# Parameters never varied, with the reason (matched by name, in every callable).
FREE_PARAMETERS: dict[str, str] = {
    "name": "a label for messages: any string is valid",
    "what": "a label for messages: any string is valid",
    "caption": "a caption: any string is valid",
    "title": "a title: any string is valid",
    "desc": "a progress label: any string is valid",
    "text": "free text: any string is valid",
    "shape_hint": "a label for messages: any string is valid",
    "uid": "an HTML id: any string is valid",
    "label": "a label: any string is valid",
    "source": "free text: any string is valid",
    "word": "free text: any string is valid",
    "value": "the value under test of a comparison: any value has an answer",
    "x": "",  # placeholder, replaced below for non-tensor x
}
del FREE_PARAMETERS["x"]

# Failures being fixed, listed here for one commit at most (empty: every public callable answers every
# class well). Key: "module.qualname:parameter".
PENDING: set[str] = set()


# ---------------------------------------------------------------- valid examples
D, H, FF, V, T, B = 8, 2, 16, 12, 4, 2


def _examples() -> dict[str, Callable[[], Any]]:
    g = torch.Generator().manual_seed(0)
    return {
        # sizes
        "d_model": lambda: D, "n_heads": lambda: H, "d_ff": lambda: FF, "vocab_size": lambda: V,
        "max_len": lambda: 16, "T": lambda: T, "T_q": lambda: T, "T_k": lambda: T, "batch_size": lambda: B,
        "n_layers": lambda: 1, "n": lambda: 4, "block_size": lambda: T, "d_k": lambda: D // H,
        "d_hidden": lambda: FF, "n_kv_heads": lambda: 1, "steps": lambda: 2, "warmup": lambda: 1,
        "min_len": lambda: 3, "length": lambda: T, "n_per_length": lambda: 2, "total": lambda: 10,
        "every": lambda: 1, "window": lambda: 2, "k": lambda: 2, "max_position": lambda: 16,
        "max_offset": lambda: 4, "tokens": lambda: torch.randint(0, V, (B, T), generator=g), "n_buckets": lambda: 4,
        "max_distance": lambda: 8, "half": lambda: 2, "position": lambda: 1, "layer": lambda: 0, "head": lambda: 0,
        "step": lambda: 1, "extra": lambda: 1, "seed": lambda: 0, "pad_id": lambda: 0, "dpi": lambda: 50,
        "successes": lambda: 3, "trials": lambda: 10, "max_windows": lambda: 2, "random_positions": lambda: 8,
        # reals
        "lr": lambda: 0.01, "eps": lambda: 1e-5, "dropout": lambda: 0.0, "temperature": lambda: 1.0,
        "base": lambda: 10000.0, "rate": lambda: 0.15, "min_lr": lambda: 0.0, "target": lambda: 0.5,
        "confidence": lambda: 0.95, "random_fraction": lambda: 0.5, "p": lambda: 0.1, "top_p": lambda: 0.9,
        # tensors
        "x": lambda: torch.randn(B, T, D, generator=g),
        "q": lambda: torch.randn(B, H, T, D // H, generator=g),
        "k_": lambda: torch.randn(B, H, T, D // H, generator=g),
        "v": lambda: torch.randn(B, H, T, D // H, generator=g),
        "logits": lambda: torch.randn(B, V, generator=g),
        "weights": lambda: torch.softmax(torch.randn(B, H, T, T, generator=g), dim=-1),
        "bias": lambda: torch.randn(B, H, T, T, generator=g),  # a score bias (ALiBi, T5), where it has no default
        "ids": lambda: torch.randint(0, V, (B, T), generator=g),
        "src": lambda: torch.randint(3, V, (B, T), generator=g),
        "tgt": lambda: torch.randint(3, V, (B, T), generator=g),
        "prompt": lambda: torch.randint(3, V, (B, T), generator=g),
        "targets": lambda: torch.randint(0, V, (B, T), generator=g),
        "lengths": lambda: torch.tensor([T, T - 1]),
        "src_lengths": lambda: torch.tensor([T, T - 1]),
        "mask": lambda: torch.ones(T, T, dtype=torch.bool).tril(),
        "images": lambda: torch.rand(B, 1, 8, 8, generator=g),
        "generator": lambda: torch.Generator().manual_seed(0),
        "val_ids": lambda: torch.randint(0, V, (64,), generator=g),
        "train_ids": lambda: torch.randint(0, V, (64,), generator=g),
        # other kinds, so that a callable with one of them can still be judged on the rest
        "name": lambda: "x", "word": lambda: "abc", "uid": lambda: "u1", "text": lambda: "abc",
        "strings": lambda: ["abc", "de"], "top_k": lambda: 2, "tol": lambda: 1e-6,
        "trials_a": lambda: 10, "trials_b": lambda: 10, "low": lambda: 0.0, "high": lambda: 1.0,
    }


@cache
def examples() -> dict[str, Callable[[], Any]]:
    return _examples()


def _small_transformer() -> Any:
    from course_utils.model import Transformer, TransformerConfig

    return Transformer(TransformerConfig(V, V, d_model=D, n_heads=H, d_ff=FF, n_encoder_layers=1,
                                         n_decoder_layers=1, dropout=0.0, max_len=16)).eval()


def _small_gpt() -> Any:
    from course_utils.gpt import DecoderOnly, DecoderOnlyConfig

    return DecoderOnly(DecoderOnlyConfig(vocab_size=V, d_model=D, n_heads=H, d_ff=FF, n_layers=1, max_len=16,
                                         dropout=0.0)).eval()


BY_ANNOTATION: dict[str, Callable[[], Any]] = {
    "Transformer": _small_transformer,
    "nn.Module": _small_transformer,
    "DecoderOnly": _small_gpt,
    "TransformerConfig": lambda: _small_transformer().config,
    "DecoderOnlyConfig": lambda: _small_gpt().config,
    "MultiHeadAttention": lambda: importlib.import_module("course_utils.attention").MultiHeadAttention(D, H),
    "torch.Generator": lambda: torch.Generator().manual_seed(0),
    "torch.dtype": lambda: torch.float32,
}


# ---------------------------------------------------------------- roles and classes of bad input
@dataclass(frozen=True)
class Case:
    cls: str  # the class of bad input ("NaN", "bool as a size", ...)
    value: Any
    must_raise: bool  # False: a valid result is also an answer (an int for a float, say)


PROBABILITY = re.compile(r"^(p|dropout|top_p|rate|confidence|random_fraction|mask_rate"
                         r"|.*_prob|.*_p|.*_rate|.*_fraction)$")
ZERO_OK = re.compile(r"^(seed|pad_id|offset|start|layer|head|index|position|extra|warmup|step|random_positions|half"
                     r"|min_lr|low|high|successes|successes_a|successes_b|digits|pair|.*_id|.*_index|.*_offset|n_extra|top_k|k)$")
TOKEN_IDS = re.compile(r"^(tokens|ids|src|tgt|prompt|targets|input_ids|.*_ids)$")


def _annotation_text(param: inspect.Parameter) -> str:
    a = param.annotation
    return a if isinstance(a, str) else getattr(a, "__name__", str(a))


def role(param: inspect.Parameter) -> str | None:
    """What kind of value a parameter takes, from its annotation (and, for a few kinds, its name)."""
    text = _annotation_text(param).replace(" ", "")
    parts = set(text.split("|")) - {"None"}
    if param.name in FREE_PARAMETERS:
        return None
    if parts == {"bool"}:
        return "flag"
    if parts == {"int"}:
        return "size"
    if parts in ({"float"}, {"int", "float"}, {"float", "int"}):
        return "probability" if PROBABILITY.match(param.name) else "real"
    if parts == {"str"}:
        return "option"
    if parts and parts <= {"Tensor", "torch.Tensor"}:
        if TOKEN_IDS.match(param.name):
            return "token ids"
        return "mask" if "mask" in param.name else "tensor"
    return None


def optional(param: inspect.Parameter) -> bool:
    return "None" in _annotation_text(param).replace(" ", "").split("|") or param.default is None


def classes_for(param: inspect.Parameter, good: Any) -> list[Case]:
    """The bad values of each class that a parameter of this role must answer."""
    r = role(param)
    cases: list[Case] = []
    if r is None:
        return cases
    if not optional(param):
        cases.append(Case("None", None, True))
    if r == "size":
        cases += [Case("bool as a size", True, True), Case("float where int expected", 4.0, True),
                  Case("fraction where int expected", 2.5, True), Case("NaN", math.nan, True),
                  Case("inf", math.inf, True), Case("string", "4", True), Case("negative size", -1, True)]
        if not ZERO_OK.match(param.name):
            cases.append(Case("zero size", 0, True))
        cases.append(Case("NumPy integer", np.int64(good if isinstance(good, int) else 2), False))
    elif r in ("real", "probability"):
        cases += [Case("NaN", math.nan, True), Case("inf", math.inf, True), Case("string", "0.5", True),
                  Case("bool as a number", True, True),
                  Case("int where float expected", int(good) if isinstance(good, float) and good.is_integer() else 1,
                       False)]
        if r == "probability":
            cases += [Case("probability above 1", 1.5, True), Case("probability below 0", -0.1, True)]
    elif r == "flag":
        cases += [Case("truthy string as a flag", "no", True), Case("string 'False' as a flag", "False", True),
                  Case("int as a flag", 1, True)]
    elif r == "option":
        cases += [Case("unknown option", "no-such-option", False), Case("int where str expected", 3, True)]
    elif isinstance(good, torch.Tensor):
        cases += [Case("NumPy array", good.numpy(), "ndarray" not in _annotation_text(param)),
                  Case("empty tensor", good[:0], False),
                  Case("wrong rank", good.unsqueeze(0), False)]
        if good.dtype.is_floating_point:
            cases.append(Case("float64 mixed with float32", good.double(), False))
        if r == "token ids":
            cases += [Case("token id out of range (too large)", good.clone().fill_(10_000), True),
                      Case("token id out of range (negative)", good.clone().fill_(-1), True)]
        if r == "mask" and good.dtype == torch.bool and good.dim() >= 2:
            cases.append(Case("opposite mask convention", ~good, True))
    return cases


# ---------------------------------------------------------------- discovery
def _exempt_module(name: str) -> str | None:
    for prefix, reason in EXEMPT_MODULES.items():
        if name == prefix or name.startswith(prefix + "."):
            return reason
    return None


@cache
def public_callables() -> dict[str, Callable[..., Any]]:
    """{module.qualname: callable} of every public function and class defined in course_utils."""
    found: dict[str, Callable[..., Any]] = {}
    for info in pkgutil.walk_packages(course_utils.__path__, "course_utils."):
        if info.name.rsplit(".", 1)[-1].startswith("_") or _exempt_module(info.name):
            continue
        module = importlib.import_module(info.name)
        for attr, obj in vars(module).items():
            if attr.startswith("_") or not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            if getattr(obj, "__module__", None) == info.name:
                found[f"{info.name}.{attr}"] = obj
    return found


def all_public_names() -> list[str]:
    """Every public callable, exempt modules included (for the printed count)."""
    names = list(public_callables())
    for info in pkgutil.walk_packages(course_utils.__path__, "course_utils."):
        if info.name.rsplit(".", 1)[-1].startswith("_") or not _exempt_module(info.name):
            continue
        module = importlib.import_module(info.name)
        names += [f"{info.name}.{a}" for a, o in vars(module).items()
                  if not a.startswith("_") and (inspect.isfunction(o) or inspect.isclass(o))
                  and getattr(o, "__module__", None) == info.name]
    return names


def signature_of(obj: Callable[..., Any]) -> inspect.Signature | None:
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    try:
        hints = typing.get_type_hints(obj.__init__ if inspect.isclass(obj) else obj)
    except Exception:
        hints = {}
    params = []
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        ann = p.annotation
        if isinstance(ann, str) and p.name in hints:  # keep the written text: it is what role() reads
            pass
        params.append(p)
    return sig.replace(parameters=params)


def example_for(param: inspect.Parameter) -> tuple[bool, Any]:
    """(found, a valid value) for a parameter: its default, or an example by name or annotation."""
    if param.default is not inspect.Parameter.empty:
        return True, param.default
    r = role(param)
    ex = examples()
    name = "k_" if param.name == "k" and r in ("tensor", "token ids") else param.name
    if name in ex:
        value = ex[name]()
        fits = {"size": isinstance(value, int), "real": isinstance(value, (int, float)),
                "probability": isinstance(value, (int, float)), "flag": isinstance(value, bool),
                "tensor": isinstance(value, torch.Tensor), "token ids": isinstance(value, torch.Tensor),
                "mask": isinstance(value, torch.Tensor)}.get(r or "", True)
        if fits:
            return True, value
    ann = _annotation_text(param)
    if ann in BY_ANNOTATION:
        return True, BY_ANNOTATION[ann]()
    fallback = {"size": 2, "real": 0.5, "probability": 0.1, "flag": False}
    if r in fallback:
        return True, fallback[r]
    return False, None


# ---------------------------------------------------------------- calling with a time limit
class _Timeout(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Timeout()


class _GlobalState:
    """What a call may leave changed in the process when the alarm cuts it: saved before, put back after.

    The alarm is an exception raised wherever the call happens to be, also half-way through a
    context manager's ``__enter__`` or ``__exit__``: then ``with torch.no_grad():`` never puts
    autograd back on, and every later test that trains fails with "element 0 of tensors does not
    require grad" (measured here: 49 of 500 alarms cutting a loop of ``@torch.no_grad()`` calls
    left autograd off). Saved: autograd, torch's and NumPy's random state (``fork_rng``), NumPy's
    error handling (``np.errstate``), matplotlib's settings (``rc_context``), the warning filters
    and file descriptor 2 (the profiler's ``_quiet_stderr``).
    """

    def __init__(self) -> None:
        self.grad = torch.is_grad_enabled()
        self.torch_rng = torch.get_rng_state()
        self.numpy_rng = np.random.get_state()
        self.numpy_err = np.geterr()
        self.rc = matplotlib.rcParams.copy()
        self.filters = list(warnings.filters)
        self.stderr = os.dup(2)

    def restore(self) -> None:
        torch.set_grad_enabled(self.grad)
        torch.set_rng_state(self.torch_rng)
        np.random.set_state(self.numpy_rng)
        np.seterr(**self.numpy_err)
        with warnings.catch_warnings():  # rcParams.update warns about deprecated keys it is handed back
            warnings.simplefilter("ignore")
            matplotlib.rcParams.update(self.rc)
        warnings.filters[:] = self.filters
        os.dup2(self.stderr, 2)
        os.close(self.stderr)


def call(fn: Callable[..., Any], kwargs: dict[str, Any], budget: float = BUDGET_S) -> tuple[str, BaseException | None]:
    """("ok" | "raised" | "timeout", the exception) of ``fn(**kwargs)``, stopped after ``budget`` seconds.

    The process is left as it was found, even when the alarm cut the call (:class:`_GlobalState`).
    """
    state = _GlobalState()
    old = signal.signal(signal.SIGALRM, _alarm)
    try:
        try:
            signal.setitimer(signal.ITIMER_REAL, budget)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fn(**kwargs)
            return "ok", None
        except _Timeout:
            return "timeout", None
        except BaseException as error:  # noqa: BLE001  (SystemExit from a main() counts as obscure too)
            if isinstance(error, KeyboardInterrupt):
                raise
            return "raised", error
    except _Timeout:  # the alarm landed after the call had ended, in the lines above
        return "timeout", None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        state.restore()
        plt.close("all")


def names_parameter(message: str, name: str) -> bool:
    """Does the message name the parameter (as a word) and say what was expected?"""
    return bool(re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", message)) and bool(
        re.search(r"\b(must|expected|expects|should|needs?|only|allowed|one of|at least|at most|does not|cannot"
                  r"|convention)\b", message))


@dataclass
class Verdict:
    callable: str
    parameter: str
    cls: str
    outcome: str  # named | valid | obscure | silent | baseline
    detail: str = ""

    @property
    def key(self) -> str:
        return f"{self.callable}:{self.parameter}"

    @property
    def bad(self) -> bool:
        return self.outcome in ("obscure", "silent")


def _lazy_imports() -> set[str]:
    """Absolute imports written inside a function of course_utils (imported on first call)."""
    found: set[str] = set()
    for path in Path(course_utils.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Import):
                        found.update(alias.name for alias in sub.names)
                    elif isinstance(sub, ast.ImportFrom) and sub.level == 0 and sub.module:
                        found.add(sub.module)
    return found


@cache
def verdicts() -> tuple[tuple[Verdict, ...], tuple[tuple[str, str], ...]]:
    """Every (callable, parameter, class) verdict, and the callables not covered with the reason."""
    torch.manual_seed(0)
    # First-time imports inside PyTorch (the optimizers' step pulls in sympy, say) must not be cut by
    # the time limit half-way: run them once before any call is timed.
    _param = torch.zeros(1, requires_grad=True)
    _param.sum().backward()
    torch.optim.Adam([_param]).step()
    torch.optim.AdamW([_param]).step()
    # The same for the imports course_utils makes inside its functions (scipy, scikit-learn,
    # sacrebleu, ...): cut half-way, a module stays broken for every later test of the session.
    for name in sorted(_lazy_imports()):
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    out: list[Verdict] = []
    uncovered: list[tuple[str, str]] = []
    for qualname, obj in sorted(public_callables().items()):
        if qualname in EXEMPT:
            uncovered.append((qualname, f"exempt: {EXEMPT[qualname]}"))
            continue
        sig = signature_of(obj)
        if sig is None:
            uncovered.append((qualname, "no signature"))
            continue
        params = [p for p in sig.parameters.values() if p.name != "self"]
        if not any(role(p) for p in params):
            uncovered.append((qualname, "no parameter of a judged kind (sizes, reals, flags, options, tensors)"))
            continue
        good: dict[str, Any] = {}
        missing = []
        for p in params:
            found, value = example_for(p)
            if found:
                good[p.name] = value
            else:
                missing.append(p.name)
        if missing:
            uncovered.append((qualname, f"no valid example for {missing}"))
            continue
        status, error = call(obj, good)
        if status == "raised":
            uncovered.append((qualname, f"the example call was refused: {type(error).__name__}: {str(error)[:120]}"))
            continue
        for p in params:
            if f"{qualname}:{p.name}" in EXEMPT:
                continue
            for case in classes_for(p, good[p.name]):
                if f"{qualname}:{p.name}[{case.cls}]" in EXEMPT:
                    continue
                status, error = call(obj, {**good, p.name: case.value})
                if status == "raised" and not isinstance(error, (TypeError, ValueError)):
                    # once more: the time limit may have cut a first-time import inside PyTorch half-way
                    status, error = call(obj, {**good, p.name: case.value})
                message = str(error) if error is not None else ""
                clear = status == "raised" and isinstance(error, (TypeError, ValueError))
                if clear and names_parameter(message, p.name):
                    outcome = "named"
                elif clear and any(
                        names_parameter(message, other) for other in good if other != p.name):
                    outcome = "baseline"  # the bad value made another parameter inconsistent: not this rule
                elif status == "raised":
                    outcome = "obscure"
                elif case.must_raise:
                    outcome = "silent"
                else:
                    outcome = "valid"
                detail = f"{type(error).__name__}: {message[:150]}" if error is not None else status
                out.append(Verdict(qualname, p.name, case.cls, outcome, detail))
    return tuple(out), tuple(uncovered)


def summary() -> dict[str, Any]:
    results, uncovered = verdicts()
    covered = {v.callable for v in results}
    return {
        "public callables": len(all_public_names()),
        "judged callables": len(covered),
        "not judged": len(uncovered),
        "calls": len(results),
        "class x callable pairs": len({(v.callable, v.cls) for v in results}),
        "outcomes": dict(Counter(v.outcome for v in results)),
    }


def test_a_call_cut_by_the_alarm_leaves_the_process_as_it_was() -> None:
    """Whatever the call changed before the alarm cut it is put back (see :class:`_GlobalState`)."""
    seen_fd = os.fstat(2)
    rng, rc, filters = torch.get_rng_state(), matplotlib.rcParams["lines.linewidth"], list(warnings.filters)

    def changes_everything_then_hangs() -> None:
        torch.set_grad_enabled(False)
        torch.manual_seed(123)
        np.seterr(all="raise")
        matplotlib.rcParams["lines.linewidth"] = 9.0
        warnings.filters.insert(0, ("error", None, Warning, None, 0))
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)
        while True:
            pass

    assert call(changes_everything_then_hangs, {}, budget=0.05) == ("timeout", None)
    assert torch.is_grad_enabled()
    assert torch.equal(torch.get_rng_state(), rng)
    assert np.geterr()["divide"] != "raise"
    assert matplotlib.rcParams["lines.linewidth"] == rc
    assert warnings.filters == filters
    assert (os.fstat(2).st_dev, os.fstat(2).st_ino) == (seen_fd.st_dev, seen_fd.st_ino)


def test_an_alarm_inside_no_grad_leaves_autograd_on() -> None:
    """The failure that broke a CI run: an alarm landing in ``no_grad``'s own lines left autograd off."""
    @torch.no_grad()
    def tiny(x: torch.Tensor) -> torch.Tensor:
        return x + 1

    def many_tiny_calls() -> None:
        x = torch.zeros(3)
        while True:
            tiny(x)

    for _ in range(200):  # about 1 alarm in 10 lands in no_grad's __enter__ or __exit__ without the fix
        assert call(many_tiny_calls, {}, budget=0.003) == ("timeout", None)
        assert torch.is_grad_enabled()


def test_every_public_callable_is_found() -> None:
    names = all_public_names()
    assert len(names) > 250, "the walk over course_utils found too few callables: did the package move?"
    assert "course_utils.attention.scaled_dot_product_attention" in names


def test_bad_input_by_class() -> None:
    results, uncovered = verdicts()
    s = summary()
    print(f"\nbad input by class: {s}")
    failures = [v for v in results if v.bad and v.key not in PENDING]
    lines = [f"{v.key} [{v.cls}] {v.outcome}: {v.detail}" for v in failures]
    assert not failures, f"{len(failures)} bad-input calls answered badly:\n" + "\n".join(lines)


def test_pending_entries_still_fail() -> None:
    """A PENDING entry whose callable now answers every class well is done: remove it."""
    results, _ = verdicts()
    failing = {v.key for v in results if v.bad}
    fixed = sorted(PENDING - failing)
    if fixed:
        warnings.warn(f"PENDING entries that now pass (remove them): {fixed}", stacklevel=1)


if __name__ == "__main__":
    results, uncovered = verdicts()
    print(summary())
    for v in results:
        if v.bad:
            print(f"{'PENDING ' if v.key in PENDING else ''}{v.key} [{v.cls}] {v.outcome}: {v.detail}")
    print("\nnot judged:")
    for name, why in uncovered:
        print(f"  {name}: {why}")
