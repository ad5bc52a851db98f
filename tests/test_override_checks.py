"""`workbench override add` refuses overrides that could never apply; the gate says which did not.

Issue 8 §8: before the fix `override add` accepted an unknown policy (any name@version), an
unknown blocker code or slice, and a slice-level waiver of a critical false pass, and the gate
listed only expired overrides.
"""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import approve, current_project
from test_policy import (
    NOW,
    Evaluated,
    clean_spec,
    fp_spec,
    make_override,
    make_policy,
    write_policy,
)

import workbench.policy._gate as gate_module
from workbench.cli.gate import gate as gate_cmd
from workbench.cli.override import override as override_cmd
from workbench.errors import WorkbenchError
from workbench.policy import (
    BLOCKER_CODES,
    NON_WAIVABLE_CODES,
    codes_of,
    describe_override,
    load_overrides,
)
from workbench.ranking import _gate as ranking_gate_module

COMMON = [
    "--approver",
    "Dana Reviewer",
    "--reason",
    "reviewed",
    "--expires",
    "2099-01-01",
    "--follow-up",
    "JIRA-9",
]


@pytest.fixture(autouse=True)
def _approvers(tmp_path: Path) -> None:
    """Who may approve this test project's overrides (the store's workbench.yaml)."""
    approve(tmp_path, "Dana Reviewer")


@pytest.fixture
def policy_file(tmp_path: Path) -> Path:
    folder = tmp_path / "policies"
    folder.mkdir()
    return write_policy(folder, json.loads(make_policy().model_dump_json(exclude_none=True)))


def add(store: Path, *args: str) -> Any:
    return CliRunner().invoke(override_cmd, ["add", *COMMON, "--store", str(store), *args])


def test_every_refusal_at_once_with_its_fix_and_nothing_written(
    policy_file: Path, tmp_path: Path
) -> None:
    store = policy_file.parent / "overrides.jsonl"
    result = add(
        store,
        "--policy",
        str(policy_file),
        "--code",
        "no_such_code",
        "--code",
        "false_passes_exceeded",
        "--slice",
        "billing",
        "--slice",
        "nowhere",
        "--code",
        "missing_results",
    )
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    found = re.findall(r"\[([a-z_]+)\] Fix: ", result.output)
    assert sorted(found) == [
        "override_code_not_waivable",
        "override_critical_false_pass_by_slice",
        "override_unknown_code",
        "override_unknown_slice",
    ]
    assert (
        "name one of the waivable codes" in result.output
        and "false_fail_rate_exceeded" in result.output
    )
    assert "name one of the policy's slices: billing, general, empty" in result.output
    assert "name every one with --case" in result.output
    assert not store.exists()


def test_unknown_policy_is_refused(policy_file: Path, tmp_path: Path) -> None:
    store = tmp_path / "elsewhere" / "overrides.jsonl"
    store.parent.mkdir()
    missing = add(store, "--policy", "test-release@9", "--code", "cost_exceeded")
    assert (
        missing.exit_code == 2
        and "policy_missing" in missing.output
        and "exists and loads" in missing.output
    )
    # all problems at once, even when the policy cannot be loaded
    both = add(store, "--policy", str(tmp_path / "nope@1.yaml"), "--code", "bogus")
    assert (
        both.exit_code == 2
        and "policy_missing" in both.output
        and "override_unknown_code" in both.output
    )
    broken = policy_file.parent / "broken@1.yaml"
    broken.write_text("name: broken\nversion: '1'\n", encoding="utf-8")
    invalid = add(store, "--policy", str(broken), "--code", "cost_exceeded")
    assert invalid.exit_code == 2 and "policy_invalid" in invalid.output
    assert not store.exists()


