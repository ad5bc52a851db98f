"""bench/bench_tests.py: the per-process CPU log and how its rows are read.

The benchmark itself runs the whole suite (minutes), so it is not run here; what it builds its
figures from is: the ``sitecustomize.py`` it puts first on ``PYTHONPATH`` must log a real
process's CPU, the kinds must be told apart from real command lines, and pytest's summary line
must be found in a real log.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest
from _inner_pytest import inner_env, run_pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_tests", ROOT / "bench" / "bench_tests.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _row(
    argv: str, worker: str = "", test: str = "", cpu: float = 1.0, pid: int = 1, ppid: int = 0
) -> dict[str, object]:
    return {
        "pid": pid,
        "ppid": ppid,
        "cpu_s": cpu,
        "argv": argv,
        "xdist_worker": worker,
        "test": test,
    }


def test_the_sitecustomize_logs_each_process_at_exit(bench: ModuleType, tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(bench.SITECUSTOMIZE, encoding="utf-8")
    log = tmp_path / "processes.jsonl"
    env = {
        **os.environ,
        "PYTHONPATH": str(site),
        "WORKBENCH_BENCH_PROCESS_LOG": str(log),
        "PYTEST_CURRENT_TEST": "tests/test_x.py::test_y (call)",
        "PYTEST_XDIST_WORKER": "gw7",
    }
    busy = "t = 0\nfor i in range(300_000): t += i\n"
    subprocess.run([sys.executable, "-c", busy], env=env, check=True)
    subprocess.run([sys.executable, "-c", "pass"], env={**env, "PYTHONPATH": ""}, check=True)
    rows = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 1, rows  # the second process did not have the directory on its path
    assert rows[0]["cpu_s"] > 0 and rows[0]["argv"] == "-c" and rows[0]["ppid"] == os.getpid()
    assert rows[0]["test"] == "tests/test_x.py::test_y (call)" and rows[0]["xdist_worker"] == "gw7"
    # without the variable the module does nothing
    env.pop("WORKBENCH_BENCH_PROCESS_LOG")
    subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
    assert len(log.read_text(encoding="utf-8").splitlines()) == 1


@pytest.mark.parametrize(
    ("row", "kind"),
    [
        (_row("-c -f /tmp/k.json --HistoryManager.hist_file=:memory:", "gw0", "t (setup)"),
         "notebook kernel"),
        (_row("/v/lib/python3.11/site-packages/ipykernel_launcher.py -f /x.json"),
         "notebook kernel"),
        (_row("-c", "gw1"), "xdist worker"),
        (_row("/v/lib/python3.11/site-packages/pytest/__main__.py -q -n 3"), "pytest run"),
        (_row("/v/bin/jupyter-lab --no-browser", "gw2", "t (call)"), "JupyterLab"),
        (_row("/w/workbench/__main__.py certify --candidate c", "gw0", "t (call)"),
         "workbench command"),
        (_row("/w/.venv/bin/workbench validate data/demo"), "workbench command"),
        (_row("/w/.venv/bin/papermill notebooks/00_overview.ipynb out.ipynb"),
         "papermill command"),
        (_row("-c import sys", "gw0", "t (call)"), "other Python"),
        # tests/_kernel_zygote.py: the zygote and a kernel's client; the forked kernel is a kernel
        (_row("/w/tests/_kernel_zygote.py serve /tmp/wbz-1/zygote.sock", "gw0", "t (setup)"),
         "kernel zygote"),
        (_row("/w/tests/_kernel_zygote.py client -f /k.json --HistoryManager.hist_file=:memory:",
              "gw0", "t (call)"), "kernel zygote"),
    ],
)  # fmt: skip
def test_process_kinds_come_from_the_command_line(
    bench: ModuleType, row: dict[str, object], kind: str
) -> None:
    assert bench.process_kind(row) == kind


def test_the_summary_adds_cpu_by_kind_and_kernels_by_test(bench: ModuleType) -> None:
    kernel = "-c -f k.json --HistoryManager.hist_file=:memory:"
    rows = [
        _row(kernel, "gw0", "tests/a.py::t1 (setup)", 4.0),
        _row(kernel, "gw0", "tests/a.py::t1 (call)", 2.5),
        _row(kernel, "gw1", "tests/b.py::t2 (call)", 3.0),
        _row("-c", "gw0", "", 40.0),
        _row("-c", "gw1", "", 30.5),
    ]
    summary = bench.summarize_processes(rows)
    assert summary["by_kind"] == {
        "xdist worker": {"processes": 2, "cpu_s": 70.5},
        "notebook kernel": {"processes": 3, "cpu_s": 9.5},
    }
    assert list(summary["by_kind"]) == ["xdist worker", "notebook kernel"]  # most CPU first
    assert summary["kernel_cpu_by_test_top15"] == {"tests/a.py::t1": 6.5, "tests/b.py::t2": 3.0}


def test_workers_of_a_pytest_run_a_test_started_are_not_the_suites(bench: ModuleType) -> None:
    pytest_main = "/v/lib/python3.11/site-packages/pytest/__main__.py -q"
    rows = [
        _row(f"{pytest_main} -n 3 --dist loadscope", pid=10, ppid=5, cpu=9.0),  # make's shell
        _row("-c", "gw0", pid=11, ppid=10, cpu=50.0),
        _row("-c", "gw1", pid=12, ppid=10, cpu=40.0),
        # a test on gw0 runs pytest on two workers (the environment without PYTEST_*)
        _row(f"{pytest_main} -p xdist -n 2", pid=20, ppid=11, cpu=1.5),
        _row("-c", "gw0", pid=21, ppid=20, cpu=1.0),
        _row("-c", "gw1", pid=22, ppid=20, cpu=0.5),
    ]
    assert bench.suite_pytest_pids(rows) == frozenset({10})
    assert bench.summarize_processes(rows)["by_kind"] == {
        "xdist worker": {"processes": 2, "cpu_s": 90.0},
        "pytest run": {"processes": 4, "cpu_s": 12.0},
    }


def test_cpu_by_module_adds_workers_children_and_forked_kernels(bench: ModuleType) -> None:
    pytest_main = "/v/lib/python3.11/site-packages/pytest/__main__.py -q"
    kernel = "-c -f k.json --HistoryManager.hist_file=:memory:"
    rows = [
        _row(f"{pytest_main} -n 2 --dist loadscope", pid=10, ppid=5, cpu=9.0),
        _row("-c", "gw0", pid=11, ppid=10, cpu=50.0),
        _row("-c", "gw1", pid=12, ppid=10, cpu=40.0),
        _row(kernel, "gw0", "tests/test_a.py::t2 (call)", 4.0, pid=30, ppid=99),  # the zygote's
        _row(kernel, "gw1", "tests/test_b.py::t1 (call)", 1.5, pid=31, ppid=12),  # a worker's
    ]

    def line(pid: int, test: str, cpu: float, children: float) -> dict[str, object]:
        return {"pid": pid, "test": test, "wall_s": 2.0, "cpu_s": cpu, "children_cpu_s": children}

    tests = [
        line(11, "tests/test_a.py::t1", 1.0, 0.5),
        line(11, "tests/test_a.py::t2", 2.0, 0.0),
        line(12, "tests/test_b.py::t1", 0.5, 1.5),  # its kernel is in children already
        line(20, "tests/test_c.py::t1", 7.0, 0.0),  # a nested pytest run's: not the suite's
    ]
    assert bench.cpu_by_module(tests, rows) == {
        "tests/test_a.py": {
            "tests": 2.0,
            "wall_s": 4.0,
            "cpu_s": 7.5,
            "worker": 3.0,
            "children": 0.5,
            "kernels": 4.0,
        },
        "tests/test_b.py": {
            "tests": 1.0,
            "wall_s": 2.0,
            "cpu_s": 2.0,
            "worker": 0.5,
            "children": 1.5,
            "kernels": 0.0,
        },
    }


def test_the_per_test_log_counts_a_tests_child_process(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(
        "import _cpu_log\n\ndef pytest_configure(config):\n    _cpu_log.configure(config)\n"
    )
    busy = "t = 0\nfor i in range(2_000_000): t += i\n"
    (tmp_path / "test_child.py").write_text(
        "import subprocess, sys\n\n"
        "def test_quiet():\n    pass\n\n"
        f"def test_child():\n    subprocess.run([sys.executable, '-c', {busy!r}], check=True)\n"
    )
    log = tmp_path / "tests.jsonl"
    env = inner_env()
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "tests"), env.get("PYTHONPATH", "")])
    done = run_pytest(tmp_path, tmp_path, env={**env, "WORKBENCH_BENCH_TEST_LOG": str(log)})
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {row["test"]: row for row in map(json.loads, log.read_text().splitlines())}
    assert set(rows) == {"test_child.py::test_quiet", "test_child.py::test_child"}
    assert rows["test_child.py::test_child"]["children_cpu_s"] > 0.05
    assert rows["test_child.py::test_quiet"]["children_cpu_s"] == 0
    done = run_pytest(tmp_path, tmp_path, env=env)  # without the variable: no log
    assert done.returncode == 0 and len(log.read_text().splitlines()) == 2


def test_the_summary_line_is_found_in_a_real_pytest_log(bench: ModuleType, tmp_path: Path) -> None:
    (tmp_path / "test_two.py").write_text(
        "import pytest\n\ndef test_a():\n    pass\n\n@pytest.mark.skip('x')\ndef test_b():\n"
        "    pass\n",
        encoding="utf-8",
    )
    run = run_pytest(tmp_path, tmp_path)
    assert bench.tests_line(run.stdout) == "1 passed, 1 skipped"
    assert bench.tests_line("make: *** [Makefile:98: test] Error 2\n") == ""


def test_machine_times_and_the_probe_are_positive(bench: ModuleType) -> None:
    first = bench.machine_times()
    assert bench.speed_probe() > 0
    second = bench.machine_times()
    assert second["busy_s"] + second["idle_s"] > first["busy_s"] + first["idle_s"] > 0


def test_the_sampler_sees_a_descendant_that_never_logs(bench: ModuleType) -> None:
    """A child that burns CPU and is then killed (no exit hook runs) is found in /proc under
    this process, with its command line and its CPU."""
    busy = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n"
    child = subprocess.Popen(
        [sys.executable, "-c", busy + "time.sleep(60)  # bench-sampler-marker"],
    )
    try:
        sampler = bench.DescendantSampler()
        deadline = time.monotonic() + 30
        entry = None
        while time.monotonic() < deadline:
            sampler.scan()
            entry = next((e for e in sampler.seen.values() if e["pid"] == child.pid), None)
            if entry and entry["cpu_s"] >= 0.3:
                break
            time.sleep(0.1)
        assert entry is not None and entry["cpu_s"] >= 0.3, entry
        assert "bench-sampler-marker" in entry["argv"] and entry["comm"].startswith("python")
    finally:
        child.kill()
        child.wait()
    assert bench.not_logged([entry], set()) == {"Python: other Python": round(entry["cpu_s"], 1)}
    assert bench.not_logged([entry], {child.pid}) == {}


ZYGOTE = "/v/bin/python /w/tests/_kernel_zygote.py serve /tmp/wbz-1/zygote.sock"


def test_processes_without_a_log_are_grouped_by_program_and_kind(bench: ModuleType) -> None:
    sampled = [
        {"pid": 1, "comm": "chromium", "argv": "/usr/lib/chromium/chromium --headless",
         "cpu_s": 7.0},
        {"pid": 2, "comm": "chromium", "argv": "/usr/lib/chromium/chromium --type=renderer",
         "cpu_s": 2.5},
        {"pid": 3, "comm": "node", "argv": "/v/playwright/driver/node cli.js run-driver",
         "cpu_s": 1.0},
        {"pid": 4, "comm": "python", "argv": "/v/bin/python -m workbench fake-llm --port 0",
         "cpu_s": 3.0},
        {"pid": 5, "comm": "python", "argv": "/v/bin/python -m workbench run --x", "cpu_s": 2.0},
        {"pid": 6, "comm": "sh", "argv": "/bin/sh -c make", "cpu_s": 0.0},
        {"pid": 7, "comm": "python", "argv": "/v/bin/python -c pass", "cpu_s": 9.0},  # logged
        # the suite's kernel zygote, and a kernel it forked (same command line) that was killed
        {"pid": 8, "ppid": 1, "comm": "python", "argv": ZYGOTE, "cpu_s": 4.0},
        {"pid": 9, "ppid": 8, "comm": "python", "argv": ZYGOTE, "cpu_s": 1.5},
        # its chart renderer: forked too, but named
        {"pid": 10, "ppid": 8, "comm": "chart-renderer", "argv": ZYGOTE, "cpu_s": 0.5},
    ]  # fmt: skip
    assert bench.not_logged(sampled, {7}) == {
        "chromium": 9.5,
        "Python: workbench command": 5.0,
        "Python: kernel zygote": 4.5,
        "Python: notebook kernel": 1.5,
        "node": 1.0,
    }


def test_proc_stats_reads_this_process_and_its_parent(bench: ModuleType) -> None:
    stats = bench.proc_stats()
    ppid, start, comm, cpu = stats[os.getpid()]
    assert ppid == os.getppid() and start > 0 and comm.startswith("python") and cpu > 0
    assert stats[ppid][1] <= start  # the parent started first


def test_the_load_burns_cpu_until_stopped_and_its_cpu_is_what_the_children_count(
    bench: ModuleType,
) -> None:
    """``--load``: each process uses CPU until stopped, is reaped by ``stop_load``, and the CPU
    it returns is what ``os.times`` then counts for the reaped children (which the benchmark
    subtracts from the suite's)."""
    before = os.times()
    load = bench.start_load(2)
    time.sleep(0.6)
    used = bench.stop_load(load)
    after = os.times()
    assert all(proc.returncode is not None for proc in load)  # reaped: no zombie, no survivor
    assert not [p for p in load if Path(f"/proc/{p.pid}").exists()]
    counted = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    assert 0 < used <= 2 * 0.6 + 0.5  # it ran, and no longer than two cores allow
    assert counted == pytest.approx(used, abs=0.05)
