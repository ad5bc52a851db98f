"""One way to read evidence: ``gate``, ``agreement`` and the review table read the gold through
its validated columnar index and the results through the one columnar reader, and give exactly
what the per-record paths they replaced gave.

The per-record paths live here, as references (they are no longer in the package): the gate
over ``load_dataset`` + ``align_results`` (its join supplying the case ids), agreement over
loaded cases with Python dicts, and the review table built case by case from a join and its
result lines.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from conftest import (
    RUBRIC,
    alpha_nominal_of,
    approve,
    fleiss_of,
    make_case,
    make_result,
    write_results,
)
from lineage_support import stamped
from report_reference import reference_report
from test_policy import BASE_POLICY

from workbench.agreement import AgreementBlock, AgreementReport, PairAgreement, human_agreement
from workbench.align import (
    align_results,
    alignment_report,
    flagged_cases,
    format_report,
    join_cases,
    join_results,
    read_evidence,
)
from workbench.align._columnar import evidence_columnar
from workbench.cli import main
from workbench.errors import WorkbenchError
from workbench.gold import GoldCase, Partition, load_dataset
from workbench.gold._index import gold_index
from workbench.policy import (
    add_override,
    evaluate_gate,
    load_overrides,
    load_policy,
    policy_sha256,
)
from workbench.review import COLUMNS, DEFERRED, review_table
from workbench.stats import (
    cohen_kappa,
    krippendorff_alpha,
    shared_pairs,
    spearman_correlation,
    weighted_cohen_kappa,
    wilson_rate,
)

NOW = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
TIMEOUT = {"kind": "timeout", "message": "no answer", "retryable": False}
ORDINAL = {
    **{k: v for k, v in RUBRIC.items() if k not in ("pass_label", "fail_label", "labels")},
    "scale": "ordinal",
    "labels": ["1", "2", "3", "4", "n/a"],
    "abstain_labels": ["n/a"],
    "pass_labels": ["3", "4"],
    "min_reviews": 1,
}
CROWD = {**RUBRIC, "min_reviews": 1}
POLICY = {**BASE_POLICY, "name": "evidence-test", "max_evaluator_errors": 50}


# -- references: the per-record paths -----------------------------------------------------
def reference_block(cases: list[GoldCase], labels: list[str], **options: Any) -> AgreementBlock:
    """``agreement_block`` as it was: Python dicts per case, the statistics' list forms."""
    scale_labels, values = options.get("scale_labels"), options.get("scale_values")
    units = [{r.reviewer: r.label for r in case.reviews} for case in cases]
    on_scale = set(scale_labels or ())
    pairs, left_out = [], 0
    for (a, b), shared in shared_pairs(units).items():
        if len(shared) < options.get("min_shared", 1):
            left_out += 1
            continue
        ordered: dict[str, Any] = {}
        if scale_labels is not None:
            sa = [x for x, y in shared if x in on_scale and y in on_scale]
            sb = [y for x, y in shared if x in on_scale and y in on_scale]
            ordered = {
                "weighted_kappa_linear": weighted_cohen_kappa(
                    sa, sb, scale_labels, "linear", values
                ),
                "weighted_kappa_quadratic": weighted_cohen_kappa(
                    sa, sb, scale_labels, "quadratic", values
                ),
                "spearman": spearman_correlation(sa, sb, scale_labels, values),
            }
        pairs.append(
            PairAgreement(
                reviewer_a=a,
                reviewer_b=b,
                n=len(shared),
                raw_agreement=wilson_rate(sum(1 for x, y in shared if x == y), len(shared)),
                cohen_kappa=cohen_kappa([x for x, _ in shared], [y for _, y in shared], labels),
                **ordered,
            )
        )
    pairable = [case for case in cases if len(case.reviews) >= 2]
    alphas: dict[str, Any] = {}
    if scale_labels is not None:
        scale_units = [{r: x for r, x in unit.items() if x in on_scale} for unit in units]
        alphas = {
            "krippendorff_alpha_ordinal": krippendorff_alpha(scale_units, scale_labels, "ordinal"),
            "krippendorff_alpha_interval": krippendorff_alpha(
                scale_units, scale_labels, "interval", values
            ),
        }
    return AgreementBlock(
        cases=len(cases),
        reviewers=sorted({r for unit in units for r in unit}),
        pairs=pairs,
        min_shared=options.get("min_shared", 1),
        pairs_left_out=left_out,
        krippendorff_alpha=alpha_nominal_of(units, labels),
        fleiss_kappa=fleiss_of([[r.label for r in case.reviews] for case in cases], labels),
        disagreement=wilson_rate(
            sum(1 for case in pairable if case.reviewers_disagree), len(pairable)
        ),
        **alphas,
    )


