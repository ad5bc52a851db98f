"""What a reviewer reads: grouped blockers, rounded numbers, next steps, styled tables, quiet
output.

These are the pieces the certification report and the notebooks are built from; the browser
tests (tests/test_browser_report.py) check the assembled page.
"""

from __future__ import annotations

import io
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
import yaml

from workbench.align import alignment_report, join_results
from workbench.controls import load_suite
from workbench.gold import load_dataset
from workbench.judges.demo import v2_verdict, v3_verdict
from workbench.policy import Blocker, evaluate_gate, load_policy
from workbench.reports import (
    DASH,
    DASH_NOTE,
    group_blockers,
    last_certified,
    next_step,
    previous_certification,
    rate_text,
    render_html,
    slice_table,
    styled,
    transitions_table,
    why_lines,
)
from workbench.reports._blockers import family
from workbench.reports._present import blockers_html, first_screen_html
from workbench.runs._progress import LineProgress
from workbench.stats import (
    cases_needed,
    cases_to_bound,
    more_without_errors,
    upper_bound,
    wilson_rate,
)

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo"
POLICY3 = ROOT / "data" / "policies" / "support-release@3.yaml"
SUITE = ROOT / "data" / "controls" / "support-controls@1.yaml"
HOSTILE = "<script>window.__pwned=1</script><img src=x onerror=alert(1)>"


def _fp_blockers(slice_name: str = "account_security") -> list[Blocker]:
    """The two blockers the gate raises for the same false passes (count and rate), exact floats."""
    rate = wilson_rate(3, 31)
    common = {
        "false_passes": 3,
        "human_fails_decided": 31,
        "decided": 40,
        "cases": 44,
        "coverage": 40 / 44,
    }
    return [
        Blocker(
            code="false_passes_exceeded",
            category="quality",
            slice=slice_name,
            risk="critical",
            message="3 false passes, more than 0",
            evidence={**common, "limit": 0},
            case_ids=["held-1", "held-2", "held-3"],
            waivable=False,
        ),
        Blocker(
            code="false_pass_rate_exceeded",
            category="quality",
            slice=slice_name,
            risk="critical",
            message="upper bound exceeds 0.1",
            evidence={
                **common,
                "rate": rate.rate,
                "ci95_low": rate.ci95_low,
                "ci95_high": rate.ci95_high,
                "basis": "upper_95",
                "compared": rate.ci95_high,
                "limit": 0.1,
            },
            case_ids=["held-1", "held-2", "held-3"],
            waivable=False,
        ),
    ]


# -- blockers --------------------------------------------------------------------------------
def test_one_group_per_slice_and_code_family_with_rounded_numbers() -> None:
    blockers = [
        *_fp_blockers(),
        Blocker(
            code="too_few_cases",
            category="review",
            slice="account_security",
            risk="critical",
            message="few",
            evidence={"decided": 4, "min_n": 10},
            waivable=False,
        ),
    ]
    groups = group_blockers(blockers)
    assert [(g.slice, g.family, len(g.blockers)) for g in groups] == [
        ("account_security", "false_pass", 2),
        ("account_security", "min_n", 1),
    ]
    fp = groups[0]
    assert fp.category == "quality" and fp.badge == "FAIL"
    exact = repr(wilson_rate(3, 31).ci95_low)  # e.g. 0.0334...: many digits
    assert len(exact) > 8
    assert (
        exact not in fp.headline
        and "10% [3" in fp.headline
        and "3 false passes in 31" in fp.headline
    )
    shown = dict(fp.blockers[1]["evidence_text"])
    assert (
        shown["ci95_low"] == "0.033"
        and fp.blockers[1]["evidence"]["ci95_low"] == wilson_rate(3, 31).ci95_low
    )  # display rounded, exact kept
    assert groups[1].more_cases == 6 and "6 more decided cases needed" in groups[1].headline
    lines = why_lines(groups)
    assert (
        len(lines) == 1 and lines[0][0] == "account_security (critical)"
    )  # one line for the slice, both problems in it


def test_held_out_case_ids_never_reach_the_blocker_html_but_control_ids_do() -> None:
    controls = Blocker(
        code="control_failed_negative",
        category="quality",
        message="negative failed",
        evidence={"role": "negative", "n": 4, "passed": 2, "failed": 2, "incomplete": 0},
        case_ids=["neg-lockout", "neg-data-export"],
        waivable=False,
    )
    gate = SimpleNamespace(
        outcome="quality_failed", blockers=[*_fp_blockers(), controls], waived=[]
    )
    html = blockers_html(gate)
    assert "held-1" not in html and "neg-lockout" in html and "neg-data-export" in html
    assert family(controls) == "controls" and "negative: 2 of 4 failed" in html


