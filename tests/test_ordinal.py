"""Ordinal and numeric rubrics: the rubric format, the ordered statistics and human agreement.

Every figure is checked three ways: against arithmetic written out below (small fixture),
against the reference libraries called directly (scikit-learn, krippendorff, scipy), and
against independent closed forms implemented here (weighted kappa from the confusion matrix,
Krippendorff's alpha from the coincidence matrix with the ordinal and interval metrics,
Spearman as the Pearson correlation of mid-ranks).

Real data: PandaLM's three annotators (``../shared/datasets/pandalm``), recoded as the
ordered preference scale "response 1 better" < "tie" < "response 2 better". No dataset in
``../shared/datasets`` has 5-point human ratings, so the 5-point case uses a **synthetic**,
seeded set of Likert ratings (:func:`synthetic_likert`), and says so.
"""

from __future__ import annotations

import json
from collections import Counter
from itertools import permutations
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pytest
import yaml
from _datasets import DATASETS, needs_datasets, require
from _reference import cohen_kappa_score, spearmanr
from click.testing import CliRunner
from conftest import RUBRIC, alpha_nominal_of, make_case

from workbench.agreement import human_agreement
from workbench.cli import main
from workbench.errors import WorkbenchError
from workbench.gold import Rubric, Scale, load_dataset, load_rubric, validate_dataset
from workbench.stats import (
    cohen_kappa,
    krippendorff_alpha,
    mean_absolute_error,
    ordinal_confusion,
    scale_values,
    spearman_correlation,
    weighted_cohen_kappa,
)

ROOT = Path(__file__).resolve().parents[1]
PANDALM = DATASETS / "pandalm" / "testset-v1.json"

LIKERT = ["1", "2", "3", "4", "5"]
ORDINAL_RUBRIC: dict[str, Any] = {
    **{
        k: v
        for k, v in RUBRIC.items()
        if k not in ("pass_label", "fail_label", "abstain_labels", "labels")
    },
    "scale": "ordinal",
    "labels": [1, 2, 3, 4, 5, "n/a"],
    "abstain_labels": ["n/a"],
    "pass_labels": [4, 5],
}


# ------------------------------------------------------------------ independent closed forms


def kappa_by_hand(
    a: list[str], b: list[str], values: list[float] | None, labels: list[str], power: int | None
) -> float:
    """1 - sum(w * O) / sum(w * E); w = |v_i - v_j|^power (power None: nominal, w = [i != j])."""
    index = {label: i for i, label in enumerate(labels)}
    k = len(labels)
    o = np.zeros((k, k))
    for x, y in zip(a, b, strict=True):
        o[index[x], index[y]] += 1
    o /= o.sum()
    e = np.outer(o.sum(axis=1), o.sum(axis=0))
    v = np.asarray(values if values is not None else range(k), dtype=float)
    d = np.abs(v[:, None] - v[None, :])
    w = (d > 0).astype(float) if power is None else d**power
    return 1 - (w * o).sum() / (w * e).sum()


def alpha_by_hand(
    units: list[dict[str, str]],
    labels: list[str],
    level: str,
    values: dict[str, float] | None = None,
) -> float:
    """Krippendorff's alpha from the coincidence matrix: 1 - (n-1) sum o_ck d_ck / sum n_c n_k d_ck.

    Ordinal metric: d_ck = (sum_{g=c..k} n_g - (n_c + n_k)/2)^2; interval: (v_c - v_k)^2.
    """
    o: Counter = Counter()
    for unit in units:
        ratings = list(unit.values())
        m = len(ratings)
        if m < 2:
            continue
        for x, y in permutations(ratings, 2):
            o[(x, y)] += 1 / (m - 1)
    n_c = Counter()
    for (x, _), w in o.items():
        n_c[x] += w
    n = sum(n_c.values())
    rank = {label: i for i, label in enumerate(labels)}
    value = values or {label: float(i) for i, label in enumerate(labels)}

    def delta(c: str, k: str) -> float:
        if c == k:
            return 0.0
        if level == "nominal":
            return 1.0
        if level == "interval":
            return (value[c] - value[k]) ** 2
        lo, hi = sorted((rank[c], rank[k]))
        between = sum(n_c[g] for g in labels[lo : hi + 1])
        return (between - (n_c[c] + n_c[k]) / 2) ** 2

    observed = sum(w * delta(x, y) for (x, y), w in o.items())
    expected = sum(n_c[x] * n_c[y] * delta(x, y) for x in n_c for y in n_c)
    return 1 - (n - 1) * observed / expected


