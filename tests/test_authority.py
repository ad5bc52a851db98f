"""``workbench authority`` and ``workbench status`` on real certification reports.

The module fixture certifies the demo's offline judge (rubric-judge@2) three times on a copy
of the demo data: under a lenient policy declaring ``use: block`` (certified), under the same
limits declaring ``use: route`` (certified), and under ``support-release@1`` (quality failed).
Each test works on its own copy of that gold, so its authority record, drift log and shadow
log are its own; nothing is written under data/. The reports are signed with a key the
project around each copy trusts (``trusted_keys:``), and the approvers the tests name are on
its approver list (tests/test_authority_trust.py refuses the rest).
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result
from conftest import approve

from workbench.authority import (
    AuthorityRecord,
    authority_path_for,
    authority_status,
    beside_candidate,
    gold_state,
    last_certified,
    read_report,
    read_shadow_log,
    requested_authority,
    staleness,
)
from workbench.cli import main
from workbench.heldout import ledger_path_for
from workbench.policy import load_policy
from workbench.repeatability import (
    SentinelChange,
    append_drift,
    drift_log_path_for,
    read_drift_log,
)
from workbench.reports import certify

pytestmark = pytest.mark.notebook

ROOT = Path(__file__).resolve().parents[1]
# The tests that use this module's certified world run in its project, to read its held-out
# ledger (tests/conftest.py); every other test has a project of its own.
MODULE_PROJECT = True
GOLD = ROOT / "data" / "demo"
SLICES = [
    "refund_policy",
    "account_security",
    "billing_payments",
    "subscription_cancellation",
    "privacy_data_requests",
    "shipping_delivery",
    "escalation_handoff",
]
LENIENT: dict[str, Any] = {
    "schema_version": 2,
    "name": "lenient-block",
    "version": "1",
    "owner": "authority tests",
    "rationale": (
        "Lenient enough for the small demo held-out partition, so that real certified reports exist"
        " to grant authority from."
    ),
    "rubric_version": "support-policy-2026.09",
    "partition": "held_out",
    "max_evaluator_errors": 0,
    "min_n_per_slice": 1,
    "slices": {
        "refund_policy": {
            "risk": "critical",
            "max_abstention_rate": 0.5,
            "max_false_pass_rate": 1.0,
            "false_pass_rate_basis": "upper_95",
        },
        "account_security": {
            "risk": "critical",
            "max_abstention_rate": 0.5,
            "max_false_pass_rate": 1.0,
            "false_pass_rate_basis": "upper_95",
        },
        "billing_payments": {"risk": "high", "max_abstention_rate": 0.5},
        "subscription_cancellation": {"risk": "high", "max_abstention_rate": 0.5},
        "privacy_data_requests": {"risk": "high", "max_abstention_rate": 0.5},
        "shipping_delivery": {"risk": "medium", "max_abstention_rate": 0.5},
        "escalation_handoff": {"risk": "low", "max_abstention_rate": 0.5},
    },
    "use": "block",
    "scope": {"slices": SLICES, "products": ["support-chat"]},
    # route and block need blocking negative and adversarial controls (controls_not_required)
    "controls": {"suite": "passing-controls@1.yaml"},
}
FAILED_BY_RUBRIC_JUDGE_2 = {
    "adv-fake-grading-note",
    "conf-reference-disagrees",
    "miss-question-not-covered",
    "neg-data-export",
    "neg-lockout",
    "term-plain-language-compromise",
}
"""The demo controls rubric-judge@2 fails (workbench.yaml's expected failures)."""


def passing_controls(policies: Path) -> None:
    """The demo control suite without the controls rubric-judge@2 fails, beside the policies."""
    suite = yaml.safe_load(
        (ROOT / "data" / "controls" / "support-controls@1.yaml").read_text(encoding="utf-8")
    )
    suite["name"] = "passing-controls"
    suite["controls"] = [
        c for c in suite["controls"] if c["control_id"] not in FAILED_BY_RUBRIC_JUDGE_2
    ]
    (policies / "passing-controls@1.yaml").write_text(yaml.safe_dump(suite), encoding="utf-8")


APPROVERS = ("Ana Quality", "A")
"""The approvers the tests name, added to the project's list."""


def keypair(directory: Path, name: str = "release") -> tuple[Path, Path]:
    """An Ed25519 private key (OpenSSH) and its public key line (``<name>.pub``)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    private = directory / name
    private.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.OpenSSH,
            serialization.NoEncryption(),
        )
    )
    public = directory / f"{name}.pub"
    line = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    public.write_text(line.decode() + f" {name}@test\n", encoding="utf-8")
    return private, public


def project(folder: Path, trusted: Path | None, *names: str) -> Path:
    """``folder``'s workbench.yaml: the approver list with ``names`` added, and ``trusted`` as its
    trusted keys (None: none declared)."""
    path = approve(folder, *names)
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    config.pop("trusted_keys", None)
    if trusted is not None:
        config["trusted_keys"] = [str(trusted)]
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("authority")
    keys = base / "keys"
    keys.mkdir()
    private, public = keypair(keys)
    project(base, public, *APPROVERS)
    gold = base / "gold"
    shutil.copytree(
        GOLD, gold
    )  # the held-out ledger lives beside the gold: never certify data/demo
    candidates = base / "candidates"
    candidates.mkdir()
    for name in ("rubric-judge@1.yaml", "rubric-judge@2.yaml"):
        shutil.copyfile(ROOT / "data" / "candidates" / name, candidates / name)
    policies = base / "policies"
    policies.mkdir()
    passing_controls(policies)
    block = policies / "lenient-block@1.yaml"
    block.write_text(yaml.safe_dump(LENIENT), encoding="utf-8")
    route = policies / "lenient-route@1.yaml"
    route.write_text(
        yaml.safe_dump({**LENIENT, "name": "lenient-route", "use": "route"}), encoding="utf-8"
    )
    reports = base / "reports"
    spec = candidates / "rubric-judge@2.yaml"
    first = certify(spec, block, gold, reports_root=reports, sign_key=private)
    second = certify(
        spec,
        route,
        gold,
        reports_root=reports,
        rerun_reason="the same limits, declaring use: route",
        sign_key=private,
    )
    third = certify(
        spec,
        ROOT / "data" / "policies" / "support-release@1.yaml",
        gold,
        reports_root=reports,
        rerun_reason="the released policy",
        sign_key=private,
    )
    assert (first.outcome, second.outcome, third.outcome) == (
        "certified",
        "certified",
        "quality_failed",
    ), (first.blockers, second.blockers, third.blockers)
    return {
        "base": base,
        "gold": gold,
        "spec": spec,
        "spec1": candidates / "rubric-judge@1.yaml",
        "reports": reports,
        "block": first.report_dir,
        "route": second.report_dir,
        "failed": third.report_dir,
        "public": public,
    }


@pytest.fixture
def gold(world: dict[str, Path], tmp_path: Path) -> Path:
    """This test's own copy of the certified gold (same dataset, release and ledger), in a
    project that trusts the reports' key and lists the tests' approvers."""
    project(tmp_path, world["public"], *APPROVERS)
    target = tmp_path / "gold"
    shutil.copytree(world["gold"], target)
    return target


def cli(*args: Any) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def ok(result: Result, code: int = 0) -> str:
    assert result.exit_code == code, result.output
    return result.output


def refused(result: Result, code: str) -> None:
    assert result.exit_code == 2, result.output
    assert f"[{code}]" in result.output, result.output
    assert "Traceback" not in result.output


def grant(
    world: dict[str, Path], gold: Path, report: str = "block", spec: Path | None = None
) -> Result:
    return cli(
        "authority",
        "grant",
        "--gold",
        gold,
        "--candidate",
        spec or world["spec"],
        "--report",
        world[report],
        "--approver",
        "Ana Quality",
        "--reason",
        "certified on held-out data",
    )


def promote(world: dict[str, Path], gold: Path, report: str = "block") -> Result:
    return cli(
        "authority",
        "promote",
        "--gold",
        gold,
        "--candidate",
        world["spec"],
        "--report",
        world[report],
        "--approver",
        "Ana Quality",
        "--reason",
        "the monitored window was clean",
    )


def drift_checked(world: dict[str, Path], gold: Path, tmp_path: Path) -> None:
    ok(
        cli(
            "drift",
            "--candidate",
            world["spec"],
            "--gold",
            gold,
            "--record-baseline",
            "--report",
            world["block"],
            "--out",
            tmp_path / "drift",
            "--no-progress",
        )
    )
    ok(
        cli(
            "drift",
            "--candidate",
            world["spec"],
            "--gold",
            gold,
            "--out",
            tmp_path / "drift",
            "--no-progress",
        )
    )


def run_to_block(world: dict[str, Path], gold: Path, tmp_path: Path) -> None:
    ok(grant(world, gold))
    ok(promote(world, gold))
    drift_checked(world, gold, tmp_path)
    ok(promote(world, gold))


@pytest.fixture(scope="module")
def blocked(world: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the certified gold brought to ``block`` once per module (:func:`run_to_block`:
    grant, promote, two drift checks, promote, each checked), for the tests that start from
    ``block`` (:func:`to_block`). They ran the same five commands on the same inputs each, five
    commands that each verify the reports again (about 2 s of CPU a test)."""
    base = tmp_path_factory.mktemp("blocked")
    target = base / "gold"
    shutil.copytree(world["gold"], target)
    run_to_block(world, target, base)
    return target


def to_block(blocked: Path, gold: Path) -> None:
    """``gold``, this test's fresh copy of the certified gold, becomes a copy of
    :func:`blocked`'s: its authority record and drift log as :func:`run_to_block` leaves
    them."""
    shutil.rmtree(gold)
    shutil.copytree(blocked, gold)


def status_json(gold: Path) -> tuple[int, dict[str, Any]]:
    result = cli("status", "--gold", gold, "--json")
    return result.exit_code, json.loads(result.output)


# -- the demo: a promotion, then the judge stale after the rubric version changes ----------------


def test_status_shows_the_promotion_then_the_judge_stale_after_the_rubric_changes(
    world: dict[str, Path], gold: Path, tmp_path: Path
) -> None:
    assert "no judge has an authority record" in ok(cli("status", "--gold", gold))
    granted = ok(grant(world, gold))
    assert (
        "granted rubric-judge@2: none -> advisory" in granted and "products support-chat" in granted
    )
    assert "rubric-judge@2: ADVISORY" in ok(cli("status", "--gold", gold))
    assert "advisory -> route" in ok(promote(world, gold))
    refused(
        promote(world, gold), "drift_check_required"
    )  # block needs sentinels seen stable after certification
    drift_checked(world, gold, tmp_path)
    assert "route -> block" in ok(promote(world, gold))
    shown = ok(cli("status", "--gold", gold))
    assert (
        "rubric-judge@2: BLOCK\n" in shown
        and "last certified report: rubric-judge/2/1" in shown
        and "verified" in shown
    )
    assert "stale: no" in shown and "drift: stable" in shown
    code, body = status_json(gold)
    judge = body["judges"][0]
    assert code == 0 and (judge["recorded"], judge["effective"], judge["stale"]) == (
        "block",
        "block",
        False,
    )
    assert judge["scope"]["slices"] == SLICES and judge["report_id"] == "rubric-judge/2/1"

    # The demo changes the rubric version in a temporary copy of the gold (record included).
    changed = tmp_path / "gold-next-rubric"
    shutil.copytree(gold, changed)
    rubric = changed / "rubric.yaml"
    rubric.write_text(
        rubric.read_text(encoding="utf-8").replace(
            "version: support-policy-2026.09", "version: support-policy-2027.01", 1
        ),
        encoding="utf-8",
    )
    result = cli("status", "--gold", changed)
    assert result.exit_code == 4, result.output
    assert "rubric-judge@2: ROUTE (recorded block, effective route)" in result.output
    assert (
        "certified against rubric support-policy-2026.09, the gold's rubric is now"
        " support-policy-2027.01" in result.output
    )
    assert "LIMITED: stale: block is withheld until the judge is recertified" in result.output
    code, body = status_json(changed)
    judge = body["judges"][0]
    assert code == 4 and (judge["recorded"], judge["effective"], judge["stale"]) == (
        "block",
        "route",
        True,
    )
    assert {r["kind"] for r in judge["stale_reasons"]} == {"rubric_version", "gold_release"}
    # The original gold is untouched: the judge still blocks there.
    assert status_json(gold)[1]["judges"][0]["effective"] == "block"


# -- what promotion needs --------------------------------------------------------------------------


def test_only_a_certified_verified_report_of_this_version_is_evidence(
    world: dict[str, Path], gold: Path, tmp_path: Path
) -> None:
    refused(grant(world, gold, report="failed"), "report_not_certified")
    refused(grant(world, gold, spec=world["spec1"]), "report_other_judge")  # a report of @2 for @1
    edited = tmp_path / "rubric-judge@2.yaml"
    edited.write_text(
        world["spec"].read_text(encoding="utf-8").replace("Version 1 plus", "Version one plus"),
        encoding="utf-8",
    )
    refused(
        cli(
            "authority",
            "grant",
            "--gold",
            gold,
            "--candidate",
            edited,
            "--report",
            world["block"],
            "--approver",
            "A",
            "--reason",
            "r",
        ),
        "report_other_judge",
    )
    tampered = tmp_path / "reports"
    shutil.copytree(world["reports"], tampered)
    for path in tampered.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    gate = tampered / "rubric-judge" / "2" / "1" / "gate.json"
    gate.write_text(
        gate.read_text(encoding="utf-8").replace('"certified"', '"certified" ', 1), encoding="utf-8"
    )
    refused(
        cli(
            "authority",
            "grant",
            "--gold",
            gold,
            "--candidate",
            world["spec"],
            "--report",
            gate.parent,
            "--approver",
            "A",
            "--reason",
            "r",
        ),
        "report_unverified",
    )
    refused(
        cli(
            "authority",
            "grant",
            "--gold",
            gold,
            "--candidate",
            world["spec"],
            "--report",
            world["block"],
            "--approver",
            " ",
            "--reason",
            "r",
        ),
        "approver_missing",
    )
    assert not authority_path_for(gold).exists()  # nothing was recorded
    refused(promote(world, gold), "not_granted")


def test_a_promotion_follows_the_path_and_never_exceeds_the_grant(
    world: dict[str, Path], gold: Path, tmp_path: Path
) -> None:
    assert "none -> advisory" in ok(grant(world, gold, report="route"))
    assert "advisory -> route" in ok(promote(world, gold, report="route"))
    drift_checked(world, gold, tmp_path)
    refused(
        promote(world, gold, report="route"), "report_grants_less"
    )  # its policy declares use: route
    assert "route -> block" in ok(promote(world, gold, report="block"))
    refused(promote(world, gold, report="block"), "already_block")
    # Rebinding to another certified report caps the level at what that report grants.
    rebound = ok(grant(world, gold, report="route"))
    assert (
        "granted rubric-judge@2: block -> route" in rebound and "report rubric-judge/2/2" in rebound
    )
    events = [
        (e.event, e.previous_authority, e.authority)
        for e in AuthorityRecord(authority_path_for(gold)).read().entries
    ]
    assert events == [
        ("granted", "none", "advisory"),
        ("promoted", "advisory", "route"),
        ("promoted", "route", "block"),
        ("granted", "block", "route"),
    ]
    entry = AuthorityRecord(authority_path_for(gold)).read().entries[-1]
    assert (
        entry.report_id == "rubric-judge/2/2"
        and entry.approver == "Ana Quality"
        and entry.reason
        and entry.when.tzinfo is not None
    )
    assert (
        entry.lock_sha256 == read_report(world["route"])[0].lock_sha256
        and entry.granted_use == "route"
        and entry.policy == "lenient-route@1"
    )


def test_a_stale_judge_is_neither_granted_nor_promoted(world: dict[str, Path], gold: Path) -> None:
    ok(grant(world, gold))
    rubric = gold / "rubric.yaml"
    rubric.write_text(
        rubric.read_text(encoding="utf-8").replace(
            "version: support-policy-2026.09", "version: support-policy-2027.01", 1
        ),
        encoding="utf-8",
    )
    refused(promote(world, gold), "judge_stale")


# -- rollback
# ---------------------------------------------------------------------------------------


def test_rollback_needs_only_a_reason_and_a_revoked_judge_needs_a_newer_report(
    world: dict[str, Path], gold: Path, blocked: Path
) -> None:
    to_block(blocked, gold)
    assert "block -> route" in ok(
        cli(
            "authority",
            "demote",
            "--gold",
            gold,
            "--judge",
            "rubric-judge@2",
            "--reason",
            "a sampled critical false pass",
        )
    )
    assert "route -> none" in ok(
        cli(
            "authority",
            "revoke",
            "--gold",
            gold,
            "--judge",
            "rubric-judge@2",
            "--reason",
            "confirmed critical false pass",
        )
    )
    refused(
        cli(
            "authority", "revoke", "--gold", gold, "--judge", "rubric-judge@2", "--reason", "again"
        ),
        "nothing_to_revoke",
    )
    refused(
        cli("authority", "revoke", "--gold", gold, "--judge", "rubric-judge@9", "--reason", "typo"),
        "judge_unknown",
    )
    refused(
        cli("authority", "demote", "--gold", gold, "--judge", "rubric-judge@2", "--reason", ""),
        "reason_missing",
    )
    refused(
        grant(world, gold, report="route"), "report_before_revocation"
    )  # the evidence behind the revocation is not answered
    code, body = status_json(gold)
    judge = body["judges"][0]
    assert (judge["recorded"], judge["effective"], judge["event"]) == ("none", "none", "revoked")
    # The evidence is kept: the report and the earlier entries are all still there.
    assert [e.event for e in AuthorityRecord(authority_path_for(gold)).read().entries] == [
        "granted",
        "promoted",
        "promoted",
        "demoted",
        "revoked",
    ]
    assert (world["block"] / "lock.json").is_file()


def test_a_damaged_record_grants_nothing_but_rollback_still_works(
    world: dict[str, Path], gold: Path, blocked: Path
) -> None:
    to_block(blocked, gold)
    record = authority_path_for(gold)
    lines = record.read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[0])
    row["scope"]["slices"].append("made_up")  # an edit by hand
    record.write_text(
        "\n".join([json.dumps(row, sort_keys=True), *lines[1:]]) + "\n", encoding="utf-8"
    )
    result = cli("status", "--gold", gold)
    assert (
        result.exit_code == 1
        and "RECORD DAMAGED" in result.output
        and "rubric-judge@2: NONE (recorded block, effective none)" in result.output
    )
    refused(grant(world, gold), "authority_record_damaged")
    revoked = cli(
        "authority",
        "revoke",
        "--gold",
        gold,
        "--judge",
        "rubric-judge@2",
        "--reason",
        "the record was edited; stop until it is restored",
    )
    assert revoked.exit_code == 0, revoked.output
    assert "block -> none" in revoked.output and "the authority record is damaged" in revoked.output


