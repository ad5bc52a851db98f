"""Benchmark: wall time of ``workbench certify`` on the demo.

Split into parent, kernel start, run and render.

Runs the real command (a subprocess, as a user would) on the demo candidate and policy into a
temporary reports root, ``--repeats`` times, and reports the median of each part from the
timings recorded by certification. ``parent_s`` is the certify process's own share, the wall
time outside the notebook and the render: interpreter start, imports, input checks, the
ledger. ``parent_imports`` splits its imports (``python -X importtime`` of the same imports,
in a fresh process): Ragas (the demo candidate is a Ragas ``@discrete_metric``, built and
checked before the ledger is touched), papermill with nbformat and its jsonschema, and
whether jsonschema's IRI grammar (``rfc3987_syntax``) was built. Baseline measured in the same
run: starting a bare kernel and executing one empty cell with papermill (the fixed cost of any
papermill job).

    .venv/bin/python bench/bench_certify.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CANDIDATE = "data/candidates/rubric-judge@2.yaml"

# What the certify process imports before the notebook starts, in its order: the command, the
# certification module, the judge (load_candidate imports the candidate's metric module), papermill.
_PARENT_IMPORTS = f"""
import workbench.cli.certify, workbench.reports
from workbench.judges import load_candidate
load_candidate({CANDIDATE!r})
import papermill
"""


def certify_once(reports: Path) -> dict[str, float]:
    # The held-out ledger belongs to the gold dataset: each repeat certifies a fresh copy.
    gold = reports.with_name(reports.name + "-gold")
    shutil.copytree(ROOT / "data" / "demo", gold)
    t0 = time.perf_counter()
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "workbench",
            "certify",
            "--candidate",
            CANDIDATE,
            "--policy",
            "data/policies/support-release@1.yaml",
            "--gold",
            str(gold),
            "--reports",
            str(reports),
            "--json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t0
    if out.returncode == 2:
        raise SystemExit(out.stderr)
    result = json.loads(out.stdout)
    timings = result["timings_s"]
    parent = wall - timings["notebook_total"] - timings["render"] - timings.get("lock", 0.0)
    return {
        "wall_s": wall,
        "parent_s": parent,
        "kernel_start_s": timings.get("kernel_start_and_overhead", 0.0),
        "run_s": timings.get("cells_run", 0.0),
        "render_s": timings["render"] + timings.get("lock", 0.0),
        "outcome": result["outcome"],
    }  # type: ignore[dict-item]


def parent_imports() -> dict[str, object]:
    """Seconds the parent's imports take in a fresh process, with Ragas' and papermill's share."""
    code = _PARENT_IMPORTS + "import sys; print('lark' in sys.modules)"
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], cwd=ROOT, capture_output=True, text=True
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
    return {
        "process_s": round(total, 3),
        "ragas_s": round(cumulative.get("ragas", 0.0), 3),
        "papermill_s": round(cumulative.get("papermill", 0.0), 3),
        "nbformat_s": round(cumulative.get("nbformat", 0.0), 3),
        "jsonschema_s": round(cumulative.get("jsonschema", 0.0), 3),
        "iri_grammar_built": done.stdout.split()[-1] == "True",
        "note": (
            "-X importtime inflates these; read them as shares, the wall figures above as times"
        ),
    }


def empty_papermill(tmp: Path) -> float:
    import nbformat
    import papermill

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell("pass")]
    src = tmp / "empty.ipynb"
    nbformat.write(nb, src)
    from workbench.reports._certify import kernel_manager_class

    t0 = time.perf_counter()
    with (
        kernel_manager_class() as manager
    ):  # the same IPC kernel certification uses (and no TCP warning)
        papermill.execute_notebook(
            str(src),
            str(tmp / "empty-out.ipynb"),
            progress_bar=False,
            kernel_name="python3",
            kernel_manager_class=manager,
        )
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    runs, baselines = [], []
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        for i in range(args.repeats):
            baselines.append(empty_papermill(tmp))
            runs.append(certify_once(tmp / f"reports{i}"))
    med = {
        k: round(statistics.median(r[k] for r in runs), 3)
        for k in ("wall_s", "parent_s", "kernel_start_s", "run_s", "render_s")
    }
    baseline = statistics.median(baselines)
    print(
        json.dumps(
            {
                "certify": med,
                "parent_share": round(med["parent_s"] / med["wall_s"], 2),
                "parent_imports": parent_imports(),
                "outcome": runs[0]["outcome"],
                "baseline_empty_papermill_s": round(baseline, 3),
                "certify_over_baseline": round(med["wall_s"] / baseline, 2),
                "target": "certify under 30 s wall",
                "met": med["wall_s"] < 30,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
