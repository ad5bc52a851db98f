"""Noise reports from recorded results: companions, baseline comparison, the claim panel, releases,
and the documentation of every code and field. No model is called: results are written by hand."""

from __future__ import annotations

import copy
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from conftest import approve, undocumented_fields
from noise_support import IDENTITY, REF_POLICY, free_suite, pair, result, structured, write_suite

from workbench._io import sha256_text
from workbench.approval import read_release_log
from workbench.cli.main import main
from workbench.cli.noise import noise as noise_command
from workbench.errors import WorkbenchError
from workbench.noise import (
    CLAIMS_PREFIX,
    CompanionValue,
    join_companions,
    load_pairs,
    load_panel,
    noise_report,
    panel_agreement,
    with_baseline,
)
from workbench.policy import codes_of
from workbench.results import JudgeIdentity, JudgeResult

DOC = (Path(__file__).resolve().parents[1] / "docs" / "formats.md").read_text(encoding="utf-8")


def traced(
    pid: str, run_id: str, *, noisy_response: str | None = None, **kwargs: Any
) -> dict[str, Any]:
    data = structured(pid, noisy_response=noisy_response, **kwargs)
    data["provenance"] = {"origin": "regenerated"}
    for name in ("clean", "noisy"):
        m = data[name]
        m["generation_trace"] = {
            "run_id": run_id,
            "context_ids": [c["chunk_id"] for c in m["retrieved_contexts"]],
            "response_sha256": sha256_text(m["response"]),
        }
    return data


def scored(suite: Any, scores: dict[str, float]) -> list[JudgeResult]:
    return [
        result(suite, "ctl:clean", 0.0),
        result(suite, "ctl:noisy", 1.0),
        *(result(suite, k, v) for k, v in scores.items()),
    ]


# -- companions
# ---------------------------------------------------------------------------------------

COMPANIONS = {
    "completeness": {"direction": "higher_is_better", "limit": 0.5},
    "refusal": {"direction": "lower_is_better", "limit": 0.25},
}


def rows(run_id: str, values: dict[str, tuple[float, float]]) -> list[dict[str, Any]]:
    return [
        {"metric": m, "run_id": run_id, "case_id": case, "value": v}
        for case, (c, r) in values.items()
        for m, v in (("completeness", c), ("refusal", r))
    ]


def test_companions_join_by_generation_run_id_and_show_a_score_bought_by_refusing(
    tmp_path: Path,
) -> None:
    """Before: completeness and refusal could not be declared; a system answering "I can't help"
    to every noisy question scored a perfect 0. Now declared companions are required, joined by
    generation run id, and a noise score held by refusing is flagged and bounded."""
    refusing = traced("refuses", "gen-7", noisy_response="I can't help with refunds.")
    fine = traced("fine", "gen-7")
    data = free_suite(
        [pair("ctl", role="control"), refusing, fine], policy={"companions": COMPANIONS}
    )
    suite = load_pairs(write_suite(tmp_path, data, freeze=True))
    results = scored(
        suite, {"refuses:clean": 0.0, "refuses:noisy": 0.0, "fine:clean": 0.0, "fine:noisy": 0.0}
    )
    missing = noise_report(suite, results)
    assert [b.code for b in missing.blockers] == [
        "noise_companion_missing"
    ] and missing.exit_code == 3  # declared, none given
    values = rows(
        "gen-7",
        {
            "refuses:clean": (1.0, 0.0),
            "refuses:noisy": (0.0, 1.0),
            "fine:clean": (1.0, 0.0),
            "fine:noisy": (1.0, 0.0),
        },
    )
    stale = {
        "metric": "refusal",
        "run_id": "gen-6",
        "case_id": "fine:noisy",
        "value": 1.0,
    }  # computed on an older generation
    files = tmp_path / "companions.jsonl"
    files.write_text("".join(json.dumps(r) + "\n" for r in [*values, stale]))
    from workbench.noise import load_companions

    join = join_companions(
        suite.candidates(), list(suite.policy.companions), load_companions([files])
    )
    assert join.values["fine"]["refusal"] == {"clean": 0.0, "noisy": 0.0} and join.missing == []
    assert join.unjoined == [
        "fine:noisy refusal run gen-6: the response was generated in run gen-7"
    ]
    report = noise_report(suite, results, companions=join)
    row = {r.pair_id: r for r in report.pairs}
    assert (
        row["refuses"].noisy_score == 0.0
        and len(row["refuses"].tradeoffs) == 2
        and row["fine"].tradeoffs == []
    )
    assert report.slices[0].companions == {"completeness": 0.75, "refusal": 0.25}
    assert report.blockers == [] and report.companions_unjoined == join.unjoined
    worse = rows(
        "gen-7",
        {
            "refuses:clean": (1.0, 0.0),
            "refuses:noisy": (0.0, 1.0),
            "fine:clean": (0.0, 1.0),
            "fine:noisy": (0.0, 0.0),
        },
    )
    report = noise_report(
        suite,
        results,
        companions=join_companions(
            suite.candidates(), ["completeness", "refusal"], [CompanionValue(**v) for v in worse]
        ),
    )
    assert [(b.code, b.evidence["metric"]) for b in report.blockers] == [
        ("noise_companion_exceeded", "completeness"),
        ("noise_companion_exceeded", "refusal"),
    ]