def spearman_by_hand(x: list[float], y: list[float]) -> float:
    """Pearson correlation of mid-ranks (ties get the mean of their ranks)."""

    def midranks(v: list[float]) -> np.ndarray:
        order = sorted(v)
        return np.array([order.index(t) + 1 + (order.count(t) - 1) / 2 for t in v])

    rx, ry = midranks(x), midranks(y)
    dx, dy = rx - rx.mean(), ry - ry.mean()
    return float((dx * dy).sum() / np.sqrt((dx**2).sum() * (dy**2).sum()))


# ------------------------------------------------------------------ the small fixture, by hand

# Two raters, five items, 3-point scale.
A = ["1", "2", "3", "3", "2"]
B = ["1", "3", "3", "2", "2"]
THREE = ["1", "2", "3"]


def test_weighted_kappa_by_hand() -> None:
    # confusion (rows A, cols B): [[1,0,0],[0,1,1],[0,1,1]]; marginals p = q = (.2, .4, .4)
    # linear w = |i-j|: observed = 2 cells x 1/5 x 1 = 0.4
    #   expected = 2(.2*.4*1) + 2(.2*.4*2) + 2(.4*.4*1) = .16 + .32 + .32 = 0.8 -> kappa = 1 - .4/.8
    # = 0.5
    # quadratic w = (i-j)^2: observed 0.4; expected = .16 + 2(.08*4) + .32 = 1.12 -> 1 - .4/1.12 =
    # 9/14
    # nominal: p_o = 3/5, p_e = .04 + .16 + .16 = .36 -> (.6 - .36)/.64 = 0.375
    linear = weighted_cohen_kappa(A, B, THREE, "linear")
    quadratic = weighted_cohen_kappa(A, B, THREE, "quadratic")
    assert (linear.value, linear.n) == (pytest.approx(0.5), 5)
    assert quadratic.value == pytest.approx(9 / 14)
    assert cohen_kappa(A, B, labels=THREE).value == pytest.approx(0.375)
    assert linear.value == pytest.approx(cohen_kappa_score(A, B, labels=THREE, weights="linear"))
    assert quadratic.value == pytest.approx(
        cohen_kappa_score(A, B, labels=THREE, weights="quadratic")
    )
    assert linear.value == pytest.approx(kappa_by_hand(A, B, None, THREE, 1))
    assert quadratic.value == pytest.approx(kappa_by_hand(A, B, None, THREE, 2))


def test_weighted_kappa_with_unequal_values_uses_value_distances() -> None:
    # values 1 -> 0, 2 -> 1, 3 -> 3: distances |0-1| = 1, |0-3| = 3, |1-3| = 2
    # linear: observed = 2/5 x 2 = 0.8; expected = 2(.08 x 1) + 2(.08 x 3) + 2(.16 x 2) = 1.28 -> 1
    # - .8/1.28 = 0.375
    # quadratic: observed = 2/5 x 4 = 1.6; expected = 2(.08) + 2(.08 x 9) + 2(.16 x 4) = 2.88 -> 1 -
    # 1.6/2.88 = 4/9
    values = {"1": 0.0, "2": 1.0, "3": 3.0}
    assert weighted_cohen_kappa(A, B, THREE, "linear", values).value == pytest.approx(0.375)
    assert weighted_cohen_kappa(A, B, THREE, "quadratic", values).value == pytest.approx(4 / 9)
    # equally spaced values give scikit-learn's position-based figure exactly
    spaced = {"1": 10.0, "2": 20.0, "3": 30.0}
    assert weighted_cohen_kappa(A, B, THREE, "quadratic", spaced).value == pytest.approx(9 / 14)


