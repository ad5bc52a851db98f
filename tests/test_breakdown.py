"""Breakdowns by case field, alone and crossed with the risk slice (``workbench align --by``):
counts, denominators, intervals, Fisher p-values and Benjamini-Hochberg q-values, each checked
against hand-computed values and reference libraries."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import make_case, make_result, write_results
from lineage_support import stamped
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from workbench.align import breakdown, read_evidence
from workbench.cli import main as cli
from workbench.errors import WorkbenchError

# case id, slice, adjudicated label, judge label, language, tags, confidences, response length
CASES = [
    ("b1", "billing", "fail", "pass", "de", ["negation", "long-answer"], ["low", "high"], 200),
    ("b2", "billing", "fail", "fail", "de", [], [None, None], 20),
    ("b3", "billing", "fail", "fail", "en", [], [None, None], 20),
    ("b4", "billing", "pass", "pass", "en", [], [None, None], 20),
    ("b5", "billing", "fail", "pass", "en", [], [None, None], 20),
    ("g1", "general", "fail", "pass", "de", ["negation"], ["medium", "high"], 20),
    ("g2", "general", "fail", "fail", "de", [], [None, None], 20),
    ("g3", "general", "pass", "fail", "de", [], [None, None], 20),
    ("g4", "general", "pass", "pass", "en", [], [None, None], 20),
    ("g5", "general", "fail", "fail", "en", [], [None, None], 20),
    ("g6", "general", "pass", "pass", "en", [], [None, None], 20),
]


def _case(
    cid: str, slice_: str, label: str, lang: str, tags: list[str], conf: list[Any], size: int
) -> dict[str, Any]:
    reviews = [
        {"reviewer": who, "label": label, **({"confidence": c} if c else {})}
        for who, c in zip(("rev-a", "rev-b"), conf, strict=True)
    ]
    response = (cid + " ") * (size // (len(cid) + 1)) + "x" * (size % (len(cid) + 1))
    return make_case(
        cid,
        label,
        slice=slice_,
        reviews=reviews,
        response=response,
        tags=tags,
        metadata={"language": lang, "turns": int(cid[1])},
    )


@pytest.fixture
def world(make_dataset: Any, tmp_path: Path) -> tuple[Path, Path]:
    cases = [
        _case(c, s, lab, lang, tags, conf, size) for c, s, lab, _, lang, tags, conf, size in CASES
    ]
    gold = make_dataset(cases)
    results = write_results(
        tmp_path / "results.jsonl",
        stamped([make_result(case, row[3]) for case, row in zip(cases, CASES, strict=True)], gold),
    )
    return gold, results


def _cells(gold: Path, results: Path, *by: str) -> dict[str, Any]:
    evidence = read_evidence(gold, results, partition="development")
    found = breakdown(evidence.cases, evidence.index.table, evidence.index.rubric, by)
    return {c.cell: c for c in found.cells} | {"(all)": found}


def _hand_fisher(k: int, n: int, big_k: int, big_n: int) -> float:
    """Two-sided Fisher's exact p of k/n against (K-k)/(N-n), from the hypergeometric law."""

    def prob(x: int) -> float:
        return math.comb(n, x) * math.comb(big_n - n, big_k - x) / math.comb(big_n, big_k)

    observed = prob(k)
    support = range(max(0, big_k - (big_n - n)), min(n, big_k) + 1)
    return sum(prob(x) for x in support if prob(x) <= observed * (1 + 1e-7))


def test_breakdown_by_language_is_hand_computed(world: tuple[Path, Path]) -> None:
    cells = _cells(*world, "language")
    assert set(cells) == {"language=de", "language=en", "(all)"}
    de, en = cells["language=de"].figures, cells["language=en"].figures
    assert (de.n, de.false_passes, de.false_pass_rate.n, de.false_fails, de.false_fail_rate.n) == (
        5,
        2,
        4,
        1,
        1,
    )
    assert (en.n, en.false_passes, en.false_pass_rate.n, en.false_fails, en.false_fail_rate.n) == (
        6,
        1,
        3,
        0,
        3,
    )
    low, high = proportion_confint(2, 4, method="wilson")
    assert de.false_pass_rate.ci95_low == pytest.approx(
        low
    ) and de.false_pass_rate.ci95_high == pytest.approx(high)
    assert cells["language=de"].false_pass_p == pytest.approx(_hand_fisher(2, 4, 3, 7))
    assert cells["language=en"].false_fail_p == pytest.approx(_hand_fisher(0, 3, 1, 4))


