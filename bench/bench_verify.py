"""Benchmark: what every command pays before it trusts its inputs (issue 31, session 33).

Three steps, each measured in a fresh process (``python -c``, byte code cached under a
temporary ``PYTHONPYCACHEPREFIX``), the modules each step needs imported before the clock
starts (``import_s`` apart), the steps and the trees interleaved over the repeats so that the
load of the shared machine hits them alike:

- ``verify``: :func:`workbench.reports.verify_path` of one locked demo certification
  (``workbench certify --candidate data/candidates/rubric-judge@2.yaml --policy
  data/policies/support-release@1.yaml --gold data/demo``, made once in a temporary copy of the
  project, unmeasured);
- ``verify_gold``: the same with ``gold=data/demo`` (the held-out records compared with the
  real gold, its ledger read);
- ``candidates``: :func:`workbench.judges.load_candidate` of every demo candidate that loads
  without an endpoint (the function judges: their code fingerprint);
- ``gold``: :func:`workbench.gold.load_dataset` of ``data/demo`` (the gold validation).

Per step, CPU time (``process_time``) of the first call in the process (``first_cpu_s``: what
one command pays) and the median of five further calls in the same process (``again_cpu_s``:
what a test module or a notebook pays for each further call; nothing verified is reused across
calls, only what is keyed by a content hash), as ``[median, min, max]``; with ``--src DIR``
the same for another checkout's ``workbench`` (``git archive main workbench | tar -x -C
DIR``), and the ratio ``this / src`` of the medians. Every run's result (problem codes; the
files each candidate's fingerprint covers and its dependency versions; the dataset hash) is
hashed: both trees must print the same.

    .venv/bin/python bench/bench_verify.py [--repeats 7] [--src DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from _child import PRELUDE  # noqa: E402

CANDIDATES = (
    "coverage-judge@1",
    "policy-ranker@1",
    "rubric-judge@1",
    "rubric-judge@2",
    "rubric-judge@3",
)
STEPS = ("verify", "verify_gold", "candidates", "gold")

MEASURE = (
    PRELUDE
    + r"""
import hashlib, importlib
step, report, candidates = sys.argv[1], sys.argv[2], sys.argv[3:]
t_import = time.perf_counter()
from workbench.reports import verify_path
from workbench.judges import load_candidate
import yaml
from workbench.gold import load_dataset
if step == "candidates":  # the judges' own modules (Ragas...): imports, not the fingerprint
    for c in candidates:
        fn = yaml.safe_load(open(c, encoding="utf-8")).get("function")
        if fn:
            importlib.import_module(fn.partition(":")[0])
t_import = time.perf_counter() - t_import
def verify(gold=None):
    return [sorted(p.code for p in v.problems) for v in verify_path(report, gold=gold)]
def call():
    if step == "verify":
        return verify()
    if step == "verify_gold":
        return verify("data/demo")
    if step == "candidates":
        ids = [load_candidate(c).identity.params for c in candidates]  # files covered, versions
        return [[sorted(p.get("code_sha256", {})), p.get("dependencies")] for p in ids]
    if step == "gold":
        return load_dataset("data/demo").sha256
    raise SystemExit(step)
c0 = time.process_time()
first = call()
first_cpu = time.process_time() - c0
again_cpu = []
for _ in range(5):
    c0 = time.process_time()
    again = call()
    again_cpu.append(time.process_time() - c0)
    assert first == again, (first, again)
digest = hashlib.sha256(json.dumps(first, sort_keys=True).encode()).hexdigest()
print(json.dumps({"first_cpu_s": first_cpu, "again_cpu_s": sorted(again_cpu)[2],
                  "import_s": t_import, "result": digest}))
"""
)


def _project(tmp: Path, env: dict[str, str]) -> tuple[Path, Path]:
    """A copy of the demo project and one locked certification in it (made once)."""
    project = tmp / "project"
    (project / "data").mkdir(parents=True)
    shutil.copy(ROOT / "workbench.yaml", project / "workbench.yaml")
    for name in ("candidates", "policies", "controls", "demo"):
        shutil.copytree(ROOT / "data" / name, project / "data" / name)
    subprocess.run(
        [sys.executable, "-m", "workbench", "certify", "--candidate",
         "data/candidates/rubric-judge@2.yaml", "--policy", "data/policies/support-release@1.yaml",
         "--gold", "data/demo", "--reports", "reports"],
        cwd=project, env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True, check=False,
    )  # fmt: skip
    locks = sorted((project / "reports").rglob("lock.json"))
    if not locks:
        raise SystemExit("certify wrote no locked report")
    return project, locks[0].parent


def _env(pycache: Path, src: Path | None) -> dict[str, str]:
    env = {**os.environ, "RAGAS_DO_NOT_TRACK": "true", "PYTHONPYCACHEPREFIX": str(pycache)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("BENCH_WORKBENCH_SRC", None)
    env["PYTHONPATH"] = str(ROOT)
    if src is not None:
        env["BENCH_WORKBENCH_SRC"] = str(src)
    return env


def measure(step: str, project: Path, report: Path, env: dict[str, str]) -> dict[str, Any]:
    candidates = [f"data/candidates/{c}.yaml" for c in CANDIDATES]
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, step, str(report), *candidates],
        cwd=project, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise SystemExit(f"{step} failed ({done.returncode}): {done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def _spread(values: list[float]) -> list[float]:
    return [round(statistics.median(values), 4), round(min(values), 4), round(max(values), 4)]


def run(repeats: int, src: Path | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        envs = {"this": _env(base / "pycache-this", None)}
        if src is not None:
            envs["src"] = _env(base / "pycache-src", src)
        project, report = _project(base, envs["this"])
        for env in envs.values():  # byte code compiled, unmeasured
            measure("verify", project, report, env)
        runs: dict[str, dict[str, list[dict[str, Any]]]] = {
            tree: {step: [] for step in STEPS} for tree in envs
        }
        for _ in range(repeats):
            for step in STEPS:
                for tree, env in envs.items():
                    runs[tree][step].append(measure(step, project, report, env))
    return _figures(runs, repeats)


def _figures(runs: dict[str, dict[str, list[dict[str, Any]]]], repeats: int) -> dict[str, Any]:
    out: dict[str, Any] = {"repeats": repeats, "loadavg": Path("/proc/loadavg").read_text()[:14]}
    for tree, steps in runs.items():
        out[tree] = {
            step: {
                **{k: _spread([r[k] for r in rs]) for k in ("first_cpu_s", "again_cpu_s")},
                "import_s": _spread([r["import_s"] for r in rs]),
                "results": sorted({r["result"][:16] for r in rs}),
            }
            for step, rs in steps.items()
        }
    if "src" in runs:
        out["ratio_this_over_src"] = {
            step: {
                k: round(out["this"][step][k][0] / out["src"][step][k][0], 3)
                for k in ("first_cpu_s", "again_cpu_s")
            }
            for step in STEPS
        }
        out["same_results"] = all(
            out["this"][s]["results"] == out["src"][s]["results"] for s in STEPS
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--src", type=Path, help="another checkout's tree, measured alike")
    args = parser.parse_args()
    started = time.time()
    figures = run(args.repeats, args.src)
    figures["elapsed_s"] = round(time.time() - started, 1)
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
