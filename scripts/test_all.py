"""Every check of the course, two at a time on a 2-core machine; then a summary and timing tables.

Called by `make test` (through scripts/test_all.sh). Each step is one command whose output goes
to reports/<step>.log. Independent steps run side by side (at most ``--jobs`` heavy ones, default:
the number of CPU cores, capped at 2, plus one light step that mostly waits on a headless
browser); a step waits for the steps it needs (the browser check needs the book). The build starts
first, so the browser check overlaps the notebooks; then the multi-threaded nbval pass 1, one part
after the other, while the single-threaded steps run beside it at a lower priority (nice), longest
first. Every step runs even if another failed. At the end the log of every step is printed
(in full for a failed step, its last lines otherwise), then the summary, a table of wall and CPU
seconds per step and a table of seconds per notebook in each nbval pass.

Nothing is weaker than running the steps one after the other: both nbval passes cover every
notebook (each split in PARTS groups of about equal time), pass 1 keeps this machine's numerics
and thread count, pass 2 forces PyTorch's portable kernels and one thread.

Usage: python scripts/test_all.py [--jobs N] [--only ruff,mypy,fresh,unit]

``tests/test_test_all.py`` tests the plan (every step, both passes cover every notebook), the
split of the notebooks and the scheduler's rules on stand-in steps.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPORTS = ROOT / "reports"
BIN = ROOT / ".venv" / "bin"
TIMES = ROOT / ".test_times.json"  # last run's seconds per notebook: balances the nbval parts
# nbval parts per pass: small enough that the two cores end close together, few enough that starting
# them costs little (four parts for pass 2 ended later: its last part ran alone)
PARTS = 3
DEFAULT_TIMES = ROOT / "scripts" / "notebook_seconds.json"  # the same, committed, for a fresh clone
NOTEBOOKS = ["book/intro.ipynb", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "chapters").glob("*.ipynb"))]
SANITIZE = "tests/nbval_sanitize.cfg"
PORTABLE = {"ATEN_CPU_CAPABILITY": "default", "OMP_NUM_THREADS": "1"}
# Two steps side by side on two cores: PyTorch's OpenMP threads must sleep, not spin, while they
# wait, or two multi-threaded kernels fight for the cores (chapter 6 took 260 s instead of 40 s).
# The wait policy changes no result: the thread count, and so the numerics, stay this machine's.
SIDE_BY_SIDE = {"OMP_WAIT_POLICY": "PASSIVE"}
# A multi-threaded step (nbval pass 1) beside a single-threaded one puts three threads on two cores,
# and each of its kernels waits for its slowest thread: pass 1 ran at about half speed. The
# single-threaded heavy steps therefore run at a lower priority: they take the cycles the
# multi-threaded step leaves (between its kernels, while it starts a notebook), and only those.
NICE = 10


@dataclass
class Step:
    """One command of the test suite, the steps it waits for and what it measured."""

    key: str
    title: str
    command: list[str]
    env: dict[str, str] = field(default_factory=dict)
    needs: tuple[str, ...] = ()
    weight: float = 1.0  # expected seconds: the longest chain of steps starts first
    light: bool = False  # mostly waits (on a browser): runs beside the heavy steps, one at a time
    threaded: bool = False  # PyTorch with more than one thread: two such steps never run at once
    yields: bool = False  # runs at a lower priority (nice): a multi-threaded step beside it gets both cores
    junit: str | None = None
    code: int | None = None
    wall: float = 0.0
    cpu: float = 0.0

    @property
    def log(self) -> Path:
        return REPORTS / f"{self.key}.log"


def split(notebooks: list[str], parts: int = PARTS) -> list[tuple[list[str], float]]:
    """Split the notebooks in ``parts`` groups of about equal time (last run's times, else the committed
    ones), longest first to the lightest group; each group with its expected seconds."""
    seconds: dict[str, float] = {}
    for path in (DEFAULT_TIMES, TIMES):  # this machine's last run, where there is one, overrides the default
        try:
            seconds.update(json.loads(path.read_text()))
        except (OSError, ValueError):
            pass
    cost = {nb: float(seconds[nb] if nb in seconds else (ROOT / nb).stat().st_size / 20_000) for nb in notebooks}
    groups: list[list[str]] = [[] for _ in range(parts)]
    load = [0.0] * parts
    for nb in sorted(notebooks, key=cost.__getitem__, reverse=True):
        i = load.index(min(load))
        groups[i].append(nb)
        load[i] += cost[nb]
    return [(sorted(g), t) for g, t in zip(groups, load, strict=True) if g]


def pytest(*args: str) -> list[str]:
    return [str(BIN / "pytest"), "-p", "no:cacheprovider", *args]


def plan() -> list[Step]:
    """The steps of `make test`, with what each needs."""
    groups = split(NOTEBOOKS)
    steps = [
        Step("ruff", "ruff (code and notebooks)", [str(BIN / "ruff"), "check", "."], weight=2),
        Step("fresh", "shipped results match the code's recipes",
             [str(BIN / "python"), "-m", "course_utils.runs", "check"], weight=5),
        # the type hints of the package, checked (config in pyproject.toml; about 25 CPU s, one thread)
        Step("mypy", "mypy (type check of course_utils)", [str(BIN / "python"), "-m", "mypy"], weight=30, yields=True),
        Step("unit", "unit tests", pytest("tests", "--ignore=tests/browser", "--ignore=tests/lab", "-q",
                                          "--junitxml=reports/unit.xml"),
             # the longest single step (about 70 CPU s, more than any nbval part): the first single-threaded
             # one to start, so that no core is left alone with it at the end
             env={"OMP_NUM_THREADS": "1"}, weight=1000, junit="unit", yields=True),
    ]
    for n, (label, env) in enumerate((("this machine's numerics", {}), ("ATEN_CPU_CAPABILITY=default "
                                                                         "OMP_NUM_THREADS=1", PORTABLE)), 1):
        for part, (group, seconds) in zip("abcdefgh", groups, strict=False):
            key = f"nbval{n}{part}"
            steps.append(Step(
                key, f"nbval, pass {n} ({label}), part {part}",
                pytest("--nbval", *group, "--nbval-sanitize-with", SANITIZE, "-q", f"--junitxml=reports/{key}.xml"),
                env=env, weight=seconds, junit=key, threaded=not env, yields=bool(env),
            ))
    steps += [
        Step("build", "strict book build (-W --keep-going)",
             ["bash", "-c", f"rm -rf _build/html _build/.doctrees && {BIN}/jupyter-book build . -W --keep-going"],
             weight=25),
        Step("chromium", "Chromium present (apt-get install chromium if missing)",
             ["bash", "scripts/ensure_chromium.sh"], weight=1, light=True),
        Step("browser", "browser check (headless Chromium)",
             pytest("tests/browser", "-q", "--junitxml=reports/browser.xml"),
             needs=("build", "chromium"), weight=90, junit="browser", light=True),
        Step("lab", "JupyterLab check (live controls, a student copy; headless Chromium)",
             pytest("tests/lab", "-q", "--junitxml=reports/lab.xml"), needs=("chromium",), weight=40, junit="lab",
             light=True),
    ]
    return steps


def run_step(step: Step) -> None:
    """Run one step with its output in its log; record exit code, wall and CPU seconds (children included)."""
    env = {**os.environ, **SIDE_BY_SIDE, **step.env}
    start = time.perf_counter()
    with step.log.open("w") as log:
        log.write(f"$ {' '.join(step.command)}\n")
        log.flush()
        proc = subprocess.Popen(step.command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                preexec_fn=(lambda: os.nice(NICE)) if step.yields else None)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    step.wall = time.perf_counter() - start
    step.cpu = usage.ru_utime + usage.ru_stime
    step.code = proc.returncode


def chain_seconds(steps: list[Step]) -> dict[str, float]:
    """Each step's weight plus the longest chain of steps that wait for it (the critical path from it)."""
    chain: dict[str, float] = {}

    def length(step: Step) -> float:
        if step.key not in chain:
            after = [length(s) for s in steps if step.key in s.needs]
            chain[step.key] = step.weight + max(after, default=0.0)
        return chain[step.key]

    for step in steps:
        length(step)
    return chain


