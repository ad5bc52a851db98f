"""Issue 28 §3, §4, §7 and §9 (approvers): a held-out use is identified by content, recorded in
the project's one ledger, whose root no marker in a data directory can move.

Every attack of the audit, against a real certification of a copy of the demo gold: the same
held-out cases certified again after a change to the dataset (a development case appended, a
held-out record superseded by the same content), from a plain copy of the gold, from a copy with
a ``.git`` or a ``workbench.yaml`` dropped into it, and with a trivial variant of the candidate
(a changed description). Each needs ``--rerun-reason``; with one, the report and ``certify``'s
output state how often the held-out content was used before. An approver list dropped beside a
copied input is not the project's.

The helpers here are self-contained (no fixture of tests/conftest.py beyond the builders that
predate the issue), so the file runs against the workbench before the fix too.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result
from conftest import make_case, write_dataset

from workbench.cli import main
from workbench.reports import certify

ROOT = Path(__file__).resolve().parents[1]
# The tests that use this module's certified world run in its project, to read its held-out
# ledger (tests/conftest.py); every other test has a project of its own.
MODULE_PROJECT = True
DEMO = ROOT / "data" / "demo"
CANDIDATE = ROOT / "data" / "candidates" / "rubric-judge@2.yaml"
POLICY = ROOT / "data" / "policies" / "support-release@1.yaml"
ENV = "WORKBENCH_PROJECT_ROOT"
LEDGER = "held_out_ledger.jsonl"


def make_test_project(directory: Path) -> Path:
    """A project: ``workbench.yaml`` with the repository's approvers and its own ledger."""
    directory.mkdir(parents=True, exist_ok=True)
    approvers = yaml.safe_load((ROOT / "workbench.yaml").read_text(encoding="utf-8"))["approvers"]
    config = {"approvers": approvers, "held_out_ledger": LEDGER}
    (directory / "workbench.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return directory


def run_certify(gold: Path, reports: Path, *extra: str, candidate: Path = CANDIDATE) -> Result:
    args = ["certify", "--candidate", str(candidate), "--policy", str(POLICY)]
    result = CliRunner().invoke(
        main, [*args, "--gold", str(gold), "--reports", str(reports), *extra]
    )
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert "Traceback" not in result.output
    return result


def gold_rows(gold: Path) -> list[dict[str, Any]]:
    text = (gold / "gold.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def append_rows(gold: Path, *rows: dict[str, Any]) -> None:
    with (gold / "gold.jsonl").open("a", encoding="utf-8") as fh:
        fh.writelines(json.dumps(row) + "\n" for row in rows)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One certification of rubric-judge@2 (it judges the held-out partition) on a copy of the
    demo gold inside a project of its own; the tests below try to certify the same held-out
    content again and are refused before anything is written."""
    base = tmp_path_factory.mktemp("identity")
    project = make_test_project(base / "project")
    gold = project / "data" / "gold"
    shutil.copytree(DEMO, gold)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(ROOT)
        mp.setenv(ENV, str(project))
        first = certify(CANDIDATE, POLICY, gold, reports_root=base / "reports")
        yield {"project": project, "gold": gold, "first": first, "base": base}


def _refreeze(gold: Path) -> None:
    """The changed dataset frozen as a new release by a listed approver (certification needs a
    frozen gold: `gold_not_frozen`), as whoever changed it would do."""
    approver = yaml.safe_load((ROOT / "workbench.yaml").read_text(encoding="utf-8"))["approvers"][0]
    result = CliRunner().invoke(main, ["freeze", str(gold), "--approver", approver])
    assert result.exit_code == 0, result.output


def _appended_development_case(gold: Path) -> None:
    dev = next(r for r in gold_rows(gold) if r["partition"] == "development")
    append_rows(gold, {**dev, "case_id": "zz-extra-dev", "group": "zz-extra-group"})
    _refreeze(gold)


def _superseded_with_the_same_content(gold: Path) -> None:
    held = next(r for r in gold_rows(gold) if r["partition"] == "held_out")
    append_rows(gold, {**held, "case_id": held["case_id"] + "-v2", "supersedes": held["case_id"]})
    _refreeze(gold)


def _git_marker(gold: Path) -> None:
    (gold / ".git").mkdir()


def _workbench_yaml_marker(gold: Path) -> None:
    approvers = yaml.safe_load((ROOT / "workbench.yaml").read_text(encoding="utf-8"))["approvers"]
    config = {"approvers": approvers, "held_out_ledger": "fresh.jsonl"}
    (gold / "workbench.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")


def _plain_copy(gold: Path) -> None:
    del gold


@pytest.mark.notebook
@pytest.mark.parametrize(
    "change",
    [
        _appended_development_case,
        _superseded_with_the_same_content,
        _plain_copy,
        _git_marker,
        _workbench_yaml_marker,
    ],
    ids=lambda f: f.__name__.strip("_"),
)
def test_the_same_held_out_content_needs_a_rerun_reason(
    world: dict[str, Any], tmp_path: Path, change: Any
) -> None:
    """Attacks 3 and 4: another dataset hash, another directory or a marker in the data
    directory; the held-out items are the same, so it is the same held-out content."""
    gold = tmp_path / "renamed-gold"
    shutil.copytree(world["gold"], gold)
    change(gold)
    reports = tmp_path / "reports"
    result = run_certify(gold, reports)
    assert result.exit_code == 2, result.output
    assert "held_out_reuse" in result.stderr and world["first"].report_id in result.stderr
    assert "overlap 100%" in result.stderr
    assert not reports.exists() and not (gold / LEDGER).exists()  # nothing allocated or recorded
    assert not (gold / "fresh.jsonl").exists()


@pytest.mark.notebook
@pytest.mark.parametrize(
    "change",
    [_appended_development_case, _superseded_with_the_same_content],
    ids=lambda f: f.__name__.strip("_"),
)
def test_the_same_dataset_changed_in_place_needs_a_rerun_reason(
    world: dict[str, Any], tmp_path: Path, change: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attack 3 where it was found: the certified dataset itself gets a development case or a
    superseding record with the same content (a new dataset hash, a new held-out manifest); its
    held-out items are unchanged. (A copy of the whole project, data and ledger, so the module's
    stays as it is.)"""
    project = tmp_path / "project"
    shutil.copytree(world["project"], project)
    for path in project.rglob("*"):
        path.chmod(path.stat().st_mode | 0o200)
    monkeypatch.setenv(ENV, str(project))
    gold = project / "data" / "gold"
    change(gold)
    reports = tmp_path / "reports"
    result = run_certify(gold, reports)
    assert result.exit_code == 2, result.output
    assert "held_out_reuse" in result.stderr and world["first"].report_id in result.stderr
    assert "held-out content used once before (overlap 100%)" in result.stderr
    assert not reports.exists()


@pytest.mark.notebook
def test_a_trivial_variant_of_the_candidate_needs_a_rerun_reason_and_is_counted(
    world: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attack 7: the same name@version with a changed description, on the same held-out cases:
    refused without a reason; with one it certifies, and the ledger, the report and the
    command's output state the earlier use."""
    spec = yaml.safe_load(CANDIDATE.read_text(encoding="utf-8"))
    spec["description"] = "the same judge, described again"
    variant = tmp_path / "candidates" / CANDIDATE.name
    variant.parent.mkdir()
    variant.write_text(yaml.safe_dump(spec), encoding="utf-8")
    reports = tmp_path / "reports"
    refused = run_certify(world["gold"], reports, candidate=variant)
    assert refused.exit_code == 2 and "held_out_reuse" in refused.stderr, refused.output
    assert not reports.exists()
    # with a reason, in a copy of the project (the module's ledger stays as it is)
    project = tmp_path / "project"
    shutil.copytree(world["project"], project, ignore=shutil.ignore_patterns("data"))
    for path in project.rglob("*"):
        path.chmod(path.stat().st_mode | 0o200)
    monkeypatch.setenv(ENV, str(project))
    rerun = run_certify(world["gold"], reports, "--rerun-reason", "variant", candidate=variant)
    assert rerun.exit_code in (0, 1), rerun.output  # certified or quality failed: it ran
    assert "held-out content used once before (overlap 100%)" in rerun.stdout
    rows = [json.loads(line) for line in (project / LEDGER).read_text().splitlines()]
    started = [r for r in rows if r["event"] == "started"]
    assert [r.get("held_out_prior_uses") for r in started] == [0, 1]
    assert started[0]["held_out_items_sha256"] == started[1]["held_out_items_sha256"]
    html = next(reports.rglob("report.html")).read_text(encoding="utf-8")
    assert "held-out content used once before (overlap 100%)" in html


@pytest.mark.notebook
def test_a_damaged_held_out_items_file_is_refused(
    world: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    shutil.copytree(world["project"], project, ignore=shutil.ignore_patterns("data"))
    (keys,) = (project / (LEDGER + ".items")).iterdir()
    keys.chmod(0o644)
    keys.write_text(keys.read_text().replace("a", "b", 1))
    monkeypatch.setenv(ENV, str(project))
    reports = tmp_path / "reports"
    result = run_certify(world["gold"], reports, "--rerun-reason", "x")
    assert result.exit_code == 2 and "ledger_items_invalid" in result.stderr, result.output
    assert not reports.exists()


def test_certifying_outside_any_project_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No ``workbench.yaml`` from the working directory up, no ``$WORKBENCH_PROJECT_ROOT``: no
    ledger to record the use in, so nothing runs (never a fresh ledger beside the data)."""
    gold = tmp_path / "gold"
    shutil.copytree(DEMO, gold)
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    result = run_certify(gold, tmp_path / "reports")
    assert result.exit_code == 2 and "project_root_missing" in result.stderr, result.output
    assert "workbench init" in result.stderr
    assert not (gold / LEDGER).exists() and not (tmp_path / "reports").exists()


def test_a_project_without_a_declared_ledger_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gold = tmp_path / "gold"
    shutil.copytree(DEMO, gold)
    project = make_test_project(tmp_path / "project")
    config = yaml.safe_load((project / "workbench.yaml").read_text(encoding="utf-8"))
    del config["held_out_ledger"]
    (project / "workbench.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    monkeypatch.setenv(ENV, str(project))
    result = run_certify(gold, tmp_path / "reports")
    assert result.exit_code == 2 and "held_out_ledger_undeclared" in result.stderr, result.output
    assert not (gold / LEDGER).exists() and not (tmp_path / "reports").exists()


def test_an_approver_list_beside_a_copied_input_is_not_the_projects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attack 9 (approvers): a ``workbench.yaml`` dropped beside an input brings no list."""
    project = make_test_project(tmp_path / "project")
    monkeypatch.setenv(ENV, str(project))
    gold = write_dataset(tmp_path / "copied" / "gold", [make_case("a"), make_case("b", "fail")])
    (gold / "workbench.yaml").write_text("approvers: [Mallory]\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["freeze", str(gold), "--approver", "Mallory"])
    assert result.exit_code == 2 and "approver_unknown" in result.output, result.output
    assert not (gold / "releases.jsonl").exists()
    assert os.environ[ENV] == str(project)


@pytest.mark.parametrize("marker", ["workbench.yaml", ".git"])
def test_a_marker_in_the_data_directory_does_not_move_the_authority_record(
    tmp_path: Path, marker: str
) -> None:
    """A revoked judge's record must not be escaped by a fresh record: a `workbench.yaml`
    declaring another `authority_record:` (or a `.git`) dropped into the gold directory is not
    the project's configuration."""
    from workbench.authority import authority_path_for

    gold = tmp_path / "gold"
    shutil.copytree(DEMO, gold)
    before = authority_path_for(gold)
    if marker == ".git":
        (gold / ".git").mkdir()
    fresh = tmp_path / "fresh" / "authority.jsonl"
    (gold / "workbench.yaml").write_text(f"authority_record: {fresh}\n", encoding="utf-8")
    assert authority_path_for(gold) == before == gold / "authority.jsonl"
