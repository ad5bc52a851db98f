"""``align`` and the gate against an ordinal gold: the pass/fail view, weighted kappa, MAE, ordinal
confusion.

Hand-computed figures (general slice of the fixture below; scale 1-5, ``pass_labels: [4, 5]``).
Verdict pairs on the scale (human, judge): (1,1) (2,3) (2,4) (3,5) (4,4) (5,4) (5,3); n = 7.

- judge - human: 0, +1, +2, +2, 0, -1, -2 -> exact 2, within one 4, judge higher 3, lower 2;
  MAE = (0+1+2+2+0+1+2)/7 = 8/7 scale steps.
- Marginals: human {1:1, 2:2, 3:1, 4:1, 5:2}, judge {1:1, 3:2, 4:3, 5:1}.
- Linear weights |a-b|: observed 8/7; expected = (1/49) sum_a h_a sum_b j_b |a-b|
  = (17·1 + 12·2 + 7·1 + 6·1 + 11·2)/49 = 76/49 -> kappa = 1 - (8/7)/(76/49) = 1 - 56/76 = 5/19.
- Quadratic weights (a-b)²: observed 14/7 = 2; expected = (51·1 + 24·2 + 11·1 + 12·1 + 27·2)/49
  = 176/49 -> kappa = 1 - 2·49/176 = 39/88.
- Pass/fail view: false passes (2,4) and (3,5) = 2 of 4 human-fail verdicts; false fail (5,3)
  = 1 of 3 human-pass verdicts ((4, n/a) abstained); (2,3), (5,4) and (4, n/a) are other
  disagreements.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _reference import cohen_kappa_score
from click.testing import CliRunner
from conftest import RUBRIC, approve, make_case, make_result, result_lines, write_results
from lineage_support import stamped
from test_ordinal import kappa_by_hand
from test_policy import NOW, make_override, make_policy, write_policy

from workbench.align import alignment_report, classify, format_report, join_results
from workbench.cli.align import align as align_cmd
from workbench.cli.gate import gate as gate_cmd
from workbench.errors import WorkbenchError
from workbench.gold import Rubric, load_dataset
from workbench.policy import add_override, evaluate_gate
from workbench.policy._consistency import policy_rubric_problems

LIKERT = ["1", "2", "3", "4", "5"]
NA = "n/a"
TIMEOUT = {"kind": "timeout", "message": "no answer"}
ORDINAL: dict[str, Any] = {
    **{
        k: v
        for k, v in RUBRIC.items()
        if k not in ("pass_label", "fail_label", "abstain_labels", "labels")
    },
    "scale": "ordinal",
    "labels": [1, 2, 3, 4, 5, NA],
    "abstain_labels": [NA],
    "pass_labels": [4, 5],
}
NO_VIEW = {k: v for k, v in ORDINAL.items() if k != "pass_labels"}

# (case id, slice, adjudicated label, judge verdict | "ERR" | None for missing)
FIXTURE: list[tuple[str, str, str, str | None]] = [
    ("g1", "general", "1", "1"),
    ("g2", "general", "2", "3"),
    ("g3", "general", "2", "4"),
    ("g4", "general", "3", "5"),
    ("g5", "general", "4", "4"),
    ("g6", "general", "5", "4"),
    ("g7", "general", "5", "3"),
    ("g8", "general", "4", NA),
    ("g9", "general", "3", "ERR"),
    ("g10", "general", "1", None),
    ("b1", "billing", "1", "1"),
    ("b2", "billing", "1", "2"),
    ("b3", "billing", "2", "2"),
    ("b4", "billing", "4", "5"),
    ("b5", "billing", "5", "5"),
    ("b6", "billing", "3", "3"),
    ("b7", "billing", NA, "3"),
]


@pytest.fixture(autouse=True)
def _approvers(tmp_path: Path) -> None:
    """Who may approve this test project's overrides (the store's workbench.yaml)."""
    approve(tmp_path, "A")


def build(
    make_dataset, items: list[tuple[str, str, str, str | None]], rubric: dict[str, Any] = ORDINAL
) -> tuple[Path, list[dict[str, Any]]]:
    """A gold dataset (conftest builders) and the judge's result rows for ``items``."""
    cases, rows = [], []
    for cid, slice_name, human, judge in items:
        case = make_case(cid, human, slice=slice_name)
        cases.append(case)
        if judge == "ERR":
            rows.append(make_result(case, error=TIMEOUT))
        elif judge is not None:
            rows.append(make_result(case, judge))
    return make_dataset(cases, rubric=rubric), rows