def schedule(steps: list[Step], jobs: int) -> None:
    """Run the steps: at most ``jobs`` heavy ones at a time (never two multi-threaded ones), plus one
    light one (it mostly waits on a browser); steps that light ones wait for start first, then the
    step heading the longest chain; a step starts when its needs ended."""
    chain = chain_seconds(steps)
    # a heavy step that a light one waits for (the build, for the browser check) goes first: the light
    # step then runs beside all the others instead of after them
    gates = {n for s in steps if s.light for n in s.needs}
    # then the multi-threaded steps, one after the other from the start: the single-threaded ones
    # (at a lower priority) fill the cycles they leave, and at the end two of them share the cores
    pending = sorted(steps, key=lambda s: (s.key not in gates, not s.threaded, -chain[s.key]))
    running: dict[str, threading.Thread] = {}
    done: set[str] = set()
    t0 = time.perf_counter()
    while pending or running:
        for key, thread in list(running.items()):
            if not thread.is_alive():
                thread.join()
                step = next(s for s in steps if s.key == key)
                verdict = "ok" if step.code == 0 else f"FAILED (exit {step.code})"
                print(f"[{time.perf_counter() - t0:6.0f} s] done     {step.title}: {verdict}", flush=True)
                done.add(key)
                del running[key]
        for step in list(pending):
            busy = [s for s in steps if s.key in running and s.light == step.light]
            if len(busy) >= (1 if step.light else jobs) or not all(n in done for n in step.needs):
                continue
            if step.threaded and any(s.threaded for s in busy):
                continue  # two multi-threaded steps would put four threads on two cores
            if step.light and any(s.light and chain[s.key] > chain[step.key] for s in pending if s is not step):
                continue  # the light slot keeps its order: the browser check first, once the book is built
            pending.remove(step)
            print(f"[{time.perf_counter() - t0:6.0f} s] started  {step.title}", flush=True)
            running[step.key] = threading.Thread(target=run_step, args=(step,))
            running[step.key].start()
        time.sleep(0.2)


