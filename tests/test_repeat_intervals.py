"""Repeated judging (issue 32): an item judged K times is one cluster, not K independent trials.

The repeatability study's false-pass rate over every repeat and its flip rate by gold group use
the slices' cluster-aware interval (:func:`workbench.stats.grouped_rate`, through
:func:`workbench.stats.clustered_rate`), checked by hand and against statsmodels' cluster-robust
variance; the drift check's changed sentinels and the migration's per-version rates likewise.
Before this change the study had only the flip rate's Wilson interval, and no rate over the
repeats at all; a rate over K x n judgments with Wilson's interval is K times too sure (the
last assertion of the first test shows by how much)."""

from __future__ import annotations

import math
from pathlib import Path

import migration_judges
import numpy as np
import pytest
import statsmodels.api as sm
import yaml
from conftest import make_case
from scipy.stats import t as student_t
from statsmodels.stats.proportion import proportion_confint

from workbench.repeatability import format_study, run_repeatability_sync
from workbench.stats import clustered_rate, grouped_rate

# human-fail cases of one critical slice, their gold group and the verdict of each repeat
SCRIPT = {
    "f1": ("gA", ["pass", "fail", "pass"]),  # 2 false passes
    "f2": ("gA", ["fail", "fail", "fail"]),
    "f3": ("gB", ["pass", "pass", "pass"]),  # 3 false passes, stable
    "f4": ("gC", ["fail", "fail", "review_required"]),  # 2 judgments (abstain: none)
}


def _wilson(p: float, n_eff: float, c: float) -> tuple[float, float]:
    centre = (p + c * c / (2 * n_eff)) / (1 + c * c / n_eff)
    half = c * math.sqrt(p * (1 - p) / n_eff + c * c / (4 * n_eff**2)) / (1 + c * c / n_eff)
    return centre - half, centre + half


@pytest.fixture
def study(make_dataset, tmp_path: Path):
    cases = [
        make_case(cid, "fail", slice="billing", partition="calibration", group=g, response=cid)
        for cid, (g, _) in SCRIPT.items()
    ]
    cases.append(make_case("p1", "pass", slice="billing", partition="calibration", group="gC"))
    gold = make_dataset(cases)
    spec = migration_judges.flaky_spec(tmp_path, {c: v for c, (_, v) in SCRIPT.items()})
    return run_repeatability_sync(
        spec, gold, "calibration", 3, tmp_path / "run", concurrency=1, progress=False
    )


def test_false_passes_over_repeats_count_items_not_judgments(study) -> None:
    billing = next(s for s in study.slices if s.slice == "billing")
    fp = billing.false_pass_repeats
    assert fp is not None and billing.false_pass_items == 4
    # by group: gA 2 of 6 judgments, gB 3 of 3, gC 0 of 2 -> 5 / 11 over 3 clusters
    assert (fp.k, fp.n, fp.groups) == (5, 11, 3)
    p = 5 / 11
    spread = (2 - 6 * p) ** 2 + (3 - 3 * p) ** 2 + (0 - 2 * p) ** 2
    deff = (3 / 2 * spread / 11**2) / (p * (1 - p) / 11)
    assert fp.design_effect == pytest.approx(deff, rel=1e-12)
    low, high = _wilson(p, 11 / deff, float(student_t.isf(0.025, 2)))
    assert (fp.ci95_low, fp.ci95_high) == (pytest.approx(low), pytest.approx(high))
    # the reference: statsmodels' cluster-robust variance of the mean, clustered by group
    y = np.array([1, 0, 1, 0, 0, 0, 1, 1, 1, 0, 0])
    groups = np.array([0] * 6 + [1] * 3 + [2] * 2)
    fit = sm.OLS(y, np.ones(11)).fit(cov_type="cluster", cov_kwds={"groups": groups})
    assert fp.design_effect == pytest.approx(fit.bse[0] ** 2 / (p * (1 - p) / 11), rel=1e-10)
    # counted as 11 independent judgments, Wilson's interval would be much narrower
    naive_low, naive_high = proportion_confint(5, 11, method="wilson")
    assert fp.ci95_high - fp.ci95_low > 1.5 * (naive_high - naive_low)
    text = format_study(study)
    assert "5 / 11 judgments of 4 human-fail cases in 3 groups" in text