def report_for(gold: Path, rows: list[dict[str, Any]]) -> Any:
    dataset = load_dataset(gold)
    join = join_results(dataset, result_lines(rows), partition="development")
    return dataset, join, alignment_report(join)


def pairs(slice_name: str | None) -> tuple[list[str], list[str]]:
    on = [
        (h, j)
        for _, s, h, j in FIXTURE
        if (slice_name is None or s == slice_name) and h in LIKERT and j in LIKERT
    ]
    return [h for h, _ in on], [j for _, j in on]


# ------------------------------------------------------------------ classification


def test_classify_through_the_pass_fail_view() -> None:
    rubric = Rubric.model_validate(ORDINAL)
    cases = {
        ("2", "4"): "false_pass",
        ("3", "5"): "false_pass",
        ("5", "3"): "false_fail",
        ("4", "1"): "false_fail",
        ("2", "3"): "disagreement",
        ("5", "4"): "disagreement",
        ("4", NA): "disagreement",
        (NA, "5"): "disagreement",
        ("3", "3"): "aligned",
    }
    for (human, judge), expected in cases.items():
        assert classify(human, judge, view=rubric.pass_fail) == expected, (human, judge)
    # a nominal rubric's view: its pass_label and fail_label
    nominal = Rubric.model_validate(RUBRIC).pass_fail
    assert (
        classify("fail", "pass", view=nominal) == "false_pass"
        and classify("pass", "fail", view=nominal) == "false_fail"
    )
    assert classify("fail", "review_required", view=nominal) == "disagreement"
    # without a pass/fail view nothing is a false pass
    assert classify("1", "5", view=Rubric.model_validate(NO_VIEW).pass_fail) == "disagreement"


# ------------------------------------------------------------------ figures, by hand and by library


def test_pass_fail_counts_on_an_ordinal_gold(make_dataset) -> None:
    gold, rows = build(make_dataset, FIXTURE)
    _, join, report = report_for(gold, rows)
    assert (
        report.schema_version == 3 and report.scale == "ordinal" and report.scale_labels == LIKERT
    )
    assert report.pass_labels == ["4", "5"] and report.pass_fail_view and report.pass_label is None
    general = next(s for s in report.slices if s.slice == "general")
    assert (general.n, general.verdicts, general.abstentions, general.errors, general.missing) == (
        10,
        8,
        1,
        1,
        1,
    )
    assert (general.human_fails, general.human_passes) == (6, 4)  # g1-g4, g9, g10 / g5-g8
    assert (general.false_passes, general.false_pass_rate.k, general.false_pass_rate.n) == (2, 2, 4)
    assert (general.false_fails, general.false_fail_rate.k, general.false_fail_rate.n) == (1, 1, 3)
    assert (general.aligned, general.other_disagreements) == (2, 3)
    assert {c.case_id for c in join.cases if c.error_class == "false_pass"} == {"g3", "g4"}
    billing = next(s for s in report.slices if s.slice == "billing")
    assert (
        billing.false_passes,
        billing.false_pass_rate.n,
        billing.false_fails,
        billing.false_fail_rate.n,
    ) == (0, 4, 0, 2)
    assert (billing.human_fails, billing.human_passes) == (4, 2)  # b7 (adjudicated n/a) is neither