def test_crossed_with_the_slice_names_and_counts_every_cell(world: tuple[Path, Path]) -> None:
    cells = _cells(*world, "language", "slice")
    expected = {  # cell: (n, FP, FP denominator, FF, FF denominator)
        "billing×language=de": (2, 1, 2, 0, 0),
        "billing×language=en": (3, 1, 2, 0, 1),
        "general×language=de": (3, 1, 2, 1, 1),
        "general×language=en": (3, 0, 1, 0, 2),
    }
    got = {
        name: (
            c.figures.n,
            c.figures.false_passes,
            c.figures.false_pass_rate.n,
            c.figures.false_fails,
            c.figures.false_fail_rate.n,
        )
        for name, c in cells.items()
        if name != "(all)"
    }
    assert got == expected
    assert cells["billing×language=de"].figures.risk == "critical"
    assert cells["general×language=en"].figures.risk == "low"
    assert _cells(*world, "slice*language").keys() == cells.keys()  # the one-value spelling
    p = [cells[name].false_pass_p for name in expected]
    assert p == pytest.approx(
        [
            _hand_fisher(1, 2, 3, 7),
            _hand_fisher(1, 2, 3, 7),
            _hand_fisher(1, 2, 3, 7),
            _hand_fisher(0, 1, 3, 7),
        ]
    )
    q = [cells[name].false_pass_q for name in expected]
    assert q == pytest.approx(list(multipletests(p, method="fdr_bh")[1]))


def test_tags_confidence_length_and_numeric_metadata(world: tuple[Path, Path]) -> None:
    tags = _cells(*world, "tag")
    assert {
        n: (c.figures.n, c.figures.false_passes, c.figures.false_pass_rate.n)
        for n, c in tags.items()
        if n != "(all)"
    } == {
        "tag=negation": (2, 2, 2),
        "tag=long-answer": (1, 1, 1),
        "tag=(none)": (9, 1, 5),
    }
    conf = _cells(*world, "confidence")
    assert {n: c.figures.n for n, c in conf.items() if n != "(all)"} == {
        "confidence=low": 1,
        "confidence=medium": 1,
        "confidence=unstated": 9,
    }
    length = _cells(*world, "length")
    assert list(length) == ["length=<150", "length=150-299", "(all)"]  # in bucket order
    assert {n: c.figures.n for n, c in length.items() if n != "(all)"} == {
        "length=150-299": 1,
        "length=<150": 10,
    }
    turns = _cells(*world, "turns")  # numeric: cut at the quartiles of 1..6 (b1..b5, g1..g6)
    assert sum(c.figures.n for n, c in turns.items() if n != "(all)") == 11
    assert "quartiles" in turns["(all)"].buckets["turns"]


def test_bh_of_many_cells_matches_statsmodels(world: tuple[Path, Path]) -> None:
    cells = [c for n, c in _cells(*world, "group").items() if n != "(all)"]
    p = [c.false_pass_p for c in cells if c.false_pass_p is not None]
    q = [c.false_pass_q for c in cells if c.false_pass_p is not None]
    assert len(p) == 7  # every group with a human fail (b1, b2, b3, b5, g1, g2, g5)
    assert q == pytest.approx(list(multipletests(p, method="fdr_bh")[1]))


def test_unknown_field_is_refused_naming_every_field(world: tuple[Path, Path]) -> None:
    gold, results = world
    with pytest.raises(WorkbenchError) as raised:
        _cells(gold, results, "langauge")
    assert raised.value.problems[0].code == "unknown_breakdown_field"
    run = _align(world, "--by", "langauge*slice")
    assert run.exit_code == 2, run.output
    assert "'langauge' is not a field" in run.output
    for field in ("slice", "tag", "length", "confidence", "language", "turns"):
        assert field in run.output
    assert "Traceback" not in run.output


def _align(world: tuple[Path, Path], *more: str) -> Any:
    gold, results = world
    args = ["align", "--gold", str(gold), "--results", str(results), "--partition", "development"]
    return CliRunner().invoke(cli, [*args, *more])


def test_align_by_prints_and_writes_the_breakdown(world: tuple[Path, Path]) -> None:
    text = _align(world, "--by", "language", "--by", "slice")
    assert text.exit_code == 0, text.output
    assert "billing×language=de" in text.output and "1/2" in text.output
    out = _align(world, "--by", "language", "--json")
    data = json.loads(out.output)
    assert [c["cell"] for c in data["cells"]] == ["language=de", "language=en"]
    assert data["overall"]["false_passes"] == 3