def test_blocker_text_is_escaped() -> None:
    gate = SimpleNamespace(
        outcome="review_required",
        blockers=[
            Blocker(
                code="slice_not_in_policy",
                category="review",
                slice=HOSTILE,
                message=HOSTILE,
                evidence={"cases": HOSTILE},
            )
        ],
        waived=[],
    )
    html = blockers_html(gate)
    assert "<script>" not in html and "<img" not in html and "&lt;script&gt;" in html


@pytest.mark.parametrize(
    ("errors", "have", "limit"),
    [(0, 5, 0.2), (0, 0, 0.1), (1, 7, 0.2), (3, 20, 0.15), (2, 200, 0.2)],
)
def test_more_needed_is_the_smallest_sample_whose_bound_is_within_the_limit(
    errors: int, have: int, limit: float
) -> None:
    more = more_without_errors(errors, have, limit)
    assert more is not None and more >= 0
    total = have + more
    assert float(upper_bound(errors, total)) <= limit
    if more > 0:
        assert float(upper_bound(errors, total - 1)) > limit
    if errors == 0:
        assert total == max(have, cases_needed(limit))
    assert more_without_errors(0, 3, 0.0) is None  # no sample shows a limit of 0


def test_unproven_bound_says_how_many_more_human_fail_cases() -> None:
    rate = wilson_rate(0, 5)
    blocker = Blocker(
        code="false_pass_rate_unproven",
        category="review",
        slice="refund_policy",
        risk="critical",
        message="too few",
        evidence={
            "false_passes": 0,
            "human_fails_decided": 5,
            "rate": 0.0,
            "ci95_low": 0.0,
            "ci95_high": rate.ci95_high,
            "basis": "upper_95",
            "compared": rate.ci95_high,
            "limit": 0.2,
            "verdicts_needed_at_zero_errors": 16,
        },
        waivable=False,
    )
    (group,) = group_blockers([blocker])
    # a gate.json written before the sample-size fields: the report computes the gate's figures
    planned = cases_to_bound(0.2)  # to bound at half the limit (0.10), Wilson: the gate's citation
    assert (
        planned == 61
        and group.more_cases == planned - 5 == 56
        and group.more_of == "human-fail"
        and group.sample_only
    )
    assert (
        "56 more human-fail cases judged pass or fail needed: 61 to bound it at half the limit (16"
        " at zero errors)"
        in group.headline
        and "43%" in group.headline
    )
    sentence = next_step("review_required", [group], held_out_used=True)
    assert "refund_policy +56 human-fail" in sentence and "certify again" in sentence


def test_next_step_for_every_outcome() -> None:
    controls = group_blockers(
        [
            Blocker(
                code="control_failed_adversarial",
                category="quality",
                message="x",
                evidence={"role": "adversarial", "n": 6, "failed": 1},
                case_ids=["adv-1"],
                waivable=False,
            )
        ]
    )
    assert (
        next_step("quality_failed", controls, held_out_used=False)
        == "Controls failed; held-out data was not used; fix the judge and certify again."
    )
    assert "held-out data, which is now spent" in next_step(
        "quality_failed", group_blockers(_fp_blockers()), held_out_used=True
    )
    assert next_step("certified", [], held_out_used=True).startswith("The judge may gate releases")
    incomplete = group_blockers(
        [
            Blocker(
                code="missing_results",
                category="incomplete",
                message="3 missing",
                evidence={"missing": 3},
                waivable=False,
            )
        ]
    )
    assert "missing_results" in next_step("evaluation_incomplete", incomplete, held_out_used=True)
    mismatch = group_blockers(
        [Blocker(code="policy_rubric_mismatch", category="review", message="other rubric")]
    )
    assert next_step("review_required", mismatch, held_out_used=True).startswith(
        "A person must decide"
    )


# -- the last complete certification of the same judge -----------------------------------
def _entry(
    i: int, event: str, candidate: str, *, opens: str | None = None, outcome: str | None = None
) -> SimpleNamespace:
    return SimpleNamespace(
        entry_id=f"e{i}",
        event=event,
        opens=opens,
        candidate=candidate,
        outcome=outcome,
        report_id=f"{candidate.replace('@', '/')}/1",
        when=datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=i),
    )


