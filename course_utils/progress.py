"""A one-line text progress report for long loops, the same in a terminal, in Jupyter and in the book.
Chapter 6.

While the loop runs, the line is rewritten in place (carriage return) every ``min_interval``
seconds with the step count, the speed and any extra fields (e.g. the loss). When it ends, the
line is rewritten once more with only the step count, ``training: 350/350 steps``: that final
text is what a stored notebook output keeps (``scripts/execute_notebooks.py`` and nbval apply
the carriage returns), so it is the same on every machine and the HTML book shows it without
any widget manager. In an IPython kernel the line goes to stdout, elsewhere to stderr.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from .validate import check_bool, check_number, check_positive_int


def _default_stream() -> TextIO:
    try:
        from IPython import get_ipython
    except ImportError:
        return sys.stderr
    shell = get_ipython()
    return sys.stdout if shell is not None and getattr(shell, "kernel", None) is not None else sys.stderr


class TextProgress:
    """``desc: n/total steps (speed, extra fields)`` rewritten in place; final line without speed. Chapter 6."""

    def __init__(self, total: int, desc: str = "progress", file: TextIO | None = None,
                 min_interval: float = 0.5, enabled: bool = True):
        self.total = check_positive_int("total", total)
        min_interval = check_number("min_interval", min_interval, low=0.0)
        self.desc, self.min_interval, self.enabled = desc, min_interval, check_bool("enabled", enabled)
        self.file = file if file is not None else _default_stream()
        self.n = 0
        self._start = self._last = time.perf_counter()
        self._width = 0
        self._closed = False
        self._write(self._line(with_speed=False))

    def _line(self, with_speed: bool, fields: dict[str, str] | None = None) -> str:
        line = f"{self.desc}: {self.n}/{self.total} steps"
        if with_speed:
            elapsed = time.perf_counter() - self._start
            extra = [f"{self.n / elapsed:.1f} steps/s"] if elapsed > 0 and self.n else []
            extra += [f"{k} {v}" for k, v in (fields or {}).items()]
            if extra:
                line += " (" + ", ".join(extra) + ")"
        return line

    def _write(self, line: str, end: str = "") -> None:
        if not self.enabled:
            return
        pad = ""
        if self.file.isatty():  # a terminal keeps the old characters: blank them; a notebook does not
            pad = " " * max(0, self._width - len(line))
        self._width = len(line)
        self.file.write("\r" + line + pad + end)
        self.file.flush()

    def update(self, n: int, **fields: object) -> None:
        """Set the number of finished steps to ``n``; rewrite the line at most every ``min_interval`` s."""
        self.n = n
        now = time.perf_counter()
        if now - self._last >= self.min_interval:
            self._last = now
            self._write(self._line(True, {k: str(v) for k, v in fields.items()}))

    def close(self) -> None:
        """Write the final line (``desc: n/total steps``, no speed) and end it with a newline."""
        if not self._closed:
            self._closed = True
            self._write(self._line(with_speed=False), end="\n")
