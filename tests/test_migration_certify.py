"""Migration certification: ``workbench certify --candidate NEW --baseline OLD``.

Reproductions (old main): ``certify`` took one candidate only, so a migration either spent the
held-out partition twice (two certifications, two ledger uses) or compared nothing; a changed
verdict in a critical slice was at most flagged, never required a review, so the new version
could be ``certified`` with unreviewed critical transitions; a renamed label could not be
mapped, and nothing of a migration was locked or checked by ``verify``. Each test below
asserts the refusal (or the recorded evidence) the old main lacked.

Every test works on a temporary copy of data/demo (the ledger and logs live beside the gold).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from conftest import approve, undocumented_fields

from workbench.cli.main import main
from workbench.errors import WorkbenchError
from workbench.heldout import HeldOutLedger, ledger_path_for
from workbench.reports import certify, read_lock, verify_report
from workbench.reports._certify import resume_review
from workbench.reports._migration import pending_for_report, record_transition_review

# Migration certifications execute 03_certify.ipynb (both versions, then resumes).
pytestmark = pytest.mark.notebook

ROOT = Path(__file__).resolve().parents[1]
# The tests that use this module's certified world run in its project, to read its held-out
# ledger (tests/conftest.py); every other test has a project of its own.
MODULE_PROJECT = True
DEMO = ROOT / "data" / "demo"
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
    "name": "lenient-migration",
    "version": "1",
    "owner": "migration tests",
    "rationale": (
        "Lenient enough for the small demo held-out partition, so a reviewed migration can be"
        " certified."
    ),
    "rubric_version": "support-policy-2026.09",
    "partition": "held_out",
    "max_evaluator_errors": 0,
    "min_n_per_slice": 1,
    "controls": {"suite": "../controls/support-controls@1.yaml"},
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
}
RENAMED_MODULE = '''
from ragas.metrics import discrete_metric
from ragas.metrics.result import MetricResult

from workbench.judges.demo import v2_verdict

NAMES = {"pass": "ok", "fail": "not_ok"}


@discrete_metric(name="renamed_v2", allowed_values=["ok", "not_ok"])
def renamed_v2(user_input: str, response: str, grading_notes: str) -> MetricResult:
    """rubric-judge@2 under its old category names."""
    result = v2_verdict(response, grading_notes)
    return MetricResult(value=NAMES[result.value], reason=result.reason)
'''


@pytest.fixture(autouse=True)
def _approvers(tmp_path: Path) -> None:
    """Who may approve this test project's overrides (the store's workbench.yaml)."""
    approve(tmp_path, "A", "Ana Quality", "Quality lead")


def cli(*args: Any) -> Any:
    return CliRunner().invoke(main, [str(a) for a in args])


def make_world(base: Path, **policy_changes: Any) -> dict[str, Path]:
    gold = base / "gold"
    shutil.copytree(DEMO, gold)
    (base / "controls").mkdir()
    shutil.copyfile(
        ROOT / "data" / "controls" / "support-controls@1.yaml",
        base / "controls" / "support-controls@1.yaml",
    )
    candidates = base / "candidates"
    candidates.mkdir()
    for name in ("rubric-judge@2.yaml", "rubric-judge@3.yaml"):
        shutil.copyfile(ROOT / "data" / "candidates" / name, candidates / name)
    policies = base / "policies"
    policies.mkdir()
    policy = policies / "lenient-migration@1.yaml"
    policy.write_text(yaml.safe_dump({**LENIENT, **policy_changes}), encoding="utf-8")
    return {
        "base": base,
        "gold": gold,
        "old": candidates / "rubric-judge@2.yaml",
        "new": candidates / "rubric-judge@3.yaml",
        "policy": policy,
        "reports": base / "reports",
    }


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    w: dict[str, Any] = make_world(tmp_path_factory.mktemp("migration"))
    w["first"] = certify(
        w["new"], w["policy"], w["gold"], reports_root=w["reports"], baseline=w["old"]
    )
    return w


@pytest.fixture
def copy(world: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    """This test's own copy of the world (gold with its ledger and logs, reports)."""
    target = tmp_path / "w"
    shutil.copytree(world["base"], target, symlinks=True)
    for path in target.rglob("*"):
        path.chmod(path.stat().st_mode | 0o200)
    out = {
        k: target / Path(v).relative_to(world["base"]) if isinstance(v, Path) else v
        for k, v in world.items()
    }
    out["first_dir"] = target / Path(world["first"].report_dir).relative_to(world["base"])
    return out


