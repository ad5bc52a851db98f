"""Crowd scale and pairwise details: hundreds of reviewers, the disagreement basis,
pairwise ties.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import RUBRIC, make_case, make_result, write_results
from lineage_support import stamped

from workbench.agreement import human_agreement
from workbench.cli import main
from workbench.gold import card_statistics, load_dataset
from workbench.pairwise import format_pairwise, pairwise_report

# ------------------------------------------------------------------ hundreds of reviewers

CROWD = 300
CORE = ["core-1", "core-2", "core-3"]


def crowd_reviews(seed: int = 7, cases: int = 600) -> dict[str, dict[str, str]]:
    """Three reviews per case: one of three core reviewers and two of 300 crowd workers."""
    rng = random.Random(seed)
    workers = [f"worker-{i:03d}" for i in range(CROWD)]
    out: dict[str, dict[str, str]] = {}
    for i in range(cases):
        gold = rng.choice(["pass", "fail"])
        people = [CORE[i % 3], *rng.sample(workers, 2)]
        if i % 2 == 0:  # core-1 and core-2 also share every other case
            people = ["core-1", "core-2", *rng.sample(workers, 1)]
        out[f"k{i:03d}"] = {
            who: gold if rng.random() < 0.85 else ("fail" if gold == "pass" else "pass")
            for who in people
        }
    return out


@pytest.fixture(scope="module")
def crowd(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict[str, str]]]:
    from conftest import write_dataset

    reviews = crowd_reviews()
    cases = [
        make_case(
            cid,
            Counter(revs.values()).most_common(1)[0][0],
            reviews=revs,
            slice="billing" if i % 4 == 0 else "general",
        )
        for i, (cid, revs) in enumerate(reviews.items())
    ]
    return write_dataset(tmp_path_factory.mktemp("crowd"), cases), reviews


def reviewer_count(reviews: dict[str, dict[str, str]]) -> int:
    return len({who for revs in reviews.values() for who in revs})


def shared_counts(reviews: dict[str, dict[str, str]]) -> Counter:
    """Independent count of shared cases per reviewer pair."""
    counts: Counter = Counter()
    for revs in reviews.values():
        for a, b in combinations(sorted(revs), 2):
            counts[a, b] += 1
    return counts


def test_agreement_lists_only_pairs_with_enough_shared_cases(crowd) -> None:
    root, reviews = crowd
    counts = shared_counts(reviews)
    kept = {pair for pair, n in counts.items() if n >= 10}
    assert 0 < len(kept) < 10 < len(counts)  # the fixture really is a crowd
    report = human_agreement(load_dataset(root))
    block = report.overall
    assert len(block.reviewers) == reviewer_count(reviews) > 250 and block.min_shared == 10
    assert {(p.reviewer_a, p.reviewer_b) for p in block.pairs} == kept
    assert block.pairs_left_out == len(counts) - len(kept)
    assert all(p.n == counts[p.reviewer_a, p.reviewer_b] for p in block.pairs)
    everything = human_agreement(load_dataset(root), min_shared=1).overall
    assert len(everything.pairs) == len(counts) and everything.pairs_left_out == 0
    # alpha and Fleiss do not depend on the pair filter
    assert everything.krippendorff_alpha == block.krippendorff_alpha


def test_agreement_text_is_readable_at_crowd_scale(crowd) -> None:
    """Before: one line naming 303 reviewers and one line per pair (thousands of lines)."""
    root, reviews = crowd
    counts = shared_counts(reviews)
    result = CliRunner().invoke(main, ["agreement", str(root)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert len(lines) < 60 and max(len(line) for line in lines) < 250
    kept = sum(1 for n in counts.values() if n >= 10)
    assert f"overall: 600 cases, {reviewer_count(reviews)} reviewers (--json lists them)" in lines
    assert (
        f"  reviewer pairs sharing >= 10 case(s): {kept} of {len(counts)} listed;"
        f" {len(counts) - kept} sharing fewer left out (--min-shared changes this)" in lines
    )
    assert "worker-000" not in result.output
    wider = CliRunner().invoke(main, ["agreement", str(root), "--min-shared", "3", "--json"])
    payload = json.loads(wider.output)
    assert len(payload["overall"]["pairs"]) == sum(1 for n in counts.values() if n >= 3)
    assert payload["overall"]["pairs_left_out"] == sum(1 for n in counts.values() if n < 3)
    refused = CliRunner().invoke(main, ["agreement", str(root), "--min-shared", "0"])
    assert refused.exit_code == 2 and "Traceback" not in refused.output


def test_card_is_readable_at_crowd_scale(crowd) -> None:
    root, reviews = crowd
    counts = shared_counts(reviews)
    per_reviewer = Counter(who for revs in reviews.values() for who in revs)
    result = CliRunner().invoke(main, ["card", str(root)])
    assert result.exit_code == 0, result.output
    text = result.output
    counts_sorted = sorted(per_reviewer.values())
    middle = len(counts_sorted) // 2
    median = (
        counts_sorted[middle]
        if len(counts_sorted) % 2
        else (counts_sorted[middle - 1] + counts_sorted[middle]) / 2
    )
    assert (
        f"reviewers: {len(per_reviewer)} (reviews per reviewer: min {counts_sorted[0]}, median"
        f" {median}, max {counts_sorted[-1]})" in text
    )
    assert f"... and {len(per_reviewer) - 10} more (--json lists all)" in text
    kept = sum(1 for n in counts.values() if n >= 10)
    assert (
        f"reviewer pairs sharing >= 10 case(s): {kept} of {len(counts)} listed;"
        f" {len(counts) - kept} sharing fewer left out" in text
    )
    assert max(len(line) for line in text.splitlines()) < 250
    stats = card_statistics(load_dataset(root), min_shared=1)
    assert (
        stats["reviewer_pairs"]["listed"] == len(counts)
        and stats["reviewer_pairs"]["left_out"] == 0
    )
    assert (
        stats["reviewer_summary"]["count"] == len(per_reviewer) == len(stats["reviewers"])
    )  # --json still has all


# ------------------------------------------------------------------ the disagreement basis


def test_disagreement_uses_the_cases_alpha_uses(make_dataset) -> None:
    """Before: single-review cases counted as agreement in the disagreement denominator, but not in
    alpha's.
    """
    rubric = {**RUBRIC, "min_reviews": 1}
    cases = [
        make_case("c1", reviews={"a": "pass", "b": "fail"}),
        make_case("c2", reviews={"a": "pass", "b": "pass"}),
        make_case("c3", reviews={"a": "fail"}),
        make_case("c4", reviews={"b": "pass"}),
    ]
    root = make_dataset(cases, rubric=rubric)
    dataset = load_dataset(root)
    block = human_agreement(dataset).overall
    assert (block.disagreement.k, block.disagreement.n) == (1, 2)
    assert block.disagreement.n == block.krippendorff_alpha.n
    stats = card_statistics(dataset)
    assert (
        stats["disagreement"] == {"cases": 1, "n": 2, "rate": 0.5}
        and "alpha" in stats["disagreement_basis"]
    )
    card = CliRunner().invoke(main, ["card", str(root)])
    assert (
        "reviewer disagreement: 1/2 cases (50.0%), among cases with two or more reviews"
        in card.output
    )


# ------------------------------------------------------------------ pairwise with a tie label

PAIR_RUBRIC: dict[str, Any] = {
    **{
        k: v
        for k, v in RUBRIC.items()
        if k not in ("pass_label", "fail_label", "abstain_labels", "evidence_snapshot")
    },
    "labels": ["0", "1", "2"],
    "min_reviews": 1,
}
# gold label and the (position-consistent) verdict the judge gives in both orders
CASES = [
    ("1", "1"),
    ("2", "2"),
    ("0", "0"),
    ("1", "0"),
    ("2", "1"),
    ("0", "2"),
    ("1", "1"),
    ("0", "0"),
]


def _presentation(swap: bool, with_order: bool = True) -> dict[str, Any]:
    order = ["2", "1"] if swap else ["1", "2"]
    return (
        {"swap": swap, "presented_order": order, "first_shown": order[0]}
        if with_order
        else {"swap": swap, "first_shown": order[0]}
    )


def _pairwise_gold(
    make_dataset, tmp_path: Path, verdicts: list[tuple[str, str]], *, with_order: bool = True
) -> tuple[Path, Path]:
    cases = [make_case(f"p{i}", gold, reviews={"r": gold}) for i, (gold, _) in enumerate(CASES)]
    root = make_dataset(cases, rubric=PAIR_RUBRIC, evidence=None)
    rows = [
        make_result(
            case, verdict, repeat=repeat, presentation=_presentation(repeat == 1, with_order)
        )
        for case, pair in zip(cases, verdicts, strict=True)
        for repeat, verdict in enumerate(pair)
    ]
    return root, write_results(tmp_path / "results.jsonl", stamped(rows, root))


def test_position_consistent_judge_with_ties_shows_one_half(make_dataset, tmp_path: Path) -> None:
    """Before: tie verdicts sat in the denominator of first-shown wins, so this judge showed 5/16,
    not 0.5.
    """
    root, results = _pairwise_gold(make_dataset, tmp_path, [(v, v) for _, v in CASES])
    report = pairwise_report(root, results, tie_labels=["0"])
    o = report.overall
    # 8 cases x 2 orders = 16 verdicts; verdict 0 on p2, p3, p7 -> 6 tie verdicts, 10 decided
    assert (o.tie_verdicts.k, o.tie_verdicts.n) == (6, 16) and (
        o.original.ties,
        o.swapped.ties,
    ) == (3, 3)
    # each decided case picks the same candidate in both orders, shown first exactly once
    assert (o.first_shown_wins.k, o.first_shown_wins.n) == (
        5,
        10,
    ) and o.first_shown_wins.rate == 0.5
    assert (o.original.first_shown_wins.k, o.original.first_shown_wins.n) == (
        3,
        5,
    )  # picks 1, 2, 2(no), 1, 1 with 1 shown first: p0, p4, p6
    # accuracy: correct on p0, p1, p2, p6, p7 in each order = 5/8 over all cases;
    # decided gold = gold 1 or 2: p0, p1, p3, p4, p6 -> correct p0, p1, p6 = 3/5
    assert (o.original.accuracy.k, o.original.accuracy.n) == (5, 8)
    assert (o.original.accuracy_decided_gold.k, o.original.accuracy_decided_gold.n) == (3, 5)
    assert o.gold_ties == 3 and (
        o.average_accuracy_decided_gold.k,
        o.average_accuracy_decided_gold.n,
    ) == (6, 10)
    assert report.tie_labels == ["0"] and report.schema_version == 2
    text = format_pairwise(report)
    assert "first-shown wins counts decided verdicts only: 5/10 50.0%" in text
    assert (
        "Accuracy over all 8 cases: original 5/8" in text
        and "over the 5 decided gold cases (3 gold ties or abstentions left out): original 3/5"
        in text
    )


def test_ties_are_found_from_the_presented_order_without_a_declaration(
    make_dataset, tmp_path: Path
) -> None:
    root, results = _pairwise_gold(make_dataset, tmp_path, [(v, v) for _, v in CASES])
    o = pairwise_report(root, results).overall  # "0" is never a presented candidate
    assert (o.first_shown_wins.k, o.first_shown_wins.n, o.tie_verdicts.k) == (5, 10, 6)


def test_without_presented_order_a_tie_label_must_be_declared(make_dataset, tmp_path: Path) -> None:
    root, results = _pairwise_gold(
        make_dataset, tmp_path, [(v, v) for _, v in CASES], with_order=False
    )
    undeclared = pairwise_report(root, results).overall
    assert (
        undeclared.tie_verdicts.k == 0 and undeclared.first_shown_wins.n == 16
    )  # nothing says 0 is a tie
    declared = CliRunner().invoke(
        main,
        ["pairwise", "--gold", str(root), "--results", str(results), "--tie-label", "0", "--json"],
    )
    payload = json.loads(declared.output)
    assert (
        payload["overall"]["first_shown_wins"]["rate"] == 0.5
        and payload["overall"]["tie_verdicts"]["k"] == 6
    )


def test_position_biased_judge_is_still_seen(make_dataset, tmp_path: Path) -> None:
    # always picks whatever is shown first, except ties: 10 decided verdicts, all first-shown
    verdicts = [("0", "0") if v == "0" else ("1", "2") for _, v in CASES]
    root, results = _pairwise_gold(make_dataset, tmp_path, verdicts)
    o = pairwise_report(root, results, tie_labels=["0"]).overall
    assert (o.first_shown_wins.k, o.first_shown_wins.n) == (10, 10)


def test_bad_tie_labels_are_refused(make_dataset, tmp_path: Path) -> None:
    root, results = _pairwise_gold(make_dataset, tmp_path, [(v, v) for _, v in CASES])
    unknown = CliRunner().invoke(
        main, ["pairwise", "--gold", str(root), "--results", str(results), "--tie-label", "tie"]
    )
    assert (
        unknown.exit_code == 2
        and "[unknown_tie_label]" in unknown.output
        and "Traceback" not in unknown.output
    )
    shown = CliRunner().invoke(
        main, ["pairwise", "--gold", str(root), "--results", str(results), "--tie-label", "1"]
    )
    assert shown.exit_code == 2 and "[tie_label_presented]" in shown.output