def test_previous_certification_is_the_last_finished_one_of_the_same_judge() -> None:
    entries = [
        _entry(1, "started", "rubric-judge@1"),
        _entry(2, "finished", "rubric-judge@1", opens="e1", outcome="certified"),
        _entry(3, "started", "other-judge@1"),
        _entry(4, "finished", "other-judge@1", opens="e3", outcome="quality_failed"),
        _entry(5, "started", "rubric-judge@2"),
        _entry(6, "finished", "rubric-judge@2", opens="e5", outcome="quality_failed"),
        _entry(7, "started", "rubric-judge@4"),
        _entry(8, "aborted", "rubric-judge@4", opens="e7", outcome="aborted"),
        _entry(9, "started", "rubric-judge@3"),  # this certification
    ]
    previous = previous_certification(entries, "rubric-judge", before="e9")
    assert (
        previous is not None
        and previous["candidate"] == "rubric-judge@2"
        and previous["outcome"] == "quality_failed"
        and previous["report_id"] == "rubric-judge/2/1"
    )
    certified = last_certified(entries, "rubric-judge", before="e9")
    assert certified is not None and certified["candidate"] == "rubric-judge@1"
    assert previous_certification(entries, "rubric-judge", before="e1") is None
    assert previous_certification(entries, "new-judge", before="e9") is None


# -- tables ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def demo_alignment():
    """rubric-judge@3 on the demo's development partition (no held-out data), with the demo
    policy.
    """
    from workbench.judges import load_candidate

    dataset = load_dataset(DEMO)
    judge = load_candidate(ROOT / "data" / "candidates" / "rubric-judge@3.yaml")
    from workbench.results import JudgeResult, ResultLine

    rows = []
    for i, case in enumerate(dataset.partition("development"), start=1):
        verdict = v3_verdict(case.response, case.grading_notes or "")
        row = JudgeResult(
            case_id=case.case_id,
            response_hash=case.response_hash,
            value=str(verdict.value),
            reason=verdict.reason,
            judge=judge.identity,
            judge_fingerprint=judge.identity.fingerprint(),
            run_id="r",
            partition="development",
            error=None,
            attempt=1,
            repeat=0,
        )
        rows.append(ResultLine(i, row))
    join = join_results(dataset, rows, partition="development")
    report = alignment_report(join)
    policy = load_policy(POLICY3)
    gate = evaluate_gate(report, policy, rubric=dataset.rubric, join=join)
    return report, policy, gate


def test_slice_table_has_no_index_no_nan_and_rates_with_intervals(demo_alignment) -> None:
    report, policy, gate = demo_alignment
    table = slice_table(report, policy, gate)
    html = table.to_html()
    text = re.sub(r"<[^>]+>", " ", html)
    assert not re.search(r"\b(NaN|nan|None)\b", text)
    assert (
        list(table.data.columns)[0] == "slice"
        and "level0_row" not in html
        and 'class="index_name' not in html
    )  # no index column
    first = next(s for s in report.slices if s.false_pass_rate.n)
    row = table.data[table.data["slice"] == first.slice].iloc[0]
    # the interval the gate bounds: over groups when the slice's cases share them
    shown = first.false_pass_rate_grouped or first.false_pass_rate
    assert row["false-pass rate [95% CI]"] == rate_text(shown) and re.fullmatch(
        r"\d+(\.\d)?% \[\d+(\.\d)?\u2013\d+(\.\d)?%\]", row["false-pass rate [95% CI]"]
    )
    kn = f"{first.false_pass_rate.k}/{first.false_pass_rate.n}"
    groups = first.false_pass_rate_grouped
    assert row["FP k/n"] == (kn if groups is None else f"{kn} in {groups.groups} groups")
    results = dict(zip(table.data["slice"], table.data["result"], strict=True))
    assert results == {
        r.slice: (
            "fail"
            if any(b.slice == r.slice and b.category == "quality" for b in gate.blockers)
            else (
                "review"
                if any(b.slice == r.slice and b.category == "review" for b in gate.blockers)
                else "pass"
            )
        )
        for r in report.slices
    }
    # the highlighted rows are exactly the slices over a limit
    painted = {
        row
        for selectors, body in re.findall(r"([^{}]+)\{([^}]*)\}", html)
        if "background-color" in body
        for row in re.findall(r"_row(\d+)_col", selectors)
    }
    over = {str(i) for i, r in enumerate(table.data["result"]) if r in ("fail", "review")}
    assert painted == over and over


def test_missing_values_are_a_dash_with_a_footnote() -> None:
    import pandas as pd

    table = styled(pd.DataFrame([{"a": 1.0, "b": None, "c": float("nan"), "d": HOSTILE}]))
    assert list(table.data.iloc[0]) == ["1", DASH, DASH, HOSTILE] and DASH_NOTE in table.footnotes
    html = table.to_html()
    assert (
        "<script>" not in html
        and "&lt;script&gt;" in html
        and "None" not in html
        and "nan" not in html.lower().replace("nan-", "")
    )


