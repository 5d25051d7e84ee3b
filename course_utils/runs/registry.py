"""The freshness check: every shipped result, and the function that gives the code's recipe for it.

``REGISTRY`` maps an asset file name (in ``course_utils/assets/``) to a function returning the
recipe the code would use today (a JSON-able dict). Each shipped file stores the recipe that made
it under the key ``recipe``; :func:`check` compares the two. To register a new result, add one
line: ``"my_result.json": lambda: MY_RECIPE,``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..mlm import MLM_RECIPE
from ..scaling import SCALING_RECIPE
from ..validate import check_callable
from ..vit import VIT_RECIPE
from .ablations import ABLATIONS_FILE, ablations_recipe
from .charlm import CHARLM_CHECKPOINT, CHARLM_RECIPE
from .core import ASSETS, stored_recipe
from .length import (
    EXTRA_ROWS_FILE,
    LOSER,
    RESULTS_FILE,
    WINNER,
    checkpoint_file,
    extra_rows_recipe,
    results_recipe,
    shipped_recipe,
)
from .mlm import MLM_FILE
from .modern import (
    ATTENTION_AT_SCALE_FILE,
    ATTENTION_AT_SCALE_RECIPE,
    GQA_UPTRAINING_FILE,
    GQA_UPTRAINING_RECIPE,
    MODERN_BLOCK_FILE,
    MODERN_BLOCK_RECIPE,
)
from .reversal import DECODER_ONLY_CHECKPOINT, DECODER_ONLY_RECIPE, FAST_RECIPE, REVERSAL_CHECKPOINT
from .scaling import SCALING_FILE
from .vit import VIT_FILE

BENCHMARK_FILE = "ch08_reversal_benchmark.json"


def ch08_benchmark_recipe() -> dict[str, Any]:
    """The recipe of Chapter 8's side-by-side benchmark (``benchmarks/reversal.py --arch both``)."""
    return {"encoder-decoder": FAST_RECIPE, "decoder-only": DECODER_ONLY_RECIPE,
            "benchmark": {"n_per_length": 200, "eval_every": 25, "lengths": [3, 15], "torch_threads": 1}}


REGISTRY: dict[str, Callable[[], Any]] = {
    REVERSAL_CHECKPOINT: lambda: FAST_RECIPE,
    DECODER_ONLY_CHECKPOINT: lambda: DECODER_ONLY_RECIPE,
    CHARLM_CHECKPOINT: lambda: CHARLM_RECIPE,
    checkpoint_file(WINNER): lambda: shipped_recipe(WINNER),
    checkpoint_file(LOSER): lambda: shipped_recipe(LOSER),
    RESULTS_FILE: results_recipe,
    ABLATIONS_FILE: ablations_recipe,
    BENCHMARK_FILE: ch08_benchmark_recipe,
    EXTRA_ROWS_FILE: extra_rows_recipe,
    MODERN_BLOCK_FILE: lambda: MODERN_BLOCK_RECIPE,
    ATTENTION_AT_SCALE_FILE: lambda: ATTENTION_AT_SCALE_RECIPE,
    GQA_UPTRAINING_FILE: lambda: GQA_UPTRAINING_RECIPE,
    SCALING_FILE: lambda: SCALING_RECIPE,
    VIT_FILE: lambda: VIT_RECIPE,
    MLM_FILE: lambda: MLM_RECIPE,
}


def _plain(value: Any) -> Any:
    """JSON round trip: tuples become lists, so stored and code recipes compare as data."""
    return json.loads(json.dumps(value))


def differences(stored: Any, code: Any, where: str = "recipe") -> list[str]:
    """Human-readable differences between a stored recipe and the code's, one per leaf."""
    if isinstance(stored, dict) and isinstance(code, dict):
        out = []
        for key in sorted(set(stored) | set(code), key=str):
            path = f"{where}.{key}"
            if key not in code:
                out.append(f"{path} is stored ({stored[key]!r}) but not in the code")
            elif key not in stored:
                out.append(f"{path} is in the code ({code[key]!r}) but not stored")
            else:
                out.extend(differences(stored[key], code[key], path))
        return out
    return [] if stored == code else [f"{where} stored {stored!r}, code {code!r}"]


def check_one(name: str, code_recipe: Callable[[], Any], assets: Path = ASSETS) -> str:
    """``"fresh"`` or ``"stale: <what differs>"`` for the shipped file ``name``."""
    check_callable("code_recipe", code_recipe, "a function that returns the code's recipe")
    path = Path(assets) / name
    if not path.exists():
        return "stale: the file is missing"
    stored = stored_recipe(path)
    if stored is None:
        return "stale: the file stores no recipe"
    diffs = differences(_plain(stored), _plain(code_recipe()))
    if not diffs:
        return "fresh"
    more = f" (and {len(diffs) - 3} more)" if len(diffs) > 3 else ""
    return "stale: " + "; ".join(diffs[:3]) + more


def check(registry: Mapping[str, Callable[[], Any]] | None = None, assets: Path = ASSETS) -> dict[str, str]:
    """{file name: "fresh" or "stale: ..."} for every registered shipped result."""
    registry = REGISTRY if registry is None else registry
    if not isinstance(registry, Mapping):
        raise TypeError(f"registry must be a dict of file name -> recipe function, got {type(registry).__name__}")
    for name, fn in registry.items():
        check_callable(f"registry[{name!r}]", fn, "a function that returns the code's recipe")
    return {name: check_one(name, fn, assets) for name, fn in registry.items()}
