"""Recipes, seeded runs and the one checkpoint format. Used by chapters 6-10.

A *recipe* is a plain, JSON-able dict: ``{"model": {...config fields...}, "train": {...TrainConfig
fields...}, "seed": int, ...data fields such as "batch_size", "min_len", "max_len"}``. It stays a
dict (not a dataclass) because it is stored verbatim in every shipped file and compared with the
code's recipe by ``python -m course_utils.runs check``; the chapters index it like one
(``FAST_RECIPE["train"]["steps"]``).

:func:`run` is the one seeded runner: it seeds once (:func:`seeded`), builds the model, makes the
batches and calls :func:`course_utils.training.train`, and returns ``Run(model, history, recipe)``
where ``recipe`` is the recipe it actually ran (after a ``steps`` override). :func:`save` and
:func:`load` read and write the one checkpoint format::

    {"kind": "transformer" | "decoder_only" | "vit" | "mlm", "config": {...}, "recipe": {...}, "results": {...},
     "state_dict": {...}}

``results`` holds what the run measured (training log, curves); ``recipe`` holds only what made
the model, so the freshness check can compare it with the code.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import platform
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import torch
from torch import Tensor, nn

from ..gpt import DecoderOnly, DecoderOnlyConfig
from ..mlm import EncoderOnlyLM
from ..model import Transformer, TransformerConfig
from ..training import Callback, TrainConfig, TrainHistory, train
from ..utils import set_seed
from ..validate import check_bool, check_positive_int
from ..vit import VisionTransformer

Recipe = dict[str, Any]  # the one recipe type: plain JSON-able data, see the module docstring

ASSETS = Path(__file__).resolve().parent.parent / "assets"

# kind -> (model class, config class): what a checkpoint can hold
KINDS: dict[str, tuple[type[nn.Module], type | None]] = {
    "transformer": (Transformer, TransformerConfig),
    "decoder_only": (DecoderOnly, DecoderOnlyConfig),
    "vit": (VisionTransformer, None),  # built from its keyword arguments: VisionTransformer(**config)
    "mlm": (EncoderOnlyLM, None),  # Chapter 12's masked-language model: EncoderOnlyLM(**config)
}


class Run(NamedTuple):
    """What :func:`run` returns: the trained model, its history and the recipe it actually ran."""

    model: nn.Module
    history: TrainHistory
    recipe: Recipe


def check_recipe(recipe: object, keys: Sequence[str] = ("model", "train", "seed"), name: str = "recipe") -> Recipe:
    """Raise unless ``recipe`` is a dict with every key in ``keys``, "model" and "train" being dicts."""
    if not isinstance(recipe, dict):
        raise TypeError(f"{name} must be a dict like FAST_RECIPE, got {type(recipe).__name__}")
    missing = [k for k in keys if k not in recipe]
    if missing:
        raise ValueError(f"{name} must have the keys {list(keys)}, got none for {missing}")
    for key in ("model", "train"):
        if key in recipe and not isinstance(recipe[key], dict):
            raise TypeError(f"{name}[{key!r}] must be a dict, got {type(recipe[key]).__name__}")
    return recipe


def with_steps(recipe: Recipe, steps: int | None) -> Recipe:
    """A copy of ``recipe`` with ``steps`` training steps and the warm-up capped below them (the one rule)."""
    recipe = copy.deepcopy(recipe)
    if steps is not None:
        steps = check_positive_int("steps", steps)  # a NumPy int becomes an int: the recipe stays plain data
        recipe["train"]["steps"] = steps
        recipe["train"]["warmup"] = min(recipe["train"].get("warmup", 0), steps - 1)
    return recipe


def seeded(seed: int) -> torch.Generator:
    """Seed every global generator (weights, dropout) and return a data generator seeded the same way."""
    return set_seed(seed)


def run(
    recipe: Recipe,
    build: Callable[[Recipe], nn.Module],
    make_batch_fn: Callable[[Recipe, torch.Generator], Callable[[int], Sequence[Tensor]]],
    progress: bool = True,
    steps: int | None = None,
    callbacks: Sequence[Callback] = (),
    loss_fn: Callable[..., Tensor] | None = None,
) -> Run:
    """Train a fresh model from ``recipe``, seeded; return ``Run(model, history, recipe)``.

    ``seeded(recipe["seed"])`` seeds the weights and gives the data generator;
    ``build(recipe)`` makes the model, ``make_batch_fn(recipe, generator)`` the batches, and
    :func:`course_utils.training.train` runs ``recipe["train"]`` with ``callbacks``. ``steps``
    overrides the number of steps (smoke runs; :func:`with_steps`). The recipe passed in is not
    modified; the one returned is the one that ran.
    """
    recipe = with_steps(check_recipe(recipe), steps)
    check_bool("progress", progress)
    generator = seeded(recipe["seed"])
    model = build(recipe)
    history = train(model, make_batch_fn(recipe, generator), TrainConfig(**recipe["train"]),
                    loss_fn=loss_fn, progress=progress, callbacks=callbacks)
    return Run(model, history, recipe)


# ---------------------------------------------------------------- the one checkpoint format
def _kind_of(model: object) -> str:
    for kind, (cls, _) in KINDS.items():
        if type(model) is cls:
            return kind
    raise TypeError(f"model must be one of {[c.__name__ for c, _ in KINDS.values()]}, got {type(model).__name__}")


def _check_path(path: object) -> Path:
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a str or pathlib.Path, got {type(path).__name__}")
    return Path(path)


def save(model: nn.Module, recipe: Recipe, path: Path | str, results: dict[str, Any] | None = None,
         config: dict[str, Any] | None = None) -> Path:
    """Write kind, config, recipe, results and weights (plain data and tensors only) to ``path``.

    ``config`` is the model's config as a dict: by default its dataclass ``model.config``; a kind
    built from keyword arguments (``vit``, ``mlm``) passes the keywords that rebuild it.
    """
    kind = _kind_of(model)
    check_recipe(recipe)
    if results is not None and not isinstance(results, dict):
        raise TypeError(f"results must be a dict or None, got {type(results).__name__}")
    if config is None:
        if KINDS[kind][1] is None:
            raise ValueError(f"config must be given for a {kind!r} model (it has no dataclass config), got None")
        dataclass_config: Any = model.config
        config = dataclasses.asdict(dataclass_config)
    elif not isinstance(config, dict):
        raise TypeError(f"config must be a dict or None, got {type(config).__name__}")
    path = _check_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    torch.save({"kind": kind, "config": config, "recipe": recipe, "results": results or {}, "state_dict": state},
               path)
    return path


def read_checkpoint(path: Path | str) -> dict[str, Any]:
    """The checkpoint's dict (kind, config, recipe, results, state_dict), read with weights_only=True."""
    path = _check_path(path)
    if not path.exists():
        raise FileNotFoundError(
            f"checkpoint not found at {path.name}; create it with `python scripts/train_checkpoint.py`"
        )
    if not path.is_file():
        raise ValueError(f"path must be a checkpoint file, got the directory {path.name}")
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # empty, truncated, foreign or unsafe file: all unreadable here
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(
            f"path must be a checkpoint written by course_utils.runs.save, got a file torch.load cannot read "
            f"({path.name}: {first[:120]})"
        ) from None
    keys = ("kind", "config", "recipe", "results", "state_dict")
    missing = [k for k in keys if not isinstance(data, dict) or k not in data]
    if missing:
        raise ValueError(
            f"path must be a checkpoint written by course_utils.runs.save (a dict with {list(keys)}), "
            f"got {type(data).__name__} without {missing} in {path.name}"
        )
    if data["kind"] not in KINDS:
        raise ValueError(f"the checkpoint's kind must be one of {list(KINDS)}, got {data['kind']!r} in {path.name}")
    return data