def test_a_report_that_no_longer_verifies_leaves_no_authority(
    world: dict[str, Path], gold: Path, tmp_path: Path
) -> None:
    reports = tmp_path / "reports"
    shutil.copytree(world["reports"], reports)
    for path in reports.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    copy = reports / "rubric-judge" / "2" / "1"
    ok(
        cli(
            "authority",
            "grant",
            "--gold",
            gold,
            "--candidate",
            world["spec"],
            "--report",
            copy,
            "--approver",
            "A",
            "--reason",
            "r",
        )
    )
    html = copy / "report.html"
    html.write_text(html.read_text(encoding="utf-8") + "<!-- edited -->", encoding="utf-8")
    result = cli("status", "--gold", gold)
    assert result.exit_code == 1, result.output
    assert (
        "rubric-judge@2: NONE (recorded advisory, effective none)" in result.output
        and "NOT VERIFIED" in result.output
    )


# -- staleness and drift -------------------------------------------------------------------------


def test_a_stale_ragas_or_model_is_named(
    world: dict[str, Path],
    gold: Path,
    blocked: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    facts, problems = read_report(world["block"])
    assert facts is not None and problems == [] and facts.certified
    now = gold_state(gold)
    assert staleness(facts, now, world["spec"]) == []
    assert [r.kind for r in staleness(facts, now, world["spec"], installed_ragas="9.9.9")] == [
        "ragas_version"
    ]
    assert [
        r.kind
        for r in staleness(
            facts.model_copy(update={"model": "gpt-4o-2024-08-06"}), now, world["spec"]
        )
    ] == ["model"]
    assert [r.kind for r in staleness(facts, now, tmp_path / "gone.yaml")] == ["candidate"]
    to_block(blocked, gold)
    import workbench.judges

    monkeypatch.setattr(workbench.judges, "ragas_version", lambda: "9.9.9")
    status = authority_status(gold)
    judge = status.judges[0]
    assert (judge.recorded, judge.effective) == ("block", "route") and [
        r.kind for r in judge.stale_reasons
    ] == ["ragas_version"]
    assert status.exit_code == 4


def test_a_drift_check_crossing_pass_fail_withholds_block(
    world: dict[str, Path], gold: Path, blocked: Path
) -> None:
    to_block(blocked, gold)
    log = drift_log_path_for(gold)
    last = read_drift_log(log)[-1]
    case_id = last.sentinel_ids[0]
    before = last.observations[case_id].value
    after = "pass" if before == "fail" else "fail"
    crossed = last.model_copy(
        update={
            "entry_id": "drift-crossed",
            "recorded_at": datetime.now(UTC),
            "status": "drifted",
            "changes": [
                SentinelChange(
                    case_id=case_id,
                    slice="refund_policy",
                    risk="critical",
                    kind="verdict_changed",
                    before=before,
                    after=after,
                    boundary_crossing=True,
                )
            ],
        }
    )
    append_drift(log, crossed)  # a real drifted check would be recorded the same way
    result = cli("status", "--gold", gold)
    assert result.exit_code == 4, result.output
    assert "rubric-judge@2: ROUTE (recorded block, effective route)" in result.output
    assert (
        f"crossed pass/fail on {case_id}" in result.output
        and "drift status changed: stable -> drifted" in result.output
    )


def test_a_rebound_judge_keeps_block_only_with_a_drift_check_after_its_report(
    world: dict[str, Path], gold: Path, blocked: Path
) -> None:
    to_block(blocked, gold)
    assert "granted rubric-judge@2: block -> block" in ok(
        grant(world, gold)
    )  # the check ran after the report
    log = drift_log_path_for(gold)
    early = read_drift_log(log)[-1].model_copy(
        update={"entry_id": "drift-early", "recorded_at": datetime(2000, 1, 1, tzinfo=UTC)}
    )
    append_drift(log, early)  # now the latest check predates the report
    assert "granted rubric-judge@2: block -> route" in ok(grant(world, gold))
    refused(promote(world, gold), "drift_check_required")


# -- shadow mode
# -------------------------------------------------------------------------------------


def _final(results: Path) -> dict[str, str | None]:
    last: dict[str, tuple[int, str | None]] = {}
    for line in results.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["repeat"] == 0 and (
            row["case_id"] not in last or row["attempt"] > last[row["case_id"]][0]
        ):
            last[row["case_id"]] = (row["attempt"], row["value"])
    return {k: v for k, (_, v) in last.items()}


def test_a_shadow_runs_on_the_same_cases_and_records_disagreements_without_any_gate(
    world: dict[str, Path], gold: Path, tmp_path: Path
) -> None:
    refused(
        cli(
            "authority",
            "shadow",
            "--gold",
            gold,
            "--candidate",
            world["spec1"],
            "--of",
            "rubric-judge@2",
            "--approver",
            "A",
            "--reason",
            "watch",
        ),
        "shadow_of_without_authority",
    )
    ok(grant(world, gold))
    refused(
        cli(
            "authority",
            "shadow",
            "--gold",
            gold,
            "--candidate",
            world["spec"],
            "--of",
            "rubric-judge@1",
            "--approver",
            "A",
            "--reason",
            "r",
        ),
        "shadow_of_without_authority",
    )
    assert "in shadow of rubric-judge@2" in ok(
        cli(
            "authority",
            "shadow",
            "--gold",
            gold,
            "--candidate",
            world["spec1"],
            "--of",
            "rubric-judge@2",
            "--approver",
            "A",
            "--reason",
            "watch v1 beside v2",
        )
    )
    ledger = ledger_path_for(gold).read_bytes()
    record = authority_path_for(gold).read_bytes()
    out = tmp_path / "shadow"
    result = cli(
        "run",
        "--candidate",
        world["spec1"],
        "--shadow-of",
        world["spec"],
        "--gold",
        gold,
        "--partition",
        "development",
        "--out",
        out,
        "--no-cache",
        "--no-progress",
    )
    assert result.exit_code == 0, result.output  # disagreements change no exit code
    current, shadow = _final(out / "old" / "results.jsonl"), _final(out / "new" / "results.jsonl")
    assert set(current) == set(shadow)  # the same cases
    differ = sorted(c for c in current if current[c] != shadow[c])
    assert differ, "the two demo versions disagree on development cases"
    summary = json.loads((out / "shadow.json").read_text(encoding="utf-8"))
    assert (
        summary["disagreements"] == len(differ)
        and sorted(d["case_id"] for d in summary["disagreement_cases"]) == differ
    )
    assert (
        summary["attached"] is True
        and summary["current_authority"] == "advisory"
        and summary["current"] == "rubric-judge@2"
        and summary["shadow"] == "rubric-judge@1"
    )
    assert (
        f"{len(differ)} disagreement(s)" in result.output
        and "no effect on any gate" in result.output
    )
    [entry] = read_shadow_log(gold / "shadow_log.jsonl")
    assert entry.entry_id == summary["entry_id"]
    # No gate: the held-out ledger and the authority record are untouched, no gate result is
    # written.
    assert (
        ledger_path_for(gold).read_bytes() == ledger
        and authority_path_for(gold).read_bytes() == record
    )
    assert not list(out.rglob("gate.json"))
    shown = ok(cli("status", "--gold", gold))
    assert (
        f"shadow rubric-judge@1: {len(differ)} disagreement(s)" in shown
        and "rubric-judge@1: NONE, in shadow of rubric-judge@2" in shown
    )


def test_a_shadow_run_refuses_held_out_data_and_partial_runs(
    world: dict[str, Path], gold: Path, tmp_path: Path
) -> None:
    base = [
        "run",
        "--candidate",
        world["spec1"],
        "--shadow-of",
        world["spec"],
        "--gold",
        gold,
        "--out",
        tmp_path / "s",
        "--no-cache",
        "--no-progress",
    ]
    for extra in (
        ["--partition", "held_out"],
        ["--partition", "development", "--repeat", "2"],
        ["--partition", "development", "--max-cases", "3"],
    ):
        result = cli(*base, *extra)
        assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert not (tmp_path / "s").exists()


# -- reports: what is requested, and the last complete certified version
# -----------------------------


def test_last_certified_is_the_newest_verified_certified_report(
    world: dict[str, Path], tmp_path: Path
) -> None:
    found = last_certified("rubric-judge", world["reports"])
    assert found is not None and found.report_id == "rubric-judge/2/2"  # /3 is quality_failed
    assert found.grant.use == "route" and found.policy == "lenient-route@1"
    assert last_certified("rubric-judge@2", world["reports"]).report_id == "rubric-judge/2/2"  # type: ignore[union-attr]
    assert last_certified("rubric-judge", world["reports"], exclude_version="2") is None
    assert last_certified("rubric-judge@1", world["reports"]) is None
    reports = tmp_path / "reports"
    shutil.copytree(world["reports"], reports)
    for path in reports.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    (reports / "rubric-judge" / "2" / "2" / "figures.json").write_text("{}", encoding="utf-8")
    older = last_certified("rubric-judge", reports)
    assert (
        older is not None and older.report_id == "rubric-judge/2/1"
    )  # a tampered report is never shown as certified


def test_a_report_grants_what_its_own_locked_policy_requests(world: dict[str, Path]) -> None:
    facts, _ = read_report(world["block"])
    assert (
        facts is not None
        and facts.grant.use == "block"
        and facts.grant.scope is not None
        and facts.grant.scope.products == ["support-chat"]
    )
    policy = load_policy(next((world["block"] / "inputs").glob("lenient-block@1.yaml")))
    assert requested_authority(policy).use == "block"
    failed, _ = read_report(world["failed"])
    assert (
        failed is not None
        and failed.grant.use == "none"
        and "declares no use" in failed.grant.withheld[0]
    )


def test_a_report_shows_the_requested_authority_and_the_last_certified_version_beside_it(
    world: dict[str, Path], gold: Path
) -> None:
    policy = load_policy(world["base"] / "policies" / "lenient-block@1.yaml")
    context = beside_candidate(policy, "rubric-judge@3", world["reports"], gold)
    assert (
        context.requested.use == "block"
        and context.last_certified is not None
        and context.last_certified.report_id == "rubric-judge/2/2"
    )
    assert context.last_certified_stale == []
    lines = context.describe()
    assert (
        lines[0].startswith(
            "authority requested: lenient-block@1 requests block on slices refund_policy"
        )
        and "last complete certified version: rubric-judge@2 (report rubric-judge/2/2" in lines[1]
    )
    assert (
        beside_candidate(policy, "rubric-judge@2", world["reports"], gold).last_certified is None
    )  # never the candidate's own version
    rubric = gold / "rubric.yaml"
    rubric.write_text(
        rubric.read_text(encoding="utf-8").replace(
            "version: support-policy-2026.09", "version: support-policy-2027.01", 1
        ),
        encoding="utf-8",
    )
    changed = beside_candidate(policy, "rubric-judge@3", world["reports"], gold)
    assert {r.kind for r in changed.last_certified_stale} == {"rubric_version", "gold_release"}
    assert "not a fallback" in changed.describe()[2]


# -- production sampling: humans inspect abstentions and sampled agreements -----------------------


def test_a_critical_false_pass_found_by_production_sampling_withdraws_routing(
    world: dict[str, Path], gold: Path, tmp_path: Path
) -> None:
    """Issue 30 (seed 001: "if production disagreement sampling finds a new critical false pass,
    disable automatic authority without deleting the evidence")."""
    from conftest import current_project, make_case, make_result

    from workbench.annotation import Annotations

    ok(grant(world, gold))
    ok(promote(world, gold))
    assert authority_status(gold).judges[0].recorded == "route"
    config_path = current_project() / "workbench.yaml"
    config = yaml.safe_load(config_path.read_text())
    demo = [
        "reviewer-a",
        "reviewer-b",
        "reviewer-c",
        "reviewer-d",
        "adjudicator-m",
        "adjudicator-n",
    ]
    config["reviewers"] = [*demo, "ann", "bo", "cy"]
    config_path.write_text(yaml.safe_dump(config))
    policy = tmp_path / "route-sampled@1.yaml"
    routed = {**LENIENT, "name": "route-sampled", "use": "route", "sample_agreements": 1.0}
    policy.write_text(yaml.safe_dump(routed))
    cases = [
        make_case(
            f"prod-{i}",
            slice="account_security",
            group=f"prod-{i}",
            rubric_version="support-policy-2026.09",
            grading_notes="Required: 2FA reset.",
        )
        for i in range(3)
    ]
    judge = {"name": "rubric-judge", "version": "2"}
    results = tmp_path / "production.jsonl"
    values = ["pass", "pass", "review_required"]
    results.write_text(
        "".join(
            json.dumps(make_result(c, v, judge=judge, partition="production")) + "\n"
            for c, v in zip(cases, values, strict=True)
        )
    )
    unlabelled = tmp_path / "production-cases.jsonl"
    for c in cases:
        for key in ("reviews", "adjudication"):
            c.pop(key)
    unlabelled.write_text("".join(json.dumps(c) + "\n" for c in cases))
    sampled = ok(
        cli(
            "production",
            "sample",
            "--gold",
            gold,
            "--policy",
            policy,
            "--judge",
            "rubric-judge@2",
            "--results",
            results,
            "--cases",
            unlabelled,
            "--reviewers",
            "ann,bo",
        )
    )
    assert "queued 3 production case(s) for review: abstention 1, sampled_agreement 2" in sampled
    queue = Annotations(gold)
    for who in ("ann", "bo"):
        while (case := queue.next_for(who)) is not None:
            shown = json.dumps(case.model_dump())
            assert "production_sample" not in shown and "rubric-judge" not in shown  # blind
            queue.submit(who, case.case_id, "fail")
    assert len(queue.adjudicate_agreements("cy")) == 3
    found = cli("production", "findings", "--gold", gold, "--judge", "rubric-judge@2")
    assert found.exit_code == 1, found.output
    assert "prod-0 (account_security, critical): false_pass: judge pass, adjudicated fail" in (
        found.output
    )
    assert "demoted rubric-judge@2 to advisory" in found.output
    assert authority_status(gold).judges[0].recorded == "advisory"
    dataset = ok(cli("validate", gold))  # the evidence stays, in a future calibration release
    assert "OK" in dataset
    again = cli("production", "findings", "--gold", gold, "--judge", "rubric-judge@2", "--json")
    assert again.exit_code == 1 and json.loads(again.output)["demoted"] is False