def public_text(report_dir: Path) -> str:
    return "\n".join(
        (report_dir / name).read_text(encoding="utf-8")
        for name in ("migration.json", "gate.json", "lock.json", "report.html")
    )


def test_unreviewed_critical_transitions_are_review_required_under_one_ledger_entry(
    world: dict[str, Any],
) -> None:
    first = world["first"]
    report = Path(first.report_dir)
    assert first.outcome == "review_required", first.blockers
    unreviewed = [b for b in first.blockers if b["code"] == "critical_transition_unreviewed"]
    assert unreviewed and {b["slice"] for b in unreviewed} <= {"refund_policy", "account_security"}
    assert all(
        b["case_ids"] == [] and b["case_count"] >= 1 for b in unreviewed
    )  # counts only in public
    # One held-out use: one started entry, of kind migration, with both fingerprints.
    entries = HeldOutLedger(ledger_path_for(world["gold"])).entries()
    started = [e for e in entries if e.event == "started"]
    lock = read_lock(report)
    assert len(started) == 1 and started[0].kind == "migration"
    assert (started[0].candidate_fingerprint, started[0].baseline_fingerprint) == (
        lock.candidate_fingerprint,
        lock.baseline_fingerprint,
    )
    assert lock.baseline == "rubric-judge@2" and lock.kind == "migration"
    finished = [e for e in entries if e.event == "finished"]
    assert (
        len(finished) == 1
        and finished[0].run_records_sha256
        and finished[0].baseline_run_records_sha256
    )
    # Controls of both versions ran before any held-out call.
    assert (report / "controls" / "results.jsonl").exists() and (
        report / "baseline" / "controls" / "results.jsonl"
    ).exists()
    control_mtime = max(
        (report / d / "results.jsonl").stat().st_mtime for d in ("controls", "baseline/controls")
    )
    held_out_mtime = min(
        (report / d / "results.jsonl").stat().st_mtime
        for d in ("restricted/run", "restricted/baseline/run")
    )
    assert control_mtime <= held_out_mtime
    # The transitions by case id in the restricted part; counts only in public files.
    rows = [
        json.loads(line)
        for line in (report / "restricted" / "transitions.jsonl").read_text().splitlines()
    ]
    ids = sorted(r["transition"]["case_id"] for r in rows if r["review"] == "unreviewed")
    assert ids and sum(b["case_count"] for b in unreviewed) == len(ids)
    public = public_text(report)
    assert not [cid for cid in ids if cid in public]
    summary = json.loads((report / "migration.json").read_text())
    assert (
        sum(r["unreviewed"] for r in summary["reviews"]) == len(ids) and lock.migration == summary
    )
    assert "Transitions" in (report / "restricted" / "transitions.html").read_text()
    # Authority requested and granted are locked; the sentinels ran for drift.
    assert lock.requested_authority["use"] == "block" and lock.grant["use"] == "none"
    assert lock.evidence["sentinel_records"] and (report / "sentinels" / "results.jsonl").exists()
    assert verify_report(report) == []


def test_a_second_migration_without_a_reason_is_a_reuse(
    world: dict[str, Any], copy: dict[str, Any]
) -> None:
    with pytest.raises(WorkbenchError) as info:
        certify(
            copy["new"],
            copy["policy"],
            copy["gold"],
            reports_root=copy["reports"],
            baseline=copy["old"],
        )
    assert "held_out_reuse" in {p.code for p in info.value.problems}
    assert any(
        "--rerun-reason" in p.fix for p in info.value.problems
    )  # the candidate's re-use needs a reason
    assert (
        len(
            [
                e
                for e in HeldOutLedger(ledger_path_for(copy["gold"])).entries()
                if e.event == "started"
            ]
        )
        == 1
    )


def _trusted_key(folder: Path) -> Path:
    """A signing key (written in ``folder``) whose public key the current project trusts (route
    and block rest only on a lock signed by such a key)."""
    from conftest import current_project
    from test_authority import keypair

    private, public = keypair(folder)
    config = current_project() / "workbench.yaml"
    raw = yaml.safe_load(config.read_text(encoding="utf-8"))
    config.write_text(yaml.safe_dump({**raw, "trusted_keys": str(public)}), encoding="utf-8")
    return private