def test_krippendorff_alpha_levels_by_hand() -> None:
    # coincidences: o11 = 2, o22 = 2, o33 = 2, o23 = o32 = 2; n_c = (2, 4, 4), n = 10
    # nominal: 1 - 9 x 4 / (2(2x4) + 2(2x4) + 2(4x4)) = 1 - 36/64 = 0.4375
    # interval (d = (c-k)^2): observed 2x1 + 2x1 = 4; expected 2(8x1) + 2(8x4) + 2(16x1) = 112 -> 1
    # - 36/112 = 19/28
    # ordinal: d12 = ((2+4) - (2+4)/2)^2 = 9, d23 = (8 - 4)^2 = 16, d13 = (10 - 3)^2 = 49
    #   observed 2x16 + 2x16 = 64; expected 2(8x9) + 2(8x49) + 2(16x16) = 1440 -> 1 - 9 x 64/1440 =
    # 0.6
    units = [{"a": x, "b": y} for x, y in zip(A, B, strict=True)]
    nominal = krippendorff_alpha(units, THREE, "nominal")
    ordinal = krippendorff_alpha(units, THREE, "ordinal")
    interval = krippendorff_alpha(units, THREE, "interval")
    assert (nominal.value, ordinal.value, interval.value) == (
        pytest.approx(0.4375),
        pytest.approx(0.6),
        pytest.approx(19 / 28),
    )
    assert nominal.value == pytest.approx(alpha_nominal_of(units, THREE).value)
    assert ordinal.n == interval.n == 5
    data = np.array([[float(x) for x in A], [float(y) for y in B]])
    assert ordinal.value == pytest.approx(
        krippendorff.alpha(
            reliability_data=data, level_of_measurement="ordinal", value_domain=[1.0, 2.0, 3.0]
        )
    )
    assert interval.value == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="interval")
    )
    for level in ("nominal", "ordinal", "interval"):
        assert krippendorff_alpha(units, THREE, level).value == pytest.approx(
            alpha_by_hand(units, THREE, level)
        )
    # interval with values 0, 1, 3: observed 2x4 + 2x4 = 16; expected 2(8x1) + 2(8x9) + 2(16x4) =
    # 288 -> 1 - 144/288 = 0.5
    values = {"1": 0.0, "2": 1.0, "3": 3.0}
    assert krippendorff_alpha(units, THREE, "interval", values).value == pytest.approx(0.5)


def test_spearman_mae_and_confusion_by_hand() -> None:
    # mid-ranks: A -> [1, 2.5, 4.5, 4.5, 2.5], B -> [1, 4.5, 4.5, 2.5, 2.5]; deviations from 3:
    # A [-2, -.5, 1.5, 1.5, -.5], B [-2, 1.5, 1.5, -.5, -.5]; sum of products 5, sums of squares 9
    # and 9 -> 5/9
    rho = spearman_correlation(A, B, THREE)
    assert (rho.value, rho.n) == (pytest.approx(5 / 9), 5)
    assert rho.value == pytest.approx(spearmanr([int(x) for x in A], [int(y) for y in B]).statistic)
    assert rho.p_value is not None and 0 < rho.p_value < 1
    # |differences| = 0, 1, 0, 1, 0 -> 0.4 scale steps
    mae = mean_absolute_error(A, B, THREE)
    assert (mae.value, mae.n, mae.unit) == (pytest.approx(0.4), 5, "scale step")
    assert mean_absolute_error(A, B, THREE, {"1": 0.0, "2": 1.0, "3": 3.0}).value == pytest.approx(
        (0 + 2 + 0 + 2 + 0) / 5
    )
    confusion = ordinal_confusion(A, B, THREE)
    assert confusion.matrix == [[1, 0, 0], [0, 1, 1], [0, 1, 1]]
    assert (
        confusion.n,
        confusion.exact,
        confusion.within_one,
        confusion.predicted_higher,
        confusion.predicted_lower,
    ) == (5, 3, 5, 1, 1)
    frame = confusion.to_frame()
    assert frame.loc["2", "3"] == 1 and list(frame.columns) == THREE