def notebook_seconds(keys: list[str]) -> dict[str, float]:
    """Seconds per notebook summed over the cells of the given nbval reports."""
    out: dict[str, float] = {}
    for key in keys:
        path = REPORTS / f"{key}.xml"
        if not path.exists():
            continue
        for case in ET.parse(path).getroot().iter("testcase"):
            name = case.get("classname", "").replace(".", "/")
            nb = next((n for n in NOTEBOOKS if name.startswith(n.removesuffix(".ipynb"))), None)
            if nb:
                out[nb] = out.get(nb, 0.0) + float(case.get("time", 0))
    return out


def show_logs(steps: list[Step]) -> None:
    for step in steps:
        print(f"\n=== {step.title} ===")
        lines = step.log.read_text(errors="replace").splitlines() if step.log.exists() else ["(no log)"]
        shown = lines if step.code != 0 else lines[-6:]
        if step.code == 0 and len(lines) > 6:
            print(f"... ({len(lines) - 6} lines in {step.log.relative_to(ROOT)})")
        print("\n".join(shown))


def timing_tables(steps: list[Step], total: float) -> None:
    print("\n================ where the time went ================")
    print(f"{'step':<46} {'wall s':>7} {'CPU s':>7}")
    for step in steps:
        print(f"{step.title[:46]:<46} {step.wall:7.1f} {step.cpu:7.1f}")
    print(f"{'make test (steps side by side)':<46} {total:7.1f} {sum(s.cpu for s in steps):7.1f}")
    keys = [s.key for s in steps]
    pass1 = notebook_seconds([k for k in keys if k.startswith("nbval1")])
    pass2 = notebook_seconds([k for k in keys if k.startswith("nbval2")])
    if not (pass1 or pass2):
        return
    print(f"\n{'notebook (seconds to run its cells)':<46} {'pass 1':>7} {'pass 2':>7}")
    for nb in NOTEBOOKS:
        print(f"{nb[:46]:<46} {pass1.get(nb, 0.0):7.1f} {pass2.get(nb, 0.0):7.1f}")
    if pass1:
        TIMES.write_text(json.dumps({nb: max(pass1.get(nb, 0.0), pass2.get(nb, 0.0)) for nb in NOTEBOOKS}, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="steps run side by side")
    parser.add_argument("--only", default="", help="comma-separated step keys to run (for development; "
                        "`make test` runs every step)")
    args = parser.parse_args()
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    REPORTS.mkdir(exist_ok=True)
    for old in REPORTS.glob("*"):
        if old.suffix in {".xml", ".log"}:
            old.unlink()
    steps = plan()
    if args.only:
        keys = {s.key for s in steps}
        wanted = set(args.only.split(","))
        if not wanted <= keys:
            parser.error(f"--only takes step keys from {sorted(keys)}, got {sorted(wanted - keys)}")
        steps = [s for s in steps if s.key in wanted]
        for step in steps:
            step.needs = tuple(n for n in step.needs if n in wanted)
    start = time.perf_counter()
    schedule(steps, args.jobs)
    total = time.perf_counter() - start
    show_logs(steps)
    timing_tables(steps, total)
    failed = [s.title for s in steps if s.code != 0]
    summary = subprocess.run([str(BIN / "python"), "scripts/test_summary.py", *failed], cwd=ROOT)
    sys.exit(summary.returncode)


if __name__ == "__main__":
    main()