def test_reviews_then_resume_certify_and_a_rejection_fails(
    copy: dict[str, Any], tmp_path: Path
) -> None:
    from workbench.ui import TransitionReviewForm

    first, gold = copy["first_dir"], copy["gold"]
    pending, log, _ = pending_for_report(first, gold)
    assert pending
    # One through the widget's note form (its validation first: no evidence id that does not
    # resolve).
    form = TransitionReviewForm(first, gold=gold, reviewer="Rita Reviewer")
    form.case.value = 0
    form.decision.value = "accept"
    form.evidence.value = "no-such-evidence"
    assert form.save() is None and "unresolved_evidence" in form.status.value
    form.evidence.value = ", ".join(pending[0].cited) or "pol-ref-01"
    saved = form.save()
    assert (
        saved is not None
        and saved.case_id == pending[0].case_id
        and saved.reviewer == "Rita Reviewer"
    )
    # The rest through the CLI (bad input: exit 2, one line per problem).
    bad = cli(
        "review",
        "transition",
        "--report",
        first,
        "--case",
        pending[-1].case_id,
        "--decision",
        "accept",
        "--reviewer",
        "Rita",
        "--gold",
        gold,
    )
    assert bad.exit_code == 2 and "[option_missing]" in bad.output and "Traceback" not in bad.output
    for p in pending[1:]:
        result = cli(
            "review",
            "transition",
            "--report",
            first,
            "--case",
            p.case_id,
            "--decision",
            "accept",
            "--evidence",
            ",".join(p.cited),
            "--reviewer",
            "Rita Reviewer",
            "--note",
            "the cited notes settle it",
            "--gold",
            gold,
        )
        assert result.exit_code == 0, result.output
    listed = cli("review", "transition", "--report", first, "--list", "--json", "--gold", gold)
    assert listed.exit_code == 0 and {r["status"] for r in json.loads(listed.output)} == {
        "accepted"
    }
    again = resume_review(first, gold=gold, sign_key=_trusted_key(tmp_path))
    assert again.outcome == "certified", again.blockers
    lock = read_lock(again.report_dir)
    assert (
        lock.kind == "review_reevaluation"
        and lock.resumes is not None
        and lock.resumes.report_id == read_lock(first).report_id
    )
    assert lock.grant["use"] == "block"
    assert verify_report(again.report_dir, gold=gold) == []
    assert log == gold.resolve() / "transition_reviews.jsonl" and len(
        log.read_text().splitlines()
    ) == len(pending)
    entries = HeldOutLedger(ledger_path_for(copy["gold"])).entries()
    assert [(e.kind, e.held_out_used) for e in entries if e.event == "finished"] == [
        ("migration", True),
        ("review_reevaluation", False),
    ]  # the re-evaluation judged nothing
    # The demo's ending: status shows the promotion, then the judge stale after the rubric changes.
    status_after_promotion_then_stale(copy, Path(again.report_dir))
    # A later rejection of one transition (the latest review counts): quality failed.
    p = pending[0]
    record_transition_review(
        first,
        p.case_id,
        "reject",
        list(p.cited) or ["pol-ref-01"],
        reviewer="Second Reviewer",
        note="on a second reading the change breaks the refund rule",
        gold=gold,
    )
    rejected = resume_review(first, gold=gold)
    assert rejected.outcome == "quality_failed" and "critical_transition_rejected" in {
        b["code"] for b in rejected.blockers
    }
    assert verify_report(rejected.report_dir, gold=gold) == []
    # The re-evaluation's link to the report it resumes is a chain too: an edit of the first
    # report's lock that keeps its recorded hash breaks it (old main read only the hash field,
    # and never followed `resumes`).
    lock_path = first / "lock.json"
    data = json.loads(lock_path.read_text(encoding="utf-8"))
    lock_path.write_text(json.dumps({**data, "outcome": "certified"}), encoding="utf-8")
    broken = verify_report(rejected.report_dir, gold=gold)
    assert [(p.code, Path(p.location).parent.name) for p in broken] == [("chain_broken", "1")]