def test_name_at_version_resolves_beside_the_store_and_prints_what_it_applies_to(
    policy_file: Path,
) -> None:
    store = policy_file.parent / "overrides.jsonl"
    ok = add(
        store,
        "--policy",
        "test-release@1",
        "--code",
        "false_fail_rate_exceeded",
        "--slice",
        "general",
        "--code",
        "false_passes_exceeded",
        "--case",
        "bil-01",
    )
    assert ok.exit_code == 0, ok.output
    assert ok.output.startswith("ovr-") and "It will apply to:" in ok.output
    assert (
        "waives:    false_fail_rate_exceeded: a false_fail_rate_exceeded blocker in slice general"
        " (low)" in ok.output
    )
    assert (
        "a false_passes_exceeded blocker in any slice whose every case is among the 1 named: bil-01"
        in ok.output
    )
    assert "candidate: any judge" in ok.output and "until 2099-01-01T00:00:00+00:00" in ok.output
    assert len(load_overrides(store)) == 1


def test_critical_false_pass_by_cases_is_accepted_and_described(policy_file: Path) -> None:
    store = policy_file.parent / "overrides.jsonl"
    ok = add(
        store,
        "--policy",
        str(policy_file),
        "--code",
        "false_passes_exceeded",
        "--slice",
        "billing",
        "--case",
        "bil-01",
        "--case",
        "bil-04",
    )
    assert ok.exit_code == 0, ok.output
    assert "not slice billing (critical) as a whole" in ok.output
    never = add(
        store, "--policy", str(policy_file), "--code", "too_few_cases", "--slice", "billing"
    )
    assert never.exit_code == 2 and "override_not_waivable_in_critical" in never.output


def test_describe_global_override() -> None:
    lines = describe_override(make_override(codes=["cost_exceeded"]), make_policy())
    assert (
        lines[-1]
        == "waives:    cost_exceeded: a cost_exceeded blocker of the whole evaluation (one without"
        " a slice), never a slice's"
    )


def test_blocker_codes_match_the_documented_table() -> None:
    table = gate_module.__doc__ or ""
    rows = dict(
        re.findall(r"^([a-z_]+)\s+(incomplete|quality|review)\s", table, flags=re.MULTILINE)
    )
    assert rows == codes_of("gate")
    ranking_rows = dict(
        re.findall(
            r"^([a-z_]+)\s+(incomplete|quality|review)\s",
            ranking_gate_module.__doc__ or "",
            flags=re.MULTILINE,
        )
    )
    assert ranking_rows == codes_of("ranking")
    # one table: every feature's codes, none claimed twice (noise codes are documented in
    # workbench/noise, the others in their modules)
    features = ("gate", "ranking", "noise", "controls", "repeatability", "migration", "certify")
    assert sum(len(codes_of(f)) for f in features) == len(BLOCKER_CODES)
    assert set(BLOCKER_CODES) >= NON_WAIVABLE_CODES
    from workbench.controls import ROLES

    assert set(codes_of("controls")) == {f"control_failed_{role}" for role in ROLES}
    assert all(
        BLOCKER_CODES[c].category != "incomplete" for c in set(BLOCKER_CODES) - NON_WAIVABLE_CODES
    )  # missing evidence is never waivable


# ---------------------------------------------------------------- gate lists unapplied overrides


@pytest.fixture
def evaluated(make_dataset):
    return lambda spec: Evaluated(make_dataset, spec)


