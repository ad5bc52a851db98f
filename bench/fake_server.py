"""Start ``workbench fake-llm`` in its own process for benchmarks (so it does not share the GIL)."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

_SERVING = re.compile(r"serving at (http://\S+/v1)")


@contextmanager
def fake_llm_process(
    latency: float, *, faults: Sequence[str] = (), responder: str | None = None
) -> Iterator[str]:
    """Serve the fake model on a free port (it binds port 0 and prints its URL).

    Yields the URL; stops the server afterwards.
    """
    cmd = [sys.executable, "-m", "workbench", "fake-llm", "--port", "0", "--latency", str(latency)]
    for fault in faults:
        cmd += ["--fault-rate", fault]
    if responder:
        cmd += ["--responder", responder]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # "fake LLM serving at http://127.0.0.1:<port>/v1 ..."
        match = _SERVING.search(first)
        if match is None:
            raise RuntimeError(
                f"workbench fake-llm did not report its URL (exit {proc.poll()}): {first!r}"
            )
        yield match.group(1)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
