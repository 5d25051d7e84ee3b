"""Tests for the book's Sphinx extension (book/_ext/offline_site.py): explorer frames served as
files, zoomable lazy figures, FontAwesome cut to the icons used, repository buttons only with a
repository URL."""

from __future__ import annotations

import base64
import sys
from pathlib import Path, PurePosixPath
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import offline_site  # noqa: E402

PNG = bytes.fromhex("89504e470d0a1a0a") + b"frame-one"
PNG2 = bytes.fromhex("89504e470d0a1a0a") + b"frame-two"


def explorer_html(text_px: str = "") -> str:
    one, two = (base64.b64encode(p).decode() for p in (PNG, PNG2))
    attr = f' data-text-px="{text_px}"' if text_px else ""
    return (f'<div class="cu-explorer" id="cu-explorer-x"{attr}><label>a <input type="range"></label>'
            f'<img data-key="0" alt="first frame" width="400" style="max-width:100%;height:auto" '
            f'src="data:image/png;base64,{one}">'
            f'<img data-key="1" alt="second frame" width="400" style="display:none;max-width:100%;height:auto" '
            f'src="data:image/png;base64,{two}"><script>/* show() */</script></div>')


def test_frames_become_files_loaded_lazily_or_on_demand(tmp_path: Path) -> None:
    html = offline_site.externalise_frames(explorer_html(), PurePosixPath("chapters/01.html"), tmp_path)
    assert "data:image/png" not in html
    files = sorted((tmp_path / "_images" / "explorers").iterdir())
    assert sorted(f.read_bytes() for f in files) == sorted([PNG, PNG2])
    first, second = html.split("<img")[1:3]
    assert 'src="../_images/explorers/' in first and 'loading="lazy"' in first and "data-src" not in first
    assert 'data-src="../_images/explorers/' in second and " src=" not in second
    assert '<div class="cu-frames"><img' in html
    assert "min-width:300px" in first  # 3/4 of 400 px: its 9 pt text stays above 9 CSS px


def test_frames_with_small_text_keep_a_larger_minimum(tmp_path: Path) -> None:
    html = offline_site.externalise_frames(explorer_html("11.1"), PurePosixPath("a.html"), tmp_path)
    assert "min-width:324px" in html  # 9 / 11.1 of 400 px
    assert 'src="_images/explorers/' in html


def test_static_figures_link_to_their_file_and_load_lazily() -> None:
    page = '<figure class="align-default"><img alt="a plot" src="../_images/abc.png" style="width: 680px;"/></figure>'
    out = offline_site.zoomable_figures(page)
    assert '<a class="cu-zoom" href="../_images/abc.png"' in out and 'loading="lazy"' in out
    linked = ('<figure><a class="reference internal image-reference" href="../_images/abc.png">'
              '<img alt="a plot" src="../_images/abc.png"/></a></figure>')
    assert "cu-zoom" not in offline_site.zoomable_figures(linked)


def test_icon_css_keeps_only_used_icons() -> None:
    css = ('.fa{x:1}.fa-bars:before,.fa-navicon:before{content:"\\f0c9"}'
           '.fa-anchor:before{content:"\\f13d"}.fa-sun:before{content:"\\f185"}')
    out = offline_site.subset_icon_css(css, {"fa-bars", "fa-sun"})
    assert ".fa{x:1}" in out and "fa-bars" in out and "fa-sun" in out and "fa-anchor" not in out


def test_fontawesome_script_and_unused_font_preloads_are_dropped() -> None:
    page = ('<link rel="preload" as="font" type="font/woff2" crossorigin '
            'href="_static/vendor/fontawesome/6.5.2/webfonts/fa-brands-400.woff2" />'
            '<link rel="preload" as="font" type="font/woff2" crossorigin '
            'href="_static/vendor/fontawesome/6.5.2/webfonts/fa-solid-900.woff2" />'
            '<script src="_static/vendor/fontawesome/6.5.2/js/all.min.js?digest=1"></script>'
            '<i class="fa-solid fa-bars"></i>')
    out = offline_site.postprocess_page(page, PurePosixPath("index.html"), Path("/nonexistent"))
    assert "all.min.js" not in out and "fa-brands-400" not in out and "fa-solid-900" in out


