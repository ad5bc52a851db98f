"""``workbench estimate``: bias-corrected pass rates from a real certified report, refusals,
methods, coverage, notebook 06.

The fixture certifies the demo's offline judge (rubric-judge@2) under a lenient test policy, so
a real, locked, ``certified`` report exists; the judge's verdicts on the development partition
play the production traffic (their adjudicated labels are never given to the estimate, except
for the small "labelled" sample PPI uses).
"""

from __future__ import annotations

import json
import math
import random
import shutil
import stat
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import nbformat
import numpy as np
import papermill
import pytest
import yaml
from _certified import lenient_certification
from click.testing import CliRunner
from conftest import undocumented_fields

from workbench._lock import hash_tree, write_lock
from workbench.cli import main
from workbench.estimate import (
    DEMO_SCENARIO,
    SliceInput,
    adjusted_variance,
    coverage,
    estimate_production,
    estimate_slices,
    ppi_mean,
    rogan_gladen,
)
from workbench.gold import load_dataset
from workbench.reports import read_lock, verify_report

ROOT = Path(__file__).resolve().parents[1]
# The tests that use this module's certified report run in its project, to verify it against
# its held-out ledger (tests/conftest.py); every other test has a project of its own.
MODULE_PROJECT = True
GOLD = ROOT / "data" / "demo"
CANDIDATE = ROOT / "data" / "candidates" / "rubric-judge@2.yaml"
OTHER_CANDIDATE = ROOT / "data" / "candidates" / "rubric-judge@1.yaml"
Z = 1.959963984540054


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """rubric-judge@2 certified under a lenient test policy on a copy of the demo gold, once per
    run (tests/_certified.py: read it in its project, never write there), its development
    verdicts and rubric-judge@1's as the traffic, the slices and a labelled sample."""
    base = tmp_path_factory.mktemp("estimate")
    shared = lenient_certification(tmp_path_factory)
    result = shared.results[0]
    assert result.outcome == "certified", result.blockers
    runner = CliRunner()
    runs = {}
    for name, spec in (("certified", CANDIDATE), ("other", OTHER_CANDIDATE)):
        out = base / "runs" / name
        ran = runner.invoke(
            main,
            [
                "run",
                "--candidate",
                str(spec),
                "--gold",
                str(GOLD),
                "--partition",
                "development",
                "--out",
                str(out),
                "--no-cache",
                "--no-progress",
            ],
        )
        assert ran.exit_code == 0, ran.output
        runs[name] = out / "results.jsonl"
    dev = load_dataset(GOLD).partition("development")
    slices = base / "slices.csv"
    slices.write_text(
        "case_id,slice\n" + "".join(f"{c.case_id},{c.slice}\n" for c in dev), encoding="utf-8"
    )
    sample = random.Random(12).sample(dev, 40)
    labelled = base / "labelled.jsonl"
    labelled.write_text(
        "".join(json.dumps({"case_id": c.case_id, "label": c.gold_label}) + "\n" for c in sample),
        encoding="utf-8",
    )
    with shared.pinned():
        yield {
            "base": base,
            "report": result.report_dir,
            "results": runs["certified"],
            "other_results": runs["other"],
            "slices": slices,
            "labelled": labelled,
        }


def _estimate_cli(
    work: dict[str, Path],
    *extra: str,
    report: Path | None = None,
    results: Path | None = None,
    slices: Path | None = None,
    rubric: Path | None = None,
):
    args = [
        "estimate",
        "--report",
        str(report or work["report"]),
        "--results",
        str(results or work["results"]),
        "--slices",
        str(slices or work["slices"]),
        "--rubric",
        str(rubric or GOLD),
        *extra,
    ]
    return CliRunner().invoke(main, args)


def _final_verdicts(results: Path) -> dict[str, str | None]:
    """Last attempt of repeat 0 per case, read with json only (None: an evaluator error)."""
    best: dict[str, tuple[int, str | None]] = {}
    for line in results.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        if r["repeat"] == 0 and (r["case_id"] not in best or r["attempt"] > best[r["case_id"]][0]):
            best[r["case_id"]] = (r["attempt"], None if r.get("error") else r["value"])
    return {cid: v for cid, (_, v) in best.items()}