def test_flip_rate_by_gold_group(study) -> None:
    billing = next(s for s in study.slices if s.slice == "billing")
    # flipped: f1 (gA), f4 (gC, into abstain); stable: f2 (gA), f3 (gB), p1 (gC)
    assert (billing.flipped, billing.assessed, billing.groups) == (2, 5, 3)
    assert billing.flip_rate_grouped == grouped_rate([1, 0, 1], [2, 1, 2])
    assert billing.flip_rate.rate == billing.flip_rate_grouped.rate == 0.4
    assert billing.flip_rate_grouped.ci95_high > billing.flip_rate.ci95_high
    assert "flip rate by gold group: 2 / 5 cases in 3 groups" in format_study(study)


def test_clustered_rate_is_grouped_rate_of_the_clusters() -> None:
    units = [("a", True), ("b", False), ("a", False), ("c", True), ("a", True)]
    assert clustered_rate(units) == grouped_rate([2, 0, 1], [3, 1, 1])
    assert clustered_rate((str(i), i < 3) for i in range(20)).design_effect == 1.0
    assert clustered_rate([]).rate is None


def test_changed_sentinels_cluster_by_gold_group(make_dataset) -> None:
    from workbench.gold import load_dataset
    from workbench.repeatability import SentinelChange, load_sentinels, sentinel_change_rate

    groups = {"s1": "gA", "s2": "gA", "s3": "gA", "s4": "gB", "s5": "gC", "s6": "gD"}
    root = make_dataset(
        [make_case(c, "pass", partition="calibration", group=g) for c, g in groups.items()]
    )
    (root / "sentinels.yaml").write_text(
        yaml.safe_dump(
            {
                "schema_version": 1,
                "name": "s",
                "sentinels": [{"case_id": c, "reason": "guards it"} for c in groups],
            }
        )
    )
    dataset = load_dataset(root)
    loaded = load_sentinels(None, dataset)

    def change(case_id: str, kind: str) -> SentinelChange:
        return SentinelChange(
            case_id=case_id,
            slice="general",
            risk=None,
            kind=kind,
            before="pass",
            after="fail",
            boundary_crossing=True,
        )

    flagged = [change("s1", "verdict_changed"), change("s1", "input_changed")]
    flagged += [change("s2", "now_error"), change("s6", "no_baseline")]
    rate = sentinel_change_rate(loaded, flagged)
    # s6 was not compared; gA: 2 of 3 changed, gB 0 of 1, gC 0 of 1 (an input change alone,
    # without a verdict change, would not count)
    assert rate == grouped_rate([2, 0, 0], [3, 1, 1])
    assert (rate.k, rate.n, rate.groups) == (2, 5, 3) and rate.design_effect > 1
    assert sentinel_change_rate(loaded, [change("s4", "input_changed")]).k == 0


def test_migration_rates_cluster_by_gold_group() -> None:
    from workbench.migration._compare import _format_rates, _rate_delta

    # human-fail cases judged by both versions: (group, old view, new view)
    triples = [("gA", "pass", "fail"), ("gA", "pass", "pass"), ("gA", "fail", "fail")]
    triples += [("gB", "fail", "fail"), ("gC", "fail", None), ("gC", "pass", "fail")]
    delta = _rate_delta(triples, "pass")
    assert (delta.old.k, delta.old.n, delta.new.k, delta.new.n) == (3, 6, 1, 5)
    assert delta.old_grouped == grouped_rate([2, 0, 1], [3, 1, 2])
    assert delta.new_grouped == grouped_rate([1, 0, 0], [3, 1, 1])
    assert delta.old.ci95_high < delta.old_grouped.ci95_high  # Wilson counted 6 independent
    assert "of 6 cases in 3 groups" in _format_rates(delta, "false-pass")
    # one case per group: Wilson's interval is already right, no grouped rate
    alone = _rate_delta([(f"g{i}", "pass" if i < 2 else "fail", "fail") for i in range(6)], "pass")
    assert alone.old_grouped is None and alone.new_grouped is None
    assert _rate_delta([(None, "pass", "fail"), (None, "pass", "fail")], "pass").old_grouped is None