def status_after_promotion_then_stale(w: dict[str, Any], report: Path) -> None:
    gold, spec = w["gold"], w["new"]
    common = ("--gold", gold, "--candidate", spec, "--report", report, "--approver", "Ana Quality")
    for step in (
        ("grant", "--reason", "migration certified, transitions reviewed"),
        ("promote", "--reason", "annotations reviewed"),
    ):
        result = cli("authority", step[0], *common, *step[1:])
        assert result.exit_code == 0, result.output
    result = cli(
        "drift",
        "--candidate",
        spec,
        "--gold",
        gold,
        "--against",
        report,
        "--out",
        w["base"] / "drift",
        "--no-progress",
    )
    assert result.exit_code == 0, result.output  # the sentinel verdicts recorded at certification
    result = cli(
        "authority", "promote", *common, "--reason", "sentinels stable after certification"
    )
    assert result.exit_code == 0 and "route -> block" in result.output, result.output
    shown = cli("status", "--gold", gold)
    assert shown.exit_code == 0 and "rubric-judge@3: BLOCK" in shown.output, shown.output
    changed = w["base"] / "gold-next-rubric"
    shutil.copytree(gold, changed)
    rubric = changed / "rubric.yaml"
    rubric.write_text(
        rubric.read_text(encoding="utf-8").replace(
            "version: support-policy-2026.09", "version: support-policy-2027.01", 1
        ),
        encoding="utf-8",
    )
    stale = cli("status", "--gold", changed)
    assert (
        stale.exit_code == 4
        and "rubric-judge@3: ROUTE (recorded block, effective route)" in stale.output
    ), stale.output
    assert "stale" in stale.output


@pytest.mark.parametrize(
    "target",
    ["restricted/transitions.jsonl", "restricted/transition_reviews.jsonl", "migration.json"],
)
def test_verify_detects_tampering_with_the_migration(copy: dict[str, Any], target: str) -> None:
    report = copy["first_dir"]
    path = report / target
    text = path.read_text(encoding="utf-8")
    if target == "migration.json":
        data = json.loads(text)
        data["reviews"][0]["unreviewed"] = 0
        text = json.dumps(data)
    elif target.endswith("transitions.jsonl"):
        text = text.replace('"unreviewed"', '"accepted"', 1)
    else:
        text += json.dumps({"forged": True}) + "\n"
    path.write_text(text, encoding="utf-8")
    problems = verify_report(report, gold=copy["gold"])
    assert problems and any(
        p.code in {"file_changed", "migration_mismatch", "transitions_mismatch", "evidence_invalid"}
        for p in problems
    ), problems
    result = cli("verify", report, "--gold", copy["gold"])
    assert result.exit_code == 1


def test_recomputation_catches_a_forged_migration_even_with_rehashed_files(
    copy: dict[str, Any],
) -> None:
    """Rewrite migration.json and the lock's file hashes consistently: the recomputation still
    disagrees.
    """
    from workbench.reports._migration import migration_problems
    from workbench.reports._recompute import recompute

    report = copy["first_dir"]
    lock = read_lock(report)
    forged = dict(lock.migration or {})
    forged["reviews"] = [
        {**r, "accepted": r["needs_review"], "unreviewed": 0} for r in forged["reviews"]
    ]
    (report / "migration.json").write_text(json.dumps(forged), encoding="utf-8")
    again = recompute(report, lock.model_copy(update={"migration": forged}))
    codes = {
        p.code
        for p in migration_problems(
            report, lock.model_copy(update={"migration": forged}), again.migration, None
        )
    }
    assert codes == {"migration_mismatch"}