@pytest.mark.notebook
def test_estimate_from_a_real_certified_report_matches_hand_computation(
    work: dict[str, Path],
) -> None:
    out = _estimate_cli(work, "--labelled", str(work["labelled"]), "--json")
    assert out.exit_code == 0, out.output
    est = json.loads(out.output)
    assert (
        est["kind"] == "workbench.estimate"
        and est["status"] == "complete"
        and est["interval"] == "bootstrap"
    )
    lock = read_lock(work["report"])
    assert (
        est["certification"]["lock_sha256"] == lock.lock_sha256
        and est["certification"]["outcome"] == "certified"
    )
    gate = json.loads((work["report"] / "gate.json").read_text())
    figures = {f["slice"]: f for f in gate["figures"]}
    verdicts = _final_verdicts(work["results"])
    slice_of = dict(line.split(",") for line in work["slices"].read_text().splitlines()[1:])
    for row in est["slices"]:
        ids = [c for c, s in slice_of.items() if s == row["slice"]]
        passes = sum(verdicts.get(c) == "pass" for c in ids)
        decided = sum(verdicts.get(c) in ("pass", "fail") for c in ids)
        assert (row["naive"]["k"], row["naive"]["n"]) == (passes, decided)
        fp, ff = figures[row["slice"]]["false_pass_rate"], figures[row["slice"]]["false_fail_rate"]
        se, sp = 1 - ff["k"] / ff["n"], 1 - fp["k"] / fp["n"]
        assert (row["sensitivity"]["k"], row["sensitivity"]["n"]) == (ff["n"] - ff["k"], ff["n"])
        assert (row["specificity"]["k"], row["specificity"]["n"]) == (fp["n"] - fp["k"], fp["n"])
        assert row["corrected"]["raw"] == pytest.approx((passes / decided + sp - 1) / (se + sp - 1))
        assert row["corrected"]["estimate"] == pytest.approx(
            min(1, max(0, row["corrected"]["raw"]))
        )
        c = row["corrected"]
        assert 0 <= c["ci95_low"] <= c["estimate"] <= c["ci95_high"] <= 1
    # PPI overall, straight from its definition (Angelopoulos et al. 2023): decided cases only,
    # human pass/fail labels only; unlabelled = decided traffic not in the labelled sample.
    labels = {
        json.loads(line)["case_id"]: json.loads(line)["label"]
        for line in work["labelled"].read_text().splitlines()
    }
    decided = {c: 1.0 if v == "pass" else 0.0 for c, v in verdicts.items() if v in ("pass", "fail")}
    lab = [c for c in labels if c in decided and labels[c] in ("pass", "fail")]
    y = np.array([1.0 if labels[c] == "pass" else 0.0 for c in lab])
    f_l = np.array([decided[c] for c in lab])
    f_u = np.array([v for c, v in decided.items() if c not in labels])
    theta = f_u.mean() + (y - f_l).mean()
    se_ppi = math.sqrt(f_u.var(ddof=1) / f_u.size + (f_l - y).var(ddof=1) / y.size)
    ppi = est["overall"]["ppi"]
    assert ppi["labelled"] == len(lab) and ppi["unlabelled"] == f_u.size
    assert ppi["raw"] == pytest.approx(theta) and ppi["se"] == pytest.approx(se_ppi)
    assert ppi["ci95_low"] == pytest.approx(max(0.0, theta - Z * se_ppi)) and ppi[
        "ci95_high"
    ] == pytest.approx(min(1.0, theta + Z * se_ppi))
    assert est["overall"]["labelled_excluded"] == len(labels) - len(lab)
    text = _estimate_cli(work)
    assert (
        text.exit_code == 0
        and "naive pass rate" in text.output
        and "corrected" in text.output
        and "bootstrap" in text.output
    )


@pytest.mark.notebook
def test_same_inputs_and_seed_give_the_same_interval(work: dict[str, Path]) -> None:
    a = estimate_production(work["report"], work["results"], work["slices"], GOLD, seed=3)
    b = estimate_production(work["report"], work["results"], work["slices"], GOLD, seed=3)
    c = estimate_production(work["report"], work["results"], work["slices"], GOLD, interval="delta")
    assert a.model_dump() == b.model_dump()
    assert (
        a.overall.corrected.raw == pytest.approx(c.overall.corrected.raw)
        and c.seed is None
        and "delta-method" in c.methods["corrected"]
    )


@pytest.mark.notebook
def test_traffic_without_a_verdict_is_incomplete_exit_3(
    work: dict[str, Path], tmp_path: Path
) -> None:
    slices = tmp_path / "slices.csv"
    slices.write_text(work["slices"].read_text() + "prod-never-judged,refund_policy\n")
    out = _estimate_cli(work, "--json", slices=slices)
    assert out.exit_code == 3
    est = json.loads(out.output)
    assert (
        est["status"] == "incomplete"
        and est["overall"]["missing"] == 1
        and "cover decided cases only" in est["warnings"][0]
    )


