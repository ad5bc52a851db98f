"""What every benchmark's measured child process runs first (a fresh ``python -c`` process)."""

PRELUDE = r"""
import json, os, resource, sys, time
if os.environ.get("BENCH_WORKBENCH_SRC"):  # measure another checkout (e.g. an export of main)
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
    sys.path.insert(0, os.environ["BENCH_WORKBENCH_SRC"])
def peak_mb():
    # VmHWM: this process's own peak (ru_maxrss survives exec and would report the parent's)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
"""
"""Imports, ``--src`` (``BENCH_WORKBENCH_SRC``: another checkout's ``workbench`` first on the
path) and ``peak_mb()``."""