def test_companion_files_are_checked() -> None:
    from workbench.noise import load_companions

    with pytest.raises(WorkbenchError) as info:
        load_companions(["/nonexistent/companions.jsonl"])
    assert info.value.problems[0].code == "companions_missing"


# -- baseline versus candidate ---------------------------------------------------------------------


def pair_suites(tmp_path: Path) -> tuple[Any, Any]:
    names = ["p1", "p2", "p3"]
    cand = free_suite(
        [pair("ctl", role="control"), *(pair(n) for n in names)],
        slices={"refunds": {"max_score": 1.0, "direction": "lower_is_better"}},
    )
    base = copy.deepcopy(cand)
    base["name"] = "t-noise-baseline"
    for p in base["pairs"][1:]:
        p["noisy"]["response"] = p["clean"]["response"] = (
            "Refunds are possible within 30 days of delivery, as the policy says."
        )
    base["pairs"][1]["noisy"]["retrieved_contexts"][1] = (  # p1 retrieved another distractor
        "Archived draft (2021). Refunds are possible within 60 days."
    )
    return load_pairs(write_suite(tmp_path / "c", cand, freeze=True)), load_pairs(
        write_suite(tmp_path / "b", base, "t-noise-baseline@1.yaml", freeze=True)
    )


def test_baseline_comparison_gives_per_pair_deltas_slice_intervals_and_warning_trends(
    tmp_path: Path,
) -> None:
    cand, base = pair_suites(tmp_path)
    c_report = noise_report(
        cand,
        scored(
            cand,
            {
                "p1:clean": 0.0,
                "p1:noisy": 0.5,
                "p2:clean": 0.0,
                "p2:noisy": 0.0,
                "p3:clean": 0.0,
                "p3:noisy": 0.25,
            },
        ),
    )
    b_report = noise_report(
        base,
        scored(
            base,
            {
                "p1:clean": 0.0,
                "p1:noisy": 0.0,
                "p2:clean": 0.0,
                "p2:noisy": 0.0,
                "p3:clean": 0.0,
                "p3:noisy": 0.0,
            },
        ),
    )
    report = with_baseline(c_report, b_report, warn_delta=0.1, baseline_source="b")
    cmp = report.comparison
    assert cmp is not None and {d.pair_id: d.noisy_delta for d in cmp.pairs} == {
        "p1": 0.5,
        "p2": 0.0,
        "p3": 0.25,
    }
    s = cmp.slices[0]
    # by hand: deltas 0.5, 0, 0.25; mean 0.25; sd 0.25; t(0.975, 2) = 4.302653; half = 4.302653 *
    # 0.25 / sqrt(3)
    half = 4.302652729911275 * 0.25 / math.sqrt(3)
    assert (
        s.n == 3
        and s.mean_delta == pytest.approx(0.25)
        and s.ci95_low == pytest.approx(0.25 - half)
        and s.ci95_high == pytest.approx(0.25 + half)
    )
    assert [(w.kind, w.pair_id) for w in report.warnings] == [
        ("pair_worse", "p1"),
        ("pair_worse", "p3"),
        ("slice_worse", None),
    ]
    assert "while still inside policy" in report.warnings[0].message
    assert (
        report.outcome == c_report.outcome == "passed" and report.exit_code == 0
    )  # trends never block
    assert {d.pair_id: d.first_change for d in cmp.pairs} == {
        "p1": "retrieval",
        "p2": "response",
        "p3": "response",
    }  # debugging order
    rescored = noise_report(
        cand,
        scored(
            cand,
            {
                "p1:clean": 0.0,
                "p1:noisy": 0.0,
                "p2:clean": 0.0,
                "p2:noisy": 0.0,
                "p3:clean": 0.0,
                "p3:noisy": 0.25,
            },
        ),
    )
    same_inputs = with_baseline(c_report, rescored, baseline_source="rescored").comparison
    assert {d.pair_id: d.first_change for d in same_inputs.pairs} == {
        "p1": "evaluator",
        "p2": "none",
        "p3": "none",
    }


