"""The approval kernel (issue 27 §1): every approved input is frozen through one mechanism and
checked by one lineage check, with the same codes, at every use.

The attacks of the audit, each refused now (each fails on the main before the kernel: there,
a new fixture version needed no ``supersedes:``, the claim panel had no release, and a
control suite could not be frozen at all):

- a ranking fixture relabelled through a *new* version, with no ``supersedes:``/``changes:``
  entry and any approver name;
- one adjudicated claim of the noise claim-review panel flipped;
- a control suite edited in place between two certifications.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from ci_support import copy_project
from click.testing import CliRunner
from conftest import approve, current_project, make_case, use_project

from workbench.approval import (
    Change,
    Snapshot,
    check_lineage,
    freeze,
    freeze_path,
    load_approvers,
    read_release_log,
)
from workbench.cli.main import main
from workbench.controls import load_suite
from workbench.errors import WorkbenchError
from workbench.gold import validate_dataset
from workbench.noise import load_pairs, load_panel
from workbench.ranking import load_fixtures


def _codes(exc: pytest.ExceptionInfo[WorkbenchError]) -> list[tuple[str | None, str]]:
    return [(p.case_id, p.code) for p in exc.value.problems]


def _relabelled_v3(project: Path, **header: Any) -> Path:
    """support-ranking@2 with pw-lockout-001's two best candidates swapped, as version 3."""
    doc = yaml.safe_load((project / "data/ranking/support-ranking@2.yaml").read_text())
    doc.pop("supersedes"), doc.pop("changes")
    doc |= {"version": "3", **header}
    fixture = next(f for f in doc["fixtures"] if f["case_id"] == "pw-lockout-001")
    swapped = [fixture["expected_order"][1], fixture["expected_order"][0], "manual-unlock"]
    fixture["expected_order"] = swapped
    for review in fixture["reviews"]:
        review["order"] = swapped
    path = project / "data/ranking/support-ranking@3.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def test_a_relabel_through_a_new_fixture_version_is_refused_at_every_use(tmp_path: Path) -> None:
    project = copy_project(tmp_path / "p")
    v3 = _relabelled_v3(project)
    with pytest.raises(WorkbenchError) as info:
        load_fixtures(v3)
    assert _codes(info) == [(None, "supersedes_missing")]
    assert "'1', '2'" in info.value.problems[0].message
    # "any approver name" cannot freeze it either
    out = CliRunner().invoke(main, ["freeze", str(v3), "--approver", "Mallory"])
    assert out.exit_code == 2 and "approver_unknown" in out.output
    assert "supersedes_missing" in out.output and not (v3.parent / "releases.jsonl").read_text(
        encoding="utf-8"
    ).count('"version": "3"')
    # naming the superseded version is not enough: the relabel needs an approved change entry
    v3 = _relabelled_v3(project, supersedes="2")
    with pytest.raises(WorkbenchError) as info:
        load_fixtures(v3)
    assert _codes(info) == [("pw-lockout-001", "change_unrecorded")]
    assert "relabelled (label, reviews)" in info.value.problems[0].message
    # the gate's inputs and the CI contracts lane refuse it the same way
    run = CliRunner().invoke(
        main,
        ["ranking", "agreement", "--fixtures", str(v3)],
    )
    assert run.exit_code == 2 and "change_unrecorded" in run.output
    lane = CliRunner().invoke(
        main, ["ci", "contracts", "--project", str(project), "--out", str(tmp_path / "ci")]
    )
    assert lane.exit_code == 2 and "change_unrecorded" in lane.output


def test_a_change_entry_needs_a_listed_approver(tmp_path: Path) -> None:
    project = copy_project(tmp_path / "p")
    v3 = _relabelled_v3(
        project,
        supersedes="2",
        changes=[
            {
                "case_id": "pw-lockout-001",
                "old_order": ["reset-link-60min", "reset-link-only", "manual-unlock"],
                "new_order": ["reset-link-only", "reset-link-60min", "manual-unlock"],
                "approver": "Mallory",
                "reason": "looks better",
                "approved_on": "2026-12-06",
            }
        ],
    )
    with pytest.raises(WorkbenchError) as info:
        load_fixtures(v3)
    assert _codes(info) == [(None, "approver_unknown")] and "Mallory" in str(info.value)
    text = v3.read_text(encoding="utf-8").replace("Mallory", "S. Lindqvist (support quality lead)")
    v3.write_text(text, encoding="utf-8")
    assert load_fixtures(v3).change_for("pw-lockout-001") is not None  # recorded and approved


