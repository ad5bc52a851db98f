"""Start ``workbench fake-llm`` in its own process for benchmarks (so it does not share the GIL)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def fake_llm_process(latency: float, *, faults: Sequence[str] = (), responder: str | None = None) -> Iterator[str]:
    """Serve the fake model on a free port; yield its base URL; stop it afterwards."""
    port = free_port()
    cmd = [sys.executable, "-m", "workbench", "fake-llm", "--port", str(port), "--latency", str(latency)]
    for fault in faults:
        cmd += ["--fault-rate", fault]
    if responder:
        cmd += ["--responder", responder]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
