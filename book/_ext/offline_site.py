"""Sphinx extension: a self-contained book that shows readers only what is meant for them.

- Jupyter Book 1.x always loads sphinx-thebe, whose page script points at a CDN (and is
  emitted twice, a console error). The course has no live-kernel button, so its scripts and
  stylesheet are dropped from every page: no request leaves the site.
- Solution cells (notebook cells tagged ``solution``) carry ``### BEGIN SOLUTION`` and
  ``### END SOLUTION`` lines for the tool that makes the student copy
  (``course_utils.student``); the book drops those lines from the code it displays, so an
  opened solution reads as plain code.
"""

from __future__ import annotations

import re
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx

SOLUTION_MARKER = re.compile(r"^[ \t]*### (BEGIN|END) SOLUTION[ \t]*$\n?", re.MULTILINE)


def _is_thebe(asset: Any) -> bool:
    name = str(getattr(asset, "filename", "") or "")
    body = str(getattr(asset, "attributes", {}).get("body", ""))
    return "thebe" in name or "THEBE_JS_URL" in body


def _drop_thebe(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    for key in ("script_files", "css_files"):
        if key in context:
            context[key] = [asset for asset in context[key] if not _is_thebe(asset)]


def strip_solution_markers(text: str) -> str:
    """``text`` without its ``### BEGIN SOLUTION`` / ``### END SOLUTION`` lines."""
    return SOLUTION_MARKER.sub("", text)


def _in_solution_cell(node: nodes.Node) -> bool:
    """Whether ``node`` sits inside a notebook cell tagged ``solution``."""
    parent = node.parent
    while parent is not None:
        if "tag_solution" in parent.get("classes", []):
            return True
        parent = parent.parent
    return False


def _drop_solution_markers(app: Sphinx, doctree: nodes.document) -> None:
    for block in list(doctree.findall(nodes.literal_block)):
        text = block.astext()
        if not SOLUTION_MARKER.search(text) or not _in_solution_cell(block):
            continue
        clean = strip_solution_markers(text)
        new = nodes.literal_block(clean, clean, **block.attributes)
        block.replace_self(new)


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("html-page-context", _drop_thebe, priority=900)
    app.connect("doctree-read", _drop_solution_markers)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