def test_flipping_an_adjudicated_claim_of_the_frozen_panel_is_refused(tmp_path: Path) -> None:
    project = copy_project(tmp_path / "p")
    noise = project / "data/noise"
    suite = load_pairs(noise / "support-noise@2.yaml")
    panel_path = noise / "support-noise@2.panel.yaml"
    assert load_panel(panel_path, suite).adjudications  # the committed panel is frozen and loads
    doc = yaml.safe_load(panel_path.read_text(encoding="utf-8"))
    claim = doc["adjudications"][0]["claims"][0]
    claim["incorrect"] = not claim["incorrect"]
    panel_path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    with pytest.raises(WorkbenchError) as info:
        load_panel(panel_path, suite)
    (problem,) = info.value.problems
    member = f"{doc['adjudications'][0]['pair_id']}:{doc['adjudications'][0]['member']}"
    assert (problem.case_id, problem.code) == (member, "frozen_case_edited")
    assert "label changed" in problem.message
    out = CliRunner().invoke(
        main,
        ["noise", "panel", "--pairs", str(noise / "support-noise@2.yaml")]
        + ["--panel", str(panel_path), "--results", str(tmp_path / "none.jsonl")],
    )
    assert out.exit_code == 2 and "frozen_case_edited" in out.output


def test_editing_a_frozen_control_suite_in_place_is_refused(tmp_path: Path) -> None:
    project = copy_project(tmp_path / "p")
    path = project / "data/controls/support-controls@1.yaml"
    assert load_suite(path).label == "support-controls@1"
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    control = next(c for c in doc["controls"] if c["role"] == "negative")
    control["expected_label"] = "pass"  # a negative control that a phrase matcher passes
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    with pytest.raises(WorkbenchError) as info:
        load_suite(path)
    assert _codes(info) == [(control["control_id"], "frozen_case_edited")]
    assert "label changed" in info.value.problems[0].message
    gold = tmp_path / "gold"
    import shutil

    shutil.copytree(project / "data/demo", gold)
    out = CliRunner().invoke(
        main,
        ["certify", "--candidate", str(project / "data/candidates/rubric-judge@3.yaml")]
        + ["--policy", str(project / "data/policies/support-release@3.yaml")]
        + ["--gold", str(gold), "--reports", str(tmp_path / "reports")],
    )
    assert out.exit_code == 2 and "frozen_case_edited" in out.output
    assert not (gold / "held_out_ledger.jsonl").exists()  # refused before any held-out use


def test_a_policy_can_require_a_frozen_control_suite(tmp_path: Path) -> None:
    project = copy_project(tmp_path / "p")
    (project / "data/controls/releases.jsonl").unlink()
    policy = project / "data/policies/support-release@3.yaml"
    text = policy.read_text(encoding="utf-8")
    policy.write_text(
        text.replace("  blocking_roles:", "  require_frozen: true\n  blocking_roles:", 1),
        encoding="utf-8",
    )
    gold = tmp_path / "gold"
    import shutil

    shutil.copytree(project / "data/demo", gold)
    args = ["certify", "--candidate", str(project / "data/candidates/rubric-judge@3.yaml")]
    args += ["--policy", str(policy), "--gold", str(gold), "--reports", str(tmp_path / "r")]
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 2 and "controls_unfrozen" in out.output
    assert not (gold / "held_out_ledger.jsonl").exists()


# ------------------------------------------------------------------------------ the kernel


def _snapshot(folder: Path, items: dict[str, dict[str, str]], **kw: Any) -> Snapshot:
    return Snapshot(
        kind="test_input",
        name="t",
        version=kw.pop("version", "1"),
        sha256=json.dumps(items, sort_keys=True),
        source=folder / f"t@{kw.get('version', '1')}.yaml",
        items=items,
        **kw,
    )