def test_the_declared_order_is_the_scale() -> None:
    # reversing the scale changes nothing (distances are symmetric) ...
    assert weighted_cohen_kappa(A, B, THREE[::-1], "linear").value == pytest.approx(0.5)
    # ... but another order is another scale: with 2 < 1 < 3, "2 vs 3" is two steps apart
    reordered = weighted_cohen_kappa(A, B, ["2", "1", "3"], "linear").value
    assert reordered == pytest.approx(kappa_by_hand(A, B, None, ["2", "1", "3"], 1))
    assert reordered != pytest.approx(0.5)


def test_undefined_and_refused() -> None:
    one = weighted_cohen_kappa(["2", "2"], ["2", "2"], THREE, "linear")
    assert one.value is None and "one label" in one.note
    assert weighted_cohen_kappa([], [], THREE, "linear").note == "no items"
    flat = spearman_correlation(["2", "2", "2"], ["1", "2", "3"], THREE)
    assert flat.value is None and "same label" in flat.note
    assert spearman_correlation(["1", "2"], ["1", "2"], THREE).value is None  # too few
    with pytest.raises(ValueError, match="outside the vocabulary"):
        weighted_cohen_kappa(["1", "n/a"], ["1", "2"], THREE, "linear")
    with pytest.raises(ValueError, match="outside the vocabulary"):
        krippendorff_alpha([{"a": "1", "b": "9"}], THREE, "ordinal")
    with pytest.raises(ValueError, match="strictly increasing"):
        scale_values(THREE, {"1": 0.0, "2": 2.0, "3": 1.0})
    assert krippendorff_alpha([{"a": "1"}], THREE, "ordinal").note == "no item has two ratings"


def test_alpha_with_missing_ratings_matches_the_coincidence_matrix() -> None:
    units = [
        {"a": "1", "b": "1", "c": "2"},
        {"a": "2", "b": "3"},
        {"b": "3", "c": "3"},
        {"a": "3", "b": "2", "c": "3"},
        {"a": "1"},  # not pairable
        {"a": "2", "c": "1"},
    ]
    for level in ("ordinal", "interval"):
        alpha = krippendorff_alpha(units, THREE, level)
        assert alpha.n == 5 and alpha.value == pytest.approx(
            alpha_by_hand(units, THREE, level), abs=1e-12
        )


# ------------------------------------------------------------------ rubric format


def test_ordinal_rubric_with_pass_labels(make_dataset) -> None:
    root = make_dataset([make_case("c1", "4", reviews={"a": "4", "b": "5"})], rubric=ORDINAL_RUBRIC)
    report = validate_dataset(root)
    assert report.ok, [p.format() for p in report.errors]
    rubric = report.dataset.rubric
    assert rubric.scale == Scale.ordinal and rubric.ordered
    assert rubric.labels == [*LIKERT, "n/a"]  # YAML numbers are read as labels
    assert (
        rubric.scale_labels == LIKERT
        and rubric.pass_labels == ["4", "5"]
        and rubric.fail_labels == ["1", "2", "3"]
    )
    assert rubric.scale_values == {"1": 1.0, "2": 2.0, "3": 3.0, "4": 4.0, "5": 5.0}
    assert [rubric.pass_fail(label) for label in rubric.labels] == [
        "fail",
        "fail",
        "fail",
        "pass",
        "pass",
        None,
    ]
    assert rubric.pass_label is None and rubric.fail_label is None
    with pytest.raises(ValueError):
        rubric.pass_fail("6")


