"""Benchmark: each speed-up that reaches into another library's internals, on against off.

Such a speed-up stays only while it saves at least 10% of a user-visible command (issue 27),
behind one switch, an environment variable. This script runs the real ``workbench`` command (a
subprocess, as a user runs it) with the switch on and off, interleaved (on, off, off, on, ...),
``--repeats`` times each, in the same run, and reports the medians of wall time and of CPU time
(the command and every process it waited for: the certification kernel, not the fake model
server) and the savings ``1 - on / off``. On the shared 2-core machine wall time follows the
other sessions' load; CPU time is the steadier figure.

    .venv/bin/python bench/bench_patches.py [--repeats 7] [--only prepared iri] [--cases 1000]
        [--src DIR]   # also the switch on in another checkout (DIR holds its workbench/)

Patches (the switch; the scenarios it is measured on):

- ``prepared``: ``WORKBENCH_PREPARED_REQUESTS`` (``workbench/judges/_prepared.py``, a Ragas LLM
  request built once per candidate); ``run-demo-llm``, ``run-llm-1000`` and
  ``run-llm-1000-c128``;
- ``iri``: ``WORKBENCH_DEFER_IRI_GRAMMAR`` (``workbench/_startup.py``, jsonschema's IRI grammar
  built on first use); ``certify-demo``.

Scenarios:

- ``run-demo-llm``: ``workbench run`` of ``support-llm-judge@1`` on the demo's development
  partition (112 cases) against ``workbench fake-llm`` with the demo responder, latency 0.05 s,
  concurrency 16, as ``make demo`` runs it;
- ``run-llm-1000``: ``workbench run`` of an LLM judge on ``--cases`` synthetic cases at
  concurrency 32, latency 0.2 s (the ``bench_runs.py`` workload, through the command);
  ``run-llm-1000-c128`` the same at concurrency 128;
- ``certify-demo``: ``workbench certify`` of ``rubric-judge@2`` under ``support-release@1`` on a
  fresh copy of the demo (``bench_certify.py``'s command).

The patches measured and deleted (their figures: bench/README.md, "Speed-ups that patch other
libraries") were measured by this script at commit 1fa7e91, with their temporary switches.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from fake_server import fake_llm_process  # noqa: E402

PATCHES: dict[str, tuple[str, tuple[str, ...]]] = {
    "prepared": (
        "WORKBENCH_PREPARED_REQUESTS",
        ("run-demo-llm", "run-llm-1000", "run-llm-1000-c128"),
    ),
    "iri": ("WORKBENCH_DEFER_IRI_GRAMMAR", ("certify-demo",)),
}
"""patch -> (its switch, the scenarios it is measured on)."""


class Scenario:
    """One user-visible command, run again and again into fresh directories."""

    def __init__(self, tmp: Path, cases: int) -> None:
        self.tmp, self.cases = tmp, cases
        self.count = 0
        self.env: dict[str, str] = {}

    def fresh(self, name: str) -> Path:
        self.count += 1
        return self.tmp / f"{name}-{self.count}"

    def command(self, name: str) -> list[str]:
        wb = [sys.executable, "-m", "workbench"]
        if name.startswith("certify"):
            gold = self.fresh("gold")
            shutil.copytree(ROOT / "data" / "demo", gold)
            return [
                *wb,
                "certify",
                "--candidate",
                "data/candidates/rubric-judge@2.yaml",
                "--policy",
                "data/policies/support-release@1.yaml",
                "--gold",
                str(gold),
                "--reports",
                str(self.fresh("reports")),
            ]
        candidate = {
            "run-demo-llm": "data/candidates/support-llm-judge@1.yaml",
            "run-llm-1000": str(self.tmp / "spec" / "bench-llm@1.yaml"),
            "run-llm-1000-c128": str(self.tmp / "spec" / "bench-llm@1.yaml"),
        }[name]
        gold = str(ROOT / "data" / "demo") if "demo" in name else str(self.tmp / "synth" / "gold")
        concurrency = {"run-demo-llm": "16", "run-llm-1000": "32", "run-llm-1000-c128": "128"}[name]
        return [
            *wb,
            "run",
            "--candidate",
            candidate,
            "--gold",
            gold,
            "--partition",
            "development",
            "--out",
            str(self.fresh("out")),
            "--no-cache",
            "--no-progress",
            "--concurrency",
            concurrency,
        ]

    def cwd(self, name: str) -> Path:
        """Where the command runs: the checkout for the demo, else the temporary directory (the
        checkout's ``workbench.yaml`` lists its own reviewers, not the synthetic gold's)."""
        return ROOT if "demo" in name else self.tmp

    @contextlib.contextmanager
    def serving(self, name: str) -> Iterator[None]:
        """The fake model a scenario calls, started once, outside the timings."""
        if name == "run-demo-llm":
            with fake_llm_process(0.05, responder="workbench.demo.fake_llm:respond") as url:
                self.env = {"WORKBENCH_DEMO_LLM_URL": url, "DEMO_LLM_API_KEY": "demo-key"}
                yield
        elif name.startswith("run-llm-1000"):
            from bench_runs import write_spec

            with fake_llm_process(0.2) as url:
                write_spec(self.tmp / "spec", url)
                self.env = {"BENCH_KEY": "bench-key-not-secret"}
                yield
        else:
            self.env = {}
            yield


def timed(command: list[str], env: dict[str, str], cwd: Path = ROOT) -> tuple[float, float, int]:
    """``(wall s, CPU s of the command and what it waited for, exit code)``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1, 3, 4, 5):
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return wall, cpu, done.returncode