def test_gate_lists_overrides_that_did_not_apply_and_why(evaluated) -> None:
    ev = evaluated(fp_spec())
    policy = make_policy(
        slices={"billing": {"max_false_pass_rate": 0.9}, "general": {"max_false_pass_rate": 0.2}}
    )
    waiver = {"codes": ["false_pass_rate_exceeded"], "slices": ["general"]}
    applied = make_override(**waiver)
    expired = make_override(
        **waiver,
        created_at=(NOW - timedelta(days=20)).isoformat(),
        expires_at=(NOW - timedelta(days=1)).isoformat(),
    )
    other_policy = make_override(**waiver, policy="test-release@2")
    other_candidate = make_override(**waiver, candidate_fingerprint="f" * 64)
    future = make_override(
        **waiver,
        created_at=(NOW + timedelta(days=1)).isoformat(),
        expires_at=(NOW + timedelta(days=9)).isoformat(),
    )
    no_match = make_override(codes=["false_fail_rate_exceeded"], slices=["general"])
    slice_level_critical = make_override(codes=["false_passes_exceeded"], slices=["billing"])
    duplicate = make_override(**waiver, reason="the same waiver, approved twice")
    overrides = [
        applied,
        expired,
        other_policy,
        other_candidate,
        future,
        no_match,
        slice_level_critical,
        duplicate,
    ]
    result = ev.gate(policy, overrides=overrides)
    assert result.outcome == "quality_failed" and [b.code for b in result.blockers] == [
        "false_passes_exceeded"
    ]
    waived_by = {w.override_id for w in result.waived}
    assert len(waived_by) == 1 and waived_by <= {applied.override_id, duplicate.override_id}
    reasons = {u.override_id: u.reason for u in result.unapplied_overrides}
    twin = duplicate.override_id if applied.override_id in waived_by else applied.override_id
    assert reasons == {
        expired.override_id: "expired",
        other_policy.override_id: "other_policy",
        other_candidate.override_id: "other_candidate",
        future.override_id: "not_yet_active",
        no_match.override_id: "no_matching_blocker",
        slice_level_critical.override_id: "not_covered",
        twin: "already_waived",
    }
    details = {u.override_id: " ".join(u.details) for u in result.unapplied_overrides}
    assert (
        "2 of its 2 false-pass case(s) are not named" in details[slice_level_critical.override_id]
    )
    assert "already waived by" in details[twin]
    assert "no blocker has this code" in details[no_match.override_id]
    assert "bil-01" not in json.dumps(
        [u.model_dump() for u in result.unapplied_overrides]
    )  # counts only
    assert result.expired_overrides == [expired.override_id]


def test_gate_reports_non_waivable_targets(evaluated) -> None:
    ev = evaluated(clean_spec())
    ovr = make_override(codes=["too_few_cases"], slices=["billing"])
    result = ev.gate(make_policy(slices={"billing": {"min_n": 99}}), overrides=[ovr])
    (u,) = result.unapplied_overrides
    assert u.reason == "not_waivable" and "not waivable in a critical slice" in u.details[0]


def test_gate_cli_lists_unapplied_overrides_in_text_and_json(
    policy_file: Path, make_dataset, tmp_path: Path
) -> None:
    from conftest import write_results
    from lineage_support import stamped
    from test_policy import cases_for

    cases, rows = cases_for(clean_spec(), "development")
    gold = make_dataset(cases)
    results = write_results(tmp_path / "r.jsonl", stamped(rows, gold))
    store = tmp_path / "o.jsonl"
    store.write_text(
        json.dumps(make_override(codes=["cost_exceeded"], policy="other@1").model_dump(mode="json"))
        + "\n",
        encoding="utf-8",
    )
    args = [
        "--gold",
        str(gold),
        "--results",
        str(results),
        "--policy",
        str(policy_file),
        "--partition",
        "development",
        "--overrides",
        str(store),
    ]
    text = CliRunner().invoke(gate_cmd, args)
    assert text.exit_code == 6, text.output  # would certify: development results, advisory
    assert (
        "overrides that did not apply (1):" in text.output
        and "other_policy: it is for other@1, the gate applied test-release@1" in text.output
    )
    body = json.loads(CliRunner().invoke(gate_cmd, [*args, "--json"]).output)
    assert [u["reason"] for u in body["unapplied_overrides"]] == ["other_policy"]


# ---------------------------------------------------------------- who approves (issue 27)