def test_a_renamed_label_needs_a_mapping_whose_hash_is_locked_and_a_flip_limit_needs_a_study(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slices = {
        **LENIENT["slices"],
        "refund_policy": {**LENIENT["slices"]["refund_policy"], "max_flip_rate": 0.1},
    }
    w = make_world(tmp_path, slices=slices)
    (tmp_path / "judges").mkdir()
    (tmp_path / "judges" / "renamed_demo.py").write_text(RENAMED_MODULE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path / "judges"))
    monkeypatch.setenv(
        "PYTHONPATH", str(tmp_path / "judges")
    )  # the certification kernel imports it too
    old = tmp_path / "candidates" / "rubric-judge@2r.yaml"
    old.write_text(
        yaml.safe_dump(
            {
                "schema_version": 1,
                "name": "rubric-judge",
                "version": "2r",
                "kind": "ragas-function",
                "labels": ["ok", "not_ok"],
                "function": "renamed_demo:renamed_v2",
            }
        ),
        encoding="utf-8",
    )
    # No mapping: refused before the ledger is touched (exit 2).
    result = cli(
        "certify",
        "--candidate",
        w["new"],
        "--policy",
        w["policy"],
        "--gold",
        w["gold"],
        "--reports",
        w["reports"],
        "--baseline",
        old,
    )
    assert result.exit_code == 2 and "label_mapping_required" in result.output, result.output
    # A mapping that leaves a label unmapped blocks too.
    approve(tmp_path, "Quality lead")  # a mapping's approver is in the project's list
    partial = tmp_path / "partial.yaml"
    partial.write_text(
        yaml.safe_dump(
            {
                "schema_version": 1,
                "from": "rubric-judge@2r",
                "to": "rubric-judge@3",
                "approver": "Quality lead",
                "approved": "2026-12-01",
                "reason": "renamed",
                "mapping": {"ok": "pass"},
            }
        ),
        encoding="utf-8",
    )
    result = cli(
        "certify",
        "--candidate",
        w["new"],
        "--policy",
        w["policy"],
        "--gold",
        w["gold"],
        "--reports",
        w["reports"],
        "--baseline",
        old,
        "--label-mapping",
        partial,
    )
    assert result.exit_code == 2 and "label_unmapped" in result.output, result.output
    assert (
        not ledger_path_for(w["gold"]).exists()
        or not HeldOutLedger(ledger_path_for(w["gold"])).entries()
    )
    mapping = tmp_path / "mapping.yaml"
    approve(tmp_path, "Quality lead")
    mapping.write_text(
        yaml.safe_dump(
            {
                "schema_version": 1,
                "from": "rubric-judge@2r",
                "to": "rubric-judge@3",
                "approver": "Quality lead",
                "approved": "2026-12-01",
                "reason": "renamed",
                "mapping": {"ok": "pass", "not_ok": "fail"},
            }
        ),
        encoding="utf-8",
    )
    done = certify(
        w["new"],
        w["policy"],
        w["gold"],
        reports_root=w["reports"],
        baseline=old,
        label_mapping=mapping,
    )
    lock = read_lock(done.report_dir)
    import hashlib

    assert (
        lock.evidence["label_mapping"]
        == hashlib.sha256(mapping.read_bytes()).hexdigest()
        == lock.migration["label_mapping_sha256"]
    )
    # The policy limits refund_policy's flip rate and there is no repeatability study: incomplete.
    assert done.outcome == "evaluation_incomplete" and "repeatability_study_missing" in {
        b["code"] for b in done.blockers
    }
    assert verify_report(done.report_dir) == []


def test_lifecycle_codes_are_registered_and_never_waivable(tmp_path: Path) -> None:
    from workbench.errors import WorkbenchError
    from workbench.policy import NON_WAIVABLE_CODES, build_override, codes_of
    from workbench.reports._blockers import family

    migration, repeatability = codes_of("migration"), codes_of("repeatability")
    table = (ROOT / "workbench" / "migration" / "_certify.py").read_text(encoding="utf-8")
    assert set(migration) == {
        "critical_transition_unreviewed",
        "critical_transition_rejected",
        "label_unmapped",
        "baseline_incomplete",
    } and all(f"\n  {code} " in table for code in migration)  # the module table
    assert (set(migration) | set(repeatability)) <= NON_WAIVABLE_CODES
    with pytest.raises(WorkbenchError) as refused:  # an override naming one is refused
        build_override(
            tmp_path / "o.jsonl",
            policy="support-release@3",
            approver="A",
            reason="r",
            expires_at="2099-01-01",
            follow_up="F",
            codes=[*migration, *repeatability],
        )
    assert [p.code for p in refused.value.problems] == ["override_code_not_waivable"] * (
        len(migration) + len(repeatability)
    )
    assert {family({"code": c}) for c in migration} == {"migration"}
    assert {family({"code": c}) for c in repeatability} == {"repeatability"}
    source = (ROOT / "workbench" / "repeatability" / "_study.py").read_text(encoding="utf-8")
    assert all(f'"{code}"' in source for code in repeatability)


@pytest.mark.parametrize(
    "model", ["MigrationSummary", "SliceReview", "TransitionRow", "TransitionReview"]
)
def test_every_new_record_field_is_documented(model: str) -> None:
    from workbench.migration import _certify
    from workbench.review import _transition_reviews

    cls = getattr(_certify, model, None) or getattr(_transition_reviews, model)
    doc = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
    assert [name for name in cls.model_fields if f"`{name}`" not in doc] == []
    assert undocumented_fields(cls, "schema_version") == []


