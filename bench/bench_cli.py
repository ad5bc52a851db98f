"""Benchmark: CLI start-up, as ratios to ``python -c pass`` measured in the same run.

Runs each command as a user would (a new process of the ``workbench`` console script next to
this interpreter), ``--repeats`` times interleaved, so load on the machine hits every command
alike, and reports the median and the minimum wall time of each and its ratio (median over
median) to the bare interpreter. Targets (issue 14): ``workbench --help`` under 0.3 s,
``workbench validate`` on the demo under 0.8 s.

``--importtime`` adds the ten largest cumulative imports of ``validate`` (``python -X
importtime``), the list to read when a figure regresses. ``--docstrings`` adds what pydantic's
``use_attribute_docstrings=True`` cost while the records used it (before 5810402; the field
docstrings are now read on demand, ``workbench._docs``): ``validate`` and ``import
workbench.reports`` (the most models), each as is and with the option turned on for every
model (pydantic's config default), interleaved.

``--before DIR`` measures another checkout's commands in the same run, interleaved (the
figures named ``before: ...``), e.g. the commit before the lazy CLI:
``git archive a8b6282 workbench data | tar -x -C /tmp/clibefore``.

``--no-bytecode`` adds issue 31's figure: ``validate`` and ``--help`` with
``PYTHONDONTWRITEBYTECODE=1`` and no cache prefix, reading only the byte code ``make venv``
compiled beside the sources (``compileall``), over the same commands with a writable cache:
the ratio the target keeps under 1.1. Without the compiled tree every such start recompiles.

    .venv/bin/python bench/bench_cli.py [--repeats 15] [--importtime] [--docstrings] [--before DIR]
        [--no-bytecode]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKBENCH = Path(sys.executable).with_name("workbench")

TARGETS_S = {"help": 0.3, "validate": 0.8}


def commands() -> dict[str, list[str]]:
    cli = [str(WORKBENCH)] if WORKBENCH.exists() else [sys.executable, "-m", "workbench"]
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        "import workbench.cli": [sys.executable, "-c", "import workbench.cli"],
        "help": [*cli, "--help"],
        "version": [*cli, "--version"],
        "validate": [*cli, "validate", "data/demo"],
    }


PYCACHE = Path(tempfile.gettempdir()) / "workbench-bench-cli-pycache"


def _env(tree: Path | None = None) -> dict[str, str]:
    # An installed package has its byte code compiled (pip does it on install); a checkout run
    # with PYTHONDONTWRITEBYTECODE would compile every module of the workbench on every start.
    # The byte code goes to a prefix under the temporary directory, never into the tree.
    env = {**os.environ, "RAGAS_DO_NOT_TRACK": "true", "PYTHONPYCACHEPREFIX": str(PYCACHE)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if tree is not None:  # another checkout's workbench package comes first on the path
        env["PYTHONPATH"] = str(tree)
    return env


def wall(argv: list[str], tree: Path | None = None) -> float:
    """Wall time of one process; ``tree``: run another checkout's workbench (from there)."""
    t0 = time.perf_counter()
    done = subprocess.run(argv, cwd=tree or ROOT, capture_output=True, env=_env(tree))
    elapsed = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(
            f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode()[-2000:]}"
        )
    return elapsed