def _config_from_dict(config_cls: type, config: object, name: str) -> Any:
    """config_cls(**config) with a clear error for a missing or unknown key."""
    if not isinstance(config, dict):
        raise TypeError(f"{name} must be a dict of {config_cls.__name__} fields, got {type(config).__name__}")
    fields = dataclasses.fields(config_cls)
    required = {f.name for f in fields
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    unknown = sorted(set(config) - {f.name for f in fields})
    missing = sorted(required - set(config))
    if unknown or missing:
        raise ValueError(
            f"{name} must hold {config_cls.__name__} fields, got "
            + "; ".join(p for p in (f"missing {missing}" if missing else "",
                                    f"unknown {unknown}" if unknown else "") if p)
        )
    return config_cls(**config)


def load(path: Path | str) -> nn.Module:
    """The model stored at ``path`` (Transformer, DecoderOnly, ViT or EncoderOnlyLM, by its kind), in eval mode."""
    data = read_checkpoint(path)
    model_cls, config_cls = KINDS[data["kind"]]
    if config_cls is None:
        model = model_cls(**data["config"])
    else:
        model = model_cls(_config_from_dict(config_cls, data["config"], "the checkpoint's config"))
    try:
        model.load_state_dict(data["state_dict"])
    except (RuntimeError, TypeError, AttributeError) as error:
        first = str(error).strip().splitlines()[0]
        raise ValueError(
            f"path must be a checkpoint whose weights fit its config, got a mismatch in {Path(path).name}: "
            f"{first[:160]}"
        ) from None
    return model.eval()


ModelT = TypeVar("ModelT", bound=nn.Module)


def load_as(path: Path | str, cls: type[ModelT]) -> ModelT:
    """:func:`load`, checked to hold a ``cls`` (a typed model for the loaders of each family)."""
    model = load(path)
    if not isinstance(model, cls):
        raise ValueError(f"path must hold a {cls.__name__}, got a {type(model).__name__} in {Path(path).name}")
    return model


# ---------------------------------------------------------------- shipped files
def asset_path(name: str) -> Path:
    """Where the shipped file ``name`` lives (``course_utils/assets/<name>``)."""
    if not isinstance(name, str) or not name or "/" in name or "\\" in name:
        raise ValueError(f"name must be a file name in course_utils/assets, got {name!r}")
    return ASSETS / name


def load_asset(name: str) -> Any:
    """A shipped result by file name: a ``.json`` file as a dict, a ``.pt`` checkpoint as its model."""
    path = asset_path(name)
    if not path.exists():
        raise FileNotFoundError(f"{name} not found in course_utils/assets; README.md says which command makes it")
    if name.endswith(".json"):
        return json.loads(path.read_text(encoding="utf-8"))
    if name.endswith(".pt"):
        return load(path)
    raise ValueError(f"name must end in .json or .pt, got {name!r}")


def write_asset(where: Path | str, record: dict[str, Any], ensure_ascii: bool = True) -> Path:
    """Write a benchmark's JSON result (indent 1, a final newline, UTF-8) and return its path: the one writer
    of the shipped JSON results. ``where`` is a file name in ``course_utils/assets`` (a str) or a ``Path``."""
    path = asset_path(where) if isinstance(where, str) else _check_path(where)
    if not isinstance(record, dict):
        raise TypeError(f"record must be a dict (a JSON object), got {type(record).__name__}")
    path.write_text(json.dumps(record, indent=1, ensure_ascii=check_bool("ensure_ascii", ensure_ascii)) + "\n",
                    encoding="utf-8")
    return path


def machine_record() -> dict[str, Any]:
    """Where a benchmark ran, stored beside its timings as ``record["machine"]``: platform, processor, CPU
    cores, torch threads, torch version and the load average (1, 5, 15 min; timings depend on it)."""
    return {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
            "cpu_cores": os.cpu_count(), "torch_threads": torch.get_num_threads(), "torch": torch.__version__,
            "load_average": [round(x, 2) for x in os.getloadavg()]}


def stored_recipe(path: Path | str) -> Any:
    """The recipe stored in a shipped file (``None`` if it stores none)."""
    path = _check_path(path)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint not found at {path.name}")
    if path.suffix == ".json":
        data = json.loads(path.read_text(encoding="utf-8"))
    else:
        data = torch.load(path, map_location="cpu", weights_only=True)
    return data.get("recipe") if isinstance(data, dict) else None