@pytest.fixture(autouse=True)
def _approvers(tmp_path: Path) -> None:
    """Who may approve this test project's overrides (the store's workbench.yaml)."""
    approve(tmp_path, "lead")


def reference_agreement(gold: Path, partition: str | None, min_shared: int) -> AgreementReport:
    dataset = load_dataset(gold)
    cases = dataset.partition(partition)
    rubric = dataset.rubric
    labels = list(rubric.labels)
    by_slice: dict[str, list[GoldCase]] = {name: [] for name in rubric.slices}
    for case in cases:
        by_slice.setdefault(case.slice, []).append(case)
    options = {
        "scale_labels": rubric.scale_labels if rubric.ordered else None,
        "scale_values": rubric.scale_values,
        "min_shared": min_shared,
    }
    return AgreementReport(
        dataset_sha256=dataset.sha256,
        rubric_version=rubric.version,
        partition=Partition(partition).value if partition else None,
        labels=labels,
        scale=rubric.scale.value,
        scale_labels=options["scale_labels"],
        scale_values=rubric.scale_values,
        min_shared=min_shared,
        overall=reference_block(cases, labels, **options),
        slices={name: reference_block(c, labels, **options) for name, c in by_slice.items()},
    )


def reference_gate(gold: Path, results: Path, policy: Path, overrides: Path, partition: str):
    """The gate as ``workbench gate`` computed it: every record loaded, the join's case ids."""
    dataset = load_dataset(gold)
    join = align_results(dataset, results, partition=partition)
    report = reference_report(join, gold_path=str(gold), results_path=str(results))
    return evaluate_gate(
        report,
        load_policy(policy),
        rubric=dataset.rubric,
        overrides=load_overrides(overrides),
        join=join,
        now=NOW,
        policy_sha256=policy_sha256(policy),
    )


def reference_rows(gold: Path, results: Path, partition: str) -> list[dict[str, Any]]:
    """The review rows ``review_cases`` built from a join and its result lines."""
    from workbench.results import read_results

    dataset = load_dataset(gold)
    lines = {line.line: line.result for line in read_results(results)}
    join = align_results(dataset, results, partition=partition)
    rows = []
    for jc in join.cases:
        case = dataset.cases[jc.case_id]
        result = lines.get(jc.result_line) if jc.result_line is not None else None
        record = case.model_dump(mode="json")
        rows.append(
            {
                "case_id": jc.case_id,
                "slice": jc.slice,
                "risk": dataset.rubric.risk_of(jc.slice),
                "partition": jc.partition,
                "tags": list(jc.tags),
                "error_class": jc.error_class,
                "outcome": jc.outcome,
                "human_label": jc.human_label,
                "judge_label": jc.judge_label,
                "judge_reason": jc.reason if jc.outcome == "verdict" else None,
                "error_kind": jc.error_kind,
                "error_message": jc.reason if jc.outcome == "error" else None,
                "input": case.input,
                "response": case.response,
                "grading_notes": case.grading_notes,
                "reference": case.reference,
                "contexts": case.contexts,
                "reviews": record["reviews"],
                "adjudication": record["adjudication"],
                "rendered_request": result.rendered_request if result else None,
                "rendered_request_ref": result.rendered_request_ref if result else None,
                "rendered_request_sha256": result.rendered_request_sha256 if result else None,
                **{
                    name: getattr(result, name) if result else None
                    for name in ("raw_response", "raw_response_source", "evidence_seen")
                },
                "attempts": jc.attempts,
                "reviewers_disagree": case.reviewers_disagree,
                "gold_record": record,
            }
        )
    return rows