def test_the_same_codes_for_every_kind_and_the_release_log_chain(tmp_path: Path) -> None:
    approve(tmp_path, "Ann")
    v1 = _snapshot(tmp_path, {"a": {"label": "1", "content": "x"}, "b": {"label": "1"}})
    release, created = freeze(v1, approver="Ann")
    assert (
        created and release.release_id == f"rel-1-{v1.sha256[:12]}" and release.kind == "test_input"
    )
    assert freeze(v1, approver="Ann") == (release, False)  # idempotent
    edited = _snapshot(tmp_path, {"a": {"label": "2", "content": "x"}, "c": {"label": "1"}})
    found = {(p.case_id, p.code) for p in check_lineage(edited)}
    assert found == {
        ("a", "frozen_case_edited"),
        ("b", "frozen_case_deleted"),
        ("c", "frozen_case_added"),
    }
    v2 = _snapshot(tmp_path, {"a": {"label": "2", "content": "x"}}, version="2")
    assert [p.code for p in check_lineage(v2)] == ["supersedes_missing"]
    v2 = _snapshot(tmp_path, {"a": {"label": "2", "content": "x"}}, version="2", supersedes="1")
    assert {(p.case_id, p.code) for p in check_lineage(v2)} == {
        ("a", "change_unrecorded"),
        ("b", "change_unrecorded"),
    }
    changes = {k: Change(approver="Ann", reason="r", location="x") for k in ("a", "b")}
    v2 = _snapshot(
        tmp_path,
        {"a": {"label": "2", "content": "x"}},
        version="2",
        supersedes="1",
        changes=changes,
    )
    assert check_lineage(v2) == []
    freeze(v2, approver="Ann")
    log = read_release_log(tmp_path)
    assert [r.sequence for r in log.releases] == [1, 2] and log.problems == ()
    assert log.releases[1].previous_sha256 == log.releases[0].sha256
    # an edited release breaks the chain; so does a deleted one
    lines = (tmp_path / "releases.jsonl").read_text(encoding="utf-8").splitlines()
    edited_line = json.loads(lines[0]) | {"approver": "Mallory"}
    (tmp_path / "releases.jsonl").write_text(
        json.dumps(edited_line) + "\n" + lines[1] + "\n", encoding="utf-8"
    )
    assert [p.code for p in read_release_log(tmp_path).problems] == ["release_chain_broken"]
    (tmp_path / "releases.jsonl").write_text(lines[1] + "\n", encoding="utf-8")
    assert [p.code for p in read_release_log(tmp_path).problems] == ["release_chain_broken"]


def test_approvers_come_from_the_project_list_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "project" / "inputs"
    folder.mkdir(parents=True)
    use_project(monkeypatch, tmp_path / "project")  # the pinned project root
    snap = _snapshot(folder, {"a": {"label": "1"}})
    (tmp_path / "project" / "workbench.yaml").write_text("ci: {}\n", encoding="utf-8")
    with pytest.raises(WorkbenchError) as info:
        freeze(snap, approver="Ann")  # a project without an approver list: nobody may approve
    assert [p.code for p in info.value.problems] == ["approvers_missing"]
    (tmp_path / "project" / "workbench.yaml").write_text("approvers: Ann\n", encoding="utf-8")
    with pytest.raises(WorkbenchError) as info:
        load_approvers(folder)
    assert [p.code for p in info.value.problems] == ["approvers_invalid"]
    approve(tmp_path / "project", "Ann")
    with pytest.raises(WorkbenchError) as info:
        freeze(snap, approver="ann")  # exact names, not any string
    assert [p.code for p in info.value.problems] == ["approver_unknown"]
    freeze(snap, approver=" Ann ")
    # a release whose approver is later removed from the list no longer counts
    (tmp_path / "project" / "workbench.yaml").write_text("approvers: [Bob]\n", encoding="utf-8")
    assert [p.code for p in check_lineage(snap)] == ["approver_unknown"]


def test_a_gold_release_names_a_listed_approver(make_dataset, tmp_path: Path) -> None:
    gold = make_dataset([make_case("a"), make_case("b", "fail")])
    freeze_path(gold, approver="tester")
    assert validate_dataset(gold).ok
    config = current_project() / "workbench.yaml"
    config.write_text("approvers: [someone else]\n", encoding="utf-8")
    assert [p.code for p in validate_dataset(gold).errors] == ["approver_unknown"]
    out = CliRunner().invoke(main, ["validate", str(gold)])
    assert out.exit_code == 2 and "approver_unknown" in out.output and "Traceback" not in out.output


