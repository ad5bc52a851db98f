"""Annotation mode (issue 29): blinded gold reviews collected, adjudicated into gold records that
`validate` and `agreement` accept."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from conftest import current_project, make_case

from workbench.annotation import BLINDED, Annotations, parse_span
from workbench.cli import main
from workbench.errors import WorkbenchError
from workbench.gold import GoldCase, load_dataset, validate_dataset

ROOT = Path(__file__).resolve().parents[1]
T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
PEOPLE = ["ann", "bo", "cy"]


def _reviewers(*names: str) -> None:
    path = current_project() / "workbench.yaml"
    config = yaml.safe_load(path.read_text()) if path.exists() else None
    config = config if isinstance(config, dict) else {}
    config["reviewers"] = list(names)
    path.write_text(yaml.safe_dump(config))


def _unlabelled(n: int = 5) -> list[dict]:
    out = []
    for i in range(n):
        case = make_case(f"c{i}", response=f"Refunds take 5 business days (case {i}).")
        for key in ("reviews", "adjudication", "rubric_version", "response_hash"):
            case.pop(key, None)
        case["metadata"] = {"generator": "gpt-secret-9", "candidate": "judge@2"}
        out.append(case)
    return out


@pytest.fixture
def queue(make_dataset) -> Annotations:
    _reviewers(*PEOPLE)
    gold = make_dataset([])
    annotations = Annotations(gold)
    annotations.queue(
        _unlabelled(), ["ann", "bo"], assigned_by="lead", training_version="t3", now=T0
    )
    return annotations


def test_every_case_goes_to_two_reviewers_and_each_sees_it_blind(queue: Annotations) -> None:
    assignments = queue.assignments()
    assert sorted((a.case_id, a.reviewer) for a in assignments) == sorted(
        (f"c{i}", who) for i in range(5) for who in ("ann", "bo")
    )
    assert {(a.assigned_at, a.training_version, a.assigned_by) for a in assignments} == {
        (T0, "t3", "lead")
    }
    shown = queue.next_for("ann")
    assert shown is not None and shown.case_id == "c0"
    text = shown.model_dump_json()
    # no model identity, no candidate, no metadata, no other review
    assert "gpt-secret-9" not in text and "judge@2" not in text and "metadata" not in text
    assert shown.labels == queue.rubric.labels and "pass" in shown.labels
    queue.submit("bo", "c0", "fail", now=T0)
    assert queue.next_for("ann") == shown  # the other reviewer's label changes nothing shown


def test_a_review_records_the_operations_and_the_cited_text(queue: Annotations) -> None:
    case = queue.cases()["c1"]
    span = parse_span('response:"5 business days"', case)
    assert span == {"field": "response", "start": 13, "end": 28, "text": "5 business days"}
    review = queue.submit(
        "ann",
        "c1",
        "pass",
        confidence="high",
        rationale="states the time",
        spans=[span],
        now=datetime(2026, 12, 1, 9, 5, tzinfo=UTC),
    )
    assert review.assigned_at == T0 and review.completed_at == datetime(
        2026, 12, 1, 9, 5, tzinfo=UTC
    )
    assert review.training_version == "t3" and review.blinded == list(BLINDED)
    assert review.spans[0].text == case.response[13:28]


def test_every_problem_of_a_review_is_refused_at_once(queue: Annotations) -> None:
    with pytest.raises(WorkbenchError) as refused:
        queue.submit(
            "cy",
            "c0",
            "maybe",
            spans=[{"field": "response", "start": 0, "end": 4, "text": "Nope"}],
            evidence=["ev-unknown"],
        )
    codes = sorted(p.code for p in refused.value.problems)
    assert codes == ["evidence_unknown", "label_unknown", "not_assigned", "span_mismatch"]
    queue.submit("ann", "c0", "pass")
    with pytest.raises(WorkbenchError) as twice:
        queue.submit("ann", "c0", "fail")
    assert [p.code for p in twice.value.problems] == ["already_reviewed"]
    assert len(queue.reviews()) == 1  # nothing was lost or replaced


def test_unknown_reviewers_and_labelled_cases_are_refused_together(make_dataset) -> None:
    _reviewers(*PEOPLE)
    queue = Annotations(make_dataset([]))
    labelled = make_case("done")
    with pytest.raises(WorkbenchError) as refused:
        queue.queue([labelled, {"case_id": "x"}], ["ann", "mallory"], assigned_by="lead")
    codes = {p.code for p in refused.value.problems}
    assert {"reviewer_unknown", "case_labelled", "case_invalid"} <= codes
    assert queue.cases() == {} and queue.assignments() == []


def test_adjudication_writes_gold_that_validate_and_agreement_accept(queue: Annotations) -> None:
    for i in range(5):
        queue.submit("ann", f"c{i}", "pass", now=T0)
        queue.submit("bo", f"c{i}", "fail" if i == 3 else "pass", escalate=i == 4, now=T0)
    states = {s.case_id: s.status for s in queue.status()}
    assert states == {
        "c0": "ready",
        "c1": "ready",
        "c2": "ready",
        "c3": "disagreement",
        "c4": "escalated",
    }
    with pytest.raises(WorkbenchError) as own:
        queue.adjudicate("c3", "fail", adjudicator="ann")
    assert [p.code for p in own.value.problems] == ["adjudicator_reviewed"]
    assert [c.case_id for c in queue.adjudicate_agreements("cy")] == ["c0", "c1", "c2"]
    queue.adjudicate("c3", "fail", adjudicator="cy", reason="the notes require the time")
    queue.adjudicate("c4", "pass", adjudicator="cy")
    dataset = load_dataset(queue.root)
    assert sorted(dataset.cases) == [f"c{i}" for i in range(5)]
    assert dataset.cases["c3"].gold_label == "fail"
    assert {r.reviewer for r in dataset.cases["c3"].reviews} == {"ann", "bo"}
    assert all(r.training_version == "t3" for c in dataset.cases.values() for r in c.reviews)
    with pytest.raises(WorkbenchError) as again:
        queue.adjudicate("c3", "pass", adjudicator="cy")
    assert [p.code for p in again.value.problems] == ["not_ready"]
    result = CliRunner().invoke(main, ["agreement", str(queue.root), "--json"])
    assert result.exit_code == 0, result.output
    overall = json.loads(result.output)["overall"]
    assert overall["cases"] == 5 and "disagree" in json.dumps(overall)


def test_a_cited_span_edited_in_the_gold_is_refused(queue: Annotations) -> None:
    span = parse_span('response:"5 business days"', queue.cases()["c0"])
    queue.submit("ann", "c0", "pass", spans=[span])
    queue.submit("bo", "c0", "pass")
    queue.adjudicate_agreements("cy")
    path = queue.gold_path
    path.write_text(
        path.read_text().replace('"text": "5 business days"', '"text": "6 business days"')
    )
    report = validate_dataset(queue.root)
    assert report.dataset is None
    assert [p.code for p in report.errors] == ["span_mismatch"]
    assert "reviewer ann's span response[13:28] is not the text '6 business days'" in (
        report.errors[0].message
    )
    assert GoldCase.model_fields["reviews"]  # the record carries them


def test_the_cli_walks_the_queue_and_refuses_with_exit_2(make_dataset, tmp_path: Path) -> None:
    _reviewers(*PEOPLE)
    gold = make_dataset([])
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps(c) + "\n" for c in _unlabelled(2)))
    run = CliRunner().invoke
    queued = run(
        main,
        [
            "annotate",
            "queue",
            "--gold",
            str(gold),
            str(cases),
            "--reviewers",
            "ann,bo",
            "--assigned-by",
            "lead",
        ],
    )
    assert queued.exit_code == 0 and "queued 2 case(s), 4 assignment(s)" in queued.output
    shown = run(main, ["annotate", "next", "--gold", str(gold), "--reviewer", "bo"])
    assert (
        shown.exit_code == 0
        and "case:      c0" in shown.output
        and "gpt-secret" not in shown.output
    )
    for who, label in (("ann", "pass"), ("bo", "fail")):
        for case in ("c0", "c1"):
            done = run(
                main,
                [
                    "annotate",
                    "submit",
                    "--gold",
                    str(gold),
                    "--reviewer",
                    who,
                    "--case",
                    case,
                    "--label",
                    label,
                    "--span",
                    "response:0:7",
                ],
            )
            assert done.exit_code == 0, done.output
    bad = run(
        main,
        [
            "annotate",
            "submit",
            "--gold",
            str(gold),
            "--reviewer",
            "bo",
            "--case",
            "c0",
            "--label",
            "nope",
            "--span",
            'input:"absent"',
        ],
    )
    assert bad.exit_code == 2 and "Traceback" not in bad.output
    assert "[label_unknown]" in bad.output and "[span_mismatch]" in bad.output
    assert "[already_reviewed]" in bad.output
    left = run(main, ["annotate", "next", "--gold", str(gold), "--reviewer", "bo"])
    assert left.exit_code == 1 and "no case left" in left.output
    mine = run(main, ["annotate", "status", "--gold", str(gold), "--reviewer", "ann", "--json"])
    assert json.loads(mine.output) == {"reviewers": {"ann": [2, 2]}, "cases": []}  # no labels
    status = run(main, ["annotate", "status", "--gold", str(gold)])
    assert "cases: disagreement 2" in status.output and "ann=pass, bo=fail" in status.output
    nothing = run(main, ["adjudicate", "--gold", str(gold), "--adjudicator", "cy"])
    assert nothing.exit_code == 2 and "[missing_option]" in nothing.output
    decided = run(
        main,
        [
            "adjudicate",
            "--gold",
            str(gold),
            "--adjudicator",
            "cy",
            "--case",
            "c0",
            "--label",
            "fail",
            "--reason",
            "misses the notes",
        ],
    )
    assert decided.exit_code == 0, decided.output
    valid = run(main, ["validate", str(gold)])
    assert valid.exit_code == 0 and "1 cases" in valid.output


def test_two_processes_submitting_the_same_review_record_it_once(queue: Annotations) -> None:
    script = (
        "import sys; from workbench.annotation import Annotations\n"
        "from workbench.errors import WorkbenchError\n"
        "try:\n"
        f"    Annotations({str(queue.root)!r}).submit('ann', 'c2', sys.argv[1])\n"
        "except WorkbenchError:\n"
        "    sys.exit(2)\n"
    )
    runs = [
        subprocess.Popen([sys.executable, "-c", script, label], cwd=ROOT)
        for label in ("pass", "fail")
    ]
    codes = sorted(p.wait(timeout=120) for p in runs)
    assert codes == [0, 2]
    assert [r.review.reviewer for r in queue.reviews()] == ["ann"]


def test_production_sampling_queues_abstentions_and_a_seeded_share(make_dataset, tmp_path) -> None:
    """Every abstention, error and missing verdict, and the policy's share of clear verdicts by a
    seeded draw (checked by hand: sha256 of "seed:case_id" as a fraction), blinded."""
    import hashlib

    from conftest import make_result

    from workbench.authority import SAMPLE_KEY, sample_production
    from workbench.policy import Policy

    _reviewers(*PEOPLE)
    gold = make_dataset([])
    cases = _unlabelled(40)
    values = ["review_required", None, *["pass"] * 37]  # c39: no result at all
    results = tmp_path / "prod.jsonl"
    lines = []
    for case, value in zip(cases, values, strict=False):
        error = {"kind": "provider_error", "message": "x"} if value is None else None
        full = make_case(case["case_id"], response=case["response"])
        lines.append(json.dumps(make_result(full, value, error=error, partition="production")))
    results.write_text("\n".join(lines) + "\n")
    source = tmp_path / "prod-cases.jsonl"
    source.write_text("".join(json.dumps(c) + "\n" for c in cases))
    base = {
        "schema_version": 2,
        "name": "p",
        "version": "1",
        "owner": "o",
        "rationale": "r",
        "rubric_version": "r1",
        "slices": {"general": {"risk": "low"}},
    }
    with pytest.raises(WorkbenchError) as undeclared:
        sample_production(
            gold,
            Policy.model_validate(base),
            "rubric-judge@1",
            results,
            source,
            reviewers=["ann", "bo"],
            assigned_by="lead",
        )
    assert [p.code for p in undeclared.value.problems] == ["sample_share_undeclared"]
    policy = Policy.model_validate({**base, "sample_agreements": 0.25})
    counts = sample_production(
        gold,
        policy,
        "rubric-judge@1",
        results,
        source,
        seed=7,
        reviewers=["ann", "bo"],
        assigned_by="lead",
    )

    def drawn(case_id: str) -> bool:
        digest = hashlib.sha256(f"7:{case_id}".encode()).hexdigest()
        return int(digest[:12], 16) / 16**12 < 0.25

    expected = sum(drawn(f"c{i}") for i in range(2, 39))
    assert counts == {
        "abstention": 1,
        "evaluator_error": 1,
        "missing": 1,
        "sampled_agreement": expected,
    }
    queued = Annotations(gold).cases()
    assert {c.partition.value for c in queued.values()} == {"calibration"}
    assert queued["c0"].metadata[SAMPLE_KEY]["reason"] == "abstention"
    shown = Annotations(gold).blinded("c0").model_dump_json()
    assert SAMPLE_KEY not in shown and 'review_required"' not in shown.split("labels")[0]
    with pytest.raises(WorkbenchError) as other:
        sample_production(
            gold, policy, "someone@9", results, source, reviewers=["ann", "bo"], assigned_by="lead"
        )
    assert [p.code for p in other.value.problems] == ["judge_mismatch"]


def test_validate_strict_requires_a_criterion_and_complete_reviews(
    queue: Annotations, make_dataset
) -> None:
    """Issue 30: `init` wrote `criterion: ""` and --strict passed; reviews without confidence,
    rationale or cited spans passed too. A gold collected with `annotate` passes."""
    from conftest import RUBRIC

    run = CliRunner().invoke
    for i in range(5):
        for who in ("ann", "bo"):
            span = parse_span('response:"5 business days"', queue.cases()[f"c{i}"])
            queue.submit(
                who, f"c{i}", "pass", confidence="high", rationale="says when", spans=[span]
            )
    queue.adjudicate_agreements("cy")
    # the rubric's whole judgment contract too (tests/test_rubric_contract.py)
    from test_rubric_contract import CONTRACT

    rubric_path = queue.root / "rubric.yaml"
    rubric_path.write_text(yaml.safe_dump({**yaml.safe_load(rubric_path.read_text()), **CONTRACT}))
    complete = run(main, ["validate", "--strict", str(queue.root)])
    assert complete.exit_code == 0, complete.output
    _reviewers(*PEOPLE, "rev-a", "rev-b", "adj-1")  # make_case's reviewers
    bare = make_dataset([make_case("a")], rubric={**RUBRIC, "criterion": ""})
    assert run(main, ["validate", str(bare)]).exit_code == 0  # not strict: warnings only
    refused = run(main, ["validate", "--strict", str(bare)])
    assert refused.exit_code == 2
    assert "[rubric_no_criterion]" in refused.output and "[review_incomplete]" in refused.output
    assert "rev-a: confidence, rationale, spans" in refused.output


# -- insider attacks ---------------------------------------------------------------------------


@pytest.mark.parametrize("attack", ["edit", "delete", "insert"])
def test_an_edited_annotation_log_is_refused_before_anything_is_adjudicated(
    queue: Annotations, attack: str
) -> None:
    """An insider flips a reviewer's label (or drops or adds a line) in reviews.jsonl so that the
    reviewers seem to agree: the logs are hash-chained, so the next read refuses them."""
    queue.submit("ann", "c0", "pass")
    queue.submit("bo", "c0", "fail")
    path = queue.dir / "reviews.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    if attack == "edit":
        lines[1] = (
            lines[1]
            .replace('"label":"fail"', '"label":"pass"')
            .replace('"label": "fail"', '"label": "pass"')
        )
        assert lines[1] != path.read_text().splitlines(keepends=True)[1]
    elif attack == "delete":  # (dropping the last line only undoes that review: the case is
        del lines[0]  # back in review, nothing agrees that did not; a chain cannot see it)
    else:
        lines.insert(1, lines[0].replace('"ann"', '"cy"'))
    path.write_text("".join(lines))
    for act in (queue.status, lambda: queue.adjudicate_agreements("cy")):
        with pytest.raises(WorkbenchError) as refused:
            act()
        assert {p.code for p in refused.value.problems} == {"annotation_chain_broken"}
    assert not queue.gold_path.read_text().strip()  # nothing reached the gold


def test_two_adjudicators_racing_on_one_case_write_one_gold_record(queue: Annotations) -> None:
    queue.submit("ann", "c1", "pass")
    queue.submit("bo", "c1", "fail")
    script = (
        "import sys; from workbench.annotation import Annotations\n"
        "from workbench.errors import WorkbenchError\n"
        "try:\n"
        f"    Annotations({str(queue.root)!r}).adjudicate('c1', sys.argv[1], adjudicator='cy')\n"
        "except WorkbenchError:\n"
        "    sys.exit(2)\n"
    )
    runs = [subprocess.Popen([sys.executable, "-c", script, v], cwd=ROOT) for v in ("pass", "fail")]
    assert sorted(p.wait(timeout=120) for p in runs) == [0, 2]
    assert [c.case_id for c in load_dataset(queue.root).records] == ["c1"]


def test_spans_added_to_a_frozen_demo_review_are_refused(tmp_path: Path) -> None:
    """Review fields added after a freeze are hashed only when set: setting one on a frozen
    record is an in-place edit like any other."""
    import shutil

    gold = tmp_path / "gold"
    shutil.copytree(ROOT / "data" / "demo", gold)
    path = gold / "gold.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    first = records[0]
    text = first["response"][:10]
    first["reviews"][0]["spans"] = [{"field": "response", "start": 0, "end": 10, "text": text}]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    report = validate_dataset(gold)
    assert [p.code for p in report.errors] == ["frozen_case_edited"]
    assert "reviews changed" in report.errors[0].message


def test_a_judge_that_always_abstains_sends_every_case_to_people(make_dataset, tmp_path) -> None:
    from conftest import make_result

    from workbench.authority import production_findings, sample_production
    from workbench.policy import Policy

    _reviewers(*PEOPLE)
    gold = make_dataset([])
    cases = _unlabelled(6)
    results = tmp_path / "prod.jsonl"
    results.write_text(
        "".join(
            json.dumps(
                make_result(
                    make_case(c["case_id"], response=c["response"]),
                    "review_required",
                    partition="production",
                )
            )
            + "\n"
            for c in cases
        )
    )
    source = tmp_path / "cases.jsonl"
    source.write_text("".join(json.dumps(c) + "\n" for c in cases))
    policy = Policy.model_validate(
        {
            "schema_version": 2,
            "name": "p",
            "version": "1",
            "owner": "o",
            "rationale": "r",
            "rubric_version": "r1",
            "slices": {"general": {"risk": "low"}},
            "sample_agreements": 0.01,
        }
    )
    counts = sample_production(
        gold, policy, "rubric-judge@1", results, source, reviewers=["ann", "bo"], assigned_by="lead"
    )
    assert counts == {"abstention": 6}  # no agreement drawn at 1%, every abstention reviewed
    queue = Annotations(gold)
    for i in range(6):
        queue.submit("ann", f"c{i}", "fail")
        queue.submit("bo", f"c{i}", "fail")
    queue.adjudicate_agreements("cy")
    assert production_findings(gold, "rubric-judge@1") == []  # an abstention is never a pass
