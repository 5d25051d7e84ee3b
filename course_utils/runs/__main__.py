"""``python -m course_utils.runs check``: one line per shipped result, fresh or stale; exit 1 if any is stale.

``python -m course_utils.runs readme`` rewrites ``course_utils/assets/README.md`` from the registry.
"""

from __future__ import annotations

import argparse
import sys

from .core import ASSETS
from .registry import assets_readme, check


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course_utils.runs", description=__doc__)
    parser.add_argument("command", choices=["check", "readme"],
                        help="check: compare every shipped recipe with the code's; readme: write assets/README.md")
    args = parser.parse_args(argv)
    if args.command == "readme":
        (ASSETS / "README.md").write_text(assets_readme(), encoding="utf-8")
        print(f"wrote {ASSETS / 'README.md'}")
        return 0
    results = check()
    width = max(len(name) for name in results)
    for name, verdict in results.items():
        print(f"{name:{width}s}  {verdict}")
    stale = [name for name, verdict in results.items() if verdict != "fresh"]
    if stale:
        print(f"{len(stale)} of {len(results)} shipped results are stale: {', '.join(stale)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
