"""Benchmark: the test suite as ``make test`` runs it, with where its CPU goes.

The suite is CPU-bound on this 2-core machine (both cores 95-99 % busy from the tenth second),
so its wall time is its CPU time over the cores it gets, and the figure that shows whether a
change made it cheaper is the CPU, not the wall time the load decides. This script runs
``make <target>`` once and prints one JSON object:

- ``wall_s`` against the target (issue 14: ``make test`` under 180 s under load);
- ``cpu_s``: user + system time of every process of the run (this process becomes the child
  subreaper, so a process whose parent exits is still counted, and one still running when the
  suite ends is listed in ``left_running``);
- the baselines measured in the same run: ``floor_s``, the CPU over the cores (the wall time a
  perfectly parallel suite would take on an idle machine), and ``wall_over_floor``; the machine's
  own busy, idle and stolen seconds from ``/proc/stat`` (``other_busy_s``: what other sessions
  used meanwhile); a fixed pure-Python workload timed before and after (``speed_probe_s``: how
  fast one core was);
- with ``--by-process``: the CPU of every Python process at its exit, by kind (notebook kernel,
  the suite's xdist workers, pytest runs the tests start with their own workers, ``workbench``
  command, JupyterLab, other) and, for kernels, by test.
  A ``sitecustomize.py`` in a temporary directory put first on ``PYTHONPATH`` records it.
  What writes no log (chromium and its Node driver, a server stopped with SIGTERM, a killed
  run, Python started with a cleared environment) is sampled from ``/proc`` once a second and
  listed by program in ``not_logged_sampled_cpu_s``.

    .venv/bin/python bench/bench_tests.py [--target test|test-fast] [--workers N] [--by-process]
        [--load N]

``--load N`` runs N CPU-bound processes beside the suite for its whole length: "under load",
reproducibly (issue 14's target is ``make test`` under 180 s under load). Their CPU is reported
as ``load.cpu_s`` and left out of ``cpu_s``.

``make bench`` runs it with ``--by-process``; it takes as long as the suite.
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import itertools
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = {"test": 180.0}
PR_SET_CHILD_SUBREAPER = 36

SITECUSTOMIZE = '''\
"""Written by bench/bench_tests.py: logs this process's CPU time when it exits."""
import atexit
import os
import resource
import sys


def _record():
    try:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        row = {
            "pid": os.getpid(),
            "ppid": os.getppid(),
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 3),
            "argv": " ".join(sys.argv)[:300],
            "xdist_worker": os.environ.get("PYTEST_XDIST_WORKER", ""),
            "test": os.environ.get("PYTEST_CURRENT_TEST", ""),
        }
        path = os.environ["WORKBENCH_BENCH_PROCESS_LOG"]
        with open(path, "a", encoding="utf-8") as log:  # one short line: an atomic append
            log.write(__import__("json").dumps(row) + "\\n")
    except Exception:
        pass


if os.environ.get("WORKBENCH_BENCH_PROCESS_LOG"):
    atexit.register(_record)
