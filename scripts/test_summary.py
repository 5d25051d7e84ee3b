"""Print the summary of `make test` from the JUnit reports and the build log; exit 1 if anything failed.

Usage: python scripts/test_summary.py [names of failed steps...]
"""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

REPORTS = Path("reports")


def junit_counts(*names: str) -> tuple[int, int, int]:
    """(passed, failed, skipped) summed over reports/<name>.xml, zeros for a missing report."""
    total = failed = skipped = 0
    for name in names:
        path = REPORTS / f"{name}.xml"
        if not path.exists():
            continue
        root = ET.parse(path).getroot()
        suites = [root] if root.tag == "testsuite" else list(root)
        total += sum(int(s.get("tests", 0)) for s in suites)
        failed += sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
        skipped += sum(int(s.get("skipped", 0)) for s in suites)
    return total - failed - skipped, failed, skipped


def nbval_keys(n: int) -> list[str]:
    """The report names of nbval pass ``n``: one per part (nbval1a, nbval1b, ...)."""
    return sorted(p.stem for p in REPORTS.glob(f"nbval{n}*.xml"))


def build_warnings() -> str:
    """Number of warnings in the book build log, or 'not built'."""
    log = REPORTS / "build.log"
    if not log.exists():
        return "not built"
    text = log.read_text(errors="replace")
    return str(len(re.findall(r"WARNING|ERROR", text)))


def main() -> None:
    failed_steps = sys.argv[1:]
    rows = [
        ("unit tests", *junit_counts("unit")),
        ("nbval cells, pass 1", *junit_counts(*nbval_keys(1))),
        ("nbval cells, pass 2 (portable)", *junit_counts(*nbval_keys(2))),
        ("pages checked in the browser", *junit_counts("browser")),
        ("JupyterLab checks", *junit_counts("lab")),
    ]
    print("\n================ make test summary ================")
    total_passed = total_failed = 0
    for label, passed, failed, skipped in rows:
        extra = f", {skipped} skipped" if skipped else ""
        print(f"{label:<32} {passed} passed, {failed} failed{extra}")
        total_passed += passed
        total_failed += failed
    print(f"{'book build warnings':<32} {build_warnings()}")
    print(f"{'failed steps':<32} {', '.join(failed_steps) if failed_steps else 'none'}")
    print("===================================================")
    print(f"{total_passed} passed, {total_failed + len(failed_steps)} failed")
    sys.exit(1 if failed_steps or total_failed else 0)


if __name__ == "__main__":
    main()
