"""Chapter 12's scaling laws in miniature: the shipped table and its recipe. Chapter 12.

``python benchmarks/scaling.py --threads 1`` re-trains every size and length with
``course_utils.scaling.SCALING_RECIPE`` and rewrites ``scaling.json``, which stores that recipe
under the key ``recipe``.
"""

from __future__ import annotations

from typing import Any

from .core import load_asset

SCALING_FILE = "scaling.json"


def load_scaling() -> dict[str, Any]:
    """The shipped scaling benchmark (sizes, lengths, fits, recipe). Chapter 12."""
    return load_asset(SCALING_FILE)
