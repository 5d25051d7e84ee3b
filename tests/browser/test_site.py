"""The built book in a real headless browser: every page in the table of contents loads with
no console error, no failed request and no request outside the site; every image has loaded;
interactive figures change when their controls move; solutions and quiz answers stay hidden
until clicked."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def toc_pages() -> list[str]:
    """Every document in _toc.yml, as a path relative to the site root, e.g. 'chapters/01_attention.html'."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    pages = [toc["root"]]

    def walk(entries: list[dict]) -> None:
        for entry in entries:
            if "file" in entry:
                pages.append(entry["file"])
            walk(entry.get("sections", []))

    for part in toc.get("parts", []):
        walk(part.get("chapters", []))
    walk(toc.get("chapters", []))
    return [f"{p}.html" for p in pages]


PAGES = toc_pages()


def open_page(browser, url: str):
    """Open ``url`` in a fresh page and record console errors, page errors and every request."""
    page = browser.new_page()
    log = {"console": [], "requests": [], "failed": []}
    page.on("console", lambda m: log["console"].append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: log["console"].append(str(e)))
    page.on("request", lambda r: log["requests"].append(r.url))
    page.on("requestfailed", lambda r: log["failed"].append(f"{r.url} ({r.failure})"))
    page.on("response", lambda r: log["failed"].append(f"{r.url} ({r.status})") if r.status >= 400 else None)
    response = page.goto(url, wait_until="load")
    assert response is not None and response.ok, f"{url} answered {response and response.status}"
    page.wait_for_load_state("networkidle")
    return page, log


@pytest.mark.parametrize("path", PAGES)
def test_page_loads_offline_and_cleanly(browser, site_url: str, path: str) -> None:
    page, log = open_page(browser, f"{site_url}/{path}")
    try:
        outside = [u for u in log["requests"] if not u.startswith((site_url, "data:", "blob:", "about:"))]
        assert outside == [], f"requests leaving the site from {path}: {outside}"
        assert log["failed"] == [], f"failed requests on {path}: {log['failed']}"
        assert log["console"] == [], f"console errors on {path}: {log['console']}"
        broken = page.evaluate(
            "Array.from(document.images).filter(i => !i.complete || i.naturalWidth === 0)"
            ".map(i => i.getAttribute('src').slice(0, 80))"
        )
        assert broken == [], f"images that did not load on {path}: {broken}"
        if page.locator("div.math, span.math").count():
            # MathJax, served from the site itself, has typeset the page
            page.wait_for_function("document.querySelectorAll('mjx-container').length > 0", timeout=15_000)
        if path.startswith("chapters/") and page.locator(".tag_solution").count():
            check_solutions_hidden(page)
        if page.locator(".cu-quiz").count():
            check_quiz(page)
        for i in range(page.locator(".cu-explorer").count()):
            check_explorer(page, page.locator(".cu-explorer").nth(i))
    finally:
        page.close()


def check_solutions_hidden(page) -> None:
    """Each solution cell's code is hidden until its toggle is clicked."""
    cells = page.locator(".tag_solution")
    for i in range(cells.count()):
        cell = cells.nth(i)
        code = cell.locator(".cell_input")
        assert not code.is_visible(), f"solution {i} is visible before a click"
        cell.locator("summary").first.click()
        code.wait_for(state="visible", timeout=5_000)


def check_quiz(page) -> None:
    """A quiz answer is hidden until 'Show the answer' is clicked."""
    answer = page.locator(".cu-quiz details.cu-quiz-answer").first
    body = answer.locator("p")
    assert not body.is_visible(), "a quiz answer is visible before a click"
    answer.locator("summary").click()
    body.wait_for(state="visible", timeout=5_000)


def check_explorer(page, explorer) -> None:
    """Moving each control of an interactive figure changes the picture shown."""
    name = explorer.get_attribute("id")
    sliders = explorer.locator("input[type=range]")
    assert sliders.count() >= 1, f"{name} has no control"
    explorer.scroll_into_view_if_needed()
    for j in range(sliders.count()):
        slider = sliders.nth(j)
        before_key = explorer.get_attribute("data-shown")
        before_src = explorer.locator("img:visible").first.get_attribute("src")
        maximum = slider.get_attribute("max")
        target = maximum if slider.input_value() != maximum else "0"
        slider.fill(target)
        after_key = explorer.get_attribute("data-shown")
        visible = explorer.locator("img:visible")
        assert visible.count() == 1, f"{name}: {visible.count()} pictures visible after moving control {j}"
        assert after_key != before_key, f"{name}: control {j} did not change the frame"
        assert visible.first.get_attribute("src") != before_src, f"{name}: control {j} showed the same picture"


def notebook_features(path: Path) -> tuple[list[str], int]:
    """Explorer element ids and the number of solution cells stored in a chapter notebook."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    ids: list[str] = []
    solutions = 0
    for cell in nb["cells"]:
        if "solution" in cell.get("metadata", {}).get("tags", []):
            solutions += 1
        for out in cell.get("outputs", []):
            html = "".join(out.get("data", {}).get("text/html", ""))
            ids += re.findall(r'<div class="cu-explorer" id="([\w-]+)"', html)
    return ids, solutions


@pytest.mark.parametrize("path", [p for p in PAGES if p.startswith("chapters/")])
def test_page_shows_every_explorer_and_hidden_solution(browser, site_url: str, path: str) -> None:
    """The checks above are not vacuous: every explorer and solution of the notebook is on its page."""
    ids, solutions = notebook_features(ROOT / path.replace(".html", ".ipynb"))
    page, _ = open_page(browser, f"{site_url}/{path}")
    try:
        shown = page.evaluate("Array.from(document.querySelectorAll('.cu-explorer')).map(e => e.id)")
        assert shown == ids, f"{path}: explorers in the notebook {ids}, on the page {shown}"
        assert page.locator(".tag_solution").count() == solutions, f"{path}: solution cells missing"
        assert solutions >= 3, f"{path}: a chapter has 3-5 exercises, found {solutions} solution cells"
        assert page.locator(".cu-quiz").count() == 1, f"{path}: expected one quiz"
    finally:
        page.close()