# -- data ------------------------------------------------------------------------------------
def crowd_cases(
    seed: int, n: int = 80, labels: tuple[str, ...] = ("pass", "fail", "review_required")
):
    """Cases with 1-4 reviews each from a pool of six reviewers, in random slices and
    partitions (the rubric's slice ``empty`` has none; write them with :data:`CROWD`)."""
    rng = random.Random(seed)
    pool = [f"rev-{c}" for c in "fbdace"]
    cases = []
    for i in range(n):
        who = rng.sample(pool, rng.choice((1, 2, 2, 3, 4)))
        human = rng.choice(labels[:-1])
        reviews = {r: (human if rng.random() < 0.7 else rng.choice(labels)) for r in who}
        cases.append(
            make_case(
                f"c{i:03d}",
                human,
                reviews=reviews,
                slice=rng.choice(("billing", "general", "general")),
                partition=rng.choice(("development", "calibration", "held_out")),
            )
        )
    return cases


def judged(tmp_path: Path, make_dataset, seed: int) -> tuple[Path, Path]:
    """A gold of 90 cases and results with every outcome: verdicts of every class, errors,
    abstentions, retries, other repeats, missing results."""
    rng = random.Random(seed)
    cases = [
        make_case(
            f"j{i:03d}",
            rng.choice(("pass", "fail", "fail", "review_required")),
            slice=rng.choice(("billing", "general")),
            partition=rng.choice(("development", "calibration")),
            tags=rng.sample(["x", "y", "z"], rng.randint(0, 2)),
        )
        for i in range(90)
    ]
    gold = make_dataset(cases)
    rows = []
    for case in cases:
        roll = rng.random()
        if roll < 0.08:
            continue  # missing
        if roll < 0.15:
            rows.append(make_result(case, error=TIMEOUT))
            continue
        if roll < 0.25:  # a retry after a transient error
            rows.append(make_result(case, error={**TIMEOUT, "retryable": True}, attempt=1))
            rows.append(make_result(case, rng.choice(("pass", "fail")), attempt=2))
            continue
        request = {"messages": [{"role": "user", "content": f"judge {case['case_id']}"}]}
        rows.append(
            make_result(
                case,
                rng.choice(("pass", "fail", "review_required")),
                rendered_request=request,
                cost_usd=0.001,
            )
        )
        rows.append(make_result(case, "pass", repeat=1))
    return gold, write_results(tmp_path / "results.jsonl", stamped(rows, gold))


# -- agreement ------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("partition", [None, "development", "held_out"])
def test_agreement_from_the_index_equals_the_per_record_computation(make_dataset, seed, partition):
    gold = make_dataset(crowd_cases(seed), rubric=CROWD)
    for min_shared in (1, 5):
        expected = reference_agreement(gold, partition, min_shared).model_dump(mode="json")
        for source in (gold, gold_index(gold), load_dataset(gold)):
            got = human_agreement(source, partition, min_shared=min_shared)
            assert got.model_dump(mode="json") == expected  # every float to the last bit
            assert json.dumps(got.model_dump(mode="json")) == json.dumps(expected)


@pytest.mark.parametrize("seed", range(3))
def test_ordinal_agreement_from_the_index_equals_the_per_record_computation(make_dataset, seed):
    cases = crowd_cases(seed, labels=("1", "2", "3", "4", "n/a"))
    gold = make_dataset(cases, rubric=ORDINAL)
    expected = reference_agreement(gold, None, 1).model_dump(mode="json")
    assert expected["overall"]["krippendorff_alpha_ordinal"]["value"] is not None
    assert human_agreement(gold, min_shared=1).model_dump(mode="json") == expected


