"""Certification end to end on the demo data: a real held-out run, a real gate, a locked report."""

from __future__ import annotations

import json
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from _certified import SharedCertification, demo_endings, demo_release_certification
from click.testing import CliRunner

from workbench.align import alignment_report, join_results
from workbench.cli import main
from workbench.gold import load_dataset
from workbench.heldout import HeldOutLedger, ledger_path_for
from workbench.policy import evaluate_gate, load_policy
from workbench.reports import certify, external_references, read_lock, verify_report
from workbench.reports._certify import CertificationResult
from workbench.results import read_results
from workbench.runs import RunSummary

pytestmark = pytest.mark.notebook

ROOT = Path(__file__).resolve().parents[1]
# The tests that use this module's certified world run in its project, to read its held-out
# ledger (tests/conftest.py); every other test has a project of its own.
MODULE_PROJECT = True
CANDIDATE = ROOT / "data" / "candidates" / "rubric-judge@2.yaml"
POLICY = ROOT / "data" / "policies" / "support-release@1.yaml"
DEMO = ROOT / "data" / "demo"
SHARED = ("report.html", "certification.ipynb", "gate.json", "lock.json")


def fresh_gold(directory: Path) -> Path:
    """A copy of the demo gold: its held-out ledger lives beside it, so tests never touch
    data/demo.
    """
    gold = directory / "gold"
    shutil.copytree(DEMO, gold)
    return gold


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedCertification]:
    """rubric-judge@2 under support-release@1 on a copy of the demo gold, certified once per run
    (tests/_certified.py): the tests below read and verify it in its project, never write
    there."""
    with demo_release_certification(tmp_path_factory).pinned() as shared:
        yield shared


@pytest.fixture(scope="module")
def demo_gold(shared: SharedCertification) -> Path:
    return shared.gold


@pytest.fixture(scope="module")
def first(shared: SharedCertification) -> CertificationResult:
    return shared.results[0]


def test_outcome_is_the_gate_recomputed_from_the_run_records(first, demo_gold: Path) -> None:
    report_dir = first.report_dir
    dataset = load_dataset(demo_gold)
    lines = read_results(report_dir / "restricted" / "run" / "results.jsonl", verify_requests=True)
    join = join_results(dataset, lines, partition="held_out")
    summary = RunSummary.model_validate_json(
        (report_dir / "restricted" / "run" / "run.json").read_text()
    )
    gate = evaluate_gate(
        alignment_report(join),
        load_policy(POLICY),
        rubric=dataset.rubric,
        run=summary,
        join=join,
        now=read_lock(report_dir).evaluated_at,
    )
    lock = read_lock(report_dir)
    assert lock.outcome == gate.outcome == first.outcome
    assert [b["code"] for b in lock.blockers] == [b.code for b in gate.blockers]
    assert gate.outcome in {
        "certified",
        "quality_failed",
        "evaluation_incomplete",
        "review_required",
    }
    assert len(lines) == len(
        dataset.partition("held_out")
    )  # every held-out case judged exactly once


def test_lock_records_every_hash_and_verifies(first, demo_gold: Path) -> None:
    report_dir = first.report_dir
    lock = read_lock(report_dir)
    assert lock.lock_sha256 == first.lock_sha256 == lock.content_sha256()
    dataset = load_dataset(demo_gold)
    assert lock.evidence["gold_dataset"] == dataset.sha256
    assert lock.evidence["html"] == lock.files["report.html"]
    assert lock.evidence["executed_notebook"] == lock.files["certification.ipynb"]
    assert lock.evidence["run_records"] == lock.files["restricted/run/results.jsonl"]
    assert lock.evidence["policy"] == lock.files["inputs/support-release@1.yaml"]
    assert lock.evidence["candidate_spec"] == lock.files["inputs/rubric-judge@2.yaml"]
    assert (
        set(lock.versions) == {"workbench", "ragas", "python"} and lock.versions["ragas"] == "0.4.3"
    )
    assert set(lock.git) == {"commit", "dirty"}
    assert lock.ledger_entry["event"] == "started" and lock.previous_report is None
    assert lock.ledger_path == str(ledger_path_for(demo_gold))  # the project's one ledger
    assert Path(lock.ledger_path).parent != demo_gold.resolve()  # not beside the data
    assert verify_report(report_dir) == []
    result = CliRunner().invoke(main, ["verify", str(report_dir), "--gold", str(demo_gold)])
    assert result.exit_code == 0 and "verified" in result.output


def test_report_is_read_only(first) -> None:
    for path in [first.report_dir, *first.report_dir.rglob("*")]:
        assert not path.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH), path


def test_shared_files_hold_no_case_level_held_out_detail(first, demo_gold: Path) -> None:
    held_out_ids = [c.case_id for c in load_dataset(demo_gold).partition("held_out")]
    for name in SHARED:
        text = (first.report_dir / name).read_text(encoding="utf-8")
        leaked = [cid for cid in held_out_ids if cid in text]
        assert leaked == [], (name, leaked[:3])
    restricted = (first.report_dir / "restricted" / "held_out_cases.jsonl").read_text()
    assert all(cid in restricted for cid in held_out_ids)


