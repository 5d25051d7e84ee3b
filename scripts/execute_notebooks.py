"""Execute notebooks top to bottom in a fresh kernel, store the outputs in place, print times.

Stored outputs hold what the HTML book shows: no ipywidgets state and no widget views (an
explorer's pre-rendered text/html frames are its stored output; see course_utils.interactive),
and adjacent pieces of one stream merged with carriage returns applied (a text progress line is
stored as its final state; nothing is reordered).

Usage: python scripts/execute_notebooks.py chapters/01_attention.ipynb [...]   (default: all chapters)
"""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def drop_widgets(nb: nbformat.NotebookNode) -> int:
    """Remove widget views (and widget state) from the stored outputs; return how many were removed."""
    removed = 0
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            # keep the output and its other views (nbval compares them; it never compares this one)
            if out.get("data", {}).pop(WIDGET_VIEW, None) is not None:
                removed += 1
    return removed


CARRIAGE_RETURN = re.compile(r"^.*\r(?=[^\n])", re.MULTILINE)  # a line rewritten in place: keep the last text


def tidy_streams(nb: nbformat.NotebookNode) -> None:
    """Merge adjacent outputs of the same stream and apply carriage returns, as a terminal shows them."""
    for cell in nb.cells:
        merged: list = []
        for out in cell.get("outputs", []):
            if (out.get("output_type") == "stream" and merged and merged[-1].get("output_type") == "stream"
                    and merged[-1]["name"] == out["name"]):
                merged[-1]["text"] += out["text"]
            else:
                merged.append(out)
        for out in merged:
            if out.get("output_type") == "stream":
                out["text"] = CARRIAGE_RETURN.sub("", out["text"])
        if "outputs" in cell:
            cell["outputs"] = merged


def execute(path: Path, timeout: int = 1800) -> float:
    """Run one notebook in place with its folder as working directory; return seconds taken."""
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    resources = {"metadata": {"path": str(path.parent)}}
    NotebookClient(nb, timeout=timeout, kernel_name="python3", resources=resources, record_timing=False,
                   store_widget_state=False).execute()
    seconds = time.perf_counter() - start
    drop_widgets(nb)
    tidy_streams(nb)
    nbformat.write(nb, path)
    return seconds


def main() -> None:
    os.environ.pop("COURSE_EXPLORERS", None)  # a `make lab` setting: the stored outputs need the book frames
    paths = [Path(p) for p in sys.argv[1:]] or sorted(Path("chapters").glob("*.ipynb"))
    for path in paths:
        print(f"{path}: {execute(path):.1f} s", flush=True)


if __name__ == "__main__":
    main()
