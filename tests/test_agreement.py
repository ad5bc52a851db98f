"""Human-human agreement on a hand-built dataset where not every reviewer rates every case."""

from __future__ import annotations

import pytest
from _reference import cohen_kappa_score
from conftest import LABELS, alpha_by_coincidences, make_case

from workbench.agreement import agreement_block, human_agreement
from workbench.gold import GoldCase, load_dataset

# reviewers a, b, c; cases 1-3 in billing, 4-6 in general
REVIEWS = {
    "c1": ("billing", "pass", {"a": "pass", "b": "pass"}),
    "c2": ("billing", "fail", {"a": "pass", "b": "fail", "c": "fail"}),
    "c3": ("billing", "fail", {"a": "fail", "c": "fail"}),
    "c4": ("general", "pass", {"b": "pass", "c": "pass"}),
    "c5": ("general", "fail", {"a": "fail", "b": "fail", "c": "pass"}),
    "c6": ("general", "pass", {"a": "pass", "c": "fail"}),
}


@pytest.fixture
def dataset(make_dataset):
    cases = [
        make_case(cid, label, slice=sl, reviews=revs) for cid, (sl, label, revs) in REVIEWS.items()
    ]
    return load_dataset(make_dataset(cases))


def pairs_of(block):
    return {(p.reviewer_a, p.reviewer_b): p for p in block.pairs}


def test_pairwise_overall(dataset):
    report = human_agreement(dataset, min_shared=1)  # tiny fixture: list every pair
    block = report.overall
    assert block.cases == 6 and block.reviewers == ["a", "b", "c"]
    pairs = pairs_of(block)
    assert set(pairs) == {("a", "b"), ("a", "c"), ("b", "c")}

    # a,b share c1 (p,p), c2 (p,f), c5 (f,f): n=3, agree 2
    # p_o = 2/3; a: pass 2/3 fail 1/3; b: pass 1/3 fail 2/3; p_e = 2/9 + 2/9 = 4/9
    # kappa = (2/3 - 4/9) / (5/9) = 0.4
    ab = pairs["a", "b"]
    assert (ab.n, ab.raw_agreement.k, ab.raw_agreement.n) == (3, 2, 3)
    assert ab.cohen_kappa.value == pytest.approx(0.4)

    # a,c share c2 (p,f), c3 (f,f), c5 (f,p), c6 (p,f): n=4, agree 1
    # a: pass 2/4; c: pass 1/4; p_e = (2/4)(1/4) + (2/4)(3/4) = 1/2; kappa = (1/4 - 1/2)/(1/2) =
    # -0.5
    ac = pairs["a", "c"]
    assert (ac.n, ac.raw_agreement.k) == (4, 1)
    assert ac.raw_agreement.rate == pytest.approx(0.25)
    assert ac.cohen_kappa.value == pytest.approx(-0.5)
    assert ac.cohen_kappa.value == pytest.approx(
        cohen_kappa_score(["pass", "fail", "fail", "pass"], ["fail", "fail", "pass", "fail"])
    )

    # b,c share c2 (f,f), c4 (p,p), c5 (f,p): n=3, agree 2; mirror of a,b -> 0.4
    bc = pairs["b", "c"]
    assert (bc.n, bc.raw_agreement.k) == (3, 2)
    assert bc.cohen_kappa.value == pytest.approx(0.4)


def test_fleiss_is_undefined_when_rater_counts_differ(dataset):
    fleiss = human_agreement(dataset).overall.fleiss_kappa
    assert fleiss.value is None and fleiss.n == 6 and "different numbers of raters" in fleiss.note


def test_disagreement_rate_and_krippendorff(dataset):
    block = human_agreement(dataset).overall
    # c2, c5 and c6 have disagreeing reviewers
    assert (block.disagreement.k, block.disagreement.n) == (3, 6)
    units = [revs for _, _, revs in REVIEWS.values()]
    assert block.krippendorff_alpha.value == pytest.approx(alpha_by_coincidences(units), abs=1e-12)
    assert block.krippendorff_alpha.n == 6


def test_per_slice_blocks(dataset):
    report = human_agreement(dataset, min_shared=1)
    # every rubric slice is reported, in rubric order; 'empty' has no cases
    assert list(report.slices) == ["billing", "general", "empty"]
    assert report.slices["empty"].cases == 0 and report.slices["empty"].pairs == []
    billing = pairs_of(report.slices["billing"])
    # a,b: c1 (p,p), c2 (p,f): p_o 1/2, a all pass -> p_e = 1·1/2 = 1/2 -> kappa 0
    assert (billing["a", "b"].n, billing["a", "b"].raw_agreement.k) == (2, 1)
    assert billing["a", "b"].cohen_kappa.value == pytest.approx(0.0)
    # b,c: only c2 (f,f): one label used -> undefined
    assert billing["b", "c"].n == 1 and billing["b", "c"].cohen_kappa.value is None
    general = pairs_of(report.slices["general"])
    # a,c: c5 (f,p), c6 (p,f): p_o 0, p_e 1/2 -> kappa -1
    assert (general["a", "c"].n, general["a", "c"].raw_agreement.k) == (2, 0)
    assert general["a", "c"].cohen_kappa.value == pytest.approx(-1.0)
    assert report.slices["billing"].cases == 3 and report.slices["general"].cases == 3
    assert (report.slices["general"].disagreement.k, report.slices["general"].disagreement.n) == (
        2,
        3,
    )


def test_pairs_without_shared_cases_are_omitted(make_dataset):
    cases = [
        make_case("c1", reviews={"a": "pass", "b": "fail"}),
        make_case("c2", reviews={"c": "pass", "d": "pass"}),
    ]
    block = human_agreement(load_dataset(make_dataset(cases)), min_shared=1).overall
    assert set(pairs_of(block)) == {("a", "b"), ("c", "d")}


def test_partition_scope_and_report_header(make_dataset):
    cases = [
        make_case("c1", reviews={"a": "pass", "b": "pass"}, partition="calibration"),
        make_case("c2", reviews={"a": "fail", "b": "pass"}, partition="held_out"),
    ]
    dataset = load_dataset(make_dataset(cases))
    report = human_agreement(dataset, "held_out")
    assert report.partition == "held_out" and report.overall.cases == 1
    assert report.dataset_sha256 == dataset.sha256 and report.labels == LABELS
    assert human_agreement(dataset).partition is None


def test_fleiss_defined_when_every_case_has_three_reviews():
    rows = [("p", "p", "p"), ("p", "p", "f"), ("f", "f", "f"), ("p", "f", "f")]
    word = {"p": "pass", "f": "fail"}
    cases = [
        GoldCase.model_validate(
            make_case(f"c{i}", reviews={"a": word[x], "b": word[y], "c": word[z]})
        )
        for i, (x, y, z) in enumerate(rows)
    ]
    # same table as the hand-computed Fleiss example in test_stats: kappa = 1/3
    block = agreement_block(cases, LABELS)
    assert block.fleiss_kappa.value == pytest.approx(1 / 3)
    assert block.fleiss_kappa.n == 4


def test_empty_partition_gives_undefined_statistics(dataset):
    block = human_agreement(dataset, "held_out").overall
    assert (block.cases, block.reviewers, block.pairs) == (0, [], [])
    assert block.krippendorff_alpha.value is None and block.fleiss_kappa.value is None
    assert block.disagreement.rate is None
