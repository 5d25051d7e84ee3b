"""Execute notebooks top to bottom in a fresh kernel, store the outputs in place, print times.

Usage: python scripts/execute_notebooks.py chapters/01_attention.ipynb [...]   (default: all chapters)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient


def execute(path: Path, timeout: int = 1800) -> float:
    """Run one notebook in place with its folder as working directory; return seconds taken."""
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    resources = {"metadata": {"path": str(path.parent)}}
    NotebookClient(nb, timeout=timeout, kernel_name="python3", resources=resources, record_timing=False).execute()
    seconds = time.perf_counter() - start
    nbformat.write(nb, path)
    return seconds


def main() -> None:
    paths = [Path(p) for p in sys.argv[1:]] or sorted(Path("chapters").glob("*.ipynb"))
    for path in paths:
        print(f"{path}: {execute(path):.1f} s", flush=True)


if __name__ == "__main__":
    main()
