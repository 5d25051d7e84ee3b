"""Sphinx extension: keep the built book self-contained (no request leaves the site).

Jupyter Book 1.x always loads sphinx-thebe, whose page script points at a CDN (and is
emitted twice, a console error). The course has no live-kernel button, so its scripts and
stylesheet are dropped from every page.
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx


def _is_thebe(asset: Any) -> bool:
    name = str(getattr(asset, "filename", "") or "")
    body = str(getattr(asset, "attributes", {}).get("body", ""))
    return "thebe" in name or "THEBE_JS_URL" in body


def _drop_thebe(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    for key in ("script_files", "css_files"):
        if key in context:
            context[key] = [asset for asset in context[key] if not _is_thebe(asset)]


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("html-page-context", _drop_thebe, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