# -- refusals -------------------------------------------------------------------------------


def _copy(report: Path, dest: Path) -> Path:
    shutil.copytree(report, dest)
    for p in [dest, *dest.rglob("*")]:
        p.chmod(p.stat().st_mode | stat.S_IWUSR)
    return dest


def _reseal(report: Path, dest: Path, change) -> Path:
    """A copy of ``report`` whose gate.json is changed by ``change`` and whose lock is re-sealed.

    Re-sealing no longer makes a forgery verify (verify re-runs the gate on the stored evidence
    and checks the lock against the held-out ledger), so the estimate refuses it as
    ``report_unverified`` and, every problem at once, for the property under test too."""
    out = _copy(report, dest)
    gate = json.loads((out / "gate.json").read_text())
    change(gate)
    (out / "gate.json").write_text(json.dumps(gate))
    lock = read_lock(out)
    write_lock(
        out,
        lock.model_copy(
            update={"outcome": gate["outcome"], "files": hash_tree(out), "lock_sha256": ""}
        ),
    )
    assert verify_report(out) != []  # a re-sealed lock is still caught
    return out


def _refused(out, code: str) -> None:
    assert out.exit_code == 2, out.output
    assert f"[{code}]" in out.output and "Traceback" not in out.output


@pytest.mark.notebook
def test_refuses_a_tampered_report(work: dict[str, Path], tmp_path: Path) -> None:
    # The attack: edit the certified report so the judge looks more specific (no false pass).
    copy = _copy(work["report"], tmp_path / "tampered")
    gate = json.loads((copy / "gate.json").read_text())
    for f in gate["figures"]:
        f["false_pass_rate"]["k"] = 0
    (copy / "gate.json").write_text(json.dumps(gate))
    _refused(_estimate_cli(work, report=copy), "report_unverified")


@pytest.mark.notebook
def test_refuses_a_report_that_is_not_certified(work: dict[str, Path], tmp_path: Path) -> None:
    def review(gate):
        gate["outcome"] = "review_required"

    _refused(
        _estimate_cli(work, report=_reseal(work["report"], tmp_path / "review", review)),
        "report_not_certified",
    )
    (tmp_path / "empty").mkdir()
    _refused(_estimate_cli(work, report=tmp_path / "empty"), "report_missing")


@pytest.mark.notebook
def test_refuses_a_report_without_figures(work: dict[str, Path], tmp_path: Path) -> None:
    def old(gate):
        gate["figures"] = []

    _refused(
        _estimate_cli(work, report=_reseal(work["report"], tmp_path / "old", old)),
        "report_without_figures",
    )


