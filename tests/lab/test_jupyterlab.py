"""The notebooks in a real JupyterLab (the pinned one), driven by headless Chromium.

The test starts JupyterLab itself on a free localhost port with a random token (passed in the
environment, never printed: the server's log goes to a file that is shown, token masked, only
if the test fails), opens a copy of Chapter 7, runs its live-control cell, types a new input
into the live text box and checks that the picture changes (and that a bad input shows a
message instead); then opens a student copy of Chapter 1, runs an exercise cell that still
holds the stub and reads the checker's "not implemented yet" line.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from course_utils.student import make_student_copy

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
LIVE_CHAPTER = ROOT / "chapters" / "07_attention_heatmaps.ipynb"
LIVE_CALL = "cross_attention_explorer("
STUDENT_CHAPTER = ROOT / "chapters" / "01_attention.ipynb"
SETTINGS = {  # user settings: every cell in the page (no windowing), no news or update checks
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false",
                                                                        "checkForUpdates": False},
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _with_kernelspec(path: Path) -> None:
    """Name the kernel in the copy's metadata, so JupyterLab starts it without asking."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    nb["metadata"]["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path.write_text(json.dumps(nb), encoding="utf-8")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """JupyterLab on a free port over a folder with a chapter copy and a student copy; yields (url, token)."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: run scripts/ensure_chromium.sh (apt-get install chromium)")
    tmp = tmp_path_factory.mktemp("lab")
    work = tmp / "work"
    (work / "student").mkdir(parents=True)
    chapter = work / LIVE_CHAPTER.name
    chapter.write_bytes(LIVE_CHAPTER.read_bytes())
    _with_kernelspec(chapter)
    make_student_copy(STUDENT_CHAPTER, work / "student" / STUDENT_CHAPTER.name)  # exactly as `make lab` makes it
    for name, value in SETTINGS.items():
        target = tmp / "settings" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(value), encoding="utf-8")
    token, port = secrets.token_hex(24), _free_port()
    env = {**os.environ, "JUPYTER_TOKEN": token, "JUPYTER_CONFIG_DIR": str(tmp / "config"),
           "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
           "COURSE_EXPLORERS": "live"}  # as `make lab` starts it: live views only, no book frames
    log_path = tmp / "server.log"
    with open(log_path, "wb") as log:
        server = subprocess.Popen(
            [str(BIN / "jupyter"), "lab", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
             "--ServerApp.port_retries=0", f"--ServerApp.root_dir={work}", "--LabApp.expose_app_in_browser=True",
             f"--LabApp.user_settings_dir={tmp / 'settings'}", f"--LabApp.workspaces_dir={tmp / 'workspaces'}",
             "--LabApp.news_url=", "--LabApp.extension_manager=readonly", "--ServerApp.terminals_enabled=False",
             "--allow-root"],
            env=env, stdout=log, stderr=subprocess.STDOUT, cwd=work,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail("JupyterLab did not start:\n" + log_path.read_text(errors="replace").replace(token, "***"))
            time.sleep(0.3)
        yield url, token
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
        if server.returncode not in (0, -15, None):
            print(log_path.read_text(errors="replace").replace(token, "***")[-3000:])


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


# The notebook panel open on a path, in the page's JupyterLab (exposed by expose_app_in_browser).
PANEL = """(path) => {
    if (!window.jupyterapp) { return null; }
    for (const w of window.jupyterapp.shell.widgets('main')) {
        if (w.context && w.context.path === path) { return w; }
    }
    return null;
}"""


def open_notebook(browser, lab: tuple[str, str], path: str):
    """Open ``path`` in a fresh JupyterLab workspace; return the page and the requests it made to other hosts."""
    url, token = lab
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    outside: list[str] = []
    page.on("request", lambda r: outside.append(r.url) if not r.url.startswith((url, "data:", "blob:", "ws://127.0.0.1"))
            else None)
    page.goto(f"{url}/lab/tree/{path}?reset&token={token}", wait_until="domcontentloaded")
    page.wait_for_function(f"(path) => {{ const w = ({PANEL})(path); return w && w.context.isReady"
                           " && w.sessionContext.session && w.sessionContext.session.kernel; }",
                           arg=path, timeout=60_000)
    page.evaluate(f"(path) => window.jupyterapp.shell.activateById(({PANEL})(path).id)", path)
    return page, outside


def run_cell(page, path: str, contains: str) -> int:
    """Select the first code cell of ``path`` whose source contains ``contains`` and run it (Run Selected Cell)."""
    index = page.evaluate(
        f"""([path, needle]) => {{
            const panel = ({PANEL})(path);
            window.jupyterapp.shell.activateById(panel.id);
            const nb = panel.content;
            for (let i = 0; i < nb.model.cells.length; i++) {{
                const cell = nb.model.cells.get(i);
                if (cell.type === 'code' && cell.sharedModel.getSource().includes(needle)) {{
                    nb.activeCellIndex = i;
                    nb.mode = 'command';
                    return i;
                }}
            }}
            return -1;
        }}""",
        [path, contains],
    )
    assert index >= 0, f"no code cell contains {contains!r}"
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-cell')")
    return index


def cell(page, index: int):
    """Cell ``index`` of the notebook in the current tab."""
    return page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell").nth(index)


def test_live_control_recomputes_in_jupyterlab(browser, lab) -> None:
    page, outside = open_notebook(browser, lab, LIVE_CHAPTER.name)
    try:
        index = run_cell(page, LIVE_CHAPTER.name, LIVE_CALL)
        live = cell(page, index).locator(".cu-live")
        figure = live.locator("img.cu-live-figure")
        figure.wait_for(state="visible", timeout=60_000)
        page.wait_for_function("(el) => el.naturalWidth > 0", arg=figure.element_handle(), timeout=30_000)
        before = figure.get_attribute("src")
        box = live.locator(".cu-live-control input[type=text]")
        assert box.input_value() == "reversal"
        box.fill("hello")
        box.press("Enter")
        page.wait_for_function("([el, old]) => el.getAttribute('src') !== old && el.naturalWidth > 0",
                               arg=[figure.element_handle(), before], timeout=30_000)
        status = live.locator(".cu-live-status")
        assert status.inner_text().strip() == ""
        box.fill("Hello!")
        box.press("Enter")
        status.get_by_text("not in the vocabulary").wait_for(timeout=30_000)
        assert outside == [], f"requests outside the local JupyterLab: {outside}"
    finally:
        page.close()


def test_student_copy_stub_says_not_implemented(browser, lab) -> None:
    path = f"student/{STUDENT_CHAPTER.name}"
    page, outside = open_notebook(browser, lab, path)
    try:
        run_cell(page, path, "import torch")  # the chapter's imports
        run_cell(page, path, "from course_utils.exercises.ch01_attention import")
        index = run_cell(page, path, "raise NotImplementedError")
        output = cell(page, index).locator(".jp-OutputArea-output")
        output.get_by_text("not implemented yet").wait_for(timeout=60_000)
        assert "Exercise 1.1" in output.inner_text()
        assert outside == [], f"requests outside the local JupyterLab: {outside}"
    finally:
        page.close()