def test_a_version_1_gold_release_line_still_verifies(tmp_path: Path) -> None:
    """The demo gold's release was written before the kernel (``schema_version`` 1)."""
    demo = Path(__file__).resolve().parents[1] / "data" / "demo"
    log = read_release_log(demo)
    (release,) = log.releases
    assert log.problems == () and release.kind == "gold" and release.rubric_version
    assert release.release_id == "rel-1-0ab8dc8a0ca5"


def test_freeze_knows_every_kind_and_refuses_anything_else(tmp_path: Path) -> None:
    (tmp_path / "x.yaml").write_text("hello: world\n", encoding="utf-8")
    out = CliRunner().invoke(main, ["freeze", str(tmp_path / "x.yaml"), "--approver", "A"])
    assert out.exit_code == 2 and "freeze_unknown_input" in out.output


def test_a_frozen_policy_version_is_never_edited_in_place(tmp_path: Path) -> None:
    from workbench.policy import load_policy

    project = copy_project(tmp_path / "p")
    path = project / "data/policies/support-release@3.yaml"
    release, created = freeze_path(path, approver="Support Quality lead (demo)")
    assert created and release.kind == "policy" and "refund_policy" in release.items
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("max_false_passes: 0", "max_false_passes: 3", 1), "utf-8")
    with pytest.raises(WorkbenchError) as info:
        load_policy(path)
    (problem,) = info.value.problems
    assert problem.code == "frozen_case_edited" and problem.case_id in release.items
    # each policy version stands alone: a new version needs no `supersedes:`
    v4 = project / "data/policies/support-release@4.yaml"
    v4.write_text(text.replace('version: "3"', 'version: "4"', 1), "utf-8")
    assert load_policy(v4).version == "4"


def test_a_label_mapping_is_approved_by_a_listed_approver_and_frozen(tmp_path: Path) -> None:
    from workbench.migration import load_label_mapping

    path = tmp_path / "m.yaml"
    doc = {
        "schema_version": 1,
        "from": "j@1",
        "to": "j@2",
        "approver": "Mallory",
        "approved": "2026-12-01",
        "mapping": {"ok": "pass", "not_ok": "fail"},
    }
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    with pytest.raises(WorkbenchError) as info:
        load_label_mapping(path)  # "any string" is not an approver
    assert _codes(info) == [(None, "approver_unknown")]
    approve(tmp_path, "Ann")
    path.write_text(yaml.safe_dump(doc | {"approver": "Ann"}), encoding="utf-8")
    freeze_path(path, approver="Ann")
    path.write_text(
        yaml.safe_dump(doc | {"approver": "Ann", "mapping": {"ok": "fail", "not_ok": "fail"}}),
        encoding="utf-8",
    )
    with pytest.raises(WorkbenchError) as info:
        load_label_mapping(path)
    assert _codes(info) == [("ok", "frozen_case_edited")]


def test_a_frozen_sentinel_set_is_never_edited_in_place(tmp_path: Path) -> None:
    import shutil

    from workbench.gold import load_dataset
    from workbench.repeatability import load_sentinels

    gold = tmp_path / "gold"
    shutil.copytree(Path(__file__).resolve().parents[1] / "data" / "demo", gold)
    freeze_path(gold / "sentinels.yaml", approver="Support Quality lead (demo)")
    dataset = load_dataset(gold)  # the gold's own lineage ignores the sentinels' release
    assert load_sentinels(gold / "sentinels.yaml", dataset).sentinels.sentinels
    doc = yaml.safe_load((gold / "sentinels.yaml").read_text(encoding="utf-8"))
    dropped = doc["sentinels"].pop()["case_id"]  # one sentinel quietly dropped
    (gold / "sentinels.yaml").write_text(yaml.safe_dump(doc, sort_keys=False), "utf-8")
    with pytest.raises(WorkbenchError) as info:
        load_sentinels(gold / "sentinels.yaml", dataset)
    assert _codes(info) == [(dropped, "frozen_case_deleted")]
