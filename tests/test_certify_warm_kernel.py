"""``workbench certify`` imports Ragas once: its kernel is forked from the certify process once
the inputs are checked (``workbench/reports/_kernel.py``), so the kernel inherits Ragas and the
candidate's judge instead of importing them again (issue 31).

The command runs as a user runs it, in a subprocess, with a native ``python3`` kernel spec (the
suite's zygote spec would start the kernel another way), and with a ``sitecustomize`` on
``PYTHONPATH`` whose audit hook logs every process that imports Ragas: a kernel started as a
new interpreter runs it too, so before the warm kernel the log named two processes.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT_ENV, make_project

ROOT = Path(__file__).resolve().parents[1]


def _ragas_hook() -> tuple[str, str]:
    """``bench/bench_certify.py``'s audit hook and the variable naming its log."""
    path = ROOT / "bench" / "bench_certify.py"
    spec = importlib.util.spec_from_file_location("bench_certify", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.RAGAS_HOOK, module.RAGAS_LOG_ENV


def _env(tmp_path: Path, project: Path, log: Path) -> dict[str, str]:
    hook = tmp_path / "hook"
    hook.mkdir()
    code, log_env = _ragas_hook()
    (hook / "sitecustomize.py").write_text(code, encoding="utf-8")
    specs = tmp_path / "jupyter" / "kernels" / "python3"
    specs.mkdir(parents=True)
    argv = ["python", "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    spec = {"argv": argv, "display_name": "Python 3", "language": "python"}
    (specs / "kernel.json").write_text(json.dumps(spec), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("WORKBENCH_TEST_")}
    path = os.pathsep.join([str(hook), str(ROOT), env.get("PYTHONPATH", "")])
    env |= {"PYTHONPATH": path, "JUPYTER_PATH": str(tmp_path / "jupyter")}
    return env | {PROJECT_ROOT_ENV: str(project), log_env: str(log)}


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
    importers = log.read_text(encoding="utf-8").splitlines()
    assert len(importers) == 1, f"Ragas imported by {len(importers)} processes: {importers}"
    verify = [sys.executable, "-m", "workbench", "verify", result["report_dir"], "--gold"]
    checked = subprocess.run([*verify, str(gold)], env=env, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-3000:]
    assert _left_running(str(gold)) == []  # the kernel was shut down and reaped
    # Refused before the notebook (held-out content used before): the seed is stopped too.
    refused = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=project)
    assert refused.returncode == 2 and "held_out_reuse" in refused.stderr
    assert _left_running(str(gold)) == []


def test_only_a_spec_running_this_interpreters_launcher_is_forked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workbench.reports._kernel import native_kernel

    tail = ["-f", "{connection_file}"]
    specs = {
        "bare-python": ["python", "-m", "ipykernel_launcher", *tail],
        "this-python": [sys.executable, "-m", "ipykernel_launcher", *tail],
        "other-python": ["/opt/elsewhere/bin/python3", "-m", "ipykernel_launcher", *tail],
        "a-script": [sys.executable, "tests/_kernel_zygote.py", "client", *tail],
        "other-module": [sys.executable, "-m", "other_kernel", *tail],
    }
    for name, argv in specs.items():
        folder = tmp_path / "kernels" / name
        folder.mkdir(parents=True)
        spec = {"argv": argv, "display_name": name, "language": "python"}
        (folder / "kernel.json").write_text(json.dumps(spec), encoding="utf-8")
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    forked = {name: native_kernel(name) for name in [*specs, "no-such-kernel"]}
    assert forked == {
        "bare-python": True,
        "this-python": True,
        "other-python": False,
        "a-script": False,
        "other-module": False,
        "no-such-kernel": False,
    }


@pytest.mark.notebook
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_refusal_after_the_seed_is_forked_stops_it(tmp_path: Path) -> None:
    """The seed is forked once the candidate's judge is built, before the gold is checked: a gold
    refused then (never frozen) stops the seed before certify exits (without that, the seed
    would still be importing when certify returned)."""
    project = make_project(tmp_path / "project")
    gold = shutil.copytree(ROOT / "data" / "demo", tmp_path / "unfrozen-gold")
    (gold / "releases.jsonl").unlink()
    env = _env(tmp_path, project, tmp_path / "ragas.log")
    argv = [sys.executable, "-m", "workbench", "certify", "--candidate"]
    argv += [str(ROOT / "data" / "candidates" / "rubric-judge@2.yaml"), "--policy"]
    argv += [str(ROOT / "data" / "policies" / "support-release@1.yaml"), "--gold", str(gold)]
    # Output to files, not pipes: a seed holds the pipes open, so reading them to their end
    # would wait for it. Only certify itself is waited for.
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        process = subprocess.Popen(argv, env=env, stdout=stdout, stderr=stderr, cwd=project)
        code = process.wait()
    left = _left_running(str(gold))
    message = err.read_text(encoding="utf-8")
    assert code == 2 and "gold_not_frozen" in message, message[-3000:]
    assert left == []
    assert not (project / "reports").exists()  # refused before the ledger