def test_html_is_self_contained_and_shows_the_evidence(first) -> None:
    html = (first.report_dir / "report.html").read_text(encoding="utf-8")
    assert external_references(html) == []
    assert f'data-outcome="{first.outcome}"' in html
    assert "<svg" in html and "Judge error rates by slice" in html  # chart inlined as SVG
    assert "Held-out ledger entry" in html and "Lineage" in html
    assert "Held-out error rates by case field" in html and "By confidence × slice" in html
    assert (
        "Cost and tokens per judged case, by slice (median, p95, max)" in html
        and "cost_usd_p95" in html
    )
    assert "import workbench" not in html and "Certification(" not in html  # code hidden
    assert "How often this gate is wrong" in html and "P(review_required)" in html


def test_tampering_is_detected_and_named(first, tmp_path: Path) -> None:
    copy_root = tmp_path / "copy"
    shutil.copytree(first.report_dir.parents[2], copy_root)
    report = copy_root / first.report_id
    for path in [report, *report.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    (report / "report.html").write_text(
        (report / "report.html").read_text().replace("QUALITY", "CERTIFIED", 1)
    )
    (report / "extra.txt").write_text("x")
    problems = {(p.code, Path(p.location).name) for p in verify_report(report)}
    assert ("file_changed", "report.html") in problems and ("file_added", "extra.txt") in problems
    result = CliRunner().invoke(main, ["verify", str(report)])
    assert result.exit_code == 1 and "report.html" in result.output
    lock = json.loads((report / "lock.json").read_text())
    lock["outcome"] = "certified"
    (report / "lock.json").write_text(json.dumps(lock))
    assert "lock_changed" in {p.code for p in verify_report(report)}


def test_a_failed_notebook_is_an_incomplete_locked_report(tmp_path: Path) -> None:
    import nbformat

    broken = nbformat.read(ROOT / "notebooks" / "03_certify.ipynb", as_version=4)
    broken.cells.insert(3, nbformat.v4.new_code_cell("raise RuntimeError('kernel died mid-run')"))
    path = tmp_path / "broken.ipynb"
    nbformat.write(broken, path)
    result = certify(
        CANDIDATE, POLICY, fresh_gold(tmp_path), reports_root=tmp_path / "reports", notebook=path
    )
    assert result.outcome == "evaluation_incomplete"
    assert [b["code"] for b in result.blockers] == ["certification_failed"]
    assert "kernel died mid-run" in json.dumps(result.blockers)
    assert verify_report(result.report_dir) == []


def test_held_out_is_refused_outside_certification(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        [
            "run",
            "--candidate",
            str(CANDIDATE),
            "--gold",
            str(DEMO),
            "--partition",
            "held_out",
            "--out",
            str(tmp_path / "o"),
            "--no-progress",
        ],
    )
    assert result.exit_code == 2 and "held_out_refused" in result.output
    assert not (tmp_path / "o" / "results.jsonl").exists()


def test_bad_inputs_exit_2_without_traceback(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        [
            "certify",
            "--candidate",
            str(CANDIDATE),
            "--policy",
            str(tmp_path / "none.yaml"),
            "--gold",
            str(DEMO),
            "--reports",
            str(tmp_path / "r"),
        ],
    )
    assert (
        result.exit_code == 2
        and "policy_missing" in result.output
        and "Traceback" not in result.output
    )
    assert not (tmp_path / "r").exists()


def test_llm_candidate_certifies_and_its_key_is_written_nowhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import yaml

    from workbench.demo.fake_llm import respond
    from workbench.testing import FakeLLM

    secret = "sk-cert-7Qm2-never-in-a-file-91b4"
    monkeypatch.setenv("DEMO_LLM_API_KEY", secret)  # the notebook kernel inherits the environment
    with FakeLLM(responder=respond, require_api_key=secret) as server:
        spec = yaml.safe_load(
            (ROOT / "data" / "candidates" / "support-llm-judge@1.yaml").read_text()
        )
        spec["endpoint"]["base_url"] = server.base_url  # a free port, not the demo's fixed one
        candidates = tmp_path / "candidates"
        (candidates / "prompts").mkdir(parents=True)
        shutil.copyfile(
            ROOT / "data" / "candidates" / "prompts" / "support-llm-judge@1.md",
            candidates / "prompts" / "support-llm-judge@1.md",
        )
        (candidates / "support-llm-judge@1.yaml").write_text(yaml.safe_dump(spec))
        result = certify(
            candidates / "support-llm-judge@1.yaml",
            POLICY,
            fresh_gold(tmp_path),
            reports_root=tmp_path / "reports",
        )
        calls = server.calls
    # Held-out once, then the sentinels (never held-out cases) so `workbench drift --against REPORT`
    # has a baseline.
    from workbench.repeatability import load_sentinels

    sentinels = load_sentinels(None, load_dataset(DEMO)).cases
    assert len(calls) == len(load_dataset(DEMO).partition("held_out")) + len(sentinels) and all(
        c.authorized for c in calls
    )
    assert (result.report_dir / "sentinels" / "results.jsonl").exists() and read_lock(
        result.report_dir
    ).evidence["sentinel_records"]
    assert result.outcome in {"quality_failed", "review_required"}
    lock = read_lock(result.report_dir)
    assert lock.evidence["run_records"] is not None and verify_report(result.report_dir) == []
    scanned = [p for p in (tmp_path / "reports").rglob("*") if p.is_file()]
    assert len(scanned) >= 10
    assert [p for p in scanned if secret.encode() in p.read_bytes()] == []


def test_failed_blocking_controls_stop_before_held_out(tmp_path: Path) -> None:
    policy = (
        ROOT / "data" / "policies" / "support-release@2.yaml"
    )  # = @1 plus a blocking control suite
    gold = fresh_gold(tmp_path)
    result = certify(CANDIDATE, policy, gold, reports_root=tmp_path / "reports")
    codes = {b["code"] for b in result.blockers}
    assert (
        result.outcome == "quality_failed"
        and codes
        and all(c.startswith("control_failed_") for c in codes)
    )
    assert codes <= {
        "control_failed_positive",
        "control_failed_negative",
        "control_failed_adversarial",
    }
    assert not (result.report_dir / "restricted" / "run").exists()  # held-out data untouched
    assert (result.report_dir / "controls" / "results.jsonl").exists()
    lock = read_lock(result.report_dir)
    assert lock.evidence["control_suite"] == lock.files["inputs/controls/support-controls@1.yaml"]
    assert lock.evidence["run_records"] is None and verify_report(result.report_dir) == []
    html = (result.report_dir / "report.html").read_text()
    assert "Controls (run first" in html and "the held-out partition was not used" in html
    entries = HeldOutLedger(ledger_path_for(gold)).entries()
    assert entries[-1].event == "finished" and entries[-1].held_out_used is False
    # held-out was never used, so a second certification needs no re-run reason
    again = certify(CANDIDATE, policy, gold, reports_root=tmp_path / "reports")
    assert again.report_id.endswith("/2") and again.outcome == "quality_failed"


def test_demo_has_both_endings(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """make demo's two certifications: rubric-judge@2 fails its controls, rubric-judge@3 needs
    review and says how many more human-fail cases each critical slice needs."""
    from workbench.stats import cases_needed

    policy = ROOT / "data" / "policies" / "support-release@3.yaml"
    endings = demo_endings(tmp_path_factory)  # shared by the run (tests/_certified.py)
    monkeypatch.setenv("WORKBENCH_PROJECT_ROOT", str(endings.project))  # its ledger, read only
    gold = endings.gold
    two, three = endings.results
    assert two.outcome == "quality_failed" and {b["code"] for b in two.blockers} == {
        "control_failed_negative",
        "control_failed_adversarial",
    }
    assert not (two.report_dir / "restricted" / "run").exists()
    assert three.outcome == "review_required"
    assert [(b["slice"], b["code"]) for b in three.blockers] == [
        ("account_security", "false_pass_rate_unproven"),
        ("refund_policy", "false_pass_rate_unproven"),
    ]
    html = (three.report_dir / "report.html").read_text(encoding="utf-8")
    # the gate, the report and `workbench plan` cite one figure: the plan's cases to bound at half
    # the limit
    planned = json.loads(
        CliRunner()
        .invoke(main, ["plan", "--policy", str(policy), "--gold", str(gold), "--json"])
        .output
    )
    for b in three.blockers:
        row = next(
            r
            for r in planned["rows"]
            if r["slice"] == b["slice"] and r["requirement"] == "false_pass_rate"
        )
        have = b["evidence"]["human_fails_decided"]
        assert (
            row["needed"]
            == b["evidence"]["verdicts_needed_to_bound_at_half_limit"]
            > cases_needed(0.2)
        )
        assert (
            f"{b['slice']}: {have} human-fail cases; the limit 0.20 needs at least {row['needed']}"
            " to bound at 0.10 (Wilson)" in b["message"]
        )
        more = row["needed"] - have
        assert (
            more > 0
            and b["evidence"]["more_verdicts_needed"] == more
            and f"{b['slice']} +{more} human-fail" in html
        )
        assert (
            f"{more} more human-fail cases judged pass or fail needed: {row['needed']} to bound it"
            " at half the limit" in html
        )
    assert (
        f"report {two.report_id}" in html and "QUALITY FAILED" in html
    )  # the previous certification of the same judge
    assert "Controls failed; held-out data was not used; fix the judge and certify again." in (
        two.report_dir / "report.html"
    ).read_text(encoding="utf-8")
    assert verify_report(two.report_dir) == [] and verify_report(three.report_dir) == []
