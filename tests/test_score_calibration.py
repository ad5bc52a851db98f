"""Judge confidence calibration (issue 32, item 5): reliability bins and the expected
calibration error with a cluster-bootstrap interval (:func:`workbench.stats.score_calibration`),
checked by hand, against scikit-learn's ``calibration_curve`` and a hand-run cluster bootstrap on
the same seed; the reliability diagram renders offline. Before this change no calibration
figure existed (the score was only thresholded)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.calibration import calibration_curve

from workbench.reports import reliability_chart, to_svg
from workbench.reports._render import external_references
from workbench.stats import score_calibration


def _ece_by_hand(scores: list[float], passed: list[bool], bins: int = 10) -> float:
    total = 0.0
    for b in range(bins):
        low, high = b / bins, (b + 1) / bins
        inside = [
            (s, p)
            for s, p in zip(scores, passed, strict=True)
            if (low < s <= high) or (b == 0 and s == 0.0)
        ]
        if inside:
            mean = sum(s for s, _ in inside) / len(inside)
            share = sum(p for _, p in inside) / len(inside)
            total += len(inside) * abs(mean - share)
    return total / len(scores)


def test_ece_by_hand() -> None:
    scores = [0.05, 0.15, 0.15, 0.85, 0.95, 0.95]
    passed = [False, False, True, True, True, False]
    cal = score_calibration(scores, passed, resamples=0)
    # bins 0, 1, 8, 9: |.05 - 0| * 1 + |.15 - .5| * 2 + |.85 - 1| * 1 + |.95 - .5| * 2 = 1.8
    assert cal.ece == pytest.approx(1.8 / 6)
    assert [b.observed.n for b in cal.bins] == [1, 2, 0, 0, 0, 0, 0, 0, 1, 2]
    assert cal.bins[1].mean_score == pytest.approx(0.15) and cal.bins[1].observed.rate == 0.5
    assert cal.bins[2].mean_score is None and cal.ece_ci95_low is None


def test_bins_match_scikit_learn_calibration_curve() -> None:
    rng = np.random.default_rng(5)
    scores = np.round(rng.uniform(0, 1, 400), 2)  # edges such as 0.1 and 0.3 occur
    passed = rng.uniform(0, 1, 400) < scores**1.5
    cal = score_calibration(list(scores), list(passed), resamples=0)
    prob_true, prob_pred = calibration_curve(passed, scores, n_bins=10, strategy="uniform")
    full = [b for b in cal.bins if b.observed.n]
    assert [b.observed.rate for b in full] == pytest.approx(list(prob_true), abs=1e-12)
    assert [b.mean_score for b in full] == pytest.approx(list(prob_pred), abs=1e-12)
    assert cal.ece == pytest.approx(_ece_by_hand(list(scores), list(passed)), abs=1e-12)


def test_interval_is_a_cluster_bootstrap_on_a_fixed_seed() -> None:
    rng = np.random.default_rng(9)
    group_of = np.repeat(np.arange(30), 4)
    scores = list(np.round(rng.uniform(0, 1, 120), 3))
    passed = list(rng.uniform(0, 1, 120) < 0.5)
    groups = [f"g{g}" for g in group_of]
    cal = score_calibration(scores, passed, groups, resamples=300, seed=4)
    # the same resampling by hand: 30 groups drawn with replacement, the ECE of their cases
    draw = np.random.default_rng(4)
    values = []
    for _ in range(300):
        picked = draw.integers(0, 30, size=30)
        rows = [i for g in picked for i in np.flatnonzero(group_of == g)]
        values.append(_ece_by_hand([scores[i] for i in rows], [passed[i] for i in rows]))
    low, high = np.percentile(values, [2.5, 97.5])
    assert (cal.ece_ci95_low, cal.ece_ci95_high) == (pytest.approx(low), pytest.approx(high))
    assert cal.groups == 30 and cal.n == 120
    assert score_calibration(scores, passed, groups, resamples=300, seed=4) == cal


def test_a_miscalibrated_score_is_told_from_a_calibrated_one() -> None:
    rng = np.random.default_rng(2)
    truth = rng.uniform(0, 1, 2000) < 0.5
    over = score_calibration([0.9] * 2000, list(truth))  # says 90%, is right half the time
    assert over.ece == pytest.approx(0.4, abs=0.03) and over.ece_ci95_low > 0.3
    scores = rng.uniform(0, 1, 2000)
    fair = score_calibration(list(scores), list(rng.uniform(0, 1, 2000) < scores))
    assert fair.ece < 0.05 and fair.ece_ci95_high < over.ece_ci95_low


def test_groups_of_alike_cases_widen_the_interval() -> None:
    rng = np.random.default_rng(3)
    # 20 groups of 10 identical cases: 20 independent observations, not 200
    base_scores, base_passed = rng.uniform(0, 1, 20), rng.uniform(0, 1, 20) < 0.5
    scores, passed = list(np.repeat(base_scores, 10)), list(np.repeat(base_passed, 10))
    alone = score_calibration(scores, passed)
    grouped = score_calibration(scores, passed, [i // 10 for i in range(200)])
    assert grouped.ece == alone.ece
    width = grouped.ece_ci95_high - grouped.ece_ci95_low
    assert width > 2 * (alone.ece_ci95_high - alone.ece_ci95_low)


def test_refuses_scores_that_are_not_probabilities() -> None:
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        score_calibration([0.5, 1.2], [True, False])
    with pytest.raises(ValueError, match="one entry per case"):
        score_calibration([0.5], [True, False])
    assert score_calibration([], []).ece is None


def test_reliability_diagram_renders_offline() -> None:
    cal = score_calibration([0.05, 0.15, 0.15, 0.85, 0.95, 0.95], [0, 0, 1, 1, 1, 0])
    svg = to_svg(reliability_chart(cal, title="Score calibration <coverage>"))
    assert svg.startswith("<svg") and external_references(svg) == []
    assert "ECE 0.300" in svg and "over 6 cases in 6 groups" in svg
    assert "&lt;coverage&gt;" in svg


def test_score_calibration_of_a_demo_score_judge(tmp_path) -> None:
    import asyncio
    from pathlib import Path

    from workbench.phases import CalibrationSession, score_calibration_of

    root = Path(__file__).resolve().parents[1]
    session = CalibrationSession(root / "data" / "demo", run_root=tmp_path / "runs")
    scored = asyncio.run(
        session.run(session.load(root / "data/candidates/coverage-judge@1.yaml"), progress=False)
    )
    cal = score_calibration_of(scored)
    cases = [c for c in scored.join.cases if c.human_label in ("pass", "fail")]
    assert cal.n == len(cases) and cal.n > 0
    assert cal.groups == len({session.dataset.cases[c.case_id].group for c in cases}) < cal.n
    passes = sum(b.observed.k for b in cal.bins)
    assert passes == sum(c.human_label == "pass" for c in cases)
    flipped = score_calibration_of(scored, pass_if="at_most")  # read as 1 - score

    def total(c) -> float:
        return sum(b.mean_score * b.observed.n for b in c.bins if b.observed.n)

    assert total(flipped) == pytest.approx(cal.n - total(cal))


def test_certification_section_reads_the_held_out_run(tmp_path) -> None:
    """held_out_calibration (the report's section) on a certification-like object: the run's
    records under restricted/run, the join, the candidate's threshold; None without a score."""
    import asyncio
    import shutil
    from pathlib import Path
    from types import SimpleNamespace

    from workbench.phases import CalibrationSession, score_calibration_of
    from workbench.reports import held_out_calibration

    root = Path(__file__).resolve().parents[1]
    session = CalibrationSession(root / "data" / "demo", run_root=tmp_path / "runs")
    scored = asyncio.run(
        session.run(session.load(root / "data/candidates/coverage-judge@1.yaml"), progress=False)
    )
    report = tmp_path / "report"
    (report / "restricted" / "run").mkdir(parents=True)
    shutil.copy(scored.summary.results_path, report / "restricted" / "run" / "results.jsonl")
    cert = SimpleNamespace(judge=scored.judge, join=scored.join, report_dir=report)
    assert held_out_calibration(cert) == score_calibration_of(scored)
    rubric = session.load(root / "data/candidates/rubric-judge@3.yaml")
    assert (
        held_out_calibration(SimpleNamespace(judge=rubric, join=scored.join, report_dir=report))
        is None
    )
    assert (
        held_out_calibration(SimpleNamespace(judge=scored.judge, join=None, report_dir=report))
        is None
    )