POLICY: dict[str, Any] = {
    "name": "crossed",
    "version": "1",
    "owner": "QA lead",
    "rationale": "Limits for the crossed-cell gate test.",
    "slices": {
        "billing": {"risk": "critical", "max_false_pass_rate": 1.0, "max_abstention_rate": 0.5},
        "general": {"risk": "low", "min_n": 0},
        "empty": {"risk": "medium", "min_n": 0},
    },
}
CELL = {"risk": "critical", "max_false_passes": 0, "max_false_pass_rate": 1.0}
CELL |= {"max_abstention_rate": 0.5}


def _gate_codes(gold: Path, results: Path, cells: dict[str, Any]) -> dict[str, list[str]]:
    """Per slice or cell, the codes the gate's two paths (the CLI's evidence, a per-record join)
    give under POLICY with ``cells``; both must agree."""
    from workbench.align import align_results, cell_figures, flagged_cases
    from workbench.gold import load_dataset
    from workbench.policy import Policy, evaluate_gate

    policy = Policy.model_validate(POLICY | {"cells": cells})
    evidence = read_evidence(gold, results, partition="development")
    rubric = evidence.index.rubric
    figures, ids = cell_figures(evidence.cases, evidence.index.table, rubric, list(cells))
    flagged = flagged_cases(evidence.cases, rubric.abstain_labels) | ids
    by_cli = evaluate_gate(evidence.report, policy, rubric=rubric, flagged=flagged, cells=figures)
    dataset = load_dataset(gold)
    join = align_results(dataset, results, partition="development")
    by_join = evaluate_gate(evidence.report, policy, rubric=rubric, join=join)
    codes: dict[str, list[str]] = {}
    for b in by_cli.blockers:
        codes.setdefault(b.slice or "", []).append(b.code)
    assert [(b.slice, b.code) for b in by_join.blockers] == [
        (b.slice, b.code) for b in by_cli.blockers
    ]
    return codes | {"(outcome)": [by_cli.outcome]}


def test_gate_blocks_on_a_crossed_limit(world: tuple[Path, Path]) -> None:
    gold, results = world
    assert "false_passes_exceeded" not in str(_gate_codes(gold, results, {}))  # the slice passes
    codes = _gate_codes(gold, results, {"language=de*billing": CELL})  # any order, * for ×
    assert codes["language=de*billing"] == ["false_passes_exceeded"]
    assert codes["(outcome)"] == ["quality_failed"]
    clean = _gate_codes(gold, results, {"billing×language=en": CELL | {"max_false_passes": 1}})
    assert "billing×language=en" not in clean  # 1 false pass, 1 allowed: no blocker


def test_a_limit_on_an_empty_cell_is_incomplete(world: tuple[Path, Path]) -> None:
    codes = _gate_codes(*world, {"billing×language=fr": CELL})
    assert codes["billing×language=fr"] == ["cell_without_cases"]
    assert codes["(outcome)"] == ["evaluation_incomplete"]


def test_an_override_names_a_cell_and_waives_its_critical_false_pass_only_by_case() -> None:
    from workbench.policy import Policy, check_override_scope

    policy = Policy.model_validate(POLICY | {"cells": {"billing×language=de": CELL}})
    by_slice = check_override_scope(
        "o", policy, ["false_passes_exceeded"], ["billing×language=de"], []
    )
    assert [p.code for p in by_slice] == ["override_critical_false_pass_by_slice"]
    assert (
        check_override_scope(
            "o", policy, ["false_passes_exceeded"], ["billing×language=de"], ["b1"]
        )
        == []
    )
    unknown = check_override_scope(
        "o", policy, ["false_passes_exceeded"], ["billing×language=fr"], []
    )
    assert [p.code for p in unknown] == ["override_unknown_slice"]


def test_a_cell_of_a_field_the_gold_lacks_is_incomplete_and_certify_checks_its_slice(
    world: tuple[Path, Path],
) -> None:
    from workbench.gold import load_dataset
    from workbench.policy import Policy, policy_rubric_problems

    codes = _gate_codes(*world, {"billing×dialect=bavarian": CELL})
    assert codes["billing×dialect=bavarian"] == ["cell_without_cases"]
    cells = {"billing×language=de": CELL | {"risk": "low"}, "refunds×language=de": CELL}
    policy = Policy.model_validate(POLICY | {"cells": cells})
    rubric = load_dataset(world[0]).rubric
    problems = policy_rubric_problems(policy, rubric, policy_path="p.yaml")
    assert [(p.code, p.location) for p in problems] == [
        ("policy_risk_mismatch", "p.yaml: cells.billing×language=de.risk"),
        ("policy_unknown_slice", "p.yaml: cells.refunds×language=de"),
    ]
