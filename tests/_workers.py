"""How many pytest-xdist workers ``make test`` starts: two more than the cores this process may
run on, and no more than the available memory holds.

The suite waits a good part of its time (notebook kernels starting, scripted latencies, killed
processes, Ray's daemons, chromium); workers beyond the cores fill those waits. On the 2-core
machine of bench/README.md ("Test suite", eleventh pass) four workers against three: idle
125.4-135.9 s against 137.6 s, beside one CPU-bound process (``bench_tests.py --load 1``)
160.8-168.9 s in four runs against 170.9-171.5 s in two: a busy machine shares its cores among
the runnable processes, and the suite's share grows with its workers.

Each worker holds the libraries the tests import and starts kernels, servers and browsers beside
it: about :data:`GIB_PER_WORKER` GiB at the suite's peak (measured with 4 workers: 3.3 GiB used
in all). The count is capped so that many fit in ``MemAvailable``.

Run by the system's Python before the virtual environment exists: standard library only.
``PYTEST_WORKERS`` in the environment or on make's command line overrides it.
"""

from __future__ import annotations

import os
import sys

EXTRA_WORKERS = 2
"""Workers beyond the cores."""
GIB_PER_WORKER = 1.0
"""Memory one worker and what it starts need at the suite's peak, in GiB."""


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask where the system has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def available_gib(meminfo: str = "/proc/meminfo") -> float | None:
    """``MemAvailable`` in GiB, or None where the system does not say."""
    try:
        with open(meminfo, encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / (1 << 20)  # kB
    except (OSError, ValueError, IndexError):
        return None
    return None


def workers(cores: int, gib: float | None) -> int:
    """``cores + EXTRA_WORKERS``, at most as many as ``gib`` holds, at least one."""
    n = cores + EXTRA_WORKERS
    if gib is not None:
        n = min(n, int(gib // GIB_PER_WORKER))
    return max(1, n)


if __name__ == "__main__":
    sys.stdout.write(f"{workers(usable_cores(), available_gib())}\n")