@pytest.mark.notebook
def test_refuses_a_stale_report_other_ragas(
    work: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    import workbench.judges

    monkeypatch.setattr(workbench.judges, "ragas_version", lambda: "0.0.0-not-the-certified-one")
    out = _estimate_cli(work)
    _refused(out, "report_stale_ragas")
    assert "0.0.0-not-the-certified-one" in out.output


@pytest.mark.notebook
def test_refuses_traffic_judged_by_another_candidate(work: dict[str, Path]) -> None:
    _refused(_estimate_cli(work, results=work["other_results"]), "report_stale_candidate")


@pytest.mark.notebook
def test_refuses_slices_the_certification_does_not_cover(
    work: dict[str, Path], tmp_path: Path
) -> None:
    def drop(gate):
        gate["figures"] = [f for f in gate["figures"] if f["slice"] != "escalation_handoff"]

    _refused(
        _estimate_cli(work, report=_reseal(work["report"], tmp_path / "narrow", drop)),
        "slice_not_certified",
    )

    def unmeasured(gate):
        for f in gate["figures"]:
            if f["slice"] == "shipping_delivery":
                f["false_pass_rate"] = {
                    "k": 0,
                    "n": 0,
                    "rate": None,
                    "ci95_low": None,
                    "ci95_high": None,
                }

    _refused(
        _estimate_cli(work, report=_reseal(work["report"], tmp_path / "unmeasured", unmeasured)),
        "slice_rates_unmeasured",
    )
    rubric = yaml.safe_load((GOLD / "rubric.yaml").read_text())
    rubric["version"] = "another-rubric"
    (tmp_path / "rubric.yaml").write_text(yaml.safe_dump(rubric))
    _refused(_estimate_cli(work, rubric=tmp_path / "rubric.yaml"), "rubric_mismatch")


@pytest.mark.notebook
def test_refuses_bad_traffic_files_listing_every_problem(
    work: dict[str, Path], tmp_path: Path
) -> None:
    lines = work["slices"].read_text().splitlines()
    slices = tmp_path / "slices.csv"
    slices.write_text(
        "\n".join([lines[0], *lines[2:], lines[3], "x-1,not_a_slice"]) + "\n"
    )  # first case dropped, one twice, one unknown slice
    out = _estimate_cli(work, slices=slices)
    for code in ("unmapped_case", "slices_duplicate", "slices_unknown_slice"):
        assert f"[{code}]" in out.output
    assert out.exit_code == 2
    labelled = tmp_path / "labelled.csv"
    labelled.write_text("case_id,label\nnobody,pass\n" + f"{lines[1].split(',')[0]},maybe\n")
    out = _estimate_cli(work, "--labelled", str(labelled))
    assert (
        out.exit_code == 2
        and "[labelled_unknown_case]" in out.output
        and "[labelled_unknown_label]" in out.output
    )


# -- the methods -----------------------------------------------------------------------------


def test_rogan_gladen_and_its_delta_interval_by_hand() -> None:
    r = rogan_gladen(60, 100, 90, 100, 80, 100)
    assert r.raw == pytest.approx((0.6 + 0.8 - 1) / (0.9 + 0.8 - 1)) and r.youden == pytest.approx(
        0.7
    )

    def ac(x: int, n: int) -> float:
        m = n + Z * Z
        q = (x + Z * Z / 2) / m
        return q * (1 - q) / m

    assert adjusted_variance(90, 100) == pytest.approx(ac(90, 100))
    pi = r.raw
    var = (ac(60, 100) + pi**2 * ac(90, 100) + (1 - pi) ** 2 * ac(80, 100)) / 0.7**2
    assert r.se == pytest.approx(math.sqrt(var))
    assert rogan_gladen(30, 100, 5, 10, 5, 10).raw is None  # J = 0: undefined
    assert ac(0, 6) > 0  # a certification without error still has a variance


def test_ppi_is_the_published_mean_estimator() -> None:
    rng = np.random.default_rng(5)
    y = (rng.random(50) < 0.7).astype(float)
    f_l = np.where(rng.random(50) < 0.8, y, 1 - y)
    f_u = (rng.random(1000) < 0.66).astype(float)
    r = ppi_mean(y, f_l, f_u)
    # theta_PP = mean f(X~) - mean(f(X) - Y); CI half-width z sqrt(var_f/N + var_(f-Y)/n)
    assert r.estimate == pytest.approx(f_u.mean() - (f_l - y).mean())
    assert r.se == pytest.approx(
        math.sqrt(np.var(f_u, ddof=1) / 1000 + np.var(f_l - y, ddof=1) / 50)
    )
    assert r.rectifier == pytest.approx((y - f_l).mean())
    perfect = ppi_mean(y, y, f_u)  # a judge right on every labelled case: no rectification
    assert perfect.estimate == pytest.approx(f_u.mean()) and perfect.rectifier == 0
    with pytest.raises(ValueError, match="at least two labelled"):
        ppi_mean([1.0], [1.0], f_u)


def _slice(name: str, passes: int, n: int, se: tuple[int, int], sp: tuple[int, int]) -> SliceInput:
    judge = np.array([1.0] * passes + [0.0] * (n - passes))
    return SliceInput(
        slice=name,
        risk=None,
        judge_pass=judge,
        human_pass=np.full(n, np.nan),
        se_x=se[0],
        se_n=se[1],
        sp_x=sp[0],
        sp_n=sp[1],
    )


def test_unstable_undefined_and_clipped_corrections_are_flagged() -> None:
    rows, overall = estimate_slices(
        [
            _slice("near_chance", 500, 1000, (55, 100), (50, 100)),  # J = 0.05
            _slice("chance", 500, 1000, (50, 100), (50, 100)),  # J = 0
            _slice("below_floor", 50, 1000, (90, 100), (90, 100)),  # p < 1 - Sp: raw < 0
            _slice("good", 700, 1000, (95, 100), (90, 100)),
        ]
    )
    near, chance, floor, good = rows
    assert (
        near.unstable
        and "close to 1" in " ".join(near.warnings)
        and near.corrected.estimate is not None
    )
    assert (
        chance.unstable
        and chance.corrected.estimate is None
        and "no better than chance" in " ".join(chance.warnings)
    )
    assert floor.corrected.raw < 0 and floor.corrected.estimate == 0 and floor.corrected.clipped
    assert not good.unstable and not good.corrected.clipped
    assert (
        overall.corrected.estimate is None and overall.unstable
    )  # one slice undefined: no overall figure
    again, _ = estimate_slices([_slice("good", 700, 1000, (95, 100), (90, 100))], seed=1)
    other, _ = estimate_slices([_slice("good", 700, 1000, (95, 100), (90, 100))], seed=2)
    assert again[0].corrected.ci95_low != other[0].corrected.ci95_low  # the seed drives the draws


# -- the simulation: coverage ---------------------------------------------------------------


def test_corrected_intervals_cover_the_truth_and_the_naive_one_does_not() -> None:
    """500 seeds of DEMO_SCENARIO (known true rates): nominal 95%."""
    table = coverage(DEMO_SCENARIO, range(500), labelled=300).set_index("slice")
    print(
        "\n"
        + table[
            [
                "truth",
                "naive_coverage",
                "corrected_coverage",
                "ppi_coverage",
                "naive_bias",
                "corrected_bias",
            ]
        ].to_string()
    )
    for name, row in table.iterrows():
        assert 0.92 <= row["corrected_coverage"] <= 0.98, name
        assert 0.92 <= row["ppi_coverage"] <= 0.98, name
        assert row["naive_coverage"] < 0.5, name
        assert abs(row["corrected_bias"]) < 0.01 < row["naive_bias"], name
    assert table.loc["(all)", "naive_coverage"] < 0.05
    delta = coverage(DEMO_SCENARIO, range(500), labelled=0, interval="delta").set_index("slice")
    print(delta[["corrected_coverage"]].to_string())
    assert (
        delta["corrected_coverage"].between(0.93, 0.995).all()
        and delta["ppi_coverage"].isna().all()
    )


# -- notebook 06 ------------------------------------------------------------------------------


@pytest.mark.notebook
def test_notebook_06_simulates_checks_coverage_and_estimates_real_traffic(
    work: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "06.ipynb"
    papermill.execute_notebook(
        str(ROOT / "notebooks" / "06_production_estimate.ipynb"),
        str(out),
        parameters={
            "coverage_seeds": 60,
            "report": str(work["report"]),
            "results": str(work["results"]),
            "slices": str(work["slices"]),
            "rubric": str(GOLD),
            "labelled_file": str(work["labelled"]),
        },
        cwd=str(ROOT / "notebooks"),
        progress_bar=False,
        kernel_name="python3",
    )
    text = json.dumps([c.get("outputs", []) for c in nbformat.read(out, as_version=4).cells])
    assert "true_pass_rate" in text and "corrected_coverage" in text and "Over 60 seeds" in text
    assert "<svg" in text and "Rogan-Gladen" in text and "prediction-powered" in text
    assert read_lock(work["report"]).report_id in text  # the real report's estimate was shown


@pytest.mark.notebook
def test_notebook_06_without_a_report_runs_the_simulation_only(tmp_path: Path) -> None:
    out = tmp_path / "06.ipynb"
    papermill.execute_notebook(
        str(ROOT / "notebooks" / "06_production_estimate.ipynb"),
        str(out),
        parameters={"coverage_seeds": 20, "labelled": 0},
        cwd=str(ROOT / "notebooks"),
        progress_bar=False,
        kernel_name="python3",
    )
    text = json.dumps([c.get("outputs", []) for c in nbformat.read(out, as_version=4).cells])
    assert "No report given" in text and "corrected_coverage" in text


# -- documentation ----------------------------------------------------------------------------


def test_every_estimate_and_plan_field_is_documented() -> None:
    from workbench.estimate import (
        CertificationRef,
        CorrectedEstimate,
        PPIEstimate,
        ProductionEstimate,
        SliceEstimate,
    )
    from workbench.planning import PlanRow, SamplePlan

    doc = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
    missing = Counter()
    for model in (
        ProductionEstimate,
        SliceEstimate,
        CorrectedEstimate,
        PPIEstimate,
        CertificationRef,
        SamplePlan,
        PlanRow,
    ):
        for name in model.model_fields:
            if f"`{name}`" not in doc:
                missing[f"{model.__name__}.{name}"] += 1
        for name in undocumented_fields(model, "schema_version", "kind"):
            missing[f"{model.__name__}.{name} (docstring)"] += 1
    assert not missing, sorted(missing)
