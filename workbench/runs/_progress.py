"""Run progress: tqdm on a terminal or in a notebook, one plain line per 10% anywhere else."""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    try:
        from IPython import get_ipython

        ip = get_ipython()
    except Exception:  # noqa: BLE001 - any failure means "not a notebook"
        return False
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


def progress_bar(*, total: int, initial: int, label: str, stream: TextIO | None = None) -> Any:
    """tqdm on a TTY or in a notebook, :class:`LineProgress` otherwise."""
    out = stream or sys.stderr
    bar: dict[str, Any] = {"total": total, "initial": initial, "desc": label, "unit": "case"}
    if _in_notebook():
        from tqdm.auto import tqdm

        return tqdm(dynamic_ncols=True, **bar)
    if getattr(out, "isatty", lambda: False)():
        from tqdm.std import tqdm as std_tqdm

        return std_tqdm(dynamic_ncols=True, file=out, **bar)
    return LineProgress(total=total, initial=initial, label=label, stream=out)


class LineProgress:
    """Plain-text progress: one line each time another 10% of ``total`` is done, and at the end."""

    def __init__(
        self, *, total: int, initial: int = 0, label: str = "", stream: TextIO | None = None
    ) -> None:
        self.total = total
        self.n = initial
        self.label = label
        self.stream = stream or sys.stderr
        self.postfix: dict[str, Any] = {}
        self.started = time.monotonic()
        self._last_decile = self._decile(initial)
        self._closed = False

    def _decile(self, n: int) -> int:
        if self.total <= 0:
            return 0
        return int(n / self.total * 10 + 1e-9)

    def update(self, n: int = 1) -> None:
        self.n += n
        decile = self._decile(self.n)
        if decile > self._last_decile and self.n < self.total:
            self._last_decile = decile
            self._write()

    def set_postfix(self, refresh: bool = False, **values: Any) -> None:
        del refresh
        self.postfix = values

    def _write(self) -> None:
        percent = 100 * self.n / self.total if self.total else 100
        extra = ", ".join(f"{k}={v}" for k, v in self.postfix.items())
        elapsed = time.monotonic() - self.started
        self.stream.write(
            f"{self.label}: {self.n}/{self.total} cases ({percent:.0f}%) in {elapsed:.1f}s"
            + (f", {extra}" if extra else "")
            + "\n"
        )
        self.stream.flush()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.total:
            self._write()