def test_transitions_highlight_critical_broken() -> None:
    import pandas as pd

    changes = pd.DataFrame(
        [
            {
                "case_id": "a",
                "slice": "refund_policy",
                "risk": "critical",
                "human_label": "fail",
                "before_label": "fail",
                "after_label": "pass",
                "change": "broken",
                "critical_broken": True,
            },
            {
                "case_id": "b",
                "slice": "shipping",
                "risk": "low",
                "human_label": "pass",
                "before_label": "fail",
                "after_label": "pass",
                "change": "fixed",
                "critical_broken": False,
            },
            {
                "case_id": "c",
                "slice": "shipping",
                "risk": "low",
                "human_label": "pass",
                "before_label": "pass",
                "after_label": "pass",
                "change": "same",
                "critical_broken": False,
            },
        ]
    )
    table = transitions_table(changes)
    assert list(table.data["case_id"]) == ["a", "b"] and list(table.data["critical_broken"]) == [
        "CRITICAL BROKEN",
        "",
    ]
    assert "#82071e" in table.to_html()  # the critical highlight


# -- the demo's third judge -------------------------------------------------------------------
def test_rubric_judge_v3_passes_the_blocking_controls_v2_fails() -> None:
    suite = load_suite(SUITE)
    blocking = ("positive", "negative", "adversarial")
    failed = {
        name: [
            c.control_id
            for c in suite.controls
            if c.role in blocking
            and fn(c.response, c.grading_notes or "").value not in c.acceptable
        ]
        for name, fn in (("v2", v2_verdict), ("v3", v3_verdict))
    }
    assert sorted(failed["v2"]) == ["adv-fake-grading-note", "neg-data-export", "neg-lockout"]
    assert failed["v3"] == []


def test_rubric_judge_v3_changes_no_development_verdict_but_the_ones_it_routes_to_review() -> None:
    dataset = load_dataset(DEMO)
    changed = {}
    for case in dataset.partition("development"):
        before, after = (
            v2_verdict(case.response, case.grading_notes or "").value,
            v3_verdict(case.response, case.grading_notes or "").value,
        )
        if before != after:
            changed[case.case_id] = (before, after)
    assert changed and all(
        after == "review_required" or before == "pass" for before, after in changed.values()
    )
    fixed = [
        cid for cid, (before, after) in changed.items() if before == "pass" and after == "fail"
    ]
    assert all(
        dataset.cases[cid].adjudication.label == "fail" for cid in fixed
    )  # every pass it turned into a fail was a false pass