def test_numeric_rubric_values_and_lower_is_better_pass_labels() -> None:
    rubric = Rubric.model_validate(
        {
            **ORDINAL_RUBRIC,
            "scale": "numeric",
            "labels": [0, 0.5, 1, 2],
            "abstain_labels": [],
            "pass_labels": [0, 0.5],
        }
    )
    assert rubric.labels == ["0", "0.5", "1", "2"]
    assert rubric.scale_values == {"0": 0.0, "0.5": 0.5, "1": 1.0, "2": 2.0}
    assert rubric.pass_fail("0.5") == "pass" and rubric.pass_fail("2") == "fail"


def test_nominal_rubric_is_the_default_and_unchanged() -> None:
    rubric = Rubric.model_validate(RUBRIC)
    assert rubric.scale == Scale.nominal and not rubric.ordered and rubric.scale_values is None
    assert (
        rubric.pass_fail("pass") == "pass"
        and rubric.pass_fail("fail") == "fail"
        and rubric.pass_fail("review_required") is None
    )


def test_every_scale_problem_is_reported_at_once_with_a_fix(make_dataset) -> None:
    """Before: ``scale`` was an unknown field (one error); now every problem has its own line and
    fix.
    """
    bad = {
        **RUBRIC,
        "scale": "numeric",
        "labels": [1, 3, 2, "high", "n/a"],
        "abstain_labels": ["n/a"],
        "pass_label": 3,
        "fail_label": 1,
        "pass_labels": [9, 1, 3],
    }
    report = validate_dataset(make_dataset([make_case("c1", "1")], rubric=bad))
    messages = [p.message for p in report.errors]
    assert [p.code for p in report.errors] == ["rubric_scale"] * 4, messages
    assert any("declares its pass labels with pass_labels" in m for m in messages)
    assert any("['high'] are not finite numbers" in m for m in messages)
    assert any("listed in increasing order; got ['1', '3', '2']" in m for m in messages)
    assert any("pass_labels ['9'] are not among labels" in m for m in messages)
    assert all(p.fix and p.location.endswith("rubric.yaml") for p in report.errors)
    fixes = " ".join(p.fix for p in report.errors)
    assert "list them as ['1', '2', '3']" in fixes


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        (
            {
                "scale": "nominal",
                "labels": ["pass", "fail"],
                "pass_labels": ["pass"],
                "abstain_labels": [],
            },
            "pass_labels is for ordered rubrics",
        ),
        ({"pass_label": 5, "fail_label": 1}, "declares its pass labels with pass_labels"),
        ({"pass_labels": [3, 5]}, "not an unbroken run at one end"),
        ({"pass_labels": [2, 3]}, "not an unbroken run at one end"),
        ({"pass_labels": [1, 2, 3, 4, 5]}, "every scale label is a pass label"),
        ({"pass_labels": []}, "pass_labels is empty"),
        ({"pass_labels": ["n/a", 5]}, "cannot also be pass or fail"),
        ({"labels": [1, "n/a"]}, "needs at least two labels that are not abstain labels"),
        ({"scale": "likert"}, "scale: Input should be 'nominal', 'ordinal' or 'numeric'"),
    ],
    ids=[
        "pass-labels-on-nominal",
        "pass-label-on-ordinal",
        "gap",
        "middle",
        "all-pass",
        "empty",
        "abstain-pass",
        "one-scale-label",
        "unknown-scale",
    ],
)
def test_rubric_scale_problems(tmp_path: Path, change: dict[str, Any], needle: str) -> None:
    path = tmp_path / "rubric.yaml"
    path.write_text(yaml.safe_dump({**ORDINAL_RUBRIC, **change}), encoding="utf-8")
    with pytest.raises(WorkbenchError) as info:
        load_rubric(path)
    assert any(needle in p.message for p in info.value.problems), [
        p.message for p in info.value.problems
    ]
    assert all(p.fix for p in info.value.problems)


def test_pass_labels_at_the_bottom_are_allowed(tmp_path: Path) -> None:
    path = tmp_path / "rubric.yaml"
    path.write_text(yaml.safe_dump({**ORDINAL_RUBRIC, "pass_labels": [1, 2]}), encoding="utf-8")
    assert load_rubric(path).fail_labels == ["3", "4", "5"]