def test_an_incompatible_baseline_is_refused_with_the_reason(tmp_path: Path) -> None:
    """Before: there was no baseline comparison; numbers from another judge, mode or pair set
    could be compared by hand. Now each mismatch is refused, with its reason."""
    cand, base = pair_suites(tmp_path)
    c_report = noise_report(
        cand, scored(cand, {f"p{i}:{m}": 0.0 for i in (1, 2, 3) for m in ("clean", "noisy")})
    )
    other = IDENTITY.model_copy(update={"model": "another-evaluator", "ragas_version": "0.5.0"})
    b_results = [
        r.model_copy(update={"judge": other, "judge_fingerprint": other.fingerprint()})
        for r in scored(base, {f"p{i}:{m}": 0.0 for i in (1, 2) for m in ("clean", "noisy")})
    ]
    b_report = noise_report(base, b_results)
    with pytest.raises(WorkbenchError) as info:
        with_baseline(c_report, b_report, baseline_source="b")
    messages = " | ".join(p.message for p in info.value.problems)
    assert "evaluator model differs" in messages and "Ragas version differs" in messages
    mode_changed = copy.deepcopy(yaml.safe_load(Path(base.source).read_text()))
    mode_changed["pairs"][1]["mode"] = "relevant"
    mode_changed["pairs"].append(pair("ctl-rel", role="control", mode="relevant"))
    m_suite = load_pairs(write_suite(tmp_path / "m", mode_changed, "t-noise-baseline@1.yaml"))
    m_report = noise_report(
        m_suite,
        scored(m_suite, {f"p{i}:{m}": 0.0 for i in (1, 2, 3) for m in ("clean", "noisy")})
        + [result(m_suite, "ctl-rel:clean", 0.0), result(m_suite, "ctl-rel:noisy", 1.0)],
    )
    with pytest.raises(WorkbenchError) as info:
        with_baseline(c_report, m_report, baseline_source="m")
    assert any(
        "mode relevant in the baseline, irrelevant in the candidate" in p.message
        for p in info.value.problems
    )
    fewer = copy.deepcopy(yaml.safe_load(Path(base.source).read_text()))
    fewer["pairs"] = [p for p in fewer["pairs"] if p["pair_id"] != "p3"]
    f_suite = load_pairs(write_suite(tmp_path / "f", fewer, "t-noise-baseline@1.yaml"))
    f_report = noise_report(
        f_suite, scored(f_suite, {f"p{i}:{m}": 0.0 for i in (1, 2) for m in ("clean", "noisy")})
    )
    with pytest.raises(WorkbenchError) as info:
        with_baseline(c_report, f_report, baseline_source="f")
    assert [p.message for p in info.value.problems] == [
        "not the same pairs: only the candidate has p3"
    ]