@pytest.mark.parametrize(("url", "links"), [
    ("", {}),
    ("https://example.org/course", {"repository": "https://example.org/course",
                                    "issues": "https://example.org/course/issues"})])
def test_repository_links_only_with_a_repository(tmp_path: Path, url: str, links: dict) -> None:
    """The links come from _config.yml here (no git remote in tmp_path); the theme's own buttons stay off."""
    (tmp_path / "_config.yml").write_text(f'repository:\n  url: "{url}"\n')
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "1.2.3"\n')
    config = SimpleNamespace(html_theme_options={"use_download_button": True, "repository_url": url})
    offline_site._configure(SimpleNamespace(confdir=str(tmp_path)), config)
    options = config.html_theme_options
    assert options["use_repository_button"] is False and options["use_issues_button"] is False
    assert "repository_url" not in options
    assert "Version 1.2.3" in options["extra_footer"]
    assert offline_site.repository_links(tmp_path) == links
    page = '<div class="article-header-buttons">x</div>'
    out = offline_site.header_links(page, PurePosixPath("index.html"), tmp_path, links)
    assert ("cu-repository-link" in out) is bool(links) and ("cu-issues-link" in out) is bool(links)


@pytest.mark.parametrize(("text", "prose"), [
    ("✓ Exercise 12.3 (shuffled patches): all checks passed. " + "The test accuracy of the model " * 4, True),
    ("short line\nanother", False),
    ("model                     layers   params\n" + "a" * 20 + "     2   1,000" + " " * 60 + "x\n"
     "b                          3   2,000\n", False),
    ("┌──┐\n" + "x" * 90, False),
])
def test_prose_outputs_wrap_tables_keep_their_lines(text: str, prose: bool) -> None:
    assert offline_site.is_prose_output(text) is prose
    html = (f'<div class="output stream highlight-myst-ansi notranslate"><div class="highlight"><pre>'
            f"{text}</pre></div></div>")
    assert ("cu-prose" in offline_site.wrap_prose_outputs(html)) is prose


def test_solved_download_hides_solution_outputs() -> None:
    nb = {"cells": [{"cell_type": "code", "metadata": {"tags": ["solution", "hide-input"]},
                     "outputs": [{"output_type": "stream", "text": "✓ matches"}], "execution_count": 3, "source": ""},
                    {"cell_type": "code", "metadata": {}, "outputs": [{"output_type": "stream", "text": "kept"}],
                     "execution_count": 4, "source": ""}]}
    out = offline_site.solved_download(nb)
    assert out["cells"][0]["outputs"] == [] and out["cells"][0]["metadata"]["jupyter"]["outputs_hidden"] is True
    assert out["cells"][1]["outputs"] == [{"output_type": "stream", "text": "kept"}]


def test_static_figures_get_their_text_size_and_phone_version(tmp_path: Path) -> None:
    import hashlib

    wide, phone = PNG, PNG + b"phone"
    (tmp_path / "_images").mkdir()
    (tmp_path / "_images" / "fig.png").write_bytes(wide)
    notes = {hashlib.sha256(wide).hexdigest(): {"text_px": 11.1, "width": 660, "height": 300, "phone": {
        "png": base64.b64encode(phone).decode(), "width": 390, "height": 500, "text_px": 12.5}}}
    page = '<figure class="align-default"><img alt="x" src="../_images/fig.png" /></figure>'
    out = offline_site.phone_figures(page, PurePosixPath("chapters/a.html"), tmp_path, notes)
    assert 'data-text-px="11.1"' in out and 'data-design-width="660"' in out and 'data-phone-text-px="12.5"' in out
    assert '<source media="(max-width: 720px)" srcset="../_images/phone/' in out
    assert len(list((tmp_path / "_images" / "phone").glob("*.png"))) == 1
