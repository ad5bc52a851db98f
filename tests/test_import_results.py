"""``workbench import results``: predictions from any table into the judge-result contract.

The gold is built by hand (conftest builders: one literal table of case, slice, partition and
adjudicated label) and the predictions are CSV text written by hand, so the confusion table
below is computed by hand, then checked against an independent count and against
``workbench align --json``.
"""

from __future__ import annotations

import asyncio
import csv
import hashlib
import io
import json
import math
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from click.testing import CliRunner
from conftest import make_case, sha256_hex, undocumented_fields
from pydantic import BaseModel

from workbench.align import align
from workbench.cli import main
from workbench.errors import WorkbenchError
from workbench.gold import load_dataset
from workbench.importers import (
    JudgeDeclaration,
    ResultsMapping,
    ScoreThreshold,
    command_line_options,
    import_results,
    results_from_dataframe,
    results_from_ragas,
    results_from_table,
)
from workbench.judges import load_candidate
from workbench.results import JudgeIdentity, read_results
from workbench.runs import RunOptions, run_candidate_sync

ROOT = Path(__file__).resolve().parents[1]

# case, slice, partition, adjudicated label
GOLD = [
    ("c01", "billing", "development", "pass"),
    ("c02", "billing", "development", "pass"),
    ("c03", "billing", "development", "fail"),
    ("c04", "billing", "development", "fail"),
    ("c05", "billing", "development", "review_required"),
    ("c06", "general", "development", "pass"),
    ("c07", "general", "development", "fail"),
    ("c08", "general", "calibration", "pass"),
    ("c09", "general", "calibration", "fail"),
    ("c10", "general", "calibration", "pass"),
    ("c11", "general", "calibration", "fail"),
    ("c12", "general", "calibration", "pass"),
]

# c07's verdict is empty (the judge produced none) and c12 has no row: both stay missing.
PREDICTIONS = """\
id,verdict,rationale,seconds,prompt_tokens,completion_tokens,usd
c01,correct,states the window,1.5,120,14,0.0021
c02,incorrect,misses the review step,1.25,118,12,0.002
c03,correct,looks fine,0.5,130,9,0.0019
c04,incorrect,promises approval,2,125,11,0.002
c05,unsure,notes do not settle it,0.75,101,8,0.0015
c06,correct,complete,1,99,7,0.0014
c07,,,,,,
c08,incorrect,wrong destination,1,111,10,0.0017
c09,incorrect,prohibited claim,1,109,10,0.0017
c10,correct,ok,1,100,6,0.0014
c11,correct,ok,1,100,6,0.0014
"""

LABEL_MAP = {"correct": "pass", "incorrect": "fail", "unsure": "review_required"}

# By hand: rows are adjudicated labels, columns the judge's labels, (error), (missing).
#   pass:            c01 c06 c10 judged pass; c02 c08 judged fail; c12 missing
#   fail:            c03 c11 judged pass; c04 c09 judged fail; c07 missing
#   review_required: c05 judged review_required
HAND_CONFUSION = {
    "rows": ["pass", "fail", "review_required"],
    "columns": ["pass", "fail", "review_required", "(error)", "(missing)"],
    "counts": [[3, 2, 0, 0, 1], [2, 2, 0, 0, 1], [0, 0, 1, 0, 0]],
}

MAPPING: dict[str, Any] = {
    "case_id": "id",
    "label": "verdict",
    "labels": LABEL_MAP,
    "reason": "rationale",
    "latency_s": "seconds",
    "tokens_in": "prompt_tokens",
    "tokens_out": "completion_tokens",
    "cost_usd": "usd",
    "judge": {
        "name": "vendor-judge",
        "version": "3",
        "model": "gpt-4o-mini-2024-07-18",
        "prompt_file": "prompt.md",
        "description": "The vendor's hosted judge, exported from their dashboard.",
        "params": {"temperature": 0},
    },
}
PROMPT = "Does the answer apply the refund policy correctly? Answer correct, incorrect or unsure.\n"


def cases() -> list[dict[str, Any]]:
    return [make_case(cid, label, slice=sl, partition=part) for cid, sl, part, label in GOLD]