def test_a_baseline_scored_under_other_parameters_is_refused(tmp_path: Path) -> None:
    """Audit (issue 27): a --baseline run scored by the same model, prompt and Ragas version but at
    temperature 0.7 and another max_tokens was accepted (compatibility was checked field by field
    and skipped the parameters). Now the two sides' scoring fingerprints must be equal; only what
    names the evaluator or prices its calls may differ."""
    cand, base = pair_suites(tmp_path)
    spec = {"params": {"temperature": 0, "max_tokens": 1024}, "pricing": {"input": 1.0}}
    mine = IDENTITY.model_copy(update={"params": {"spec": spec}})
    c_report = noise_report(
        cand,
        [
            r.model_copy(update={"judge": mine, "judge_fingerprint": mine.fingerprint()})
            for r in scored(cand, {f"p{i}:{m}": 0.0 for i in (1, 2, 3) for m in ("clean", "noisy")})
        ],
    )

    def baseline_by(identity: JudgeIdentity) -> Any:
        rows = scored(base, {f"p{i}:{m}": 0.0 for i in (1, 2, 3) for m in ("clean", "noisy")})
        return noise_report(
            base,
            [
                r.model_copy(
                    update={"judge": identity, "judge_fingerprint": identity.fingerprint()}
                )
                for r in rows
            ],
        )

    hot = IDENTITY.model_copy(
        update={"params": {"spec": {**spec, "params": {"temperature": 0.7, "max_tokens": 512}}}}
    )
    with pytest.raises(WorkbenchError) as info:
        with_baseline(c_report, baseline_by(hot), baseline_source="hot")
    assert [p.code for p in info.value.problems] == ["baseline_scorer_changed"] * 2
    assert [p.message for p in info.value.problems] == [
        "the scoring configuration differs: the parameter max_tokens differs: baseline 512,"
        " candidate 1024",
        "the scoring configuration differs: the parameter temperature differs: baseline 0.7,"
        " candidate 0",
    ]
    assert "same evaluator configuration" in info.value.problems[0].fix
    from workbench.noise import scoring_fingerprint
    from workbench.noise._compare import check_baseline_report

    problems = check_baseline_report(
        cand, mine, baseline_by(hot), baseline_source="hot"
    )  # refused before any call, too
    assert {p.code for p in problems} == {"baseline_scorer_changed"}
    # a renamed, re-versioned, re-priced copy of the same configuration scores alike: accepted
    renamed = mine.model_copy(
        update={
            "name": "noise-copy",
            "version": "7",
            "params": {"spec": {**spec, "pricing": {"input": 2.0}, "description": "copy"}},
        }
    )
    assert renamed.fingerprint() != mine.fingerprint()
    assert scoring_fingerprint(renamed) == scoring_fingerprint(mine)
    compared = with_baseline(c_report, baseline_by(renamed), baseline_source="renamed")
    assert compared.comparison is not None
    assert compared.comparison.scoring_fingerprint == scoring_fingerprint(mine)


# -- the claim panel -------------------------------------------------------------------------------


def claims_reason(statements: list[str], incorrect: list[bool]) -> str:
    return (
        "head\n"
        + CLAIMS_PREFIX
        + json.dumps(
            {
                "statements": statements,
                "incorrect": incorrect,
                "counted": incorrect,
                "contexts_relevant": [True],
            }
        )
    )


def panel_suite(tmp_path: Path) -> Any:
    cal = pair("cal", partition="calibration", clean_response=f"{REF_POLICY} Receipts are needed.")
    cal["noisy"]["response"] = cal["clean"]["response"]
    dev = pair("dev")
    dev["user_input"], dev["clean"]["retrieved_contexts"] = (
        "Which passage is this?",
        ["Development passage."],
    )
    dev["noisy"]["retrieved_contexts"] = [
        "Development passage.",
        "Archived draft. Refunds are possible within 90 days.",
    ]
    return load_pairs(
        write_suite(
            tmp_path,
            free_suite([pair("ctl", role="control", partition="calibration"), cal, dev]),
            freeze=True,
        )
    )


