"""Sphinx extension: a self-contained, light book that shows readers only what is meant for them.

- Jupyter Book 1.x always loads sphinx-thebe, whose page script points at a CDN (and is
  emitted twice, a console error). The course has no live-kernel button, so its scripts and
  stylesheet are dropped from every page: no request leaves the site.
- Solution cells (notebook cells tagged ``solution``) carry ``### BEGIN SOLUTION`` and
  ``### END SOLUTION`` lines for the tool that makes the student copy
  (``course_utils.student``); the book drops those lines from the code it displays, so an
  opened solution reads as plain code.
- Explorer frames are stored in the notebooks as PNG data URIs (a notebook stays one
  self-contained file). In the built pages each frame becomes a file of its own under
  ``_images/explorers/``: the first frame loads lazily as the reader scrolls to it, the others
  when the reader first moves a control (``course.js``). A chapter page no longer carries
  hundreds of KiB of pictures nobody may look at.
- Static figures link to their PNG (tap to open it at full size on a phone) and load lazily.
- The theme's FontAwesome script (1.4 MiB) is dropped: the header icons come from the
  FontAwesome stylesheet and web fonts that the theme loads anyway.
- The repository and issue (errata) buttons are switched on only when ``_config.yml`` names a
  repository URL; the footer shows the course's version and the date of the build's commit.
"""

from __future__ import annotations

import base64
import datetime as _dt
import hashlib
import re
import subprocess
import tomllib
from pathlib import Path, PurePosixPath
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx

SOLUTION_MARKER = re.compile(r"^[ \t]*### (BEGIN|END) SOLUTION[ \t]*$\n?", re.MULTILINE)
FRAME_IMG = re.compile(r'<img\b[^>]*\bdata-key="[^"]*"[^>]*>')
DATA_SRC = re.compile(r'\ssrc="data:image/png;base64,([A-Za-z0-9+/=\s]+)"')
EXPLORER = re.compile(r'<div class="cu-explorer" .*?</script></div>', re.DOTALL)
FRAMES_RUN = re.compile(r'((?:<img\b[^>]*\bdata-key="[^"]*"[^>]*>\s*)+)')
FIGURE = re.compile(r"<figure\b.*?</figure>", re.DOTALL)
STATIC_IMG = re.compile(r'<img\b[^>]*\bsrc="([^"]*_images/[^"]+\.png)"[^>]*>')
FONTAWESOME_JS = re.compile(r'\s*<script\b[^>]*fontawesome[^>]*all\.min\.js[^>]*>\s*</script>')
FONT_PRELOAD = re.compile(r'\s*<link rel="preload" as="font"[^>]*fontawesome[^>]*'
                          r'/webfonts/fa-(\w+)-\d+\.woff2"[^>]*/?>')
ICON_RULE = re.compile(r'((?:\.fa-[a-z0-9-]+::?before,?)+)\{content:"[^"]*"\}')
ICON_NAME = re.compile(r"\bfa-[a-z0-9-]+")
# explorer text is at least 9 pt (12.5 CSS px at the frames' design size, see
# course_utils.plots.BOOK_RC); a frame shown at 0.75 of its width keeps it above 9 CSS px
EXPLORER_MIN_SCALE = 0.75
EXPLORER_DIR = "_images/explorers"
SOLID_SUBSET = "fa-solid-900.subset.woff"


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


# --- built pages: explorer frames as files, zoomable lazy figures, no FontAwesome script ----

def _frame_tag(tag: str, url: str, min_scale: float) -> str:
    """An explorer frame's <img> pointing at its file: lazily if shown first, on demand if not."""
    tag = DATA_SRC.sub("", tag)
    hidden = "display:none" in tag
    width = re.search(r'\swidth="(\d+)"', tag)
    if width:
        minimum = f"min-width:{round(int(width.group(1)) * min_scale)}px;"
        tag = re.sub(r'\sstyle="', f' style="{minimum}', tag, count=1)
    source = f' data-src="{url}"' if hidden else f' src="{url}" loading="lazy"'
    return tag[:-1].rstrip("/ ") + source + ' decoding="async">'


