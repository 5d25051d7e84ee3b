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
import html as _html
import json
import re
import subprocess
import sys
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
    for cell in doctree.findall(nodes.container):
        # a solution's output (what its checker prints about the reference answer) hides with
        # its code behind the one "Show solution" toggle
        if cell.get("nb_element") == "cell_code" and "tag_solution" in cell.get("classes", []):
            cell["hide_mode"] = "all"
            cell.setdefault("prompt_show", "Show solution")
            cell.setdefault("prompt_hide", "Hide solution")
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


OUTPUT_PRE = re.compile(r'(<div class="output (?:stream|text_plain)[^"]*)("><div class="highlight"><pre>)(.*?)</pre>',
                        re.DOTALL)
#: a printed table: two or more lines with aligned columns (a run of 2+ spaces inside the line)
TABLE_LINE = re.compile(r"\S {2,}\S")
BOX_CHARS = re.compile("[\u2500-\u257f]")
PROSE_WIDTH = 76  # what the output box holds at 1280 px


def is_prose_output(text: str) -> bool:
    """Whether printed output reads as sentences (wrap it) rather than a table (keep its lines)."""
    lines = text.splitlines()
    if not any(len(line) > PROSE_WIDTH for line in lines):
        return False
    tabular = sum(1 for line in lines if TABLE_LINE.search(line.rstrip()))
    return tabular < 2 and not BOX_CHARS.search(text)


def wrap_prose_outputs(html: str) -> str:
    """Mark printed output that is prose (checker messages, sentences) ``cu-prose``: it wraps."""

    def one(match: re.Match[str]) -> str:
        text = _html.unescape(re.sub(r"<[^>]+>", "", match.group(3)))
        if not is_prose_output(text):
            return match.group(0)
        return f"{match.group(1)} cu-prose{match.group(2)}{match.group(3)}</pre>"

    return OUTPUT_PRE.sub(one, html)


PHONE_DIR = "_images/phone"


def figure_notes(root: Path) -> dict[str, dict]:
    """What retina_png recorded for each static figure of the notebooks, keyed by the PNG's sha256."""
    notes: dict[str, dict] = {}
    for path in [*sorted((root / "chapters").glob("*.ipynb")), *sorted((root / "book").glob("*.ipynb"))]:
        try:
            nb = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        for cell in nb.get("cells", []):
            for out in cell.get("outputs", []):
                data = out.get("data", {}).get("image/png")
                meta = out.get("metadata", {}).get("image/png", {})
                if not data or not isinstance(meta, dict) or "text_px" not in meta:
                    continue
                png = base64.b64decode(data if isinstance(data, str) else "".join(data))
                notes[hashlib.sha256(png).hexdigest()] = meta
    return notes


def phone_figures(html: str, page: PurePosixPath, outdir: Path, notes: dict[str, dict]) -> str:
    """Static figures get their smallest text size as data attributes and, where one was drawn,
    a phone version shown below 721 px (``<picture>``); written to ``_images/phone/``."""
    root = PurePosixPath(*([".."] * (len(page.parts) - 1))) if len(page.parts) > 1 else PurePosixPath(".")

    def image(match: re.Match[str]) -> str:
        tag, src = match.group(0), match.group(1)
        if "data-text-px" in tag:
            return tag
        target = outdir / "_images" / PurePosixPath(src).name
        try:
            note = notes.get(hashlib.sha256(target.read_bytes()).hexdigest())
        except OSError:
            note = None
        if note is None:
            return tag
        tag = tag.replace("<img ", f'<img data-text-px="{note["text_px"]}" data-design-width="{note["width"]}" ', 1)
        phone = note.get("phone")
        if not isinstance(phone, dict) or "png" not in phone:
            return tag
        png = base64.b64decode(phone["png"])
        name = hashlib.sha256(png).hexdigest()[:24] + ".png"
        file = outdir / PHONE_DIR / name
        if not file.exists():
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_bytes(png)
        tag = tag.replace("<img ", f'<img data-phone-text-px="{phone["text_px"]}" '
                                   f'data-phone-width="{phone["width"]}" ', 1)
        return (f'<picture class="cu-phone-picture"><source media="(max-width: 720px)" '
                f'srcset="{root / PHONE_DIR / name}" width="{phone["width"]}" height="{phone["height"]}">'
                f"{tag}</picture>")

    def figure(match: re.Match[str]) -> str:
        block = match.group(0)
        if "cu-explorer" in block:
            return block
        return STATIC_IMG.sub(image, block, count=1)

    return FIGURE.sub(figure, html)