def test_claim_panel_agreement_with_the_metric(tmp_path: Path) -> None:
    """Before: calibration stopped at one score per response. Now reviewers judge claims on the
    calibration partition and the report gives agreement with the metric's claim verdicts."""
    suite = panel_suite(tmp_path)
    a = [
        {"claim": REF_POLICY, "incorrect": False, "supported_by": [0]},
        {"claim": "Receipts are needed.", "incorrect": False},
    ]
    b = [
        {"claim": REF_POLICY, "incorrect": False},
        {"claim": "Receipts are needed.", "incorrect": True},
    ]
    panel_file = tmp_path / "panel.yaml"
    panel = {
        "schema_version": 1,
        "suite": suite.label,
        "reviews": [
            {"pair_id": "cal", "member": "clean", "reviewer": "r1", "claims": a},
            {"pair_id": "cal", "member": "clean", "reviewer": "r2", "claims": b},
        ],
    }
    panel_file.write_text(yaml.safe_dump(panel))
    with pytest.raises(WorkbenchError) as info:
        load_panel(panel_file, suite)
    assert [p.code for p in info.value.problems] == ["panel_unadjudicated"]
    panel["adjudications"] = [
        {
            "pair_id": "cal",
            "member": "clean",
            "adjudicator": "adj",
            "claims": [{**c, "rationale": "per handbook"} for c in a],
        }
    ]
    panel_file.write_text(yaml.safe_dump(panel))
    loaded = load_panel(panel_file, suite)
    metric = result(
        suite,
        "cal:clean",
        0.0,
        reason=claims_reason(
            [REF_POLICY, "Receipts are needed", "An extra statement."], [False, True, True]
        ),
    )
    report = panel_agreement(suite, loaded, [metric])
    row = report.members[0]
    assert (
        (row.aligned, row.agreed) == (2, 1)
        and row.metric_only_incorrect == ["Receipts are needed."]
        and not row.reviewers_agree
    )
    assert row.boundary_differences == [
        "metric statement without a reviewer claim: 'An extra statement.'"
    ]
    assert (
        report.agreement.k == 1
        and report.agreement.n == 2
        and report.reviewer_agreement.k == 0
        and report.missing == []
    )
    no_claims = panel_agreement(
        suite, loaded, [result(suite, "cal:clean", 0.0, reason="old reason without claims")]
    )
    assert no_claims.missing == ["cal:clean"] and no_claims.agreement.n == 0


def test_panel_validation(tmp_path: Path) -> None:
    suite = panel_suite(tmp_path)
    bad = {
        "schema_version": 1,
        "suite": "other@1",
        "reviews": [
            {
                "pair_id": "dev",
                "member": "clean",
                "reviewer": "r1",
                "claims": [{"claim": "x", "incorrect": False, "supported_by": [7]}],
            }
        ],
    }
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(bad))
    with pytest.raises(WorkbenchError) as info:
        load_panel(path, suite)
    assert {p.code for p in info.value.problems} == {
        "panel_suite_mismatch",
        "panel_not_calibration",
        "panel_too_few_reviewers",
        "panel_context_index",
    }