'''


def process_kind(row: dict[str, Any], suite_pytest: frozenset[int] = frozenset()) -> str:
    """What a logged Python process was, from its command line and environment.

    ``suite_pytest``: the pids of the suite's own pytest process; an xdist worker that is not
    its child belongs to a pytest run a test started, and is counted with those runs.
    """
    argv = row["argv"]
    if "_kernel_zygote.py" in argv:  # tests/_kernel_zygote.py: the zygote and kernels' clients
        return "kernel zygote"
    if "ipykernel_launcher" in argv or "--HistoryManager.hist_file" in argv:
        return "notebook kernel"
    if row["xdist_worker"] and not row["test"]:
        nested = suite_pytest and row.get("ppid") not in suite_pytest
        return "pytest run" if nested else "xdist worker"
    if "pytest" in argv.split(" ", 1)[0] or " -m pytest" in f" {argv}" or "pytest/__main__" in argv:
        return "pytest run"
    if "jupyter-lab" in argv or "jupyterlab" in argv:
        return "JupyterLab"
    if re.search(r"(^|[/\s])workbench(\s|$)|workbench/__main__\.py|workbench/cli/", argv):
        return "workbench command"
    if "papermill" in argv.split(" ", 1)[0]:
        return "papermill command"
    return "other Python"


def suite_pytest_pids(rows: list[dict[str, Any]]) -> frozenset[int]:
    """The pytest processes whose parent is not a logged Python process (make's shell started
    them): the suite's own, not the runs its tests start from their workers."""
    pids = {row["pid"] for row in rows}
    return frozenset(
        row["pid"]
        for row in rows
        if process_kind(row) == "pytest run"
        and not row["xdist_worker"]
        and row.get("ppid") not in pids
    )


def summarize_processes(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """CPU by kind of process, and the kernels' CPU by the test that started them."""
    kinds: dict[str, dict[str, float]] = collections.defaultdict(
        lambda: {"processes": 0, "cpu_s": 0.0}
    )
    kernels_by_test: collections.Counter[str] = collections.Counter()
    suite = suite_pytest_pids(rows)
    for row in rows:
        kind = process_kind(row, suite)
        kinds[kind]["processes"] += 1
        kinds[kind]["cpu_s"] += row["cpu_s"]
        if kind == "notebook kernel":
            test = row["test"].rsplit(" (", 1)[0] or "(outside a test)"
            kernels_by_test[test] += row["cpu_s"]
    by_kind = {
        kind: {"processes": int(v["processes"]), "cpu_s": round(v["cpu_s"], 1)}
        for kind, v in sorted(kinds.items(), key=lambda kv: -kv[1]["cpu_s"])
    }
    top = {test: round(cpu, 1) for test, cpu in kernels_by_test.most_common(15)}
    return {"by_kind": by_kind, "kernel_cpu_by_test_top15": top}


def cpu_by_module(
    tests: list[dict[str, Any]], rows: list[dict[str, Any]]
) -> dict[str, dict[str, float]]:
    """CPU by test module, child processes included, most first.

    ``tests``: the lines of ``tests/_cpu_log.py`` (a suite worker's own CPU per test and that of
    the children it waited for meanwhile); ``rows``: the process log, whose notebook kernels
    forked by the zygote (not the worker's children) are added by the test they name. Lines from
    pytest runs a test started (not the suite's workers) are left out.
    """
    suite = suite_pytest_pids(rows)
    workers = {row["pid"] for row in rows if process_kind(row, suite) == "xdist worker"}
    modules: dict[str, dict[str, float]] = collections.defaultdict(
        lambda: dict.fromkeys(("tests", "wall_s", "cpu_s", "worker", "children", "kernels"), 0.0)
    )
    for line in tests:
        if workers and line["pid"] not in workers:
            continue
        module = modules[line["test"].split("::", 1)[0]]
        module["tests"] += 1
        module["wall_s"] += line["wall_s"]
        module["worker"] += line["cpu_s"]
        module["children"] += line["children_cpu_s"]
    for row in rows:
        if process_kind(row, suite) == "notebook kernel" and row.get("ppid") not in workers:
            modules[row["test"].split("::", 1)[0] or "(outside a test)"]["kernels"] += row["cpu_s"]
    for module in modules.values():
        module["cpu_s"] = module["worker"] + module["children"] + module["kernels"]
    ranked = sorted(modules.items(), key=lambda kv: -kv[1]["cpu_s"])
    return {name: {k: round(v, 1) for k, v in m.items()} for name, m in ranked}


def machine_times() -> dict[str, float]:
    """Seconds every core spent busy, idle and stolen since boot (``/proc/stat``)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, idle, iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    tick = os.sysconf("SC_CLK_TCK")
    return {
        "busy_s": (user + nice + system + irq + softirq) / tick,
        "idle_s": (idle + iowait) / tick,
        "steal_s": steal / tick,
    }


def speed_probe() -> float:
    """Seconds of one core for a fixed pure-Python workload (a reference for how fast the
    machine was during this run)."""
    code = "t = 0\nfor i in range(3_000_000):\n    t += i * i % 7\n"
    start = time.process_time()
    exec(compile(code, "<probe>", "exec"), {})
    return round(time.process_time() - start, 3)


def tests_line(log: str) -> str:
    """pytest's final summary line (``N passed, M skipped in S s``), or '' when absent."""
    found = re.findall(r"^=*\s*(\d+ (?:passed|failed|error).*?) in [\d.]+s", log, re.MULTILINE)
    return found[-1] if found else ""


def proc_stats() -> dict[int, tuple[int, int, str, float]]:
    """Every process in ``/proc``: pid -> (parent pid, start time in ticks, name, CPU seconds)."""
    tick = os.sysconf("SC_CLK_TCK")
    stats = {}
    for task in Path("/proc").iterdir():
        if not task.name.isdigit():
            continue
        try:
            raw = (task / "stat").read_text()
        except OSError:
            continue  # ended since the listing
        comm = raw[raw.index("(") + 1 : raw.rindex(")")]
        rest = raw[raw.rindex(")") + 2 :].split()
        # the fields after the name: state ppid ... utime(12) stime(13) ... starttime(20)
        cpu = (int(rest[11]) + int(rest[12])) / tick
        stats[int(task.name)] = (int(rest[1]), int(rest[19]), comm, cpu)
    return stats


def reap_orphans() -> list[int]:
    """Reap children reparented to this subreaper; return the pids still running."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return []
        if pid == 0:
            break
    return [pid for pid, (ppid, *_) in proc_stats().items() if ppid == os.getpid()]


LOAD_PROGRAM = "while True:\n    pass\n"
"""What each ``--load`` process runs: one core's worth of CPU demand, as another session's busy
process would be."""


def start_load(processes: int) -> list[subprocess.Popen[bytes]]:
    """``processes`` CPU-bound processes (``--load``), running until :func:`stop_load`."""
    return [
        subprocess.Popen([sys.executable, "-c", LOAD_PROGRAM], stdin=subprocess.DEVNULL)
        for _ in range(processes)
    ]


def stop_load(load: list[subprocess.Popen[bytes]]) -> float:
    """Stop the load processes and return the CPU seconds they used.

    Each is stopped (SIGSTOP) before its CPU is read from ``/proc`` and only then killed and
    reaped, so the figure is all it used; the caller subtracts it from the children's CPU,
    which counts it once reaped.
    """
    for proc in load:
        os.kill(proc.pid, signal.SIGSTOP)
    stats = proc_stats()
    used = sum(stats[proc.pid][3] for proc in load)
    for proc in load:
        proc.kill()
        proc.wait()
    return used


class DescendantSampler(threading.Thread):
    """Reads the CPU of every process under this one from ``/proc`` once a second.

    The exit log sees only Python processes that end normally; a test server stopped with
    SIGTERM, a killed run, chromium and its Node driver never log. Their CPU is the last value
    sampled (a process shorter than the interval can be missed), by pid and start time, so a
    reused pid is another process.
    """

    def __init__(self, interval_s: float = 1.0) -> None:
        super().__init__(daemon=True)
        self.interval_s = interval_s
        self.seen: dict[tuple[int, int], dict[str, Any]] = {}
        self._stop_event = threading.Event()

    def scan(self) -> None:
        stats = proc_stats()
        under = {os.getpid()}
        grew = True
        while grew:  # the descendants, whatever order /proc lists them in
            grew = False
            for pid, (ppid, *_) in stats.items():
                if ppid in under and pid not in under:
                    under.add(pid)
                    grew = True
        for pid in under - {os.getpid()}:
            _, start, comm, cpu = stats[pid]
            entry = self.seen.get((pid, start))
            if entry is None:
                try:
                    argv = (Path("/proc") / str(pid) / "cmdline").read_bytes()
                except OSError:
                    argv = b""
                entry = {
                    "pid": pid,
                    "ppid": stats[pid][0],
                    "comm": comm,
                    "argv": argv.replace(b"\0", b" ").decode(errors="replace").strip()[:300],
                    "cpu_s": 0.0,
                }
                self.seen[(pid, start)] = entry
            entry["cpu_s"] = max(entry["cpu_s"], cpu)

    def run(self) -> None:
        while not self._stop_event.wait(self.interval_s):
            self.scan()

    def stop(self) -> None:
        self._stop_event.set()
        self.join()


def not_logged(sampled: list[dict[str, Any]], logged_pids: set[int]) -> dict[str, float]:
    """The sampled CPU of processes that wrote no exit log, by program: Python ones by kind.

    A notebook kernel forked by the test suite's zygote (tests/_kernel_zygote.py) keeps the
    zygote's command line: a process with its parent's zygote command line is a kernel, unless
    it is the zygote's chart renderer (named ``chart-renderer``), counted with the zygote.
    """
    by_name: collections.Counter[str] = collections.Counter()
    argv_of = {entry["pid"]: entry["argv"] for entry in sampled}
    for entry in sampled:
        if entry["pid"] in logged_pids or entry["cpu_s"] <= 0:
            continue
        argv = entry["argv"]
        program = argv.split(" ", 1)[0] if argv else entry["comm"]
        forked = "_kernel_zygote.py serve" in argv and argv_of.get(entry.get("ppid")) == argv
        if forked and entry["comm"] == "chart-renderer":
            name = "Python: kernel zygote"
        elif forked:
            name = "Python: notebook kernel"
        elif "python" in Path(program).name:
            row = {
                "argv": argv.split(" ", 1)[1] if " " in argv else "",
                "xdist_worker": "",
                "test": "",
            }
            name = f"Python: {process_kind(row)}"
        else:
            name = Path(program).name or entry["comm"]
        by_name[name] += entry["cpu_s"]
    return {name: round(cpu, 1) for name, cpu in by_name.most_common() if cpu >= 0.1}


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The rows of a log written one line per process or test ([] when absent)."""
    rows = []
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line torn by a process killed while writing
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--target", default="test", choices=["test", "test-fast"])
    parser.add_argument(
        "--workers", default=None, help="PYTEST_WORKERS for the run (default: the Makefile's)."
    )
    parser.add_argument(
        "--by-process", action="store_true", help="Also log every Python process's CPU."
    )
    parser.add_argument(
        "--load",
        type=int,
        default=0,
        metavar="N",
        help=(
            "Run N CPU-bound processes beside the suite (a reproducible 'under load'); their"
            " CPU is reported apart and not counted in cpu_s."
        ),
    )
    parser.add_argument(
        "--log",
        type=Path,
        default=None,
        help="Where the suite's output goes (default: a temp file).",
    )
    args = parser.parse_args()

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # orphans come to us, so their CPU counts
    env = {**os.environ}
    scratch = Path(tempfile.mkdtemp(prefix="workbench-bench-tests-"))
    process_log = scratch / "processes.jsonl"
    test_log = scratch / "tests.jsonl"
    if args.by_process:
        (scratch / "site").mkdir()
        (scratch / "site" / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(scratch / "site"), env.get("PYTHONPATH", "")) if p
        )
        env["WORKBENCH_BENCH_PROCESS_LOG"] = str(process_log)
        env["WORKBENCH_BENCH_TEST_LOG"] = str(test_log)  # tests/_cpu_log.py
    if args.workers is not None:
        env["PYTEST_WORKERS"] = args.workers
    log_path = args.log or scratch / "suite.log"
    command = ["make", "--no-print-directory", args.target]

    probe_before = speed_probe()
    load_before = os.getloadavg()
    machine_before = machine_times()
    children_before = os.times()
    load = start_load(args.load)
    start = time.perf_counter()
    sampler = DescendantSampler()
    if args.by_process:
        sampler.start()
    with log_path.open("w", encoding="utf-8") as log:
        rc = subprocess.call(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    if args.by_process:
        sampler.stop()
    load_cpu = stop_load(load)
    left_running = reap_orphans()
    wall = time.perf_counter() - start
    children = os.times()
    machine_after = machine_times()
    load_after = os.getloadavg()
    probe_after = speed_probe()

    cpu_user = children.children_user - children_before.children_user
    cpu_sys = children.children_system - children_before.children_system
    cpu = cpu_user + cpu_sys - load_cpu  # the load's CPU is all user time
    cpu_user -= load_cpu
    cores = os.cpu_count() or 1
    busy = machine_after["busy_s"] - machine_before["busy_s"]
    out: dict[str, Any] = {
        "command": " ".join(command),
        "exit_code": rc,
        "tests": tests_line(log_path.read_text(encoding="utf-8", errors="replace")),
        "wall_s": round(wall, 1),
        "cpu_s": {"user": round(cpu_user, 1), "sys": round(cpu_sys, 1), "total": round(cpu, 1)},
        "cores": cores,
        "floor_s": round(cpu / cores, 1),
        "wall_over_floor": round(wall / (cpu / cores), 2) if cpu else None,
        "machine": {
            "busy_s": round(busy, 1),
            "idle_s": round(machine_after["idle_s"] - machine_before["idle_s"], 1),
            "steal_s": round(machine_after["steal_s"] - machine_before["steal_s"], 1),
            "other_busy_s": round(max(busy - cpu, 0.0), 1),  # the --load processes' included
        },
        "load_average": {
            "start": [round(x, 2) for x in load_before],
            "end": [round(x, 2) for x in load_after],
        },
        "speed_probe_s": {"before": probe_before, "after": probe_after},
        "load": {"processes": args.load, "cpu_s": round(load_cpu, 1)},
        "log": str(log_path),
    }
    if args.target in TARGET_S:
        out["target_s"] = TARGET_S[args.target]
        out["met"] = wall < TARGET_S[args.target]
    if left_running:
        out["left_running"] = left_running
    if args.by_process:
        rows = read_jsonl(process_log)
        by_module = cpu_by_module(read_jsonl(test_log), rows)
        (scratch / "modules.json").write_text(json.dumps(by_module, indent=1), encoding="utf-8")
        out["cpu_by_module_top30"] = dict(itertools.islice(by_module.items(), 30))
        out["cpu_by_module_file"] = str(scratch / "modules.json")
        seen = sum(r["cpu_s"] for r in rows)
        out["by_process"] = {
            "python_processes": len(rows),
            "python_cpu_s": round(seen, 1),
            "not_python_or_not_seen_cpu_s": round(max(cpu - seen, 0.0), 1),
            **summarize_processes(rows),
            "not_logged_sampled_cpu_s": not_logged(
                list(sampler.seen.values()), {r["pid"] for r in rows}
            ),
        }
    print(json.dumps(out, indent=2))
    return rc


if __name__ == "__main__":
    sys.exit(main())
