"""Benchmark: ``workbench certify`` on the demo as a ratio to papermill running a one-cell
notebook, measured in the same run (issue 31: certify <= 1.5x).

Both are new processes, interleaved ``--repeats`` times so load on the machine hits them alike:
the baseline is ``python -c "import papermill; papermill.execute_notebook(...)"`` on a notebook
whose one cell is ``pass`` (interpreter start, papermill's import, a kernel's start and
shutdown: the fixed cost of any papermill job); certify is the real command, this checkout's
workbench first on ``PYTHONPATH`` (not the venv's install), on a fresh copy of the demo gold
(``data/candidates/rubric-judge@2.yaml``, ``support-release@1``). Reported: the median and range
of wall time and of CPU time (the process and every process it waited for, the kernel included),
the ratio of the medians, the load average before and after, and the median split of certify's
wall time (parent: interpreter start, imports, input checks, the ledger; kernel start; cells;
render and lock) from the timings certification records.

``--ragas`` runs certify once more with an audit hook (a ``sitecustomize`` on ``PYTHONPATH``,
inherited by the kernel) that records every process importing Ragas: the certify process,
the kernel, or both. ``--before DIR`` times another checkout's workbench (``PYTHONPATH=DIR``,
the same data) in the same run, interleaved; it may be given more than once (each is reported
under its directory's name). ``--no-bytecode`` adds certify with
``PYTHONDONTWRITEBYTECODE=1`` and no cache prefix (what a container runs; only the byte code
compiled beside the sources is read) over certify with a writable cache (target: under 1.1).
``--importtime`` adds the parent's imports (``python -X importtime``, Ragas' and papermill's
shares).

    .venv/bin/python bench/bench_certify.py [--repeats 5] [--ragas] [--before DIR ...]
        [--no-bytecode] [--importtime]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CANDIDATE = "data/candidates/rubric-judge@2.yaml"
POLICY = "data/policies/support-release@1.yaml"
TARGET = 1.5
PYCACHE = Path(tempfile.gettempdir()) / "workbench-bench-certify-pycache"

# What the certify process imports before the notebook starts, in its order: the command, the
# certification module, the judge (load_candidate imports the candidate's metric module), papermill.
_PARENT_IMPORTS = f"""
import workbench.cli.certify, workbench.reports
from workbench.judges import load_candidate
load_candidate({CANDIDATE!r})
import papermill
"""

_ONE_CELL = """
import sys, nbformat, papermill
nb = nbformat.v4.new_notebook()
nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
nb.cells = [nbformat.v4.new_code_cell("pass")]
papermill.execute_notebook(nb, sys.argv[1], kernel_name="python3", progress_bar=False)
"""

RAGAS_LOG_ENV = "WB_RAGAS_LOG"
RAGAS_HOOK = """
import os, sys
_log = os.environ.get("WB_RAGAS_LOG")
def _hook(event, args):
    if event == "import" and args[0] == "ragas" and _log:
        with open(_log, "a") as f:
            f.write(f"{os.getpid()} {' '.join(sys.argv)[:200]}\\n")
if _log:
    sys.addaudithook(_hook)
"""
"""A ``sitecustomize`` that appends "pid argv" to ``$WB_RAGAS_LOG`` in every process importing
Ragas (``tests/test_certify_warm_kernel.py`` uses it too)."""


def _env(tree: Path | None = None, *, bytecode: bool = True) -> dict[str, str]:
    env = {**os.environ, "RAGAS_DO_NOT_TRACK": "true", "PYTHONPYCACHEPREFIX": str(PYCACHE)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if not bytecode:  # as a container runs it: only the byte code beside the sources is read
        del env["PYTHONPYCACHEPREFIX"]
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    # This checkout's workbench (or another's, --before) comes first on the path, not the one
    # installed in the venv (main's, for an editable install).
    env["PYTHONPATH"] = os.pathsep.join([str(tree or ROOT), env.get("PYTHONPATH", "")])
    return env


def _timed(argv: list[str], env: dict[str, str], cwd: Path = ROOT) -> tuple[float, float, str]:
    """Wall and CPU seconds (the process and its waited-for descendants) of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1):  # 1: certification refused (an outcome, not an error)
        raise SystemExit(f"{argv[:4]} exited {done.returncode}: {done.stderr[-3000:]}")
    return wall, cpu, done.stdout


def one_cell(tmp: Path) -> dict[str, float]:
    wall, cpu, _ = _timed([sys.executable, "-c", _ONE_CELL, str(tmp / "one-cell.ipynb")], _env())
    return {"wall_s": wall, "cpu_s": cpu}


def certify_once(tmp: Path, env: dict[str, str]) -> dict[str, float]:
    # The held-out ledger is the project's: each repeat certifies in a fresh copy of the project.
    work = Path(tempfile.mkdtemp(dir=tmp))
    shutil.copyfile(ROOT / "workbench.yaml", work / "workbench.yaml")
    for folder in ("candidates", "policies", "controls", "demo"):
        shutil.copytree(ROOT / "data" / folder, work / "data" / folder)
    argv = [sys.executable, "-m", "workbench", "certify", "--candidate", CANDIDATE]
    argv += ["--policy", POLICY, "--gold", "data/demo", "--reports", "reports"]
    wall, cpu, stdout = _timed([*argv, "--json"], env, work)
    timings = json.loads(stdout)["timings_s"]
    render = timings["render"] + timings.get("lock", 0.0)
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "parent_s": wall - timings["notebook_total"] - render,
        "kernel_start_s": timings.get("kernel_start_and_overhead", 0.0),
        "cells_s": timings.get("cells_run", 0.0),
        "render_and_lock_s": render,
    }