@pytest.fixture
def gold(make_dataset) -> Path:
    return make_dataset(cases())


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A folder with the predictions CSV, the mapping and the prompt it names."""
    folder = tmp_path / "vendor"
    folder.mkdir()
    (folder / "predictions.csv").write_text(PREDICTIONS, encoding="utf-8")
    (folder / "mapping.yaml").write_text(yaml.safe_dump(MAPPING, sort_keys=False), encoding="utf-8")
    (folder / "prompt.md").write_text(PROMPT, encoding="utf-8")
    return folder


def invoke(*args: str) -> Any:
    return CliRunner().invoke(main, [str(a) for a in args])


def rows_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def canonical_fingerprint(identity: dict[str, Any]) -> str:
    return hashlib.sha256(
        json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
            "utf-8"
        )
    ).hexdigest()


# --- the done-when: import + align reproduce a hand-computed confusion table -------------------


def test_import_and_align_reproduce_the_hand_computed_confusion(
    gold: Path, project: Path, tmp_path: Path
) -> None:
    out = tmp_path / "imported"
    result = invoke(
        "import",
        "results",
        project / "predictions.csv",
        "--gold",
        gold,
        "--mapping",
        project / "mapping.yaml",
        "--out",
        out,
    )
    assert result.exit_code == 0, result.output
    assert (
        "2 of 12 gold case(s) have no prediction" in result.output and "c07, c12" in result.output
    )

    # An independent count from the CSV and the gold table, to check the hand-computed table.
    adjudicated = {cid: label for cid, _, _, label in GOLD}
    predicted = {
        row["id"]: LABEL_MAP[row["verdict"]]
        for row in csv.DictReader(io.StringIO(PREDICTIONS))
        if row["verdict"]
    }
    counted = Counter((adjudicated[cid], predicted.get(cid, "(missing)")) for cid in adjudicated)
    by_count = [
        [counted[(human, judge)] for judge in HAND_CONFUSION["columns"]]
        for human in HAND_CONFUSION["rows"]
    ]
    assert by_count == HAND_CONFUSION["counts"]

    aligned = invoke("align", "--gold", gold, "--results", out / "results.jsonl", "--json")
    assert aligned.exit_code == 0, aligned.output
    report = json.loads(aligned.output)
    assert report["confusion"] == HAND_CONFUSION
    assert report["status"] == "incomplete" and report["missing_case_ids"] == ["c07", "c12"]
    assert report["comparable"] is True and report["lineage"]["source"] == "results"
    overall = report["overall"]
    assert (
        overall["false_passes"],
        overall["false_fails"],
        overall["missing"],
        overall["errors"],
    ) == (2, 2, 2, 0)
    # The development partition alone: c07 is missing there, c12 is out of scope.
    dev = json.loads(
        invoke(
            "align",
            "--gold",
            gold,
            "--results",
            out / "results.jsonl",
            "--partition",
            "development",
            "--json",
        ).output
    )
    assert dev["confusion"]["counts"] == [[2, 1, 0, 0, 0], [1, 1, 0, 0, 1], [0, 0, 1, 0, 0]]


def test_results_follow_the_contract_with_lineage_and_the_declared_identity(
    gold: Path, project: Path, tmp_path: Path
) -> None:
    imported = import_results(
        project / "predictions.csv", gold, tmp_path / "out", mapping=project / "mapping.yaml"
    )
    rows = rows_of(Path(imported.out))
    assert [r["case_id"] for r in rows] == [
        "c01",
        "c02",
        "c03",
        "c04",
        "c05",
        "c06",
        "c08",
        "c09",
        "c10",
        "c11",
    ]  # no line for c07 or c12
    dataset = load_dataset(gold)
    assert {(r["dataset_sha256"], r["rubric_version"]) for r in rows} == {(dataset.sha256, "r1")}
    by_id = {r["case_id"]: r for r in rows}
    first = by_id["c01"]
    assert (
        first["value"],
        first["reason"],
        first["latency_s"],
        first["tokens_in"],
        first["tokens_out"],
        first["cost_usd"],
    ) == ("pass", "states the window", 1.5, 120, 14, 0.0021)
    assert (
        first["response_hash"] == sha256_hex("response for c01")
        and first["partition"] == "development"
    )
    assert by_id["c10"]["partition"] == "calibration" and by_id["c05"]["value"] == "review_required"
    judge = first["judge"]
    assert (judge["name"], judge["version"], judge["model"], judge["kind"]) == (
        "vendor-judge",
        "3",
        "gpt-4o-mini-2024-07-18",
        "imported",
    )
    assert judge["prompt_sha256"] == sha256_hex(PROMPT)
    assert judge["params"]["labels"] == LABEL_MAP and judge["params"]["generation"] == {
        "temperature": 0
    }
    # The fingerprint is the documented hash of the identity, the same on every line.
    assert (
        {r["judge_fingerprint"] for r in rows}
        == {canonical_fingerprint(judge)}
        == {JudgeIdentity.model_validate(judge).fingerprint()}
    )
    assert imported.fingerprint == canonical_fingerprint(judge)


def test_the_candidate_beside_the_results_loads_and_replays_them(
    gold: Path, project: Path, tmp_path: Path
) -> None:
    imported = import_results(
        project / "predictions.csv", gold, tmp_path / "out", mapping=project / "mapping.yaml"
    )
    spec = tmp_path / "out" / "vendor-judge@3.yaml"
    assert imported.spec == str(spec)
    raw = yaml.safe_load(spec.read_text())
    assert (raw["kind"], raw["results"], raw["model"], raw["labels"]) == (
        "imported",
        "results.jsonl",
        "gpt-4o-mini-2024-07-18",
        ["pass", "fail", "review_required"],
    )
    assert raw["description"].startswith("The vendor's hosted judge")
    judge = load_candidate(spec)
    results_fingerprint = rows_of(Path(imported.out))[0]["judge_fingerprint"]
    assert (
        judge.identity.params["source_fingerprint"] == results_fingerprint
    )  # the candidate replays exactly this judge
    assert (
        judge.identity.params["results_sha256"]
        == hashlib.sha256(Path(imported.out).read_bytes()).hexdigest()
    )
    # Replayed through the run engine: c07 stays missing, nothing is invented for it.
    summary = run_candidate_sync(
        judge,
        load_dataset(gold),
        "development",
        tmp_path / "run",
        RunOptions(progress=False, cache_dir=False),
    )
    assert summary.status == "incomplete" and summary.unrun == ["c07#0"] and summary.verdicts == 6
    report = align(gold, tmp_path / "run" / "results.jsonl", partition="development")
    assert report.confusion.counts == [[2, 1, 0, 0, 0], [1, 1, 0, 0, 1], [0, 0, 1, 0, 0]]


def test_certify_copies_the_imported_candidate_with_its_results(
    gold: Path, project: Path, tmp_path: Path
) -> None:
    from workbench.reports._certify import _copy_inputs

    import_results(
        project / "predictions.csv", gold, tmp_path / "out", mapping=project / "mapping.yaml"
    )
    spec = tmp_path / "out" / "vendor-judge@3.yaml"
    before = load_candidate(spec).identity.fingerprint()
    report_dir = tmp_path / "report"
    report_dir.mkdir()
    copies = _copy_inputs(
        report_dir, spec, ROOT / "data" / "policies" / "support-release@1.yaml", None
    )
    copied = load_candidate(copies["candidate"])
    assert copied.identity.fingerprint() == before
    assert (copies["candidate"].parent / "results.jsonl").read_bytes() == (
        tmp_path / "out" / "results.jsonl"
    ).read_bytes()


@pytest.mark.notebook
def test_certify_runs_an_imported_candidate_and_a_missing_prediction_keeps_it_incomplete(
    tmp_path: Path,
) -> None:
    """A real certification (papermill) of an imported candidate on the demo held-out partition."""
    from workbench.reports import certify

    dataset = load_dataset(ROOT / "data" / "demo")
    held_out = dataset.partition("held_out")
    frame = pd.DataFrame(
        [{"case": c.case_id, "label": c.gold_label} for c in held_out[1:]]
    )  # the first held-out case has no prediction
    mapping = {
        "case_id": "case",
        "label": "label",
        "judge": {
            "name": "oracle",
            "version": "1",
            "model": "copies-the-gold",
            "prompt_description": "returns the adjudicated label",
        },
    }
    written = results_from_dataframe(frame, mapping, gold=dataset).write(tmp_path / "oracle")
    gold = tmp_path / "gold"  # the held-out ledger lives beside the gold: certify a copy
    shutil.copytree(ROOT / "data" / "demo", gold)
    result = certify(
        written.spec,
        ROOT / "data" / "policies" / "support-release@1.yaml",
        gold,
        reports_root=tmp_path / "reports",
    )
    assert result.outcome == "evaluation_incomplete"
    lock = json.loads((result.report_dir / "lock.json").read_text())
    assert (
        lock["candidate"] == "oracle@1"
        and lock["candidate_fingerprint"] == load_candidate(written.spec).identity.fingerprint()
    )


def test_gate_accepts_the_results_and_missing_ones_keep_it_incomplete(tmp_path: Path) -> None:
    """On the demo gold and policy: a calibration case without a prediction makes the gate
    incomplete (exit 3).

    Held-out predictions are refused outside a certification (`held_out_unaccounted`)."""
    dataset = load_dataset(ROOT / "data" / "demo")
    held_out = dataset.partition("calibration")
    rows = [{"case": c.case_id, "label": c.gold_label} for c in held_out]
    frame = pd.DataFrame(rows)
    mapping = {
        "case_id": "case",
        "label": "label",
        "judge": {
            "name": "oracle",
            "version": "1",
            "model": "copies-the-gold",
            "prompt_description": "returns the adjudicated label",
        },
    }
    results_from_dataframe(frame, mapping, gold=dataset).write(tmp_path / "full")
    policy = ROOT / "data" / "policies" / "support-release@1.yaml"
    full = invoke(
        "gate",
        "--gold",
        ROOT / "data" / "demo",
        "--results",
        tmp_path / "full" / "results.jsonl",
        "--policy",
        policy,
        "--partition",
        "calibration",
        "--json",
    )
    assert full.exit_code in (0, 1, 4), full.output  # accepted: a verdict on every held-out case
    assert json.loads(full.output)["outcome"] != "evaluation_incomplete"
    results_from_dataframe(frame.iloc[1:], mapping, gold=dataset).write(tmp_path / "partial")
    partial = invoke(
        "gate",
        "--gold",
        ROOT / "data" / "demo",
        "--results",
        tmp_path / "partial" / "results.jsonl",
        "--policy",
        policy,
        "--partition",
        "calibration",
        "--json",
    )
    assert partial.exit_code == 3, partial.output
    assert json.loads(partial.output)["outcome"] == "evaluation_incomplete"
    # The same predictions for held-out cases: no certification recorded them, so refused.
    on_held_out = pd.DataFrame(
        [{"case": c.case_id, "label": c.gold_label} for c in dataset.partition("held_out")]
    )
    results_from_dataframe(on_held_out, mapping, gold=dataset).write(tmp_path / "held_out")
    for command in ("gate", "align"):
        args = ["--policy", policy] if command == "gate" else []
        refused = invoke(
            command,
            "--gold",
            ROOT / "data" / "demo",
            "--results",
            tmp_path / "held_out" / "results.jsonl",
            *args,
            "--partition",
            "held_out",
        )
        assert refused.exit_code == 2 and "held_out_unaccounted" in refused.output, refused.output


# --- scores -------------------------------------------------------------------------------------


SCORES = """\
id,faithfulness
c01,0.9
c02,0.5
c03,0.49
c04,0.1
c06,0.5000001
c07,
"""


@pytest.mark.parametrize(
    ("pass_if", "expected"),
    [
        # at_least 0.5: a score of exactly 0.5 passes
        ("at_least", {"c01": "pass", "c02": "pass", "c03": "fail", "c04": "fail", "c06": "pass"}),
        # at_most 0.5 (e.g. a hallucination score, lower is better): exactly 0.5 passes
        ("at_most", {"c01": "fail", "c02": "pass", "c03": "pass", "c04": "pass", "c06": "fail"}),
    ],
)
def test_score_threshold_in_both_directions_keeps_the_score(
    gold: Path, tmp_path: Path, pass_if: str, expected: dict[str, str]
) -> None:
    source = tmp_path / "scores.csv"
    source.write_text(SCORES)
    out = tmp_path / pass_if
    result = invoke(
        "import", "results", source, "--gold", gold, "--out", out, "--case-id", "id",
        "--score", "faithfulness", "--threshold", "0.5", "--pass-if", pass_if, "--name", "faith",
        "--version", pass_if.replace("_", "-"), "--model", "nli-detector",
        "--prompt-description", "NLI faithfulness of the answer to the notes",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = {r["case_id"]: r for r in rows_of(out / "results.jsonl")}
    assert {cid: r["value"] for cid, r in rows.items()} == expected  # c07's empty score: no result
    assert {cid: r["score"] for cid, r in rows.items()} == {
        "c01": 0.9,
        "c02": 0.5,
        "c03": 0.49,
        "c04": 0.1,
        "c06": 0.5000001,
    }
    threshold = rows["c01"]["judge"]["params"]["threshold"]
    assert threshold == {
        "value": 0.5,
        "pass_if": pass_if,
        "pass_label": "pass",
        "fail_label": "fail",
    }
    assert rows["c01"]["judge"]["prompt_sha256"] is None and rows["c01"]["judge"]["params"][
        "prompt_description"
    ].startswith("NLI")


def test_a_different_threshold_or_prompt_is_a_different_judge(gold: Path, tmp_path: Path) -> None:
    source = tmp_path / "scores.csv"
    source.write_text(SCORES)
    base = {
        "case_id": "id",
        "score": "faithfulness",
        "threshold": {"value": 0.5},
        "judge": {"name": "j", "version": "1", "model": "m", "prompt": "Is it faithful?"},
    }
    fingerprints = {
        results_from_table(source, base, gold=gold).fingerprint,
        results_from_table(source, {**base, "threshold": {"value": 0.6}}, gold=gold).fingerprint,
        results_from_table(
            source, {**base, "threshold": {"value": 0.5, "pass_if": "at_most"}}, gold=gold
        ).fingerprint,
        results_from_table(
            source,
            {**base, "judge": {**base["judge"], "prompt": "Is it faithful? Be strict."}},
            gold=gold,
        ).fingerprint,
        results_from_table(
            source, {**base, "judge": {**base["judge"], "model": "m2"}}, gold=gold
        ).fingerprint,
    }
    assert len(fingerprints) == 5
    assert (
        results_from_table(source, base, gold=gold).fingerprint
        == results_from_table(source, dict(base), gold=gold).fingerprint
    )


def test_bad_scores_are_listed_with_their_rows(gold: Path, tmp_path: Path) -> None:
    source = tmp_path / "scores.csv"
    source.write_text("id,s\nc01,0.9\nc02,high\nc03,inf\nc04,0.2\n")
    with pytest.raises(WorkbenchError) as info:
        results_from_table(
            source,
            {
                "case_id": "id",
                "score": "s",
                "threshold": {"value": 0.5},
                "judge": {"name": "j", "version": "1", "model": "m", "prompt": "p"},
            },
            gold=gold,
        )
    [problem] = info.value.problems
    assert problem.code == "invalid_score" and "lines 3, 4" in problem.message


# --- Ragas --------------------------------------------------------------------------------------


def run_ragas_experiment(root: Path, records: list[dict[str, str]]) -> Path:
    """Run a real, offline Ragas @experiment with deterministic metrics; return the CSV it wrote."""
    from ragas import Dataset, experiment
    from ragas.metrics import MetricResult, discrete_metric, numeric_metric

    @discrete_metric(name="policy_check", allowed_values=["pass", "fail"])
    def policy_check(response: str) -> MetricResult:
        ok = not response.endswith("4") and not response.endswith("7")
        return MetricResult(
            value="pass" if ok else "fail",
            reason=f"response {'keeps' if ok else 'breaks'} the policy",
        )

    @numeric_metric(name="risk", allowed_values=(0.0, 1.0))
    def risk(response: str) -> MetricResult:
        return MetricResult(value=round(int(response[-1]) / 10, 2), reason="last digit / 10")

    @experiment()
    async def judged(row: dict[str, Any]) -> dict[str, Any]:
        check = await policy_check.ascore(response=row["response"])
        scored = await risk.ascore(response=row["response"])
        return {
            **row,
            "policy_check": check.value,
            "policy_check_reason": check.reason,
            "risk": scored.value,
            "check": check,
        }

    dataset = Dataset(name="gold_cases", backend="local/csv", root_dir=str(root))
    for record in records:
        dataset.append(record)
    dataset.save()
    asyncio.run(judged.arun(dataset, name="policy-run"))
    return root / "experiments" / "policy-run.csv"


def test_a_ragas_experiment_csv_imports_by_id_or_by_text(gold: Path, tmp_path: Path) -> None:
    dev = [c for c in cases() if c["partition"] == "development"]
    written = run_ragas_experiment(
        tmp_path / "ragas",
        [
            {"case_id": c["case_id"], "user_input": c["input"], "response": c["response"]}
            for c in dev
        ],
    )
    header = next(csv.reader(io.StringIO(written.read_text())))
    assert header == [
        "case_id",
        "user_input",
        "response",
        "policy_check",
        "policy_check_reason",
        "risk",
        "check",
    ]  # the layout Ragas 0.4 writes
    expected = {c["case_id"]: "fail" if c["case_id"][-1] in "47" else "pass" for c in dev}
    judge = {
        "name": "ragas-policy",
        "version": "1",
        "model": "none (deterministic)",
        "prompt_description": "rule: responses ending in 4 or 7 break the policy",
    }

    by_id = results_from_table(
        written,
        {
            "case_id": "case_id",
            "label": "policy_check",
            "reason": "policy_check_reason",
            "judge": judge,
        },
        gold=gold,
    )
    assert {r.case_id: r.value for r in by_id.results} == expected
    assert {r.reason for r in by_id.results} == {
        "response keeps the policy",
        "response breaks the policy",
    }

    # No case id: matched on the exact input and response (and the response hash is checked).
    by_text = results_from_table(
        written,
        {"input": "user_input", "response": "response", "label": "policy_check", "judge": judge},
        gold=gold,
    )
    assert {r.case_id: r.value for r in by_text.results} == expected
    assert [r.case_id for r in by_text.results] == [
        c["case_id"] for c in dev
    ]  # gold order, not Ragas' completion order

    # A MetricResult object returned in the row is written as its repr; its value and reason are
    # unpacked.
    unpacked = results_from_table(
        written, {"case_id": "case_id", "label": "check", "judge": judge}, gold=gold
    )
    assert {r.case_id: (r.value, r.reason) for r in unpacked.results} == {
        cid: (v, f"response {'keeps' if v == 'pass' else 'breaks'} the policy")
        for cid, v in expected.items()
    }
    assert (
        by_id.fingerprint == by_text.fingerprint == unpacked.fingerprint
    )  # same judge, same rules

    # A @numeric_metric column with a threshold (lower risk is better).
    scored = results_from_table(
        written,
        {
            "case_id": "case_id",
            "score": "risk",
            "threshold": {"value": 0.35, "pass_if": "at_most"},
            "judge": {**judge, "name": "ragas-risk"},
        },
        gold=gold,
    )
    assert {r.case_id: (r.score, r.value) for r in scored.results} == {
        c["case_id"]: (int(c["case_id"][-1]) / 10, "pass" if int(c["case_id"][-1]) <= 3 else "fail")
        for c in dev
    }


def test_ragas_evaluate_to_pandas_imports_and_a_failed_metric_stays_missing(
    gold: Path, tmp_path: Path
) -> None:
    from dataclasses import dataclass, field

    from ragas import EvaluationDataset, evaluate
    from ragas.metrics.base import MetricType, SingleTurnMetric

    @dataclass
    class DigitScore(SingleTurnMetric):
        name: str = "digit_score"
        _required_columns: dict[MetricType, set[str]] = field(
            default_factory=lambda: {MetricType.SINGLE_TURN: {"user_input", "response"}}
        )

        def init(self, run_config: Any) -> None:
            pass

        async def _single_turn_ascore(self, sample: Any, callbacks: Any) -> float:
            if sample.response.endswith("03"):
                raise RuntimeError("the metric failed on this sample")
            return int(sample.response[-1]) / 10

    dev = [c for c in cases() if c["partition"] == "development"]
    samples = EvaluationDataset.from_list(
        [{"user_input": c["input"], "response": c["response"]} for c in dev]
    )
    outcome = evaluate(samples, metrics=[DigitScore()], show_progress=False, raise_exceptions=False)
    frame = outcome.to_pandas()
    assert list(frame.columns) == [
        "user_input",
        "response",
        "digit_score",
    ]  # no id column: rows are matched on the texts
    assert math.isnan(frame["digit_score"].iloc[2])
    mapping = {
        "score": "digit_score",
        "threshold": {"value": 0.4},
        "judge": {
            "name": "digit",
            "version": "1",
            "model": "none",
            "prompt_description": "last digit / 10",
        },
    }
    imported = results_from_ragas(outcome, mapping, gold=gold)
    assert {r.case_id: (r.score, r.value) for r in imported.results} == {
        "c01": (0.1, "fail"), "c02": (0.2, "fail"), "c04": (0.4, "pass"),
        "c05": (0.5, "pass"), "c06": (0.6, "pass"), "c07": (0.7, "pass"),
    }  # fmt: skip
    assert imported.missing_case_ids == (
        "c03",
        "c08",
        "c09",
        "c10",
        "c11",
        "c12",
    )  # c03: metric failed (NaN); the rest: no row
    written = imported.write(tmp_path / "out")
    report = align(gold, written.out, partition="development")
    assert report.status == "incomplete" and report.missing_case_ids == ["c03"]


# --- DataFrame, JSONL and Parquet ----------------------------------------------------------------


def test_dataframe_api_writes_results_and_candidate(gold: Path, tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {
            "case": ["c01", "c03", "c08"],
            "pred": [1, 0, 1],
            "why": ["a", "b", "c"],  # a mapped reason is stated with every verdict
            "ms": [0.2, float("nan"), 0.4],
        }
    )
    mapping = {
        "case_id": "case",
        "label": "pred",
        "labels": {0: "fail", 1: "pass"},
        "reason": "why",
        "latency_s": "ms",
        "judge": {"name": "nb-judge", "version": "1", "model": "m", "prompt": "Judge it."},
    }
    imported = results_from_dataframe(frame, mapping, gold=gold)
    assert [(r.case_id, r.value, r.reason, r.latency_s) for r in imported.results] == [
        ("c01", "pass", "a", 0.2),
        ("c03", "fail", "b", None),
        ("c08", "pass", "c", 0.4),
    ]
    assert list(imported.frame()["value"]) == ["pass", "fail", "pass"]
    written = imported.write(tmp_path / "nb")
    judge = load_candidate(written.spec)
    assert (
        judge.identity.params["source_fingerprint"]
        == imported.fingerprint
        == read_results(written.out)[0].result.judge_fingerprint
    )


def test_jsonl_and_parquet_tables_give_the_same_results(gold: Path, tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {"id": ["c01", "c02", "c04"], "ok": [True, False, True], "p": [0.9, 0.2, 0.7]}
    )
    frame.to_parquet(tmp_path / "preds.parquet")
    (tmp_path / "preds.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in frame.to_dict("records"))
    )
    mapping = {
        "case_id": "id",
        "label": "ok",
        "score": "p",
        "labels": {True: "pass", False: "fail"},
        "judge": {"name": "j", "version": "1", "model": "m", "prompt": "p"},
    }
    got = []
    for name in ("preds.parquet", "preds.jsonl"):
        imported = results_from_table(tmp_path / name, mapping, gold=gold)
        got.append([(r.case_id, r.value, r.score) for r in imported.results])
    assert got[0] == got[1] == [("c01", "pass", 0.9), ("c02", "fail", 0.2), ("c04", "pass", 0.7)]


# --- refusals -----------------------------------------------------------------------------------


def test_unmapped_labels_are_listed_with_every_row(gold: Path, tmp_path: Path) -> None:
    source = tmp_path / "p.csv"
    source.write_text(
        "id,verdict\nc01,correct\nc02,Correct\nc03,wrong\nc04,wrong\nc05,incorrect\nc06,\n"
    )
    with pytest.raises(WorkbenchError) as info:
        results_from_table(
            source,
            {
                "case_id": "id",
                "label": "verdict",
                "labels": {"correct": "pass", "incorrect": "fail"},
                "judge": {"name": "j", "version": "1", "model": "m", "prompt": "p"},
            },
            gold=gold,
        )
    problems = sorted((p.code, p.message) for p in info.value.problems)
    assert problems == [
        ("unmapped_label", "column 'verdict': value 'Correct' is not listed in labels (line 3)"),
        ("unmapped_label", "column 'verdict': value 'wrong' is not listed in labels (lines 4, 5)"),
    ]
    # Without a label mapping, values must be rubric labels.
    with pytest.raises(WorkbenchError) as info:
        results_from_table(
            source,
            {
                "case_id": "id",
                "label": "verdict",
                "judge": {"name": "j", "version": "1", "model": "m", "prompt": "p"},
            },
            gold=gold,
        )
    assert len(info.value.problems) == 4 and {p.code for p in info.value.problems} == {
        "unmapped_label"
    }


def test_a_table_without_any_prediction_is_refused(gold: Path, tmp_path: Path) -> None:
    source = tmp_path / "p.csv"
    source.write_text("id,verdict,score\nc01,,0.5\nc02,,\n")
    result = invoke(
        "import",
        "results",
        source,
        "--gold",
        gold,
        "--out",
        tmp_path / "out",
        "--case-id",
        "id",
        "--label",
        "verdict",
        "--name",
        "j",
        "--version",
        "1",
        "--model",
        "m",
        "--prompt-description",
        "p",
    )
    assert (
        result.exit_code == 2
        and "[no_predictions]" in result.output
        and "none of the 2 row(s) has a prediction in column 'verdict'" in result.output
    )
    assert not (tmp_path / "out").exists()


def test_label_values_compare_as_text(gold: Path, tmp_path: Path) -> None:
    source = tmp_path / "p.csv"
    source.write_text("id,grade\nc01,1.00\nc02,0\nc03,0.50\nc04,1\n")
    imported = results_from_table(
        source,
        {
            "case_id": "id",
            "label": "grade",
            "labels": {1: "pass", 0: "fail", 0.5: "review_required"},
            "judge": {"name": "j", "version": "1", "model": "m", "prompt": "p"},
        },
        gold=gold,
    )
    assert [(r.case_id, r.value) for r in imported.results] == [
        ("c01", "pass"),
        ("c02", "fail"),
        ("c03", "review_required"),
        ("c04", "pass"),
    ]


def test_duplicate_keys_are_refused(gold: Path, tmp_path: Path) -> None:
    source = tmp_path / "p.csv"
    source.write_text("id,verdict\nc01,pass\nc02,fail\nc01,fail\nc03,pass\nc01,\n")
    result = invoke(
        "import",
        "results",
        source,
        "--gold",
        gold,
        "--out",
        tmp_path / "out",
        "--case-id",
        "id",
        "--label",
        "verdict",
        "--name",
        "j",
        "--version",
        "1",
        "--model",
        "m",
        "--prompt-description",
        "p",
    )
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert (
        "[duplicate_key]" in result.output
        and "3 rows predict case 'c01' (lines 2, 4, 6)" in result.output
    )
    assert not (tmp_path / "out").exists()


def test_rows_for_other_gold_are_refused(gold: Path, tmp_path: Path) -> None:
    source = tmp_path / "p.csv"
    source.write_text(
        "id,verdict,answer\nc01,pass,response for c01\nzz9,pass,x\nc02,fail,a different"
        " answer\n,pass,y\n"
    )
    with pytest.raises(WorkbenchError) as info:
        results_from_table(
            source,
            {
                "case_id": "id",
                "label": "verdict",
                "response": "answer",
                "judge": {"name": "j", "version": "1", "model": "m", "prompt": "p"},
            },
            gold=gold,
        )
    assert sorted(p.code for p in info.value.problems) == [
        "empty_key",
        "response_hash_mismatch",
        "unknown_case",
    ]


def test_superseded_and_ambiguous_cases_are_refused(make_dataset, tmp_path: Path) -> None:
    same = "the same answer"
    gold = make_dataset(
        [
            make_case("a"),
            make_case("a2", supersedes="a", response="response for a"),
            make_case("b", response=same, input="q"),
            make_case("c", response=same, input="q", group="group-b"),
        ]
    )
    (tmp_path / "p.csv").write_text("id,verdict\na,pass\n")
    with pytest.raises(WorkbenchError) as info:
        results_from_table(
            tmp_path / "p.csv",
            {
                "case_id": "id",
                "label": "verdict",
                "judge": {"name": "j", "version": "1", "model": "m", "prompt": "p"},
            },
            gold=gold,
        )
    assert [p.code for p in info.value.problems] == [
        "superseded_case"
    ] and "'a2'" in info.value.problems[0].message
    (tmp_path / "t.csv").write_text(f"q,r,verdict\nq,{same},pass\n")
    with pytest.raises(WorkbenchError) as info:
        results_from_table(
            tmp_path / "t.csv",
            {
                "input": "q",
                "response": "r",
                "label": "verdict",
                "judge": {"name": "j", "version": "1", "model": "m", "prompt": "p"},
            },
            gold=gold,
        )
    assert [p.code for p in info.value.problems] == ["ambiguous_match"]


def test_every_mapping_problem_is_listed_at_once(gold: Path, project: Path, tmp_path: Path) -> None:
    bad = {
        "case_id": "ident",  # no such column
        "score": "verdict",  # a score without a threshold
        "labels": {
            "correct": "passed",
            1: "fail",
            "1.0": "pass",
        },  # not a rubric label; a duplicate; unused without a label column
        "colour": "blue",  # unknown key
        "judge": {
            "name": "vendor judge",
            "version": 3,
            "prompt_file": "nowhere.md",
        },  # bad name, no model, missing prompt file
    }
    (project / "bad.yaml").write_text(yaml.safe_dump(bad))
    result = invoke(
        "import",
        "results",
        project / "predictions.csv",
        "--gold",
        gold,
        "--mapping",
        project / "bad.yaml",
        "--out",
        tmp_path / "out",
    )
    assert result.exit_code == 2 and "Traceback" not in result.output
    codes = [
        line.split("[")[-1].split("]")[0]
        for line in result.output.splitlines()
        if " error: " in line
    ]
    assert sorted(codes) == sorted(
        [
            "mapping_invalid",
            "mapping_missing_key",
            "mapping_unknown_key",
            "mapping_unknown_column",
            "mapping_threshold_missing",
            "mapping_labels_unused",
            "mapping_unknown_label",
            "mapping_duplicate_value",
            "mapping_prompt_file",
        ]
    )
    assert not (tmp_path / "out").exists()


def test_mapping_conflicts_and_missing_parts(gold: Path, project: Path) -> None:
    judge_free = {
        "case_id": "id",
        "label": "verdict",
        "score": "seconds",
        "threshold": {"value": 1, "pass_label": "maybe"},
    }
    with pytest.raises(WorkbenchError) as info:
        results_from_table(project / "predictions.csv", judge_free, gold=gold)
    assert sorted(p.code for p in info.value.problems) == [
        "mapping_missing_key",
        "mapping_prediction_ambiguous",
        "mapping_unknown_label",
    ]
    with pytest.raises(WorkbenchError) as info:
        results_from_table(
            project / "predictions.csv",
            {
                "judge": {
                    "name": "j",
                    "version": "1",
                    "model": "m",
                    "prompt": "x",
                    "prompt_file": "prompt.md",
                }
            },
            gold=gold,
            base_dir=project,
        )
    assert sorted(p.code for p in info.value.problems) == [
        "mapping_no_key",
        "mapping_no_prediction",
        "mapping_prompt_ambiguous",
    ]


def test_a_table_without_a_mapping_is_refused_and_the_contract_path_still_works(
    gold: Path, project: Path, tmp_path: Path
) -> None:
    result = invoke(
        "import", "results", project / "predictions.csv", "--gold", gold, "--out", tmp_path / "out"
    )
    assert result.exit_code == 2 and "[mapping_needed]" in result.output
    # The imported results are themselves in the contract: declaring them again is a no-op on their
    # content.
    first = import_results(
        project / "predictions.csv", gold, tmp_path / "a", mapping=project / "mapping.yaml"
    )
    again = invoke("import", "results", first.out, "--gold", gold, "--out", tmp_path / "b")
    assert again.exit_code == 0, again.output
    assert (tmp_path / "b" / "results.jsonl").read_bytes() == Path(first.out).read_bytes()


# --- writing ------------------------------------------------------------------------------------


def test_reimport_is_byte_identical_and_a_changed_import_needs_force(
    gold: Path, project: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    import_results(project / "predictions.csv", gold, out, mapping=project / "mapping.yaml")
    files = {p.name: p.read_bytes() for p in out.iterdir()}
    assert sorted(files) == ["results.jsonl", "vendor-judge@3.yaml"]
    import_results(
        project / "predictions.csv", gold, out, mapping=project / "mapping.yaml"
    )  # same input: same bytes, no --force needed
    assert {p.name: p.read_bytes() for p in out.iterdir()} == files
    (project / "predictions.csv").write_text(PREDICTIONS.replace("c06,correct", "c06,incorrect"))
    with pytest.raises(WorkbenchError) as info:
        import_results(project / "predictions.csv", gold, out, mapping=project / "mapping.yaml")
    assert {p.code for p in info.value.problems} == {"out_not_empty"}
    assert {p.name: p.read_bytes() for p in out.iterdir()} == files  # nothing was written
    import_results(
        project / "predictions.csv", gold, out, mapping=project / "mapping.yaml", force=True
    )
    assert {r["case_id"]: r["value"] for r in rows_of(out / "results.jsonl")}["c06"] == "fail"
    # Another judge may not take over the directory: the first candidate would replay its results.
    other = {
        **MAPPING,
        "judge": {**MAPPING["judge"], "version": "4", "prompt_file": str(project / "prompt.md")},
    }
    with pytest.raises(WorkbenchError) as info:
        import_results(project / "predictions.csv", gold, out, mapping=other, force=True)
    assert [p.code for p in info.value.problems] == ["out_other_candidate"]


def test_the_committed_example_imports_and_aligns(tmp_path: Path) -> None:
    """examples/import-results: the worked example in docs/import-results.md, as a user types it."""
    example = ROOT / "examples" / "import-results"
    demo = ROOT / "data" / "demo"
    result = invoke(
        "import",
        "results",
        example / "predictions.csv",
        "--mapping",
        example / "mapping.yaml",
        "--gold",
        demo,
        "--out",
        tmp_path / "imported",
    )
    assert result.exit_code == 0, result.output
    aligned = invoke(
        "align",
        "--gold",
        demo,
        "--results",
        tmp_path / "imported" / "results.jsonl",
        "--partition",
        "development",
        "--json",
    )
    assert aligned.exit_code == 0, aligned.output
    report = json.loads(aligned.output)
    dataset = load_dataset(demo)
    to_label = yaml.safe_load((example / "mapping.yaml").read_text())["labels"]
    with (example / "predictions.csv").open(newline="") as fh:
        predicted = {
            row["case_id"]: to_label[row["verdict"]] for row in csv.DictReader(fh) if row["verdict"]
        }
    counted = Counter(
        (c.gold_label, predicted.get(c.case_id, "(missing)"))
        for c in dataset.partition("development")
    )
    assert report["confusion"]["counts"] == [
        [counted[(h, j)] for j in report["confusion"]["columns"]]
        for h in report["confusion"]["rows"]
    ]
    assert report["status"] == "incomplete" and len(report["missing_case_ids"]) == 9
    doc = (ROOT / "docs" / "import-results.md").read_text()
    for human, counts in zip(
        report["confusion"]["rows"], report["confusion"]["counts"], strict=True
    ):
        assert (
            f"| {human} | " + " | ".join(map(str, counts)) + " |" in doc
        )  # the table in the docs is the real output


def test_options_override_the_mapping_file(gold: Path, project: Path, tmp_path: Path) -> None:
    result = invoke(
        "import",
        "results",
        project / "predictions.csv",
        "--gold",
        gold,
        "--mapping",
        project / "mapping.yaml",
        "--out",
        tmp_path / "out",
        "--version",
        "4",
        "--label-map",
        "unsure=fail",
    )
    assert result.exit_code == 0, result.output
    rows = {r["case_id"]: r for r in rows_of(tmp_path / "out" / "results.jsonl")}
    assert rows["c05"]["value"] == "fail" and rows["c05"]["judge"]["version"] == "4"
    assert (tmp_path / "out" / "vendor-judge@4.yaml").exists()
    bad = invoke(
        "import",
        "results",
        project / "predictions.csv",
        "--gold",
        gold,
        "--mapping",
        project / "mapping.yaml",
        "--out",
        tmp_path / "o2",
        "--label-map",
        "unsure",
    )
    assert bad.exit_code == 2 and "is not VALUE=LABEL" in bad.output


@pytest.mark.parametrize("cls", [ResultsMapping, JudgeDeclaration, ScoreThreshold])
def test_the_mapping_format_is_documented(cls: type[BaseModel]) -> None:
    doc = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
    section = doc.split("## Results mapping", 1)[1].split("\n## ", 1)[0]
    assert [
        name
        for name in cls.model_fields
        if f"`{name}`" not in section
        and f" {name}," not in section
        and f"{{{name}," not in section
        and f" {name}}}" not in section
        and f" {name}:" not in section
    ] == []
    assert undocumented_fields(cls, "schema_version") == []


def test_command_line_options_name_each_mapping_field() -> None:
    options = command_line_options(
        ("yes=pass", " no = fail "),
        threshold=0.5,
        pass_if="at_most",
        prompt_file="prompt.txt",
        case_id="id",
        latency_s="lat",
        name="j",
        version="1",
    )
    assert options["case_id"] == "id" and options["latency_s"] == "lat"
    assert options["labels"] == {"yes": "pass", "no": "fail"}
    assert options["threshold"] == {"value": 0.5, "pass_if": "at_most"}
    assert options["judge"]["name"] == "j" and options["judge"]["version"] == "1"
    assert options["judge"]["prompt_file"] == str(Path("prompt.txt").resolve())
    assert list(options) == [
        "format",
        "case_id",
        "input",
        "response",
        "label",
        "score",
        "threshold",
        "labels",
        "reason",
        "latency_s",
        "tokens_in",
        "tokens_out",
        "cost_usd",
        "judge",
    ]
    with pytest.raises(WorkbenchError) as caught:
        command_line_options(("a", "b=c", "d"))
    assert [p.message for p in caught.value.problems] == [
        "'a' is not VALUE=LABEL",
        "'d' is not VALUE=LABEL",
    ]