def measure(
    scenario: Scenario,
    name: str,
    switch: str,
    repeats: int,
    log: Callable[[str], None],
    src: Path | None = None,
) -> dict[str, object]:
    """Interleaved on/off runs of scenario ``name`` (and, with ``src``, on in that checkout);
    medians and the savings."""
    states = ("on", "off", "src") if src is not None else ("on", "off")
    figures: dict[str, list[float]] = {f"{s}_{k}": [] for s in states for k in ("wall", "cpu")}
    codes: set[int] = set()
    with scenario.serving(name):
        base = {**os.environ, "PYTHONPATH": str(ROOT), **scenario.env}
        for r in range(repeats):
            for state in states if r % 2 == 0 else states[::-1]:
                env = {**base, switch: "0" if state == "off" else "1"}
                command = scenario.command(name)
                if state == "src":  # -P: not the working directory's workbench/ first
                    env["PYTHONPATH"] = str(src)
                    command = [command[0], "-P", *command[1:]]
                wall, cpu, code = timed(command, env, scenario.cwd(name))
                codes.add(code)
                figures[f"{state}_wall"].append(wall)
                figures[f"{state}_cpu"].append(cpu)
                log(f"{switch} {name} {state}: wall {wall:.2f} s, cpu {cpu:.2f} s, exit {code}")
    med = {k: statistics.median(v) for k, v in figures.items()}
    savings = {
        f"{kind}_saving{'' if base_state == 'off' else '_over_src'}": round(
            1 - med[f"on_{kind}"] / med[f"{base_state}_{kind}"], 3
        )
        for base_state in states[1:]
        for kind in ("wall", "cpu")
    }
    return {
        "repeats": repeats,
        "exit_codes": sorted(codes),
        **{f"{k}_s": round(v, 3) for k, v in med.items()},
        **savings,
        "runs": {k: [round(x, 3) for x in v] for k, v in figures.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cases", type=int, default=1000, help="synthetic development cases")
    parser.add_argument("--only", nargs="+", choices=sorted(PATCHES), default=sorted(PATCHES))
    parser.add_argument(
        "--src",
        type=Path,
        default=None,
        help="also run each scenario, switch on, with PYTHONPATH=SRC (another checkout's"
        " workbench/), interleaved: the saving over that tree (*_saving_over_src)",
    )
    parser.add_argument(
        "--scenarios", nargs="+", default=None, help="only these of each patch's scenarios"
    )
    args = parser.parse_args()

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    results: dict[str, object] = {"load_average_start": os.getloadavg()}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        from synth import write_synthetic

        # about a third of the synthetic cases land in development
        write_synthetic(tmp / "synth", args.cases * 3, missing_rate=0.0)
        scenario = Scenario(tmp, args.cases)
        for patch in args.only:
            switch, names = PATCHES[patch]
            results[patch] = {
                "switch": switch,
                **{
                    name: measure(scenario, name, switch, args.repeats, log, args.src)
                    for name in names
                    if args.scenarios is None or name in args.scenarios
                },
            }
    results["load_average_end"] = os.getloadavg()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