def test_ordinal_figures_match_hand_and_library_values(make_dataset) -> None:
    gold, rows = build(make_dataset, FIXTURE)
    _, _, report = report_for(gold, rows)
    general = next(s for s in report.slices if s.slice == "general").ordinal
    assert general is not None and (general.pairs, general.off_scale, general.scale) == (
        7,
        1,
        "ordinal",
    )
    assert (
        general.weighted_kappa_linear.value == pytest.approx(5 / 19)
        and general.weighted_kappa_linear.n == 7
    )
    assert general.weighted_kappa_quadratic.value == pytest.approx(39 / 88)
    assert (
        general.mean_absolute_error.value,
        general.mean_absolute_error.n,
        general.mean_absolute_error.unit,
    ) == (pytest.approx(8 / 7), 7, "scale step")
    c = general.confusion
    assert (c.n, c.exact, c.within_one, c.predicted_higher, c.predicted_lower) == (7, 2, 4, 3, 2)
    assert c.labels == LIKERT and c.matrix[1] == [0, 0, 1, 1, 0] and c.matrix[4] == [0, 0, 1, 1, 0]
    human, judge = pairs("general")
    assert general.weighted_kappa_linear.value == pytest.approx(
        cohen_kappa_score(human, judge, labels=LIKERT, weights="linear")
    )
    assert general.weighted_kappa_quadratic.value == pytest.approx(
        cohen_kappa_score(human, judge, labels=LIKERT, weights="quadratic")
    )
    # overall and every slice, against scikit-learn and an independent closed form
    for row, name in [(report.overall, None), *((s, s.slice) for s in report.slices)]:
        human, judge = pairs(name)
        o = row.ordinal
        assert o is not None and o.pairs == len(human) == o.confusion.n
        if not human:
            assert (
                o.weighted_kappa_linear.value is None
                and o.mean_absolute_error.value is None
                and o.confusion.exact == 0
            )
            continue
        for weights, power, kappa in (
            ("linear", 1, o.weighted_kappa_linear),
            ("quadratic", 2, o.weighted_kappa_quadratic),
        ):
            assert kappa.value == pytest.approx(
                cohen_kappa_score(human, judge, labels=LIKERT, weights=weights)
            )
            assert kappa.value == pytest.approx(kappa_by_hand(human, judge, None, LIKERT, power))
        diffs = np.array([int(j) - int(h) for h, j in zip(human, judge, strict=True)])
        assert o.mean_absolute_error.value == pytest.approx(np.abs(diffs).mean())
        assert (
            o.confusion.exact,
            o.confusion.within_one,
            o.confusion.predicted_higher,
            o.confusion.predicted_lower,
        ) == (
            int((diffs == 0).sum()),
            int((np.abs(diffs) <= 1).sum()),
            int((diffs > 0).sum()),
            int((diffs < 0).sum()),
        )
    assert (report.overall.ordinal.pairs, report.overall.ordinal.off_scale) == (13, 2)  # type: ignore[union-attr]
    # the nominal kappa stays
    assert report.overall.cohen_kappa.n == 15


def test_numeric_scale_uses_value_distances(make_dataset) -> None:
    numeric = {
        **{k: v for k, v in ORDINAL.items() if k not in ("abstain_labels",)},
        "scale": "numeric",
        "labels": [0, 1, 2, 4],
        "pass_labels": [2, 4],
    }
    items = [
        ("n1", "general", "0", "1"),
        ("n2", "general", "1", "1"),
        ("n3", "general", "2", "4"),
        ("n4", "general", "4", "2"),
        ("n5", "general", "0", "2"),
    ]
    gold, rows = build(make_dataset, items, numeric)
    _, _, report = report_for(gold, rows)
    o = report.overall.ordinal
    assert o is not None and o.scale == "numeric"
    # |differences| in values: 1, 0, 2, 2, 2 -> 7/5 scale values
    assert (o.mean_absolute_error.value, o.mean_absolute_error.unit) == (
        pytest.approx(7 / 5),
        "scale value",
    )
    human, judge = [h for _, _, h, _ in items], [str(j) for *_, j in items]
    values = [0.0, 1.0, 2.0, 4.0]
    assert o.weighted_kappa_linear.value == pytest.approx(
        kappa_by_hand(human, judge, values, ["0", "1", "2", "4"], 1)
    )
    assert o.weighted_kappa_quadratic.value == pytest.approx(
        kappa_by_hand(human, judge, values, ["0", "1", "2", "4"], 2)
    )
    assert (report.overall.false_passes, report.overall.false_pass_rate.n) == (1, 3)  # 0 judged 2