# ------------------------------------------------------------------ agreement on an ordinal gold

ORDINAL_REVIEWS = {
    "c1": {"a": "1", "b": "1"},
    "c2": {"a": "2", "b": "3", "c": "3"},
    "c3": {"a": "3", "b": "3", "c": "2"},
    "c4": {"a": "3", "b": "2", "c": "n/a"},
    "c5": {"a": "2", "b": "2", "c": "2"},
    "c6": {"b": "5", "c": "4"},
}


@pytest.fixture
def ordinal_gold(make_dataset) -> Path:
    cases = [
        make_case(cid, max(revs.values()) if "n/a" not in revs.values() else "3", reviews=revs)
        for cid, revs in ORDINAL_REVIEWS.items()
    ]
    return make_dataset(cases, rubric=ORDINAL_RUBRIC)


def test_agreement_adds_ordered_figures_and_keeps_nominal(ordinal_gold: Path) -> None:
    report = human_agreement(load_dataset(ordinal_gold), min_shared=1)
    assert report.scale == "ordinal" and report.scale_labels == LIKERT
    pairs = {(p.reviewer_a, p.reviewer_b): p for p in report.overall.pairs}
    ab = pairs["a", "b"]
    # a, b share c1-c5: exactly the small fixture A/B above (same labels, same order)
    assert [ORDINAL_REVIEWS[c]["a"] for c in ("c1", "c2", "c3", "c4", "c5")] == A
    assert [ORDINAL_REVIEWS[c]["b"] for c in ("c1", "c2", "c3", "c4", "c5")] == B
    # on the 5-point scale the unused labels 4, 5 change expected disagreement only through
    # weights, which stay |i-j| for labels 1-3: the figures are those computed by hand
    assert ab.cohen_kappa.value == pytest.approx(0.375)
    assert ab.weighted_kappa_linear.value == pytest.approx(0.5)
    assert ab.weighted_kappa_quadratic.value == pytest.approx(9 / 14)
    assert ab.spearman.value == pytest.approx(5 / 9)
    # a, c share c2-c5; c4 has c's abstention "n/a": ordered figures use c2, c3, c5 (n = 3)
    # a = [2, 3, 2], c = [3, 2, 2]: mid-ranks [1.5, 3, 1.5] and [3, 1.5, 1.5]; deviations
    # [-.5, 1, -.5] and [1, -.5, -.5]: products sum to -.75, squares to 1.5 each -> rho = -0.5
    ac = pairs["a", "c"]
    assert ac.n == 4 and ac.weighted_kappa_linear.n == 3 and ac.spearman.n == 3
    assert ac.spearman.value == pytest.approx(-0.5)
    assert ac.weighted_kappa_linear.value == pytest.approx(
        kappa_by_hand(["2", "3", "2"], ["3", "2", "2"], None, LIKERT, 1)
    )
    # alphas: abstentions are off the scale and left out
    units = [
        {r: lab for r, lab in revs.items() if lab != "n/a"} for revs in ORDINAL_REVIEWS.values()
    ]
    block = report.overall
    assert block.krippendorff_alpha_ordinal.value == pytest.approx(
        alpha_by_hand(units, LIKERT, "ordinal"), abs=1e-12
    )
    assert block.krippendorff_alpha_interval.value == pytest.approx(
        alpha_by_hand(units, LIKERT, "interval"), abs=1e-12
    )
    all_units = list(ORDINAL_REVIEWS.values())
    assert block.krippendorff_alpha.value == pytest.approx(
        alpha_by_hand(all_units, [*LIKERT, "n/a"], "nominal"), abs=1e-12
    )
    frame = report.pairs_frame()
    assert {
        "cohen_kappa_nominal",
        "weighted_kappa_linear",
        "weighted_kappa_quadratic",
        "spearman",
    } <= set(frame.columns)
    assert {
        "krippendorff_alpha_nominal",
        "krippendorff_alpha_ordinal",
        "krippendorff_alpha_interval",
    } <= set(report.summary_frame().columns)