def test_an_override_is_approved_by_a_listed_approver_who_is_not_its_author(
    tmp_path: Path, policy_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: any string was an approver, and the person who wrote the waiver could approve
    it. Now the approver must be on the project's list and differ from the author."""
    from workbench.policy import add_override

    store = tmp_path / "overrides.jsonl"
    base = ["add", "--policy", str(policy_file), "--store", str(store), "--code"]
    base += ["cost_exceeded", *COMMON[2:]]
    runner = CliRunner()
    stranger = runner.invoke(override_cmd, [*base, "--approver", "Mallory"])
    assert stranger.exit_code == 2 and "approver_unknown" in stranger.output
    monkeypatch.setenv("WORKBENCH_USER", "Dana Reviewer")
    own = runner.invoke(override_cmd, [*base, "--approver", "Dana Reviewer"])
    assert own.exit_code == 2 and "override_self_approved" in own.output
    assert not store.exists()  # nothing written for a refusal
    ok = runner.invoke(override_cmd, [*base, "--approver", "Dana Reviewer", "--author", "Sam"])
    assert ok.exit_code == 0, ok.output
    (written,) = load_overrides(store)
    assert (written.author, written.approver, written.schema_version) == (
        "Sam",
        "Dana Reviewer",
        2,
    )
    # a store whose approver was later taken off the project's list no longer loads
    (current_project() / "workbench.yaml").write_text(
        "approvers: [Someone Else]\n", encoding="utf-8"
    )
    with pytest.raises(WorkbenchError) as refused:
        load_overrides(store)
    assert [p.code for p in refused.value.problems] == ["approver_unknown"]
    with pytest.raises(WorkbenchError) as refused:
        add_override(
            tmp_path / "other.jsonl",
            policy="p@1",
            approver="Sam",
            author="Sam",
            reason="r",
            expires_at="2099-01-01",
            follow_up="F",
            codes=["cost_exceeded"],
        )
    codes = [p.code for p in refused.value.problems]
    assert codes == ["approver_unknown", "override_self_approved"]


def test_a_schema_1_override_without_an_author_still_loads(tmp_path: Path) -> None:
    from workbench.policy import override_id_of

    body = {
        "schema_version": 1,
        "approver": "Dana Reviewer",
        "created_at": "2026-11-01T00:00:00Z",
        "policy": "p@1",
        "candidate_fingerprint": None,
        "codes": ["cost_exceeded"],
        "slices": [],
        "case_ids": [],
        "reason": "r",
        "expires_at": "2099-01-01T00:00:00Z",
        "follow_up": "F",
    }
    store = tmp_path / "overrides.jsonl"
    store.write_text(json.dumps({**body, "override_id": override_id_of(body)}) + "\n", "utf-8")
    (loaded,) = load_overrides(store)
    assert loaded.author is None and loaded.approver == "Dana Reviewer"


def test_a_certifier_cannot_certify_through_a_waiver_they_approved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 28, point 9: the certifier approved their own waiver. A waiver that would apply to
    the certification (its policy, its candidate, not expired) and names the certifier as its
    approver is refused before any held-out use (approver_is_certifier); the same waiver counts
    when someone else certifies."""
    import shutil

    from workbench.heldout import ledger_path_for
    from workbench.policy import add_override, load_policy
    from workbench.reports import certify

    root = Path(__file__).resolve().parents[1]
    gold = tmp_path / "gold"
    shutil.copytree(root / "data" / "demo", gold)
    policy = root / "data" / "policies" / "support-release@3.yaml"
    candidate = root / "data" / "candidates" / "rubric-judge@3.yaml"
    approve(tmp_path, "Dana Reviewer", "Sam Author")
    store = tmp_path / "overrides.jsonl"
    add_override(
        store,
        policy=load_policy(policy),
        approver="Dana Reviewer",
        author="Sam Author",
        reason="the refund slice is reviewed by hand this quarter",
        expires_at="2099-01-01",
        follow_up="QUAL-1",
        codes=["cost_exceeded"],
    )
    monkeypatch.setenv("WORKBENCH_USER", "Dana Reviewer")
    with pytest.raises(WorkbenchError) as refused:
        certify(candidate, policy, gold, reports_root=tmp_path / "reports", overrides=store)
    assert [p.code for p in refused.value.problems] == ["approver_is_certifier"]
    assert not ledger_path_for(gold).exists() and not (tmp_path / "reports").exists()
    from workbench.judges import load_candidate
    from workbench.policy import certifier_waiver_problems

    fingerprint = load_candidate(candidate).identity.fingerprint()
    monkeypatch.setenv("WORKBENCH_USER", "Someone Else")  # the waiver counts for another certifier
    assert certifier_waiver_problems(load_overrides(store), load_policy(policy), fingerprint) == []