def ragas_importers(tmp: Path, tree: Path | None = None) -> list[str]:
    """The processes of one certify that imported Ragas (pid and command line)."""
    hook = tmp / "ragas-hook"
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(RAGAS_HOOK, encoding="utf-8")
    log = hook / "ragas.log"
    log.unlink(missing_ok=True)
    env = _env(tree)
    env["PYTHONPATH"] = os.pathsep.join([str(hook), env.get("PYTHONPATH", "")])
    env[RAGAS_LOG_ENV] = str(log)
    certify_once(tmp, env)
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def parent_imports() -> dict[str, object]:
    """Seconds the parent's imports take in a fresh process, with Ragas' and papermill's share."""
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", _PARENT_IMPORTS],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=_env(),
    )
    total = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(done.stderr[-2000:])
    cumulative: dict[str, float] = {}
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            _, cum, name = line.split("|")
            if cum.strip().isdigit():  # the first time a package is imported counts, at any depth
                cumulative.setdefault(name.strip(), int(cum) / 1e6)
    shares = {f"{n}_s": round(cumulative.get(n, 0.0), 3) for n in ("ragas", "papermill")}
    return {"process_s": round(total, 3), **shares, "note": "-X importtime inflates these"}


def _summary(runs: list[dict[str, float]]) -> dict[str, object]:
    out: dict[str, object] = {}
    for key in runs[0]:
        values = [r[key] for r in runs]
        out[key] = round(statistics.median(values), 3)
        if key in ("wall_s", "cpu_s"):
            out[key.replace("_s", "_range_s")] = [round(min(values), 3), round(max(values), 3)]
    return out


def _ratio(num: list[dict[str, float]], den: list[dict[str, float]], key: str) -> float:
    return round(statistics.median(r[key] for r in num) / statistics.median(r[key] for r in den), 2)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--ragas", action="store_true", help="Which processes import Ragas.")
    parser.add_argument(
        "--before", type=Path, action="append", default=[], help="Another checkout, same run."
    )
    parser.add_argument("--no-bytecode", action="store_true", help="Certify without a cache.")
    parser.add_argument("--importtime", action="store_true", help="The parent's imports.")
    args = parser.parse_args()
    PYCACHE.mkdir(exist_ok=True)
    variants: dict[str, Callable[[Path], dict[str, float]]] = {
        "one_cell_papermill": one_cell,
        "certify": lambda tmp: certify_once(tmp, _env()),
    }
    befores = {f"certify@{tree.name}": tree.resolve() for tree in args.before}
    for name, tree in befores.items():
        variants[name] = lambda tmp, tree=tree: certify_once(tmp, _env(tree))
    if args.no_bytecode:
        variants["certify_no_bytecode"] = lambda tmp: certify_once(tmp, _env(bytecode=False))
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in variants}
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        for name_ in variants:  # one warm-up each (byte code written, page cache filled)
            variants[name_](tmp)
        for _ in range(args.repeats):
            for name_, run in variants.items():
                runs[name_].append(run(tmp))
        importers = ragas_importers(tmp) if args.ragas else None
        importers_before = {
            name: ragas_importers(tmp, tree) for name, tree in befores.items() if args.ragas
        }
    base = runs["one_cell_papermill"]
    ratio = _ratio(runs["certify"], base, "wall_s")
    out: dict[str, object] = {
        "load_before": load_before,
        "load_after": Path("/proc/loadavg").read_text().split()[:3],
        "repeats": args.repeats,
        **{name: _summary(r) for name, r in runs.items()},
        "certify_over_one_cell": ratio,
        "certify_over_one_cell_cpu": _ratio(runs["certify"], base, "cpu_s"),
        "target": f"certify <= {TARGET}x a one-cell papermill notebook (wall, medians)",
        "met": ratio <= TARGET,
    }
    for name in befores:
        out[f"{name}_over_one_cell"] = _ratio(runs[name], base, "wall_s")
        out[f"{name}_over_one_cell_cpu"] = _ratio(runs[name], base, "cpu_s")
        out[f"certify_over_{name}"] = _ratio(runs["certify"], runs[name], "wall_s")
        out[f"certify_over_{name}_cpu"] = _ratio(runs["certify"], runs[name], "cpu_s")
    if args.no_bytecode:
        nobc = runs["certify_no_bytecode"]
        out["no_bytecode_over_cached"] = _ratio(nobc, runs["certify"], "wall_s")
        out["no_bytecode_over_cached_cpu"] = _ratio(nobc, runs["certify"], "cpu_s")
    if importers is not None:
        out["ragas_imported_by"] = importers
    for name, found in importers_before.items():
        out[f"{name}_ragas_imported_by"] = found
    if args.importtime:
        out["parent_imports"] = parent_imports()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