def postprocess_page(html: str, page: PurePosixPath, outdir: Path, notes: dict[str, dict] | None = None,
                     links: dict[str, str] | None = None, root: Path | None = None) -> str:
    """Everything the extension changes in one built HTML page."""
    if "cu-explorer" in html:
        html = externalise_frames(html, page, outdir)
    html = zoomable_figures(html)
    html = phone_figures(html, page, outdir, notes or {})
    html = wrap_prose_outputs(html)
    html = header_links(html, page, outdir, links or {})
    html = pdf_links(html, page, outdir)
    if root is not None:
        html = exercise_minutes(html, root)
    html = _trim_font_preloads(html)
    return FONTAWESOME_JS.sub("", html)


DOWNLOAD_MENU = re.compile(r'(<div class="dropdown dropdown-download-buttons">.*?<ul class="dropdown-menu">)'
                           r"(.*?)(</ul>)", re.DOTALL)
HEADER_BUTTONS = re.compile(r'<div class="article-header-buttons">')
STUDENT_DIR = "_downloads/student"
BOOK_PDF = "_downloads/book.pdf"


def _menu_item(href: str, text: str, title: str, icon: str = "fas fa-file", download: bool = True) -> str:
    attr = " download" if download else ""
    return (f'<li><a href="{href}"{attr} class="btn btn-sm dropdown-item cu-download" title="{title}">'
            f'<span class="btn__icon-container"><i class="{icon}"></i></span>'
            f'<span class="btn__text-container">{text}</span></a></li>')


def header_links(html: str, page: PurePosixPath, outdir: Path, links: dict[str, str]) -> str:
    """The header's download menu (solved and student notebook, the book's PDF, how to get
    course_utils) and, when the book has a repository, its repository and report-an-error links."""
    root = PurePosixPath(*([".."] * (len(page.parts) - 1))) if len(page.parts) > 1 else PurePosixPath(".")
    if "cu-download" in html or "cu-source-links" in html:
        return html
    student = outdir / STUDENT_DIR / f"{page.stem}.ipynb"

    def menu(match: re.Match[str]) -> str:
        items = match.group(2).replace('<span class="btn__text-container">.ipynb</span>',
                                       '<span class="btn__text-container">Solved notebook (.ipynb)</span>')
        items = items.replace('<span class="btn__text-container">.pdf</span>',
                              '<span class="btn__text-container">Print this page</span>')
        extra = ""
        if student.exists():
            extra += _menu_item(str(root / STUDENT_DIR / student.name), "Student copy (.ipynb)",
                                "The notebook with the solutions blanked and the outputs cleared")
        if student.exists():
            extra += ('<li class="cu-download-note dropdown-item-text">The notebooks import '
                      "<code>course_utils</code>: get the course's repository, then run "
                      "<code>make book</code> and <code>make lab</code> "
                      f'(<a href="{root / "book" / "setup.html"}">set-up</a>).</li>')
        return match.group(1) + extra + items + match.group(3)

    html = DOWNLOAD_MENU.sub(menu, html, count=1)
    if links.get("repository"):
        repo, issues = _html.escape(links["repository"]), _html.escape(links["issues"])
        buttons = (f'<div class="cu-source-links">'
                   f'<a class="btn btn-sm cu-repository-link" href="{repo}" title="The course\'s source repository">'
                   f'<i class="fas fa-code-branch"></i><span class="cu-link-text">Repository</span></a>'
                   f'<a class="btn btn-sm cu-issues-link" href="{issues}" title="Report an error in the book">'
                   f'<i class="fas fa-bug"></i><span class="cu-link-text">Report an error</span></a></div>')
        html = HEADER_BUTTONS.sub(lambda m: buttons + m.group(0), html, count=1)
    return html


PDF_SLOT = '<div class="cu-book-pdf"></div>'


def pdf_links(html: str, page: PurePosixPath, outdir: Path) -> str:
    """Link the whole-book PDF (written by ``make pdf``) from the download menu and the landing
    page's slot for it, when the site holds one; nothing otherwise (never a dead link)."""
    if not (outdir / BOOK_PDF).exists() or "cu-book-pdf-item" in html:
        return html
    root = PurePosixPath(*([".."] * (len(page.parts) - 1))) if len(page.parts) > 1 else PurePosixPath(".")
    href = str(root / BOOK_PDF)
    size = (outdir / BOOK_PDF).stat().st_size / 2**20
    item = _menu_item(href, "Whole book (.pdf)", "The whole book as one PDF", "fas fa-file-pdf")
    item = item.replace("<li>", '<li class="cu-book-pdf-item">', 1)
    html = DOWNLOAD_MENU.sub(lambda m: m.group(1) + m.group(2) + item + m.group(3), html, count=1)
    return html.replace(PDF_SLOT, f'<p class="cu-book-pdf">The whole book is also one PDF: '
                                  f'<a class="cu-book-pdf-item" href="{href}" download>book.pdf</a> '
                                  f"({size:.1f} MiB).</p>")