def test_nominal_rubric_has_no_ordered_figures(make_dataset) -> None:
    report = human_agreement(
        load_dataset(make_dataset([make_case("c1", reviews={"a": "pass", "b": "fail"})])),
        min_shared=1,
    )
    assert report.scale == "nominal" and report.scale_labels is None
    assert (
        report.overall.krippendorff_alpha_ordinal is None
        and report.overall.pairs[0].weighted_kappa_linear is None
    )
    assert "weighted_kappa_linear" not in report.pairs_frame().columns


def test_agreement_cli_labels_nominal_and_ordered_figures(ordinal_gold: Path) -> None:
    text = CliRunner().invoke(main, ["agreement", str(ordinal_gold), "--min-shared", "1"])
    assert text.exit_code == 0, text.output
    assert "scale ordinal (1 < 2 < 3 < 4 < 5)" in text.output
    assert "a vs b: n=5" in text.output and "Cohen's kappa (nominal) 0.3750" in text.output
    assert "weighted kappa linear 0.5000, quadratic 0.6429 (n=5)  Spearman 0.5556" in text.output
    assert (
        "Krippendorff's alpha (ordinal):" in text.output
        and "Krippendorff's alpha (interval, ranks as values, equal spacing assumed):"
        in text.output
    )
    assert "Fleiss' kappa (nominal)" in text.output
    payload = json.loads(
        CliRunner()
        .invoke(main, ["agreement", str(ordinal_gold), "--json", "--min-shared", "1"])
        .output
    )
    assert payload["schema_version"] == 2 and payload["scale"] == "ordinal"
    ab = next(
        p for p in payload["overall"]["pairs"] if (p["reviewer_a"], p["reviewer_b"]) == ("a", "b")
    )
    assert ab["weighted_kappa_quadratic"]["value"] == pytest.approx(9 / 14)


# ------------------------------------------------------------------ real data and a synthetic
# 5-point set


def _check_against_libraries(report: Any, dataset: Any) -> None:
    """Every pair and alpha of the report equals the reference libraries and the closed
    forms here.
    """
    rubric = dataset.rubric
    scale, values = rubric.scale_labels, rubric.scale_values
    units = [{r.reviewer: r.label for r in case.reviews} for case in dataset.cases.values()]
    for pair in report.overall.pairs:
        shared = [
            (u[pair.reviewer_a], u[pair.reviewer_b])
            for u in units
            if pair.reviewer_a in u and pair.reviewer_b in u
        ]
        shared = [(x, y) for x, y in shared if x in scale and y in scale]
        a, b = [x for x, _ in shared], [y for _, y in shared]
        for weights, power in (("linear", 1), ("quadratic", 2)):
            got = getattr(pair, f"weighted_kappa_{weights}").value
            assert got == pytest.approx(
                cohen_kappa_score(a, b, labels=scale, weights=weights), abs=1e-12
            )
            assert got == pytest.approx(kappa_by_hand(a, b, None, scale, power), abs=1e-12)
        assert pair.cohen_kappa.value == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
        assert pair.spearman.value == pytest.approx(
            spearmanr([values[x] for x in a], [values[y] for y in b]).statistic, abs=1e-12
        )
        assert pair.spearman.value == pytest.approx(
            spearman_by_hand([values[x] for x in a], [values[y] for y in b]), abs=1e-9
        )
    scale_units = [{r: lab for r, lab in u.items() if lab in scale} for u in units]
    raters = sorted({r for u in units for r in u})
    data = np.array([[values[u[r]] if r in u else np.nan for u in scale_units] for r in raters])
    block = report.overall
    assert block.krippendorff_alpha_ordinal.value == pytest.approx(
        krippendorff.alpha(
            reliability_data=data,
            level_of_measurement="ordinal",
            value_domain=sorted(values.values()),
        ),
        abs=1e-12,
    )
    assert block.krippendorff_alpha_interval.value == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="interval"), abs=1e-12
    )
    assert block.krippendorff_alpha_ordinal.value == pytest.approx(
        alpha_by_hand(scale_units, scale, "ordinal"), abs=1e-9
    )
    assert block.krippendorff_alpha_interval.value == pytest.approx(
        alpha_by_hand(scale_units, scale, "interval", values), abs=1e-9
    )