def test_every_command_of_the_migration_section_is_exercised_here() -> None:
    import re

    text = (ROOT / "docs" / "lifecycle.md").read_text(encoding="utf-8")
    section = text.split("## Migration certification", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"workbench ([a-z][a-z-]*(?: [a-z][a-z-]*)?)", section))
    flags = set(re.findall(r"(--[a-z][a-z-]+)", section))
    source = Path(__file__).read_text(encoding="utf-8")
    assert named >= {"certify", "review transition", "verify"}
    exercised = {
        "certify": "certify(",
        "review transition": '"review", "transition"',
        "verify": "verify",
        "drift": '"drift"',
        "repeatability": "repeatability_study_missing",
    }
    assert [c for c in named if exercised.get(c, c) not in source] == []
    assert [
        f for f in flags if f.lstrip("-").replace("-", "_") not in source and f not in source
    ] == []


def test_a_flip_limit_reads_the_study_exceeded_is_quality_and_critical_crossings_are_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reproduction: certification never read a repeatability study; a judge that flipped on
    identical inputs in a critical slice could be certified under a policy limiting the flip rate.
    """
    import migration_judges

    from workbench.gold import load_dataset
    from workbench.repeatability import run_repeatability_sync

    slices = {
        **LENIENT["slices"],
        "refund_policy": {**LENIENT["slices"]["refund_policy"], "max_flip_rate": 0.0},
    }
    w = make_world(tmp_path, slices=slices, controls=None)
    monkeypatch.setenv(
        "PYTHONPATH", str(Path(__file__).parent)
    )  # the kernel imports migration_judges
    spec = tmp_path / "candidates" / "flaky@1.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "schema_version": 1,
                "name": "flaky",
                "version": "1",
                "kind": "ragas-function",
                "labels": ["pass", "fail", "review_required"],
                "function": "migration_judges:flaky",
            }
        ),
        encoding="utf-8",
    )
    dataset = load_dataset(w["gold"])
    refund = next(c for c in dataset.partition("calibration") if c.slice == "refund_policy")
    migration_judges.FLAKY.clear()
    migration_judges.FLAKY[refund.response] = ["fail"]  # fail once, then pass: a boundary crossing
    study = run_repeatability_sync(
        spec,
        w["gold"],
        "calibration",
        3,
        tmp_path / "study",
        concurrency=1,
        progress=False,
        cache_dir=False,
    )
    assert study.slices and any(c.needs_review for c in study.cases)
    done = certify(spec, w["policy"], w["gold"], reports_root=w["reports"])
    codes = {(b["code"], b["category"]) for b in done.blockers}
    assert ("flip_rate_exceeded", "quality") in codes and (
        "boundary_crossing_critical",
        "review",
    ) in codes
    assert done.outcome == "quality_failed"
    crossing = next(b for b in done.blockers if b["code"] == "boundary_crossing_critical")
    assert (
        crossing["case_ids"] == [] and crossing["case_count"] == 1
    )  # the case by id stays restricted
    assert (
        read_lock(done.report_dir).evidence["repeatability_studies"]
        and verify_report(done.report_dir, gold=w["gold"]) == []
    )


def test_a_damaged_transition_review_log_is_refused_before_the_ledger(tmp_path: Path) -> None:
    w = make_world(tmp_path)
    (w["gold"] / "transition_reviews.jsonl").write_text('{"review_id": "x"}\n', encoding="utf-8")
    result = cli(
        "certify",
        "--candidate",
        w["new"],
        "--policy",
        w["policy"],
        "--gold",
        w["gold"],
        "--reports",
        w["reports"],
        "--baseline",
        w["old"],
    )
    assert (
        result.exit_code == 2
        and "[transition_review_invalid]" in result.output
        and "Traceback" not in result.output
    ), result.output
    assert (
        not ledger_path_for(w["gold"]).exists()
        or not HeldOutLedger(ledger_path_for(w["gold"])).entries()
    )
    baseline_is_candidate = cli(
        "certify",
        "--candidate",
        w["new"],
        "--policy",
        w["policy"],
        "--gold",
        w["gold"],
        "--reports",
        w["reports"],
        "--baseline",
        w["new"],
    )
    assert (
        baseline_is_candidate.exit_code == 2
        and "[baseline_is_candidate]" in baseline_is_candidate.output
    )
    mapping_alone = cli(
        "certify",
        "--candidate",
        w["new"],
        "--policy",
        w["policy"],
        "--gold",
        w["gold"],
        "--reports",
        w["reports"],
        "--label-mapping",
        tmp_path / "m.yaml",
    )
    assert mapping_alone.exit_code == 2 and "[mapping_without_baseline]" in mapping_alone.output
    resume_extra = cli("certify", "--resume-review", tmp_path / "nowhere", "--candidate", w["new"])
    assert resume_extra.exit_code == 2 and "[option_with_resume_review]" in resume_extra.output