MINUTES_SLOT = re.compile(r'<span class="cu-minutes" data-chapter="(\d+)"></span>')


def exercise_minutes(html: str, root: Path) -> str:
    """Fill the landing page's exercise column: exercises and the sum of the minutes their
    headings state (scripts/exercise_headings.py), per chapter, as the book is built."""
    if "cu-minutes" not in html:
        return html
    sys.path.insert(0, str(root / "scripts"))
    from exercise_headings import chapter_minutes

    counts = chapter_minutes(root / "chapters")

    def one(match: re.Match[str]) -> str:
        count, minutes = counts.get(match.group(1), (0, 0))
        text = f"{count}&nbsp;exercises" + (f", {minutes}&nbsp;min" if minutes else "")
        return f'<span class="cu-minutes" data-chapter="{match.group(1)}">{text}</span>'

    return MINUTES_SLOT.sub(one, html)


def solved_download(nb: dict) -> dict:
    """The solved notebook as the book offers it: each solution cell's output (what its checker
    printed about the reference answer) cleared, the cell collapsed in Jupyter until opened."""
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code" and "solution" in cell.get("metadata", {}).get("tags", []):
            cell["outputs"], cell["execution_count"] = [], None
            cell["metadata"].setdefault("jupyter", {}).update({"source_hidden": True, "outputs_hidden": True})
    return nb


def write_downloads(root: Path, outdir: Path) -> None:
    """Student copies (``make student``'s) and solved notebooks without solution outputs."""
    from course_utils.student import make_student_copy

    for source in sorted(outdir.glob("_sources/chapters/*.ipynb")):
        original = root / "chapters" / source.name
        if not original.exists():
            continue
        make_student_copy(original, outdir / STUDENT_DIR / source.name)
        nb = solved_download(json.loads(original.read_text(encoding="utf-8")))
        source.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


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
    root = Path(app.confdir)
    write_downloads(root, outdir)
    notes = figure_notes(root)
    links = repository_links(root)
    pages = [path for path in sorted(outdir.rglob("*.html"))
             if PurePosixPath(path.relative_to(outdir).as_posix()).parts[0] not in ("_static", "_sources", "_images")]
    for path in pages:
        page = PurePosixPath(path.relative_to(outdir).as_posix())
        text = path.read_text(encoding="utf-8")
        new = postprocess_page(text, page, outdir, notes, links, root)
        if new != text:
            path.write_text(new, encoding="utf-8")
    # the icon subset is made after the pages got their last icons
    solid_subset = _subset_fontawesome(outdir)
    for path in pages:
        text = path.read_text(encoding="utf-8")
        new = text
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


def web_url(remote: str) -> str:
    """The web address of a git remote URL ('' for a local path or anything not on a web host).

    ``git@github.com:owner/repo.git`` and ``ssh://git@host/owner/repo`` become
    ``https://host/owner/repo``; credentials in an https URL are dropped.
    """
    remote = remote.strip()
    scp = re.fullmatch(r"[\w.-]+@([\w.-]+):/?([\w./~-]+?)(?:\.git)?/?", remote)
    if scp:
        host, path = scp.groups()
    else:
        url = re.fullmatch(r"(?:https?|ssh|git)://(?:[^@/]+@)?([\w.-]+)(?::\d+)?/([\w./~-]+?)(?:\.git)?/?", remote)
        if not url:
            return ""
        host, path = url.groups()
    if "." not in host or path.count("/") < 1:
        return ""
    return f"https://{host}/{path}"


def _git_remote(root: Path) -> str:
    """The URL of the git remote of the clone at ``root`` (``origin`` first), '' without one."""
    try:
        names = subprocess.run(["git", "remote"], cwd=root, capture_output=True, text=True, timeout=10,
                               check=True).stdout.split()
        if not names:
            return ""
        name = "origin" if "origin" in names else names[0]
        return subprocess.run(["git", "remote", "get-url", name], cwd=root, capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def repository_links(root: Path) -> dict[str, str]:
    """The header's repository and report-an-error links: from ``_config.yml``'s
    ``repository.url`` when set, else from the web URL of the clone's git remote; none without."""
    url = _repository_url(root) or web_url(_git_remote(root))
    url = url.rstrip("/").removesuffix(".git")
    if not re.match(r"https?://[\w.-]+\.[\w.-]+/", url + "/"):
        return {}
    return {"repository": url, "issues": f"{url}/issues"}


def _configure(app: Sphinx, config: Any) -> None:
    root = Path(app.confdir)
    options = dict(config.html_theme_options or {})
    # the repository and report-an-error links are the course's own (header_links): the theme's
    # buttons stay off (they know three hosts only)
    for button in ("use_repository_button", "use_issues_button", "use_edit_page_button"):
        options[button] = False
    options.pop("repository_url", None)
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