def test_cli_agreement_reads_the_index_and_prints_the_reference_figures(make_dataset):
    gold = make_dataset(crowd_cases(11), rubric=CROWD)
    out = CliRunner().invoke(main, ["agreement", str(gold), "--json", "--min-shared", "3"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output) == reference_agreement(gold, None, 3).model_dump(mode="json")


# -- gate -----------------------------------------------------------------------------------
def _gate_inputs(tmp_path: Path, make_dataset, seed: int) -> tuple[Path, Path, Path, Path]:
    gold, results = judged(tmp_path, make_dataset, seed)
    policy = tmp_path / "evidence-test@1.yaml"
    policy.write_text(yaml.safe_dump(POLICY), encoding="utf-8")
    overrides = tmp_path / "overrides.jsonl"
    flagged = flagged_cases(read_evidence(gold, results, partition="development").cases, ["x"])
    billing = flagged.get("billing", {}).get("false_pass", [])
    if billing:  # a critical false pass is waivable only by naming every one of its cases
        add_override(
            overrides,
            policy=load_policy(policy),
            approver="lead",
            reason="reviewed each case",
            expires_at="2027-01-01",
            follow_up="TICKET-1",
            codes=["false_passes_exceeded"],
            slices=["billing"],
            case_ids=billing,
            created_at=NOW,
        )
    return gold, results, policy, overrides


@pytest.mark.parametrize("seed", range(5))
def test_gate_from_the_index_equals_the_gate_from_records(tmp_path, make_dataset, seed):
    gold, results, policy, overrides = _gate_inputs(tmp_path, make_dataset, seed)
    expected = reference_gate(gold, results, policy, overrides, "development")
    evidence = read_evidence(gold, results, partition="development")
    got = evaluate_gate(
        evidence.report,
        load_policy(policy),
        rubric=evidence.index.rubric,
        overrides=load_overrides(overrides),
        flagged=flagged_cases(evidence.cases, evidence.index.rubric.abstain_labels),
        now=NOW,
        policy_sha256=policy_sha256(policy),
    )
    assert got.model_dump(mode="json") == expected.model_dump(mode="json")
    assert any(b.case_ids for b in got.blockers + [w.blocker for w in got.waived])


def test_cli_gate_prints_the_reference_gate(tmp_path, make_dataset):
    gold, results, policy, overrides = _gate_inputs(tmp_path, make_dataset, 1)
    expected = reference_gate(gold, results, policy, overrides, "development")
    out = CliRunner().invoke(
        main,
        ["gate", "--gold", str(gold), "--results", str(results), "--policy", str(policy)]
        + ["--partition", "development", "--overrides", str(overrides), "--json"],
    )
    got = json.loads(out.output)
    assert out.exit_code == expected.exit_code
    got.pop("evaluated_at"), (want := expected.model_dump(mode="json")).pop("evaluated_at")
    assert got == want


def test_the_columnar_cases_equal_the_per_record_join_cases(tmp_path, make_dataset):
    gold, results = judged(tmp_path, make_dataset, 3)
    for partition in (None, "development", "calibration"):
        evidence = read_evidence(gold, results, partition=partition)
        join = align_results(load_dataset(gold), results, partition=partition)
        reference = join_cases(join, gold_index(gold)).drop_columns(["shard"])
        assert evidence.cases.drop_columns(["shard"]).to_pylist() == reference.to_pylist()
        assert set(evidence.cases["shard"].drop_null().to_pylist()) == {0}


# -- one report, whichever way the evidence was read -----------------------------------------
NUMERIC = {**ORDINAL, "scale": "numeric", "labels": ["0", "1", "2.5", "4", "n/a"]}
NUMERIC["pass_labels"] = ["2.5", "4"]
SCALES = {"nominal": RUBRIC, "ordinal": ORDINAL, "numeric": NUMERIC}


def varied(make_dataset, scale: str, seed: int) -> tuple[Path, list[dict[str, Any]]]:
    """A small gold on ``scale`` and results with every outcome: verdicts of every class and
    abstentions, evaluator errors of several kinds, missing results, retries, verdicts reused
    from the cache, costs and tokens (some unreported), a second repeat, two partitions."""
    rng = random.Random(seed)
    rubric = SCALES[scale]
    labels = [str(label) for label in rubric["labels"]]
    cases = [
        make_case(
            f"v{i:03d}",
            rng.choice(labels[:-1]) if rng.random() < 0.9 else labels[-1],
            slice=rng.choice(("billing", "general", "general")),
            partition=rng.choice(("development", "calibration")),
        )
        for i in range(rng.randint(40, 70))
    ]
    gold = make_dataset(cases, rubric=rubric)
    rows: list[dict[str, Any]] = []
    for case in cases:
        roll = rng.random()
        spent = {
            "cost_usd": rng.choice((None, 0.0, round(rng.uniform(0, 0.01), 7), 0.1)),
            "tokens_in": rng.choice((None, rng.randint(1, 5000))),
            "tokens_out": rng.randint(0, 900),
        }
        if roll < 0.1:
            continue  # missing
        if roll < 0.2:
            kind = rng.choice(("timeout", "invalid_label", "rate_limited"))
            rows.append(make_result(case, error={**TIMEOUT, "kind": kind}, **spent))
        elif roll < 0.35:  # retried: an error first (maybe reused from the cache), then a verdict
            cached = {"cached_from_run_id": "run-0"} if rng.random() < 0.3 else {}
            retry = {**TIMEOUT, "retryable": True}
            rows.append(make_result(case, error=retry, attempt=1, **spent, **cached))
            rows.append(make_result(case, rng.choice(labels), attempt=2, **spent))
        elif roll < 0.45:  # a verdict reused from the cache: no call
            rows.append(make_result(case, rng.choice(labels), cached_from_run_id="run-0"))
        else:
            rows.append(make_result(case, rng.choice(labels), **spent))
        if rng.random() < 0.5:
            rows.append(make_result(case, rng.choice(labels), repeat=1, **spent))
    rng.shuffle(rows)  # the results' order is not the gold's
    return gold, stamped(rows, gold)


def _text(report: Any) -> str:
    return json.dumps(report.model_dump(mode="json"), sort_keys=True)


@pytest.mark.parametrize("scale", sorted(SCALES))
@pytest.mark.parametrize("seed", range(3))
def test_either_reading_gives_the_reference_report(tmp_path, make_dataset, scale, seed):
    """The columnar reading and the per-record join give identical cases and one report, equal
    to the report computed record by record (tests/report_reference.py)."""
    gold, rows = varied(make_dataset, scale, seed)
    results = write_results(tmp_path / "results.jsonl", rows)
    dataset, index = load_dataset(gold), gold_index(gold)
    for partition in (None, "development"):
        for repeat in (0, 1):
            where = {"gold_path": str(gold), "results_path": str(results)}
            join = align_results(dataset, results, partition=partition, repeat=repeat)
            expected = reference_report(join, **where)
            per_record = alignment_report(join, **where)
            found = evidence_columnar(
                index,
                results,
                partition=partition,
                repeat=repeat,
                allow_gold_change=False,
                partition_source=None,
                gold_path=str(gold),
            )
            assert found is not None, "valid input must stay on the columnar path"
            columnar, cases = found
            assert _text(per_record) == _text(expected) == _text(columnar)
            assert format_report(columnar) == format_report(expected)
            assert (columnar.overall.ordinal is not None) == (scale != "nominal")
            joined = join_cases(join, index).drop_columns(["shard"])
            assert cases.drop_columns(["shard"]).to_pylist() == joined.to_pylist()


@pytest.mark.parametrize("scale", sorted(SCALES))
def test_a_sampled_scope_gives_the_reference_report(make_dataset, scale):
    """Cases a declared plan left out leave the scope (those without a result) and are counted
    per slice; the report equals the reference computed record by record."""
    from workbench.results import scan_results

    gold, rows = varied(make_dataset, scale, 7)
    results = write_results(gold.parent / "sampled.jsonl", rows)
    dataset = load_dataset(gold)
    judged = {r["case_id"] for r in rows}
    left_out = [c for c in sorted(dataset.cases) if c not in judged][:4]
    left_out += sorted(judged)[:2]  # listed, but judged after all: they stay in scope
    join = join_results(dataset, scan_results(results), sampled_out=left_out)
    assert 0 < len(join.sampled_out) < len(left_out)
    report = alignment_report(join, results_path=str(results))
    assert _text(report) == _text(reference_report(join, results_path=str(results)))
    assert sum(s.sampled_out for s in report.slices) == report.overall.sampled_out > 0


# -- review table ---------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(3))
def test_review_table_rows_equal_the_per_record_rows(tmp_path, make_dataset, seed):
    gold, results = judged(tmp_path, make_dataset, seed)
    table = review_table(gold, results, partition="development")
    expected = reference_rows(gold, results, "development")
    assert len(table) == len(expected) > 20
    for position, row in enumerate(expected):
        assert table.row(position) == row
    # the frame holds every column but the deferred ones, which rows read
    frame = table.frame.drop(columns=list(DEFERRED))
    for column in frame.columns:
        assert [table.row(i)[column] for i in range(len(table))] == [r[column] for r in expected]
    assert list(table.frame.columns) == list(COLUMNS)
    assert table.frame[list(DEFERRED)].isna().all().all()


def test_review_table_search_finds_what_the_per_record_table_found(tmp_path, make_dataset):
    gold, results = judged(tmp_path, make_dataset, 4)
    table = review_table(gold, results, partition="development")
    rows = reference_rows(gold, results, "development")
    for term in ("policy", "matches", "because", "judge", "no answer", "j01"):
        words = term.split()
        expected = [
            all(
                w
                in "\n".join(
                    [
                        *(str(r[c]) for c in ("case_id", "input", "response") if r[c]),
                        *(r[c] for c in ("judge_reason", "error_message") if r[c]),
                        *(v["rationale"] for v in r["reviews"] if v.get("rationale")),
                        r["adjudication"]["reason"] or "",
                    ]
                ).casefold()
                for w in words
            )
            for r in rows
        ]
        assert table.search_mask(words).tolist() == expected, term


# -- attacks --------------------------------------------------------------------------------
def test_gold_edited_after_its_index_was_cached_is_never_served_stale(tmp_path, make_dataset):
    """The index is keyed by the dataset sha256: an edited gold is read again, so the gate
    refuses results produced against the old gold instead of judging them with old labels."""
    gold, results, policy, _ = _gate_inputs(tmp_path, make_dataset, 2)
    before = gold_index(gold)
    args = ["gate", "--gold", str(gold), "--results", str(results), "--policy", str(policy)]
    assert CliRunner().invoke(main, [*args, "--partition", "development"]).exit_code in (0, 1, 3, 4)
    agreement_before = human_agreement(gold)
    lines = (gold / "gold.jsonl").read_text(encoding="utf-8").splitlines()
    case = json.loads(lines[0])
    flipped = "pass" if case["adjudication"]["label"] != "pass" else "fail"
    case["adjudication"]["label"] = flipped
    case["reviews"][0]["label"] = flipped
    lines[0] = json.dumps(case)
    (gold / "gold.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    after = gold_index(gold)
    assert after.sha256 != before.sha256 and not after.from_cache
    assert after.table["label"][0].as_py() == flipped
    out = CliRunner().invoke(main, [*args, "--partition", "development"])
    assert out.exit_code == 2 and "gold_changed" in out.output, out.output
    with pytest.raises(WorkbenchError) as exc:
        review_table(gold, results, partition="development")
    assert exc.value.problems[0].code == "gold_changed"
    assert human_agreement(gold).dataset_sha256 == after.sha256 != agreement_before.dataset_sha256
    assert human_agreement(gold).model_dump(mode="json") == reference_agreement(
        gold, None, 10
    ).model_dump(mode="json")


def test_agreement_refuses_a_reviewer_twice_on_one_case():
    """Validation refuses it (duplicate_reviewer); the columnar figures would otherwise pair a
    reviewer with itself, so hand-built cases are refused too, never counted."""
    from workbench.agreement import agreement_block

    twice = GoldCase.model_validate(
        make_case("c1", reviews=[{"reviewer": "a", "label": "pass"}] * 2)
    )
    with pytest.raises(ValueError, match="reviews the same case twice"):
        agreement_block([twice], ["pass", "fail"])