@needs_datasets
def test_pandalm_as_an_ordered_preference_scale(tmp_path: Path) -> None:
    """PandaLM: 999 cases, 3 annotators; ordered as "1 better" < "tie" (0) < "2 better"."""
    from workbench.importers import run_importer

    out = tmp_path / "pandalm"
    run_importer("pandalm", require(PANDALM), out)
    rubric = yaml.safe_load((out / "rubric.yaml").read_text(encoding="utf-8"))
    rubric["scale"] = "ordinal"
    rubric["labels"] = [
        "1",
        "0",
        "2",
        *[label for label in rubric["labels"] if label not in ("0", "1", "2")],
    ]
    (out / "rubric.yaml").write_text(yaml.safe_dump(rubric), encoding="utf-8")
    dataset = load_dataset(out)
    report = human_agreement(dataset)
    pairs = {(p.reviewer_a, p.reviewer_b): p for p in report.overall.pairs}
    # nominal figures as computed independently in ../shared/datasets/README.md
    assert round(pairs["annotator1", "annotator2"].cohen_kappa.value, 4) == 0.8520
    assert round(pairs["annotator1", "annotator3"].cohen_kappa.value, 4) == 0.8789
    assert round(pairs["annotator2", "annotator3"].cohen_kappa.value, 4) == 0.8617
    assert round(report.overall.fleiss_kappa.value, 4) == 0.8642
    # a tie sits between the two preferences: opposite preferences are the costliest disagreement
    for pair in pairs.values():
        assert (
            pair.weighted_kappa_quadratic.value
            > pair.weighted_kappa_linear.value
            > pair.cohen_kappa.value
        )
    _check_against_libraries(report, dataset)


def synthetic_likert(seed: int = 20260917, cases: int = 400) -> dict[str, dict[str, str]]:
    """SYNTHETIC 5-point ratings (no public 5-point human ratings are available here).

    A latent quality 1-5 per case; raters a and b rate every case, rater c every third; each
    rating is the latent quality plus Gaussian noise (sd 0.6, biases 0, +0.3, -0.2), rounded
    and clipped to 1-5. Deterministic for a seed.
    """
    rng = np.random.default_rng(seed)
    quality = rng.choice([1, 2, 3, 4, 5], size=cases, p=[0.1, 0.2, 0.3, 0.25, 0.15])
    ratings = {
        who: np.clip(np.rint(quality + rng.normal(bias, 0.6, size=cases)), 1, 5).astype(int)
        for who, bias in (("rater-a", 0.0), ("rater-b", 0.3), ("rater-c", -0.2))
    }
    return {
        f"s{i:03d}": {
            who: str(ratings[who][i]) for who in ratings if who != "rater-c" or i % 3 == 0
        }
        for i in range(cases)
    }


def test_synthetic_five_point_ratings(make_dataset) -> None:
    units = synthetic_likert()
    cases = [
        make_case(cid, Counter(revs.values()).most_common(1)[0][0], reviews=revs)
        for cid, revs in units.items()
    ]
    dataset = load_dataset(make_dataset(cases, rubric=ORDINAL_RUBRIC))
    report = human_agreement(dataset)
    assert len(report.overall.pairs) == 3 and report.overall.pairs_left_out == 0
    _check_against_libraries(report, dataset)
    for pair in report.overall.pairs:
        # Likert noise of about one step: nominal kappa understates agreement badly
        assert pair.weighted_kappa_linear.value > pair.cohen_kappa.value + 0.15
        assert pair.weighted_kappa_quadratic.value > pair.weighted_kappa_linear.value
