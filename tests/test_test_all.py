"""scripts/test_all.py, the scheduler of `make test`: its plan, the notebook split and its rules."""

from __future__ import annotations

import importlib.util
import sys
import threading
import time
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "test_all.py"


@pytest.fixture(scope="module")
def test_all():
    spec = importlib.util.spec_from_file_location("test_all_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def test_the_plan_keeps_every_step_and_both_passes_cover_every_notebook(test_all):
    steps = test_all.plan()
    keys = {s.key for s in steps}
    assert {"ruff", "mypy", "fresh", "unit", "build", "chromium", "browser", "lab"} <= keys
    for n in (1, 2):
        covered = [nb for s in steps if s.key.startswith(f"nbval{n}") for nb in s.command if nb.endswith(".ipynb")]
        assert sorted(covered) == sorted(test_all.NOTEBOOKS), n  # each notebook once per pass
    assert all(n in keys for s in steps for n in s.needs)


def test_split_balances_the_groups(test_all, monkeypatch, tmp_path):
    times = {f"nb{i}.ipynb": float(t) for i, t in enumerate([50, 40, 30, 20, 10, 10])}
    monkeypatch.setattr(test_all, "DEFAULT_TIMES", tmp_path / "none.json")
    (tmp_path / "times.json").write_text(__import__("json").dumps(times))
    monkeypatch.setattr(test_all, "TIMES", tmp_path / "times.json")
    groups = test_all.split(list(times), 3)
    assert sorted(nb for g, _ in groups for nb in g) == sorted(times)
    assert sorted(t for _, t in groups) == [50.0, 50.0, 60.0]  # longest first to the lightest group


def test_schedule_respects_needs_slots_and_threads(test_all, monkeypatch):
    Step = test_all.Step
    steps = [Step("build", "build", [], weight=5), Step("browser", "browser", [], needs=("build",), light=True),
             Step("p1", "pass 1", [], threaded=True, weight=20), Step("p2", "pass 1b", [], threaded=True, weight=10),
             Step("unit", "unit", [], weight=30), Step("lab", "lab", [], light=True, weight=1)]
    log, lock, running = [], threading.Lock(), set()

    def fake_run(step):
        with lock:
            log.append(("start", step.key, frozenset(running)))
            running.add(step.key)
        time.sleep(0.05)
        with lock:
            running.discard(step.key)
            log.append(("end", step.key, frozenset(running)))
        step.code = 0

    monkeypatch.setattr(test_all, "run_step", fake_run)
    test_all.schedule(steps, jobs=2)
    started = [k for e, k, _ in log if e == "start"]
    assert sorted(started) == sorted(s.key for s in steps)  # every step ran once
    assert started[0] == "build"  # what a light step waits for goes first
    ended_before = {k: {kk for e, kk, _ in log[:i] if e == "end"} for i, (e, k, _) in enumerate(log) if e == "start"}
    assert "build" in ended_before["browser"]  # needs are respected
    light = {s.key for s in steps if s.light}
    for e, key, others in log:
        if e == "start":
            assert not ({"p1", "p2"} <= (others | {key}))  # never two multi-threaded steps at once
            assert len((others | {key}) - light) <= 2 and len((others | {key}) & light) <= 1  # the slots