def test_panel_command(tmp_path: Path) -> None:
    suite = panel_suite(tmp_path)
    claims = [
        {"claim": REF_POLICY, "incorrect": False},
        {"claim": "Receipts are needed.", "incorrect": True},
    ]
    panel_file = tmp_path / "panel.yaml"
    panel_file.write_text(
        yaml.safe_dump(
            {
                "schema_version": 1,
                "suite": suite.label,
                "reviews": [
                    {"pair_id": "cal", "member": "clean", "reviewer": r, "claims": claims}
                    for r in ("r1", "r2")
                ],
            }
        )
    )
    results = tmp_path / "results.jsonl"
    metric = result(
        suite,
        "cal:clean",
        0.0,
        reason=claims_reason([REF_POLICY, "Receipts are needed."], [False, True]),
    )
    results.write_text(metric.model_dump_json() + "\n")
    res = CliRunner().invoke(
        noise_command,
        [
            "panel",
            "--pairs",
            str(suite.source),
            "--panel",
            str(panel_file),
            "--results",
            str(results),
            "--json",
        ],
    )
    # an unfrozen panel's labels could still change under the figures: review (exit 4)
    assert res.exit_code == 4, res.output
    report = json.loads(res.stdout)
    assert report["agreement"]["rate"] == 1.0 and report["release_id"] is None
    approve(tmp_path, "Quality lead")
    frozen = CliRunner().invoke(main, ["freeze", str(panel_file), "--approver", "Quality lead"])
    assert frozen.exit_code == 0 and "(noise_panel)" in frozen.output, frozen.output
    res = CliRunner().invoke(
        noise_command,
        ["panel", "--pairs", str(suite.source), "--panel", str(panel_file)]
        + ["--results", str(results), "--json"],
    )
    assert res.exit_code == 0 and json.loads(res.stdout)["release_id"].startswith("rel-")


# -- releases
# ----------------------------------------------------------------------------------------


def test_releases_freeze_and_refuse_in_place_changes_deletions_and_reactivation(
    tmp_path: Path,
) -> None:
    """Before: a noise suite had no release: a pair could be edited or deleted under the same
    version. Now a release freezes hashes; changes go into a new version that keeps retired cases.
    """
    approve(tmp_path, "Quality lead", "rev")
    runner = CliRunner()

    def freeze(path: Path, who: str = "Quality lead") -> Any:
        return runner.invoke(main, ["freeze", str(path), "--approver", who])

    v1 = free_suite([pair("ctl", role="control"), pair("a"), pair("b")])
    path1 = write_suite(tmp_path, v1, "t-noise@1.yaml")
    res = freeze(path1)
    assert res.exit_code == 0 and "froze release rel-1-" in res.output
    assert "already frozen" in freeze(path1).output
    release = read_release_log(tmp_path).releases[0]
    assert (
        release.label == "t-noise@1"
        and release.kind == "noise_suite"
        and set(release.items) == {"ctl", "a", "b"}
        and release.extra["manifest"]["licences"] == ["internal"]
    )
    assert "approver_unknown" in freeze(path1, "x").output  # not in the approver list

    path1.write_text(path1.read_text().replace("How long do I have", "How long have I"))
    edited = freeze(path1)
    assert edited.exit_code == 2 and "frozen_case_edited" in edited.output
    assert runner.invoke(noise_command, ["check", "--pairs", str(path1)]).exit_code == 2

    v2 = copy.deepcopy(v1)
    v2["version"] = "2"
    assert "supersedes_missing" in freeze(write_suite(tmp_path, v2, "t-noise@2.yaml")).output
    v2["supersedes"] = "1"
    v2["pairs"] = [p for p in v2["pairs"] if p["pair_id"] != "b"]  # deleted
    v2["pairs"][1]["reference"] = (
        "Refunds are possible within 31 days of delivery."  # changed in place
    )
    res = freeze(write_suite(tmp_path, v2, "t-noise@2.yaml"))
    assert res.exit_code == 2 and res.output.count("change_unrecorded") == 2
    assert "removed since t-noise@1" in res.output and "edited (reference)" in res.output

    v2 = copy.deepcopy(v1)
    v2["version"], v2["supersedes"] = "2", "1"
    v2["pairs"][1]["retired"] = {
        "reason": "the 30-day rule changed",
        "by": "rev",
        "on": "2026-10-01",
    }
    fixed = pair("a.v2")
    fixed["supersedes"], fixed["source_family"] = "a", "fam-a"
    fixed["reference"] = fixed["clean"]["response"] = fixed["noisy"]["response"] = (
        "Refunds are possible within 45 days of delivery."
    )
    v2["pairs"].append(fixed)
    path2 = write_suite(tmp_path, v2, "t-noise@2.yaml")
    assert freeze(path2).exit_code == 0
    release2 = read_release_log(tmp_path).releases[-1]
    assert release2.supersedes == "1" and {"a", "a.v2"} <= set(release2.items)
    assert release2.fields["a"]["status"] != release.fields["a"]["status"]

    v3 = copy.deepcopy(v2)
    v3["version"], v3["supersedes"] = "3", "2"
    del v3["pairs"][1]["retired"]
    del v3["pairs"][-1]  # a retired case made active again (and its fix dropped)
    res = freeze(write_suite(tmp_path, v3, "t-noise@3.yaml"))
    assert res.exit_code == 2 and "edited (status" in res.output and "removed since" in res.output

    log = tmp_path / "releases.jsonl"
    lines = log.read_text().splitlines()
    log.write_text(lines[1] + "\n")  # the first release deleted
    assert {p.code for p in read_release_log(tmp_path).problems} == {"release_chain_broken"}


