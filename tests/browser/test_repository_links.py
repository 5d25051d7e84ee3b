"""The header's repository and report-an-error links, in both cases the build meets (issue 38.7):
a clone with a git remote (a placeholder address here) shows links to its web address; a clone
with neither a remote nor ``repository.url`` in ``_config.yml`` shows none, never a made-up one.

A one-page book is built with the course's Sphinx extension and theme in a temporary git
repository, and opened in the browser check's Chromium."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
from offline_site import repository_links, web_url  # noqa: E402

PLACEHOLDER = "git@example.org:course/attention-from-scratch.git"  # a placeholder remote, never fetched
CONF = f"""
import sys
sys.path.insert(0, {str(ROOT / "book" / "_ext")!r})
extensions = ["offline_site"]
project = "links"
html_theme = "sphinx_book_theme"
html_static_path = [{str(ROOT / "book" / "_static")!r}]
html_theme_options = {{"use_download_button": True}}
"""


def build(tmp: Path, remote: str | None, config_url: str | None = None) -> Path:
    """A one-page book in a fresh git repository (with ``remote`` as origin), built to HTML."""
    tmp.mkdir(parents=True)
    (tmp / "conf.py").write_text(CONF)
    (tmp / "index.rst").write_text("A page\n======\n\nText.\n")
    if config_url is not None:
        (tmp / "_config.yml").write_text(f"repository:\n  url: {config_url!r}\n")
    git = ["git", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q"], cwd=tmp, check=True)
    if remote:
        subprocess.run(["git", "remote", "add", "origin", remote], cwd=tmp, check=True)
    subprocess.run([sys.executable, "-m", "sphinx", "-q", "-b", "html", str(tmp), str(tmp / "_build")],
                   cwd=tmp, check=True, capture_output=True)
    return tmp / "_build" / "index.html"


def header_links(browser, page_file: Path) -> dict[str, list[str]]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    try:
        page.goto(page_file.as_uri(), wait_until="load")
        links = page.evaluate("""() => {
            const hrefs = sel => Array.from(document.querySelectorAll(sel)).map(a => a.href);
            return {repo: hrefs('a.cu-repository-link'), issues: hrefs('a.cu-issues-link'),
                    visible: Array.from(document.querySelectorAll('.cu-source-links a'))
                               .filter(a => a.getClientRects().length).length}; }""")
    finally:
        context.close()
    outside = [u for u in requests if not u.startswith(("file:", "data:"))]
    assert outside == [], f"requests leaving the page: {outside}"
    return links


def test_a_clone_with_a_remote_links_its_web_address(browser, tmp_path: Path) -> None:
    links = header_links(browser, build(tmp_path / "remote", PLACEHOLDER))
    assert links == {"repo": ["https://example.org/course/attention-from-scratch"],
                     "issues": ["https://example.org/course/attention-from-scratch/issues"], "visible": 2}


def test_the_config_url_wins_over_the_remote(tmp_path: Path) -> None:
    """(The same function decides the links of the real build; no second build needed here.)"""
    tmp_path.joinpath("_config.yml").write_text("repository:\n  url: 'https://example.net/group/book'\n")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "remote", "add", "origin", PLACEHOLDER], cwd=tmp_path, check=True)
    assert repository_links(tmp_path) == {"repository": "https://example.net/group/book",
                                          "issues": "https://example.net/group/book/issues"}


def test_no_remote_and_no_config_means_no_link(browser, tmp_path: Path) -> None:
    links = header_links(browser, build(tmp_path / "none", None, ""))
    assert links == {"repo": [], "issues": [], "visible": 0}


@pytest.mark.parametrize(("remote", "web"), [
    ("git@github.com:owner/repo.git", "https://github.com/owner/repo"),
    ("https://user:secret@gitlab.com/group/sub/repo.git", "https://gitlab.com/group/sub/repo"),
    ("ssh://git@example.org:2222/owner/repo", "https://example.org/owner/repo"),
    ("https://example.org/owner/repo/", "https://example.org/owner/repo"),
    ("/srv/git/course.git", ""),
    ("file:///srv/git/course.git", ""),
    ("../course", ""),
    ("", ""),
])
def test_web_url_of_a_remote(remote: str, web: str) -> None:
    assert web_url(remote) == web