def _cpu_wall(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one process (CPU: steadier than wall on a loaded machine)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(argv, cwd=ROOT, capture_output=True, env=env, check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def no_bytecode_cost(repeats: int) -> dict[str, dict[str, float]]:
    """Median wall and CPU time of ``validate`` and ``--help`` as a container runs them (no byte
    code written; what ``make venv`` compiled beside the sources is read) over the usual run."""
    cli = commands()
    env = {k: v for k, v in _env().items() if k != "PYTHONPYCACHEPREFIX"}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    out = {}
    for name in ("help", "validate"):
        plain: list[tuple[float, float]] = []
        without: list[tuple[float, float]] = []
        for _ in range(repeats):
            plain.append(_cpu_wall(cli[name], _env()))
            without.append(_cpu_wall(cli[name], env))
        figures = {}
        for i, kind in enumerate(("wall", "cpu")):
            cached = statistics.median(p[i] for p in plain)
            dont = statistics.median(w[i] for w in without)
            figures |= {
                f"cached_{kind}_s": round(cached, 3),
                f"no_bytecode_{kind}_s": round(dont, 3),
            }
            figures[f"{kind}_ratio"] = round(dont / cached, 2)
        out[name] = figures
    return out


def largest_imports(argv: list[str], top: int = 10) -> list[tuple[str, float]]:
    """Cumulative import time (ms) of the ``top`` largest top-level imports of ``argv``."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=_env(),
    )
    rows = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = line.split("|")
        if cumulative.strip().isdigit() and not name.startswith(
            "   "
        ):  # a direct import, not nested
            rows.append((name.strip(), int(cumulative) / 1000))
    return sorted(rows, key=lambda row: -row[1])[:top]


_WITH_DOCSTRINGS = (
    "import pydantic._internal._config as c; c.config_defaults['use_attribute_docstrings'] = True; "
)


def docstring_cost(repeats: int) -> dict[str, dict[str, float]]:
    """Median wall time as is and with pydantic's attribute-docstring extraction at import."""
    cases = {
        "validate": "from workbench.cli import main; main(['validate', 'data/demo'])",
        "import workbench.reports": "import workbench.reports",
    }
    out = {}
    for name, code in cases.items():
        on: list[float] = []
        off: list[float] = []
        for _ in range(repeats):
            on.append(wall([sys.executable, "-c", _WITH_DOCSTRINGS + code]))
            off.append(wall([sys.executable, "-c", code]))
        out[name] = {
            "use_attribute_docstrings_s": round(statistics.median(on), 3),
            "as_is_s": round(statistics.median(off), 3),
            "ratio": round(statistics.median(on) / statistics.median(off), 2),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument(
        "--importtime", action="store_true", help="Also list the largest imports of validate."
    )
    parser.add_argument(
        "--docstrings", action="store_true", help="Also measure what use_attribute_docstrings cost."
    )
    parser.add_argument(
        "--before",
        type=Path,
        default=None,
        help=(
            "Another checkout (e.g. `git archive <commit> workbench data | tar -x -C DIR`): "
            "its commands are measured in the same run, interleaved, as 'before: <command>'."
        ),
    )
    parser.add_argument(
        "--no-bytecode",
        action="store_true",
        help="Also measure validate and --help under PYTHONDONTWRITEBYTECODE=1.",
    )
    args = parser.parse_args()
    runs: dict[str, tuple[list[str], Path | None]] = {}
    for name, argv in commands().items():
        runs[name] = (argv, None)
        if args.before is not None and name != "python -c pass":
            runs[f"before: {name}"] = (argv, args.before.resolve())
    for argv, tree in runs.values():  # warm the byte-code caches and the page cache once
        wall(argv, tree)
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(args.repeats):
        for name, (argv, tree) in runs.items():
            times[name].append(wall(argv, tree))
    baseline = statistics.median(times["python -c pass"])
    figures = {
        name: {
            "median_s": round(statistics.median(runs), 3),
            "min_s": round(min(runs), 3),
            "over_python_pass": round(statistics.median(runs) / baseline, 1),
        }
        for name, runs in times.items()
    }
    out: dict[str, object] = {
        "repeats": args.repeats,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "figures": figures,
        "targets_s": TARGETS_S,
        "met": {name: figures[name]["median_s"] < limit for name, limit in TARGETS_S.items()},
    }
    if args.before is not None:
        out["before_over_after"] = {
            name: round(figures[f"before: {name}"]["median_s"] / figures[name]["median_s"], 1)
            for name in times
            if f"before: {name}" in times
        }
    if args.importtime:
        validate_argv = [
            sys.executable,
            "-c",
            "from workbench.cli import main; main(['validate', 'data/demo'])",
        ]
        out["largest_imports_of_validate_ms"] = dict(largest_imports(validate_argv[1:]))
    if args.docstrings:
        out["use_attribute_docstrings_cost"] = docstring_cost(args.repeats)
    if args.no_bytecode:
        out["dont_write_bytecode_cost"] = no_bytecode_cost(args.repeats)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
