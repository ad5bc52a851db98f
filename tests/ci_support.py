"""Shared helpers of the CI-lane tests: a copy of the demo project, and the JUnit shape check."""

from __future__ import annotations

import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def copy_project(dest: Path, *, config: bool = True) -> Path:
    """``data/`` (and ``workbench.yaml``) of the demo project in ``dest``; ``notebooks/`` empty."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copytree(ROOT / "data", dest / "data")
    (dest / "notebooks").mkdir()
    if config:
        shutil.copyfile(ROOT / "workbench.yaml", dest / "workbench.yaml")
    return dest


def git(repo: Path, *args: str) -> str:
    run = subprocess.run(
        [
            "git",
            "-C",
            str(repo),
            "-c",
            "user.email=ci@test",
            "-c",
            "user.name=ci-test",
            "-c",
            "commit.gpgsign=false",
            *args,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return run.stdout


def git_project(dest: Path) -> Path:
    """A copy of the demo project as a git repository with one commit (runs/ ignored)."""
    copy_project(dest)
    (dest / ".gitignore").write_text("runs/\n", encoding="utf-8")
    git(dest, "init", "-q", "-b", "main")
    git(dest, "add", "-A")
    git(dest, "commit", "-qm", "demo project")
    return dest


def assert_junit_shape(text: str) -> ET.Element:
    """The Ant/Surefire JUnit shape CI reporters read, checked element by element.

    Root ``testsuites`` (name, tests, failures, errors, skipped, time); ``testsuite`` children
    (name, tests, failures, errors, skipped, time, timestamp) whose counts equal their
    testcases; ``testcase`` children (classname, name, time) holding at most one of
    ``failure``/``error``/``skipped`` (each with a ``message``) and optionally ``system-out``;
    the root's counts are the sums.
    """
    root = ET.fromstring(text.encode("utf-8"))
    assert root.tag == "testsuites"
    assert set(root.attrib) == {"name", "tests", "failures", "errors", "skipped", "time"}
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in root:
        assert suite.tag == "testsuite", suite.tag
        assert set(suite.attrib) == {
            "name",
            "tests",
            "failures",
            "errors",
            "skipped",
            "time",
            "timestamp",
        }
        float(suite.attrib["time"])
        cases = list(suite)
        assert cases and all(c.tag == "testcase" for c in cases)
        counts = {"tests": len(cases), "failures": 0, "errors": 0, "skipped": 0}
        for case in cases:
            assert (
                set(case.attrib) == {"classname", "name", "time"}
                and case.attrib["name"]
                and case.attrib["classname"]
            )
            float(case.attrib["time"])
            outcomes = [child for child in case if child.tag in ("failure", "error", "skipped")]
            assert len(outcomes) <= 1 and all(
                child.tag in ("failure", "error", "skipped", "system-out") for child in case
            )
            for child in outcomes:
                assert "message" in child.attrib and "type" in child.attrib
                counts[
                    {"failure": "failures", "error": "errors", "skipped": "skipped"}[child.tag]
                ] += 1
        for key, value in counts.items():
            assert int(suite.attrib[key]) == value, (suite.attrib["name"], key)
            totals[key] += value
    for key, value in totals.items():
        assert int(root.attrib[key]) == value, key
    return root


def junit_cases(root: ET.Element) -> dict[str, str]:
    """``group/name`` -> ``passed`` | ``failure`` | ``error`` | ``skipped`` of a parsed report."""
    out: dict[str, str] = {}
    for suite in root:
        for case in suite:
            tags = [c.tag for c in case if c.tag in ("failure", "error", "skipped")]
            out[f"{suite.attrib['name']}/{case.attrib['name']}"] = tags[0] if tags else "passed"
    return out