def test_nominal_rubric_has_no_ordinal_block(make_dataset) -> None:
    case = make_case("c1", "fail")
    _, _, report = report_for(make_dataset([case]), [make_result(case, "pass")])
    assert report.scale == "nominal" and report.overall.ordinal is None and report.pass_fail_view
    assert report.overall.false_passes == 1 and report.ordinal_frame() is None
    assert "Ordinal" not in format_report(
        report
    ) and "pass/fail:  pass = pass; fail = fail" in format_report(report)


def test_align_text_and_json(make_dataset, tmp_path: Path) -> None:
    gold, rows = build(make_dataset, FIXTURE)
    results = write_results(tmp_path / "results.jsonl", stamped(rows, gold))
    args = ["--gold", str(gold), "--results", str(results), "--partition", "development"]
    body = json.loads(CliRunner().invoke(align_cmd, [*args, "--json"]).output)
    assert (
        body["schema_version"] == 3
        and body["scale"] == "ordinal"
        and body["pass_labels"] == ["4", "5"]
    )
    general = next(s for s in body["slices"] if s["slice"] == "general")
    assert general["ordinal"]["weighted_kappa_quadratic"]["value"] == pytest.approx(39 / 88)
    assert general["ordinal"]["confusion"]["predicted_higher"] == 3 and general["false_passes"] == 2
    narrow = CliRunner().invoke(align_cmd, args).output
    assert "Ordinal agreement per slice" in narrow and "kappa quadratic" in narrow
    assert max(len(line) for line in narrow.splitlines()) <= 120
    text = CliRunner().invoke(align_cmd, [*args, "--wide"]).output
    assert "scale:      ordinal (1 < 2 < 3 < 4 < 5)" in text
    assert "pass/fail:  pass = 4, 5; fail = 1, 2, 3; neither = n/a" in text
    assert (
        "Ordinal agreement per slice" in text
        and "MAE = mean |judge - adjudicated| in scale steps" in text
    )
    assert (
        "0.263" in text and "0.443" in text and "3/7 = 0.43" in text
    )  # kappa linear, quadratic, judge higher
    assert "Ordinal confusion over all cases in scope (13 pairs" in text
    assert "kappa = nominal Cohen's kappa" in text


# ------------------------------------------------------------------ the gate


def general_only(rubric: dict[str, Any]) -> dict[str, Any]:
    return {**rubric, "slices": {"general": {"risk": "low"}}}


def test_waived_rate_unbounded_cannot_hide_ordinal_false_passes(make_dataset) -> None:
    """The attack: schema 2 read only pass_label/fail_label, None on an ordinal rubric, so it
    counted no false pass, reported ``rate_unbounded`` ("0 human-fail cases") and a slice-level
    override of that review blocker certified a judge that passed every human fail."""
    items = [(f"c{i}", "general", h, "5") for i, h in enumerate(["1", "2", "2", "5", "5", "4"])]
    gold, rows = build(make_dataset, items, general_only(ORDINAL))
    dataset, join, report = report_for(gold, rows)
    policy = make_policy(
        slices={
            "general": {
                "max_false_pass_rate": None,
                "max_false_passes": 0,
                "max_abstention_rate": 0.5,
            },
            "billing": None,
            "empty": None,
        }
    )
    override = make_override(codes=["rate_unbounded"], slices=["general"])
    result = evaluate_gate(
        report, policy, rubric=dataset.rubric, join=join, now=NOW, overrides=[override]
    )
    assert result.outcome == "quality_failed" and result.waived == []
    fp = next(b for b in result.blockers if b.code == "false_passes_exceeded")
    assert (
        sorted(fp.case_ids) == ["c0", "c1", "c2"]
        and fp.evidence["false_passes"] == 3
        and fp.evidence["human_fails_decided"] == 3
    )
    # the judge says pass to everything: constant, on the pass side of the scale
    constant = next(b for b in result.blockers if b.code == "constant_verdict")
    assert "is pass (4, 5)" in constant.message and constant.evidence["human_fails"] == 3
    assert "rate_unbounded" not in {b.code for b in result.blockers}