def externalise_frames(html: str, page: PurePosixPath, outdir: Path) -> str:
    """``html`` with every explorer frame's data URI written to a file and referenced by URL."""
    root = PurePosixPath(*([".."] * (len(page.parts) - 1))) if len(page.parts) > 1 else PurePosixPath(".")

    def explorer(block: re.Match[str]) -> str:
        text_px = re.search(r'data-text-px="([\d.]+)"', block.group(0)[:2000])
        # frames never shrink below the size at which their smallest text is 9 CSS px
        min_scale = max(EXPLORER_MIN_SCALE, 9 / float(text_px.group(1))) if text_px else EXPLORER_MIN_SCALE

        def one(match: re.Match[str]) -> str:
            tag = match.group(0)
            data = DATA_SRC.search(tag)
            if data is None:
                return tag
            png = base64.b64decode(re.sub(r"\s", "", data.group(1)))
            name = hashlib.sha256(png).hexdigest()[:24] + ".png"
            target = outdir / EXPLORER_DIR / name
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(png)
            return _frame_tag(tag, str(root / EXPLORER_DIR / name), min_scale)

        frames = FRAME_IMG.sub(one, block.group(0))
        return FRAMES_RUN.sub(lambda m: f'<div class="cu-frames">{m.group(1)}</div>', frames)

    return EXPLORER.sub(explorer, html)


def zoomable_figures(html: str) -> str:
    """Each static figure's picture links to its PNG (opened full size on a phone) and loads lazily."""

    def figure(match: re.Match[str]) -> str:
        block = match.group(0)
        if "cu-explorer" in block:
            return block
        linked = "image-reference" in block or "<a " in block.split("<img", 1)[0][-300:]

        def image(m: re.Match[str]) -> str:
            tag = m.group(0)
            if "loading=" not in tag:
                tag = tag.replace("<img ", '<img loading="lazy" decoding="async" ', 1)
            if linked:
                return tag
            return (f'<a class="cu-zoom" href="{m.group(1)}" title="Open the figure at full size">'
                    f"{tag}</a>")

        return STATIC_IMG.sub(image, block, count=1)

    return FIGURE.sub(figure, html)


def _trim_font_preloads(html: str) -> str:
    """Drop the preload of a FontAwesome font (brands, regular) that no icon of the page uses."""
    body = FONT_PRELOAD.sub("", html)

    def keep(match: re.Match[str]) -> str:
        style = match.group(1)  # solid, regular or brands
        return match.group(0) if f"fa-{style} " in body or f'fa-{style}"' in body else ""

    return FONT_PRELOAD.sub(keep, html)


def postprocess_page(html: str, page: PurePosixPath, outdir: Path) -> str:
    """Everything the extension changes in one built HTML page."""
    if "cu-explorer" in html:
        html = externalise_frames(html, page, outdir)
    html = zoomable_figures(html)
    html = _trim_font_preloads(html)
    return FONTAWESOME_JS.sub("", html)


def subset_icon_css(css: str, used: set[str]) -> str:
    """FontAwesome's stylesheet without the rules of the ~2,000 icons the book never shows."""

    def rule(match: re.Match[str]) -> str:
        names = set(re.findall(r"\.(fa-[a-z0-9-]+)::?before", match.group(1)))
        return match.group(0) if names & used else ""

    return ICON_RULE.sub(rule, css)


def _subset_font(ttf: Path, codepoints: set[int], out: Path) -> bool:
    """Write the glyphs of ``codepoints`` from ``ttf`` as a small WOFF font; False if that fails."""
    try:
        from fontTools import subset
    except ImportError:
        return False
    options = subset.Options()
    options.flavor = "woff"  # zlib: WOFF2 would need brotli
    options.layout_features = ["*"]
    try:
        font = subset.load_font(str(ttf), options)
        subsetter = subset.Subsetter(options)
        subsetter.populate(unicodes=sorted(codepoints))
        subsetter.subset(font)
        subset.save_font(font, str(out), options)
    except Exception:  # a font tools problem leaves the full font in place
        return False
    return True


