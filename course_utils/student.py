"""Write a student copy of a chapter: every solution replaced by a stub, outputs cleared.

Usage: ``python -m course_utils.student chapters/01_attention.ipynb [more.ipynb] --out student``

In the course notebooks, the lines of a solution sit between ``### BEGIN SOLUTION`` and
``### END SOLUTION``; the student copy keeps everything else (the function signature, the
docstring, the checker call) and puts ``raise NotImplementedError`` in their place, so the
checker answers "not implemented yet" until the learner writes the code.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"


def stub_source(source: str) -> str:
    """Replace each BEGIN/END SOLUTION block with an indented ``raise NotImplementedError``."""
    if not isinstance(source, str):
        raise TypeError(f"source must be a str (a cell's code), got {type(source).__name__}")
    out: list[str] = []
    inside = False
    for line in source.splitlines():
        stripped = line.strip()
        if stripped == BEGIN:
            if inside:
                raise ValueError("found '### BEGIN SOLUTION' twice without '### END SOLUTION'")
            inside = True
            indent = line[: len(line) - len(line.lstrip())]
            out.append(f'{indent}raise NotImplementedError("your code here")')
        elif stripped == END:
            if not inside:
                raise ValueError("found '### END SOLUTION' without '### BEGIN SOLUTION'")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ValueError("'### BEGIN SOLUTION' has no matching '### END SOLUTION'")
    return "\n".join(out)


def make_student_copy(src: Path, dst: Path) -> int:
    """Write the student copy of notebook ``src`` to ``dst``; return how many solutions were stubbed."""
    nb = json.loads(Path(src).read_text(encoding="utf-8"))
    stubbed = 0
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        if BEGIN in source:
            source = stub_source(source)
            stubbed += source.count("raise NotImplementedError")
            tags = cell.setdefault("metadata", {}).get("tags", [])
            cell["metadata"]["tags"] = [t for t in tags if t not in ("hide-input", "solution")]
        cell["source"] = [line for line in re.split(r"(?<=\n)", source) if line]
        cell["outputs"], cell["execution_count"] = [], None
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return stubbed


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=Path("student"))
    args = parser.parse_args(argv)
    for src in args.notebooks:
        if not src.exists():
            parser.error(f"notebook not found: {src}")
        dst = args.out / src.name
        n = make_student_copy(src, dst)
        print(f"{dst}: {n} solution block(s) turned into stubs")


if __name__ == "__main__":
    main()
