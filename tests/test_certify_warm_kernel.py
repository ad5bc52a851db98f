"""``workbench certify`` imports Ragas once: its kernel is forked from the certify process once
the inputs are checked (``workbench/reports/_kernel.py``), so the kernel inherits Ragas and the
candidate's judge instead of importing them again (issue 31).

The command runs as a user runs it, in a subprocess, with a native ``python3`` kernel spec (the
suite's zygote spec would start the kernel another way), and with a ``sitecustomize`` on
``PYTHONPATH`` whose audit hook logs every process that imports Ragas: a kernel started as a
new interpreter runs it too, so before the warm kernel the log named two processes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT_ENV, make_project

ROOT = Path(__file__).resolve().parents[1]

_SITECUSTOMIZE = """
import os, sys
_log = os.environ.get("WB_TEST_RAGAS_LOG")
def _hook(event, args):
    if event == "import" and args[0] == "ragas" and _log:
        with open(_log, "a") as f:
            f.write(f"{os.getpid()}\\n")
if _log:
    sys.addaudithook(_hook)
"""


def _env(tmp_path: Path, project: Path, log: Path) -> dict[str, str]:
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(_SITECUSTOMIZE, encoding="utf-8")
    specs = tmp_path / "jupyter" / "kernels" / "python3"
    specs.mkdir(parents=True)
    argv = ["python", "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    spec = {"argv": argv, "display_name": "Python 3", "language": "python"}
    (specs / "kernel.json").write_text(json.dumps(spec), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("WORKBENCH_TEST_")}
    path = os.pathsep.join([str(hook), str(ROOT), env.get("PYTHONPATH", "")])
    env |= {"PYTHONPATH": path, "JUPYTER_PATH": str(tmp_path / "jupyter")}
    return env | {PROJECT_ROOT_ENV: str(project), "WB_TEST_RAGAS_LOG": str(log)}


def _left_running(marker: str) -> list[int]:
    """Processes whose command line holds ``marker`` (a forked process keeps its parent's)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and marker in (proc / "cmdline").read_bytes().decode():
                found.append(int(proc.name))
        except OSError:
            continue
    return found


@pytest.mark.notebook
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_certify_imports_ragas_once_and_leaves_no_process(tmp_path: Path) -> None:
    project = make_project(tmp_path / "project")
    gold = shutil.copytree(ROOT / "data" / "demo", tmp_path / "warm-kernel-gold")
    log = tmp_path / "ragas.log"
    env = _env(tmp_path, project, log)
    argv = [sys.executable, "-m", "workbench", "certify", "--candidate"]
    argv += [str(ROOT / "data" / "candidates" / "rubric-judge@2.yaml"), "--policy"]
    argv += [str(ROOT / "data" / "policies" / "support-release@1.yaml"), "--gold", str(gold)]
    argv += ["--reports", str(tmp_path / "reports")]
    done = subprocess.run([*argv, "--json"], env=env, capture_output=True, text=True, cwd=project)
    assert done.returncode == 1, done.stderr[-3000:]  # quality_failed, as in-process
    result = json.loads(done.stdout)
    assert result["outcome"] == "quality_failed"
    # The kernel judged the held-out cases with the Ragas metric; one process imported Ragas.
    records = Path(result["report_dir"]) / "restricted" / "run" / "results.jsonl"
    assert len(records.read_text(encoding="utf-8").splitlines()) == 82
    importers = log.read_text(encoding="utf-8").split()
    assert len(importers) == 1, f"Ragas imported by {len(importers)} processes: {importers}"
    verify = [sys.executable, "-m", "workbench", "verify", result["report_dir"], "--gold"]
    checked = subprocess.run([*verify, str(gold)], env=env, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-3000:]
    assert _left_running(str(gold)) == []  # the kernel was shut down and reaped
    # Refused before the notebook (held-out content used before): the seed is stopped too.
    refused = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=project)
    assert refused.returncode == 2 and "held_out_reuse" in refused.stderr
    assert _left_running(str(gold)) == []