def _subset_fontawesome(outdir: Path) -> bool:
    """Keep FontAwesome's stylesheet rules and solid glyphs for the icons the book shows.

    Returns whether the solid font was replaced by its subset (``fa-solid-900.subset.woff``).
    """
    used: set[str] = set()
    for path in outdir.rglob("*"):
        if path.suffix in (".html", ".js") and "fontawesome" not in path.parts:
            used |= set(ICON_NAME.findall(path.read_text(encoding="utf-8", errors="replace")))
    subset_done = False
    for css in (outdir / "_static" / "vendor").glob("fontawesome/*/css/all.min.css"):
        text = subset_icon_css(css.read_text(encoding="utf-8"), used)
        codepoints = {int(h, 16) for h in re.findall(r'content:"\\([0-9a-f]{4,5})"', text)}
        fonts = css.parent.parent / "webfonts"
        if codepoints and _subset_font(fonts / "fa-solid-900.ttf", codepoints, fonts / SOLID_SUBSET):
            text = text.replace('url(../webfonts/fa-solid-900.woff2) format("woff2"),'
                                'url(../webfonts/fa-solid-900.ttf) format("truetype")',
                                f'url(../webfonts/{SOLID_SUBSET}) format("woff")')
            subset_done = True
        css.write_text(text, encoding="utf-8")
    for js in (outdir / "_static" / "vendor").glob("fontawesome/*/js"):
        for path in js.glob("*.js"):
            path.unlink()  # the book never loads FontAwesome's scripts (see postprocess_page)
    return subset_done


def _postprocess(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    outdir = Path(app.outdir)
    solid_subset = _subset_fontawesome(outdir)
    for path in sorted(outdir.rglob("*.html")):
        page = PurePosixPath(path.relative_to(outdir).as_posix())
        if page.parts[0] in ("_static", "_sources", "_images"):
            continue
        text = path.read_text(encoding="utf-8")
        new = postprocess_page(text, page, outdir)
        if solid_subset:
            new = re.sub(r'type="font/woff2"( crossorigin href="[^"]*/webfonts/)fa-solid-900\.woff2"',
                         rf'type="font/woff"\1{SOLID_SUBSET}"', new)
        if new != text:
            path.write_text(new, encoding="utf-8")


# --- configuration: repository buttons only with a repository, version and date in the footer --

def _version(root: Path) -> str:
    try:
        return tomllib.loads((root / "pyproject.toml").read_text())["project"]["version"]
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return ""


def _date(root: Path) -> str:
    """The date of the commit the book is built from (today's date outside a git checkout)."""
    try:
        out = subprocess.run(["git", "log", "-1", "--format=%cs"], cwd=root, capture_output=True,
                             text=True, timeout=10, check=True).stdout.strip()
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", out):
            return out
    except (OSError, subprocess.SubprocessError):
        pass
    return _dt.date.today().isoformat()


def _repository_url(root: Path) -> str:
    """``repository.url`` of ``_config.yml`` ('' when absent or empty)."""
    import yaml

    try:
        config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return ""
    return str((config.get("repository") or {}).get("url") or "").strip()


def _configure(app: Sphinx, config: Any) -> None:
    root = Path(app.confdir)
    options = dict(config.html_theme_options or {})
    url = _repository_url(root) or str(options.get("repository_url", "") or "").strip()
    for button in ("use_repository_button", "use_issues_button"):
        options[button] = bool(url)
    if url:
        options["repository_url"] = url
        options.setdefault("repository_branch", "main")
    else:
        options.pop("repository_url", None)
        options["use_edit_page_button"] = False
    version = _version(root)
    stamp = f"Version {version}, {_date(root)}" if version else _date(root)
    footer = str(options.get("extra_footer", "") or "")
    if "cu-version" not in footer:
        options["extra_footer"] = f'<p class="cu-version">{stamp}</p>{footer}'
    config.html_theme_options = options


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", _configure)
    app.connect("html-page-context", _drop_thebe, priority=900)
    app.connect("doctree-read", _drop_solution_markers)
    app.connect("build-finished", _postprocess)
    app.add_js_file("course.js", loading_method="defer")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