# -- codes and documentation
# ---------------------------------------------------------------------------


def test_every_noise_blocker_code_is_registered_and_documented() -> None:
    table = DOC[DOC.index('`codes_of("noise")`):') : DOC.index("Also `missing_results`")]
    rows = re.findall(r"^\| `([a-z_]+)` \| (incomplete|quality|review) \|", table, re.MULTILINE)
    assert dict(rows) == codes_of("noise")
    for code in codes_of("noise"):
        assert f"`{code}`" in DOC, code


NOISE_MODELS = [
    "NoiseSuite", "NoisePair", "CleanMember", "NoisyMember", "Distractor", "SliceLimit",
    "RetrievedContext", "GenerationTrace", "RetrievalAssertions", "SignOff", "Retirement",
    "NoisePolicy", "CompanionMetric", "EvidenceManifest", "NoiseReport", "ControlRow", "PairRow",
    "SliceRow", "RepeatRow", "RetiredRow", "RetrievalRow", "NoiseComparison", "PairDelta",
    "SliceDelta", "Trend", "CompanionValue", "ClaimPanel",
    "ClaimReview", "ClaimJudgment", "ClaimAdjudication", "PanelReport", "PanelMemberRow",
    "Injection", "InjectionRow", "QueryRewrite", "Reranker", "ChangeUnderReview",
    "ThresholdEvidence", "PanelSliceRow", "ReviewItem", "ReviewPack", "BlindKey",
]  # fmt: skip


@pytest.mark.parametrize("name", NOISE_MODELS)
def test_every_noise_field_is_documented_with_a_docstring(name: str) -> None:
    import workbench.noise as noise

    model = getattr(noise, name)
    undocumented = [f for f in model.model_fields if not re.search(rf"[\s{{`]{f}[,}}`:]", DOC)]
    assert undocumented == []
    assert undocumented_fields(model, "schema_version", "kind") == []


def test_a_lower_noise_score_bought_by_refusing_is_a_warning_trend(tmp_path: Path) -> None:
    cand, base = pair_suites(tmp_path)
    scores = {f"p{i}:{m}": 0.0 for i in (1, 2, 3) for m in ("clean", "noisy")}
    c_report = noise_report(cand, scored(cand, scores))
    b_report = noise_report(base, scored(base, {**scores, "p1:noisy": 0.5}))

    def with_refusal(report: Any, value: float) -> Any:
        return report.model_copy(
            update={
                "pairs": [
                    (
                        r.model_copy(
                            update={"companions": {"refusal": {"clean": 0.0, "noisy": value}}}
                        )
                        if r.pair_id == "p1"
                        else r
                    )
                    for r in report.pairs
                ]
            }
        )

    report = with_baseline(
        with_refusal(c_report, 1.0),
        with_refusal(b_report, 0.0),
        companions={"refusal": "lower_is_better"},
    )
    assert [(w.kind, w.pair_id) for w in report.warnings] == [("bought_by_refusing", "p1")]
    assert "refusal got worse (0 -> 1)" in report.warnings[0].message
    honest = with_baseline(
        with_refusal(c_report, 0.0),
        with_refusal(b_report, 0.0),
        companions={"refusal": "lower_is_better"},
    )
    assert honest.warnings == []
