"""``workbench compare``: two judge versions on the same frozen cases, under one budget.

Reproductions (old main): there was no paired migration run at all. Two ``workbench run``
invocations each had their own budget, so together they could spend twice the approved
amount or stop one side half way; renamed labels could only be compared by editing results;
and nothing showed which request content changed between versions.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import migration_judges
import pytest
import yaml
from _reference import mcnemar
from click.testing import CliRunner
from conftest import approve, make_case

from workbench.cli.main import main
from workbench.errors import WorkbenchError
from workbench.migration import (
    BudgetInsufficient,
    compare_candidates_sync,
    paired_rate_difference,
)
from workbench.testing import FakeLLM, Reply

ROOT = Path(__file__).resolve().parents[1]


def function_spec(
    directory: Path,
    name: str,
    version: str,
    function: str,
    labels: list[str] | None = None,
    **extra,
) -> Path:
    data = {
        "name": name,
        "version": version,
        "kind": "ragas-function",
        "labels": labels or ["pass", "fail", "review_required"],
        "function": f"migration_judges:{function}",
        **extra,
    }
    path = directory / f"{name}@{version}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def case(
    cid: str,
    human: str,
    old: str,
    new: str,
    *,
    slice: str = "general",
    partition: str = "calibration",
) -> dict:
    return make_case(
        cid, human, slice=slice, partition=partition, response=f"answer {cid} old={old} new={new}"
    )


# (case id, human, old verdict, new verdict, slice)
PLAN = [
    ("b1", "fail", "pass", "fail", "billing"),  # fixed (a false pass removed), critical: review
    ("b2", "pass", "pass", "fail", "billing"),  # broken (a new false fail), critical: review
    ("b3", "fail", "fail", "fail", "billing"),  # still right
    ("b4", "fail", "pass", "pass", "billing"),  # still wrong
    ("g1", "pass", "fail", "pass", "general"),  # fixed
    ("g2", "pass", "fail", "pass", "general"),  # fixed
    ("g3", "fail", "fail", "pass", "general"),  # broken: a new false pass (low risk: no review)
    ("g4", "pass", "pass", "review_required", "general"),  # broken, into abstain
    ("g5", "fail", "fail", "fail", "general"),  # still right
]


@pytest.fixture
def gold(make_dataset) -> Path:
    cases = [case(cid, human, old, new, slice=s) for cid, human, old, new, s in PLAN]
    cases += [
        make_case("d1", "pass", partition="development"),
        make_case("h1", "fail", partition="held_out"),
    ]
    return make_dataset(cases)


@pytest.fixture
def specs(tmp_path: Path) -> tuple[Path, Path]:
    d = tmp_path / "candidates"
    d.mkdir()
    old = function_spec(d, "mig", "1", "old_judge")
    new = function_spec(d, "mig", "2", "new_judge", parent="mig@1", changes=["function"])
    return old, new


def test_transitions_matrix_mcnemar_and_deltas(
    gold: Path, specs: tuple[Path, Path], tmp_path: Path
) -> None:
    old, new = specs
    report = compare_candidates_sync(
        old, new, gold, "calibration", tmp_path / "cmp", progress=False, cache_dir=False
    )
    assert report.status == "complete" and report.incomplete_reasons == []
    by_id = {c.case_id: c for c in report.cases}
    assert {cid: by_id[cid].transition for cid in by_id} == {
        "b1": "fixed", "b2": "broken", "b3": "still_right", "b4": "still_wrong",
        "g1": "fixed", "g2": "fixed", "g3": "broken", "g4": "broken", "g5": "still_right",
    }  # fmt: skip
    billing = next(s for s in report.slices if s.slice == "billing")
    general = next(s for s in report.slices if s.slice == "general")
    assert report.slices[0].slice == "billing"  # critical first
    assert billing.transitions == {
        "fixed": 1,
        "broken": 1,
        "still_wrong": 1,
        "still_right": 1,
        "incomplete": 0,
    }
    assert general.transitions == {
        "fixed": 2,
        "broken": 2,
        "still_wrong": 0,
        "still_right": 1,
        "incomplete": 0,
    }
    # every changed verdict in the critical slice is listed for review, fixed ones included
    assert (
        sorted(report.review) == ["b1", "b2"]
        and billing.needs_review == 2
        and general.needs_review == 0
    )
    # pass/fail/abstain matrix, rows old, columns new
    assert report.matrix == {
        "pass": {"pass": 1, "fail": 2, "abstain": 1},
        "fail": {"pass": 3, "fail": 2},
    }
    # McNemar over the whole partition: 3 broken (b2, g3, g4), 3 fixed (b1, g1, g2), 2 both right, 1
    # both wrong
    mc = report.overall.mcnemar
    assert (mc.old_right_new_wrong, mc.old_wrong_new_right, mc.both_right, mc.both_wrong) == (
        3,
        3,
        2,
        1,
    )
    assert mc.p_value == pytest.approx(float(mcnemar([[2, 3], [3, 1]], exact=True).pvalue))
    # general: human fails g3, g5: old passes none (0/2), new passes g3 (1/2); paired delta +1/2
    fp = general.false_pass
    assert (fp.old.k, fp.old.n, fp.new.k, fp.new.n, fp.paired_n) == (0, 2, 1, 2, 2)
    assert fp.delta == pytest.approx(0.5)
    assert (fp.delta, fp.ci95_low, fp.ci95_high) == paired_rate_difference(0, 0, 1, 1)
    # general false fails: human passes g1, g2, g4; old fails g1, g2 (2/3); new: g4 abstains, so 0/2
    # decided
    ff = general.false_fail
    assert (ff.old.k, ff.old.n, ff.new.k, ff.new.n, ff.paired_n) == (2, 3, 0, 2, 2)
    assert ff.delta == pytest.approx(-1.0)
    saved = json.loads((tmp_path / "cmp" / "comparison.json").read_text())
    assert saved["review"] == report.review and saved["kind"] == "workbench.compare"
    assert report.actual_changes == ["function"] and report.warnings == []


def test_held_out_is_refused(gold: Path, specs: tuple[Path, Path], tmp_path: Path) -> None:
    old, new = specs
    with pytest.raises(WorkbenchError) as info:
        compare_candidates_sync(old, new, gold, "held_out", tmp_path / "cmp", progress=False)
    assert info.value.problems[0].code == "held_out_refused"
    result = CliRunner().invoke(
        main,
        [
            "compare",
            "--old",
            str(old),
            "--new",
            str(new),
            "--gold",
            str(gold),
            "--partition",
            "held_out",
            "--no-controls",
        ],
    )
    assert result.exit_code == 2
    assert not (tmp_path / "cmp").exists()


def test_cli_exit_codes_and_output(gold: Path, specs: tuple[Path, Path], tmp_path: Path) -> None:
    old, new = specs
    args = [
        "compare",
        "--old",
        str(old),
        "--new",
        str(new),
        "--gold",
        str(gold),
        "--partition",
        "calibration",
        "--out",
        str(tmp_path / "cmp"),
        "--no-progress",
        "--no-cache",
    ]
    missing = CliRunner().invoke(main, args)
    assert missing.exit_code == 2 and "--controls SUITE" in missing.output
    result = CliRunner().invoke(main, [*args, "--no-controls"])
    assert result.exit_code == 4, result.output  # changed verdicts in a critical slice need review
    assert (
        "REVIEW: 2 changed verdict(s) in critical slices" in result.output
        and "b1, b2" in result.output
    )
    # the same judge on both sides: nothing changes, nothing to review
    same = CliRunner().invoke(
        main,
        [
            "compare",
            "--old",
            str(old),
            "--new",
            str(old),
            "--gold",
            str(gold),
            "--partition",
            "calibration",
            "--out",
            str(tmp_path / "same"),
            "--no-progress",
            "--no-controls",
        ],
    )
    assert same.exit_code == 0, same.output
    assert "same judge" in same.output


def test_a_changed_comparison_directory_is_refused(
    gold: Path, specs: tuple[Path, Path], tmp_path: Path
) -> None:
    old, new = specs
    compare_candidates_sync(
        old, new, gold, "calibration", tmp_path / "cmp", progress=False, cache_dir=False
    )
    with pytest.raises(WorkbenchError) as info:
        compare_candidates_sync(
            old, old, gold, "calibration", tmp_path / "cmp", progress=False, cache_dir=False
        )
    assert info.value.problems[0].code == "comparison_manifest_changed"


def test_evaluator_errors_exit_5(gold: Path, tmp_path: Path) -> None:
    d = tmp_path / "c"
    d.mkdir()
    old = function_spec(d, "mig", "1", "old_judge")
    broken = d / "mig@3.yaml"
    broken.write_text(
        yaml.safe_dump(
            {
                "name": "mig",
                "version": "3",
                "kind": "ragas-function",
                "labels": ["pass", "fail"],
                "function": "weak_judges:always_raises",
            }
        )
    )
    result = CliRunner().invoke(
        main,
        [
            "compare",
            "--old",
            str(old),
            "--new",
            str(broken),
            "--gold",
            str(gold),
            "--partition",
            "calibration",
            "--out",
            str(tmp_path / "cmp"),
            "--no-progress",
            "--no-controls",
            "--no-cache",
        ],
    )
    assert result.exit_code == 5, result.output
    assert "evaluator errors: 0 case(s) of mig@1, 9 of mig@3" in result.output


# ---------------------------------------------------------------- reusing runs


def _run(spec: Path, gold: Path, out: Path, *extra: str) -> None:
    result = CliRunner().invoke(
        main,
        [
            "run",
            "--candidate",
            str(spec),
            "--gold",
            str(gold),
            "--partition",
            "calibration",
            "--out",
            str(out),
            "--no-progress",
            "--no-cache",
            *extra,
        ],
    )
    assert result.exit_code in (0, 3), result.output


def test_reused_runs_are_checked_and_not_called_again(
    gold: Path, specs: tuple[Path, Path], tmp_path: Path
) -> None:
    old, new = specs
    _run(old, gold, tmp_path / "old-run")
    _run(new, gold, tmp_path / "new-run")
    before = dict(migration_judges.CALLS)
    report = compare_candidates_sync(
        old,
        new,
        gold,
        "calibration",
        tmp_path / "cmp",
        old_run=tmp_path / "old-run",
        new_run=tmp_path / "new-run",
        progress=False,
        cache_dir=False,
    )
    assert dict(migration_judges.CALLS) == before  # nothing was judged again
    assert report.old.reused and report.new.reused and sorted(report.review) == ["b1", "b2"]
    # a run of the other candidate, an incomplete run and a run of another partition are refused
    with pytest.raises(WorkbenchError) as info:
        compare_candidates_sync(
            old,
            new,
            gold,
            "calibration",
            tmp_path / "cmp2",
            old_run=tmp_path / "new-run",
            progress=False,
        )
    assert [p.code for p in info.value.problems] == ["run_other_candidate"]
    _run(old, gold, tmp_path / "partial", "--max-cases", "3")
    with pytest.raises(WorkbenchError) as info:
        compare_candidates_sync(
            old,
            new,
            gold,
            "calibration",
            tmp_path / "cmp3",
            old_run=tmp_path / "partial",
            progress=False,
        )
    assert [p.code for p in info.value.problems] == ["run_incomplete"]
    dev = tmp_path / "dev-run"
    assert (
        CliRunner()
        .invoke(
            main,
            [
                "run",
                "--candidate",
                str(old),
                "--gold",
                str(gold),
                "--partition",
                "development",
                "--out",
                str(dev),
                "--no-progress",
            ],
        )
        .exit_code
        == 0
    )
    with pytest.raises(WorkbenchError) as info:
        compare_candidates_sync(
            old, new, gold, "calibration", tmp_path / "cmp4", old_run=dev, progress=False
        )
    assert "run_other_partition" in [p.code for p in info.value.problems]
    assert not (tmp_path / "cmp2").exists() and not (tmp_path / "cmp3").exists()


def test_reused_run_on_changed_gold_is_refused(
    make_dataset, specs: tuple[Path, Path], tmp_path: Path
) -> None:
    old, new = specs
    cases = [case(cid, human, o, n, slice=s) for cid, human, o, n, s in PLAN]
    first = make_dataset(cases)
    _run(old, first, tmp_path / "old-run")
    cases[0] = {**cases[0], "adjudication": {**cases[0]["adjudication"], "label": "pass"}}
    changed = make_dataset(cases)
    with pytest.raises(WorkbenchError) as info:
        compare_candidates_sync(
            old,
            new,
            changed,
            "calibration",
            tmp_path / "cmp",
            old_run=tmp_path / "old-run",
            progress=False,
        )
    assert [p.code for p in info.value.problems] == ["run_other_gold"]


# ---------------------------------------------------------------- label mapping


def write_mapping(path: Path, **overrides) -> Path:
    data = {
        "schema_version": 1,
        "from": "mig@1",
        "to": "mig@2",
        "approver": "Quality lead",
        "approved": "2026-12-01",
        "reason": "categories renamed",
        "mapping": {"ok": "pass", "not_ok": "fail", "unsure": "review_required"},
    }
    data.update(overrides)
    data = {k: v for k, v in data.items() if v is not None}
    path.write_text(yaml.safe_dump(data))
    approve(path.parent, "Quality lead")  # the mapping's approver is in the project's list
    return path


def test_renamed_labels_need_a_reviewed_mapping(gold: Path, tmp_path: Path) -> None:
    d = tmp_path / "c"
    d.mkdir()
    old = function_spec(d, "mig", "1", "renamed_judge", labels=["ok", "not_ok", "unsure"])
    new = function_spec(d, "mig", "2", "new_judge")
    base = [
        "compare",
        "--old",
        str(old),
        "--new",
        str(new),
        "--gold",
        str(gold),
        "--partition",
        "calibration",
        "--no-progress",
        "--no-controls",
        "--no-cache",
    ]
    none = CliRunner().invoke(main, [*base, "--out", str(tmp_path / "a")])
    assert (
        none.exit_code == 2
        and "label_mapping_required" in none.output
        and "['not_ok', 'ok', 'unsure']" in none.output
    )
    assert (
        "('pass', 'fail', 'review_required')" in none.output
        or "['pass', 'fail', 'review_required']" in none.output
    )
    unapproved = CliRunner().invoke(
        main,
        [
            *base,
            "--out",
            str(tmp_path / "b"),
            "--label-mapping",
            str(write_mapping(tmp_path / "m1.yaml", approver=None)),
        ],
    )
    assert unapproved.exit_code == 2 and "mapping_unapproved" in unapproved.output
    partial = CliRunner().invoke(
        main,
        [
            *base,
            "--out",
            str(tmp_path / "c2"),
            "--label-mapping",
            str(write_mapping(tmp_path / "m2.yaml", mapping={"ok": "pass", "not_ok": "fail"})),
        ],
    )
    assert (
        partial.exit_code == 2
        and "label_unmapped" in partial.output
        and "['unsure']" in partial.output
    )
    wrong_target = CliRunner().invoke(
        main,
        [
            *base,
            "--out",
            str(tmp_path / "d"),
            "--label-mapping",
            str(
                write_mapping(
                    tmp_path / "m3.yaml",
                    mapping={"ok": "pass", "not_ok": "failed", "unsure": "review_required"},
                )
            ),
        ],
    )
    assert wrong_target.exit_code == 2 and "mapping_unknown_target" in wrong_target.output
    assert not any(
        (tmp_path / x).exists() for x in ("a", "b", "c2", "d")
    )  # refused before anything ran
    good = write_mapping(tmp_path / "m.yaml")
    report = compare_candidates_sync(
        old,
        new,
        gold,
        "calibration",
        tmp_path / "ok",
        label_mapping=good,
        progress=False,
        cache_dir=False,
    )
    assert report.label_mapping is not None
    assert report.label_mapping.sha256 == hashlib.sha256(good.read_bytes()).hexdigest()
    assert (
        report.label_mapping.approver == "Quality lead"
        and report.label_mapping.approved == "2026-12-01"
    )
    b1 = next(c for c in report.cases if c.case_id == "b1")
    assert (b1.old_label, b1.old_label_raw, b1.old_class) == ("pass", "ok", "false_pass")
    assert sorted(report.review) == ["b1", "b2"]
    saved = json.loads((tmp_path / "ok" / "comparison_manifest.json").read_text())
    assert saved["label_mapping_sha256"] == report.label_mapping.sha256


def test_mapping_for_other_versions_is_refused(gold: Path, tmp_path: Path) -> None:
    d = tmp_path / "c"
    d.mkdir()
    old = function_spec(d, "mig", "1", "renamed_judge", labels=["ok", "not_ok", "unsure"])
    new = function_spec(d, "mig", "2", "new_judge")
    with pytest.raises(WorkbenchError) as info:
        compare_candidates_sync(
            old,
            new,
            gold,
            "calibration",
            tmp_path / "x",
            label_mapping=write_mapping(tmp_path / "m.yaml", **{"from": "mig@0"}),
            progress=False,
        )
    assert [p.code for p in info.value.problems] == ["mapping_other_versions"]


# ---------------------------------------------------------------- budget


KEY_ENV = "WB_COMPARE_KEY"


def llm_spec(directory: Path, version: str, base_url: str, prompt: str, **extra) -> Path:
    data = {
        "name": "cmp-llm",
        "version": version,
        "kind": "ragas-llm",
        "labels": ["pass", "fail"],
        "model": "fake",
        "prompt": prompt,
        "endpoint": {"base_url": base_url, "api_key_env": KEY_ENV, "max_retries": 0},
        "params": {"max_tokens": 100},
        "pricing": {"input_per_million_usd": 1000.0, "output_per_million_usd": 1000.0},
        "omitted_fields": ["grading_notes"],  # these judges read the response alone, declared
        **extra,
    }
    path = directory / f"cmp-llm@{version}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_budget_must_cover_both_candidates_or_nothing_starts(
    gold: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "k")
    with FakeLLM(default=Reply(value="pass", reason="ok")) as server:
        d = tmp_path / "c"
        d.mkdir()
        old = llm_spec(d, "1", server.base_url, "Judge: {response}")
        new = llm_spec(
            d,
            "2",
            server.base_url,
            "Judge carefully: {response}",
            parent="cmp-llm@1",
            changes=["prompt"],
        )
        out = tmp_path / "cmp"
        args = [
            "compare",
            "--old",
            str(old),
            "--new",
            str(new),
            "--gold",
            str(gold),
            "--partition",
            "calibration",
            "--out",
            str(out),
            "--no-progress",
            "--no-controls",
            "--no-cache",
        ]
        refused = CliRunner().invoke(main, [*args, "--budget-usd", "0.5"])
        assert refused.exit_code == 3, refused.output
        assert "budget_insufficient" in refused.output and "needs up to $" in refused.output
        needed = float(refused.output.split("needs up to $")[1].split(" ")[0])
        assert needed > 0.5
        # each of the 9 cases x 2 candidates reserves its input estimate + 100 output tokens at
        # $1000/M
        assert needed >= 18 * 100 * 1000 / 1e6
        assert server.calls == [] and not out.exists()  # nothing started, nothing written
        with pytest.raises(BudgetInsufficient):
            compare_candidates_sync(
                old, new, gold, "calibration", out, budget_usd=0.5, progress=False, cache_dir=False
            )
        ok = CliRunner().invoke(main, [*args, "--budget-usd", f"{needed:.4f}"])
        assert ok.exit_code == 0, ok.output
        report = json.loads((out / "comparison.json").read_text())
        assert report["status"] == "complete" and len(server.calls) == 18
        assert report["budget"]["spent_usd"] <= needed + 1e-9
        assert report["new"]["cost_usd"] > 0 and report["old"]["cost_usd"] > 0


# ---------------------------------------------------------------- prompt parity


def test_prompt_parity_shows_the_diff_and_warns_beyond_the_declared_change(
    gold: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "k")
    with FakeLLM(default=Reply(value="pass", reason="ok")) as server:
        d = tmp_path / "c"
        d.mkdir()
        old = llm_spec(
            d, "1", server.base_url, "Judge this response.\n{response}\nAnswer pass or fail."
        )
        new = llm_spec(
            d,
            "2",
            server.base_url,
            "Judge this response strictly.\n{response}\nAnswer pass or fail.",
            parent="cmp-llm@1",
            changes=["prompt"],
            params={"max_tokens": 100, "temperature": 0.7},
        )
        report = compare_candidates_sync(
            old, new, gold, "calibration", tmp_path / "cmp", progress=False, cache_dir=False
        )
    p = report.parity
    assert (p.cases, p.differing_cases) == (9, 9)
    assert {k.key: k.cases for k in p.keys} == {"params": 9, "prompt": 9}
    assert p.first_case_id == "b1"
    assert (
        "-Judge this response." in p.first_diff and "+Judge this response strictly." in p.first_diff
    )
    assert '+  "temperature": 0.7' in p.first_diff
    assert report.actual_changes == ["prompt", "params"] and report.declared_changes == ["prompt"]
    assert any(
        w.startswith("more changed than declared") and "params" in w for w in report.warnings
    )


def test_demo_migration_with_controls_side_by_side(tmp_path: Path) -> None:
    """rubric-judge@1 -> @2 on the demo's calibration partition, controls first (read-only demo
    data).
    """
    result = CliRunner().invoke(
        main,
        [
            "compare",
            "--old",
            str(ROOT / "data/candidates/rubric-judge@1.yaml"),
            "--new",
            str(ROOT / "data/candidates/rubric-judge@2.yaml"),
            "--gold",
            str(ROOT / "data/demo"),
            "--partition",
            "calibration",
            "--controls",
            str(ROOT / "data/controls/support-controls@1.yaml"),
            "--out",
            str(tmp_path / "cmp"),
            "--no-progress",
            "--no-cache",
        ],
    )
    assert result.exit_code == 4, result.output
    report = json.loads((tmp_path / "cmp" / "comparison.json").read_text())
    controls = report["controls"]
    assert controls["suite"] == "support-controls@1"
    changed = {c["control_id"] for c in controls["controls"] if c["changed"]}
    assert changed and all(c.startswith("term-") for c in changed)  # v2 adds the terminology guide
    roles = {r["role"]: (r["old"], r["new"]) for r in controls["roles"]}
    assert roles["positive"] == ("passed", "passed") and roles["negative"] == ("failed", "failed")
    assert (
        report["actual_changes"] == ["function"] and report["declared_parent"] == "rubric-judge@1"
    )
    assert report["review"] and all(
        c["risk"] == "critical" for c in report["cases"] if c["case_id"] in report["review"]
    )
    assert (tmp_path / "cmp" / "controls" / "old" / "results.jsonl").exists()
    # per-slice McNemar p-values with Benjamini-Hochberg q-values over the slices (issue 32),
    # checked against statsmodels' fdr_bh and by the definition q_(i) = min_(j>=i) p_(j) m / j
    from statsmodels.stats.multitest import multipletests

    p = [s["mcnemar"]["p_value"] for s in report["slices"]]
    q = [s["mcnemar"]["q_value"] for s in report["slices"]]
    assert q == pytest.approx(list(multipletests(p, method="fdr_bh")[1]))
    ranked = sorted(range(len(p)), key=lambda i: p[i])
    for r, i in enumerate(ranked):
        by_hand = min(min(1.0, p[j] * len(p) / (s + 1)) for s, j in enumerate(ranked) if s >= r)
        assert q[i] == pytest.approx(by_hand)
    assert report["overall"]["mcnemar"]["q_value"] is None
    assert "q = Benjamini-Hochberg over the slices" in result.output


def test_paired_rate_difference_covers_at_its_nominal_level() -> None:
    """Coverage of the 95% Tango interval, simulated (seeded) on small paired samples,
    one-sided discordance (a version that only fixes, or only breaks) included."""
    import numpy as np

    rng = np.random.default_rng(7)
    intervals: dict[tuple[int, ...], tuple[float, float]] = {}  # counts -> interval: same answer
    for n, probs in (
        (12, (0.05, 0.15, 0.05, 0.75)),
        (30, (0.1, 0.1, 0.2, 0.6)),
        (20, (0.0, 0.1, 0.0, 0.9)),
        (10, (0.0, 0.3, 0.0, 0.7)),
        (40, (0.02, 0.02, 0.1, 0.86)),
    ):
        truth = probs[2] - probs[1]
        hits = 0
        trials = 2000
        for _ in range(trials):
            counts = tuple(int(x) for x in rng.multinomial(n, probs))
            if counts not in intervals:
                _, low, high = paired_rate_difference(*counts)
                intervals[counts] = (low, high)
            low, high = intervals[counts]
            hits += low - 1e-9 <= truth <= high + 1e-9
        assert hits / trials >= 0.94, (n, probs, hits / trials)


def test_paired_rate_difference_inverts_mcnemar_and_the_score_statistic() -> None:
    from workbench.stats._paired import Z95, tango_statistic

    # at d = 0 Tango's statistic is McNemar's z = (x - y) / sqrt(x + y)
    assert tango_statistic(9, 4, 41, 0.0) == pytest.approx((9 - 4) / (9 + 4) ** 0.5)
    delta, low, high = paired_rate_difference(8, 5, 4, 24)
    assert delta == pytest.approx(-1 / 41)
    # the bounds are where the statistic crosses -+1.96 (x = new only = 4, y = old only = 5)
    assert tango_statistic(4, 5, 41, low) == pytest.approx(Z95, abs=1e-6)
    assert tango_statistic(4, 5, 41, high) == pytest.approx(-Z95, abs=1e-6)
    # 0 is inside exactly when McNemar's z is within 1.96
    assert low < 0 < high
    _, low, high = paired_rate_difference(0, 0, 9, 11)
    assert low > 0 and abs((9 - 0) / 9**0.5) > Z95
    assert paired_rate_difference(0, 0, 0, 0) == (None, None, None)
    _, low, high = paired_rate_difference(2, 0, 0, 2)
    assert low < 0 < high  # agreement on every case is not certainty