def test_ordinal_rubric_without_pass_labels_never_certifies(make_dataset, tmp_path: Path) -> None:
    """The attack: without pass_labels nothing is a false pass; a low-risk slice whose policy
    sets only an abstention limit certified whatever the judge said."""
    items = [(f"c{i}", "general", h, "5") for i, h in enumerate(["1", "2", "2", "5", "5", "4"])]
    gold, rows = build(make_dataset, items, general_only(NO_VIEW))
    dataset, join, report = report_for(gold, rows)
    policy = make_policy(
        slices={
            "general": {"max_false_pass_rate": None, "max_abstention_rate": 0.5},
            "billing": None,
            "empty": None,
        }
    )
    result = evaluate_gate(report, policy, rubric=dataset.rubric, join=join, now=NOW)
    assert result.outcome == "review_required" and [b.code for b in result.blockers] == [
        "no_pass_fail_view"
    ]
    assert not report.pass_fail_view and report.overall.false_pass_rate.n == 0
    assert (
        report.overall.ordinal is not None and report.overall.ordinal.pairs == 6
    )  # ordinal figures still there
    (b,) = result.blockers
    assert (
        not b.waivable
        and b.slice is None
        and "declares no pass_labels" in b.message
        and "pass_labels: ['4', '5']" in b.message
    )
    # with pass/fail limits, they are named and not checked one by one (no misleading
    # rate_unbounded)
    limited = make_policy(
        slices={
            "general": {
                "max_false_passes": 0,
                "max_false_fail_rate": 0.5,
                "max_abstention_rate": 0.5,
            },
            "billing": None,
            "empty": None,
        }
    )
    result = evaluate_gate(
        report,
        limited,
        rubric=dataset.rubric,
        join=join,
        now=NOW,
        overrides=[make_override(codes=["no_pass_fail_view"])],
    )
    assert [b.code for b in result.blockers] == ["no_pass_fail_view"] and result.waived == []
    assert (
        result.blockers[0].evidence["slices_with_pass_fail_limits"] == ["general"]
        and "'general'" in result.blockers[0].message
    )
    assert result.unapplied_overrides[0].reason == "not_waivable"
    # the override store refuses the code; certify refuses the rubric before using held-out data
    with pytest.raises(WorkbenchError) as exc:
        add_override(
            tmp_path / "overrides.jsonl",
            policy="test-release@1",
            approver="A",
            reason="r",
            expires_at="2099-01-01",
            follow_up="F",
            codes=["no_pass_fail_view"],
            created_at=NOW,
        )
    assert [p.code for p in exc.value.problems] == ["override_code_not_waivable"]
    problems = policy_rubric_problems(
        limited, dataset.rubric, policy_path="p.yaml", partition="held_out"
    )
    assert [p.code for p in problems] == ["no_pass_fail_view"] and "pass_labels" in problems[0].fix
    assert (
        policy_rubric_problems(
            limited,
            load_dataset(build(make_dataset, items, general_only(ORDINAL))[0]).rubric,
            policy_path="p.yaml",
            partition="held_out",
        )
        == []
    )
    text = format_report(report)
    assert (
        "pass/fail:  none (the rubric declares no pass_labels)" in text
        and "no_pass_fail_view" in text
    )