# -- the report page ---------------------------------------------------------------------------
def test_render_skips_tagged_cells_escapes_text_and_keeps_no_script(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    title = nbformat.v4.new_markdown_cell("# Notebook title")
    title.metadata["tags"] = ["report-skip"]
    stream = nbformat.v4.new_code_cell("print()")
    stream.outputs = [nbformat.v4.new_output("stream", name="stdout", text=HOSTILE)]
    html_out = nbformat.v4.new_code_cell("x")
    html_out.outputs = [
        nbformat.v4.new_output(
            "display_data", data={"text/html": "<p class='ok'>shown</p><script>bad()</script>"}
        )
    ]
    nb.cells = [title, stream, html_out]
    path = tmp_path / "nb.ipynb"
    nbformat.write(nb, path)
    page = render_html(path, title=f"report {HOSTILE}")
    assert "Notebook title" not in page and "<p class='ok'>shown</p>" in page
    assert "<script" not in page.lower() and "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in page
    assert (
        'http-equiv="Content-Security-Policy"' in page
        and "@media print" in page
        and "@page" in page
    )


def test_first_screen_without_held_out_marks_every_slice_not_run(tmp_path: Path) -> None:
    dataset = load_dataset(DEMO)
    policy_path = POLICY3
    entries = [_entry(1, "started", "rubric-judge@2")]
    ledger = SimpleNamespace(entries=lambda: entries)
    cert = SimpleNamespace(
        ledger_entry=SimpleNamespace(
            entry_id="e1",
            report_id="rubric-judge/2/1",
            when=datetime(2026, 1, 1, tzinfo=UTC),
            rerun_reason=None,
        ),
        alignment=None,
        policy=load_policy(policy_path),
        policy_path=policy_path,
        dataset=dataset,
        ledger=ledger,
        judge=SimpleNamespace(
            spec=SimpleNamespace(name="rubric-judge", label="rubric-judge@2"),
            identity=SimpleNamespace(fingerprint=lambda: "f" * 64),
        ),
    )
    controls = Blocker(
        code="control_failed_negative",
        category="quality",
        message="negative failed",
        evidence={"role": "negative", "n": 4, "passed": 2, "failed": 2, "incomplete": 0},
        case_ids=["neg-lockout"],
        waivable=False,
    )
    gate = SimpleNamespace(outcome="quality_failed", blockers=[controls], waived=[], figures=[])
    html = first_screen_html(cert, gate)
    assert (
        'data-outcome="quality_failed"' in html
        and "QUALITY FAILED" in html
        and "rubric-judge@2" in html
    )
    assert "Controls failed; held-out data was not used; fix the judge and certify again." in html
    assert html.count('data-result="not run"') == len(dataset.rubric.slices)
    assert (
        "None" not in re.sub(r"<style>.*?</style>", "", html, flags=re.S)
        and "previous</th><td>none" in html
    )


# -- quiet output ------------------------------------------------------------------------------
def test_line_progress_writes_one_line_per_ten_percent() -> None:
    out = io.StringIO()
    bar = LineProgress(total=109, label="judge@1", stream=out)
    for _ in range(109):
        bar.update(1)
        bar.set_postfix(errors=0, refresh=False)
    bar.close()
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue()
    assert len(lines) == 10 and lines[-1].startswith("judge@1: 109/109 cases (100%)")
    assert [int(re.search(r"\((\d+)%\)", line).group(1)) // 10 for line in lines] == list(
        range(1, 11)
    )


def test_progress_off_a_terminal_is_line_progress() -> None:
    from workbench.runs._progress import progress_bar

    assert isinstance(
        progress_bar(total=10, initial=0, label="x", stream=io.StringIO()), LineProgress
    )


def test_certification_kernel_uses_ipc(tmp_path: Path) -> None:
    from workbench.reports._certify import kernel_manager_class

    with kernel_manager_class() as manager:
        km = manager()
        assert km.transport == "ipc" and len(km.ip) < 60
        directory = Path(km.ip).parent
        assert directory.is_dir()
    assert not directory.exists()


def test_demo_policy_3_is_loadable_and_reachable_in_principle() -> None:
    policy = load_policy(POLICY3)
    data = yaml.safe_load(POLICY3.read_text())
    assert data["version"] == "3" and policy.controls is not None
    for name, spec in policy.slices.items():
        if spec.risk.value == "critical":
            assert (
                spec.max_false_passes == 0
                and spec.false_pass_rate_basis == "upper_95"
                and cases_needed(spec.max_false_pass_rate) == 16
            ), name
    assert policy.min_n_for("escalation_handoff") <= 3  # the smallest held-out slice has 4 cases


@pytest.mark.notebook
def test_cli_output_is_quiet_in_a_log(tmp_path: Path) -> None:
    """Piped (not a terminal), as in CI or `make demo > log`: no carriage-return progress bar and
    no kernel warning about TCP without encryption from the certification kernel."""
    import shutil
    import subprocess
    import sys

    env = {
        **__import__("os").environ,
        "RAGAS_DO_NOT_TRACK": "true",
        "WORKBENCH_CACHE_DIR": str(tmp_path / "cache"),
    }
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "workbench",
            "run",
            "--candidate",
            "data/candidates/rubric-judge@1.yaml",
            "--gold",
            "data/demo",
            "--partition",
            "development",
            "--out",
            str(tmp_path / "run"),
            "--cache",
            str(tmp_path / "cache"),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    progress = [line for line in run.stderr.splitlines() if line.startswith("rubric-judge@1: ")]
    assert (
        "\r" not in run.stderr
        and 1 <= len(progress) <= 11
        and progress[-1].startswith("rubric-judge@1: 109/109 cases (100%)")
    )
    gold = tmp_path / "gold"
    shutil.copytree(DEMO, gold)
    cert = subprocess.run(
        [
            sys.executable,
            "-m",
            "workbench",
            "certify",
            "--candidate",
            "data/candidates/rubric-judge@2.yaml",
            "--policy",
            "data/policies/support-release@2.yaml",
            "--gold",
            str(gold),
            "--reports",
            str(tmp_path / "reports"),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert cert.returncode == 1, cert.stderr[-2000:]  # controls fail: quality failed
    assert (
        "TCP without encryption" not in cert.stderr + cert.stdout
        and "\r" not in cert.stderr + cert.stdout
    )
    assert "WARNING" not in cert.stderr, cert.stderr[-2000:]