def test_end_to_end_ordinal_gold_align_and_gate(make_dataset, tmp_path: Path) -> None:
    """A 1-5 gold (conftest builders) and results -> ``align --json`` and ``gate`` with a policy
    limiting false passes.
    """
    humans = {
        "billing": ["1", "1", "2", "2", "3", "3", "1", "2", "4", "5", "5", "4"],
        "general": ["1", "2", "3", "3", "4", "5", "5", "4"],
    }
    near = {
        "1": "2",
        "2": "3",
        "3": "2",
        "4": "5",
        "5": "4",
    }  # off by one, never across the threshold
    good = [
        (f"{s[:3]}-{i}", s, h, near[h] if i % 2 else h)
        for s, labels in humans.items()
        for i, h in enumerate(labels)
    ]
    gold, rows = build(make_dataset, good)
    raw = json.loads(
        make_policy(
            slices={
                "billing": {
                    "max_false_passes": None,
                    "max_false_pass_rate": 0.5,
                    "max_abstention_rate": 0.0,
                },
                "general": {
                    "max_false_pass_rate": None,
                    "max_false_passes": 0,
                    "max_abstention_rate": 0.0,
                },
            }
        ).model_dump_json(exclude_none=True)
    )
    (tmp_path / "pol").mkdir()
    policy = write_policy(tmp_path / "pol", raw)

    def run(rows: list[dict[str, Any]], name: str, gold: Path = gold) -> tuple[dict[str, Any], Any]:
        results = write_results(tmp_path / f"{name}.jsonl", stamped(rows, gold))
        args = ["--gold", str(gold), "--results", str(results), "--partition", "development"]
        aligned = json.loads(CliRunner().invoke(align_cmd, [*args, "--json"]).output)
        return aligned, CliRunner().invoke(gate_cmd, [*args, "--policy", str(policy), "--json"])

    aligned, gated = run(rows, "good")
    overall = aligned["overall"]
    assert (
        overall["false_passes"],
        overall["false_fails"],
        overall["false_pass_rate"]["n"],
        overall["false_fail_rate"]["n"],
    ) == (0, 0, 12, 8)
    o = overall["ordinal"]
    h = [c[2] for c in good]
    j = [c[3] for c in good]
    assert o["pairs"] == 20 and o["confusion"]["exact"] == 10 and o["confusion"]["within_one"] == 20
    assert o["mean_absolute_error"]["value"] == pytest.approx(0.5)
    assert o["weighted_kappa_linear"]["value"] == pytest.approx(
        cohen_kappa_score(h, j, labels=LIKERT, weights="linear")
    )
    assert o["weighted_kappa_quadratic"]["value"] == pytest.approx(
        cohen_kappa_score(h, j, labels=LIKERT, weights="quadratic")
    )
    # billing: 0 false passes of 8 human fails, Wilson upper 3.841459/11.841459 = 0.324 <= 0.5
    # (limits met on development results: advisory, only held-out results certify)
    assert gated.exit_code == 6, gated.output
    assert json.loads(gated.output)["outcome"] == "would_certify"

    # one human 2 judged 4 in general: a false pass over the threshold -> quality failed
    bad = [
        make_result(r_case, "4") if r_case["case_id"] == "gen-1" else row
        for row, r_case in zip(rows, _cases(gold), strict=True)
    ]
    aligned, gated = run(bad, "bad")
    assert next(s for s in aligned["slices"] if s["slice"] == "general")["false_passes"] == 1
    assert gated.exit_code == 1, gated.output
    body = json.loads(gated.output)
    fp = next(b for b in body["blockers"] if b["code"] == "false_passes_exceeded")
    assert fp["slice"] == "general" and fp["case_ids"] == ["gen-1"]

    # the same gold without pass_labels: review required (exit 4), never certified
    bare = make_dataset(_cases(gold), rubric=NO_VIEW)
    _, gated = run(rows, "bare", bare)
    assert gated.exit_code == 4, gated.output
    assert [b["code"] for b in json.loads(gated.output)["blockers"]] == ["no_pass_fail_view"]
    text = (
        CliRunner()
        .invoke(
            gate_cmd,
            [
                "--gold",
                str(bare),
                "--results",
                str(tmp_path / "bare.jsonl"),
                "--partition",
                "development",
                "--policy",
                str(policy),
            ],
        )
        .output
    )
    assert (
        "gate:       REVIEW_REQUIRED" in text
        and "no_pass_fail_view" in text
        and "declares no pass_labels" in text
    )


def _cases(gold: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line) for line in (gold / "gold.jsonl").read_text(encoding="utf-8").splitlines()
    ]
