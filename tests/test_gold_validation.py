"""Gold dataset validation: one test per problem, all-at-once reporting, corrections."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import RUBRIC, make_case, sha256_hex

from workbench.errors import Problem, WorkbenchError
from workbench.gold import card_statistics, load_dataset, validate_dataset


def problems_of(root: Path, code: str) -> list[Problem]:
    report = validate_dataset(root)
    assert report.dataset is None and not report.ok
    return [p for p in report.problems if p.code == code]


def only(root: Path, code: str, line: int, case_id: str | None) -> Problem:
    """The single problem with ``code``; checks its location, case id and fix."""
    found = problems_of(root, code)
    assert len(found) == 1, [p.format() for p in validate_dataset(root).problems]
    problem = found[0]
    assert problem.location == f"{root / 'gold.jsonl'}:{line}"
    assert problem.case_id == case_id
    assert problem.severity == "error"
    assert problem.fix.strip()
    assert problem.message.strip()
    return problem


def test_valid_dataset_loads_with_no_problems(make_dataset):
    root = make_dataset([make_case("c1"), make_case("c2", "fail", slice="billing")])
    report = validate_dataset(root)
    assert report.ok and report.problems == ()
    assert list(report.dataset.cases) == ["c1", "c2"]
    assert report.dataset.evidence_ids == frozenset({"ev-1", "ev-2"})


def test_missing_card_is_a_warning_not_an_error(make_dataset):
    root = make_dataset([make_case("c1")], card=None)
    report = validate_dataset(root)
    assert report.ok and report.dataset is not None
    assert [p.code for p in report.problems] == ["card_missing"]
    assert report.problems[0].severity == "warning"


def test_malformed_json_line(make_dataset):
    root = make_dataset([make_case("c1"), '{"case_id": "c2", ', make_case("c3")])
    only(root, "malformed_json", 2, None)


def test_json_line_that_is_not_an_object(make_dataset):
    root = make_dataset([make_case("c1"), "[1, 2]"])
    only(root, "malformed_json", 2, None)


def test_missing_required_field(make_dataset):
    case = make_case("c1")
    del case["response"]
    problem = only(make_dataset([case]), "missing_field", 1, "c1")
    assert "'response'" in problem.message


def test_missing_field_inside_a_review(make_dataset):
    case = make_case("c1", reviews=[{"reviewer": "rev-a", "label": "pass"}, {"reviewer": "rev-b"}])
    problem = only(make_dataset([case]), "missing_field", 1, "c1")
    assert "reviews.1.label" in problem.message


def test_duplicate_case_id(make_dataset):
    root = make_dataset([make_case("c1"), make_case("c2"), make_case("c1", response="other")])
    problem = only(root, "duplicate_case_id", 3, "c1")
    assert "line 1" in problem.message


def test_unknown_partition(make_dataset):
    problem = only(
        make_dataset([make_case("c1", partition="staging")]), "unknown_partition", 1, "c1"
    )
    assert "staging" in problem.message


def test_unknown_slice(make_dataset):
    problem = only(make_dataset([make_case("c1", slice="shipping")]), "unknown_slice", 1, "c1")
    assert "shipping" in problem.message


def test_unknown_label_in_a_review(make_dataset):
    case = make_case("c1", reviews={"rev-a": "pass", "rev-b": "maybe"})
    problem = only(make_dataset([case]), "unknown_label", 1, "c1")
    assert "reviews[1]" in problem.message and "maybe" in problem.message


def test_unknown_label_in_the_adjudication(make_dataset):
    case = make_case("c1", adjudication={"label": "maybe"})
    problem = only(make_dataset([case]), "unknown_label", 1, "c1")
    assert problem.message.startswith("adjudication")


def test_response_hash_mismatch(make_dataset):
    case = make_case("c1", response_hash=sha256_hex("the text before an edit"))
    problem = only(make_dataset([case]), "response_hash_mismatch", 1, "c1")
    # the fix names the correct hash, computed here independently
    assert sha256_hex("response for c1") in problem.fix


def test_disagreement_without_adjudication(make_dataset):
    case = make_case("c1", reviews={"rev-a": "pass", "rev-b": "fail"}, adjudication=None)
    root = make_dataset([make_case("c0"), case])
    problem = only(root, "unresolved_disagreement", 2, "c1")
    assert "rev-a=pass" in problem.message and "rev-b=fail" in problem.message
    assert problems_of(root, "no_adjudication") == []


def test_agreement_without_adjudication(make_dataset):
    root = make_dataset([make_case("c1", adjudication=None)])
    only(root, "no_adjudication", 1, "c1")
    assert problems_of(root, "unresolved_disagreement") == []


def test_fewer_reviews_than_min_reviews(make_dataset):
    problem = only(
        make_dataset([make_case("c1", reviews={"rev-a": "pass"})]), "too_few_reviews", 1, "c1"
    )
    assert "1 review" in problem.message and "requires 2" in problem.message


def test_min_reviews_comes_from_the_rubric(make_dataset):
    rubric = {**RUBRIC, "min_reviews": 1}
    assert validate_dataset(
        make_dataset([make_case("c1", reviews={"rev-a": "pass"})], rubric=rubric)
    ).ok


def test_duplicate_reviewer(make_dataset):
    case = make_case("c1", reviews=[{"reviewer": "rev-a", "label": "pass"}] * 2)
    only(make_dataset([case]), "duplicate_reviewer", 1, "c1")


def test_group_leakage(make_dataset):
    root = make_dataset(
        [
            make_case("c0"),
            make_case("c1", group="g", partition="development"),
            make_case("c2", group="g", partition="held_out"),
        ]
    )
    problem = only(root, "group_leakage", 2, None)
    assert "development" in problem.message and "held_out" in problem.message


def test_group_leakage_is_found_even_when_the_line_has_another_defect(make_dataset):
    root = make_dataset(
        [make_case("c1", group="g"), make_case("c2", group="g", partition="calibration", bogus=1)]
    )
    only(root, "group_leakage", 1, None)
    only(root, "unknown_field", 2, "c2")


def test_case_evidence_not_in_snapshot(make_dataset):
    root = make_dataset([make_case("c1", evidence=["ev-1", "ev-404"])])
    problem = only(root, "unresolved_evidence", 1, "c1")
    assert "ev-404" in problem.message


def test_review_evidence_not_in_snapshot(make_dataset):
    reviews = [
        {"reviewer": "rev-a", "label": "pass", "evidence": ["ev-2"]},
        {"reviewer": "rev-b", "label": "pass", "evidence": ["ev-999"]},
    ]
    problem = only(make_dataset([make_case("c1", reviews=reviews)]), "unresolved_evidence", 1, "c1")
    assert "ev-999" in problem.message


def test_declared_snapshot_that_does_not_exist(make_dataset):
    report = validate_dataset(make_dataset([make_case("c1")], evidence=None))
    assert [p.code for p in report.errors] == ["evidence_snapshot_missing"]


def test_supersedes_pointing_nowhere(make_dataset):
    root = make_dataset([make_case("c1"), make_case("c2", supersedes="c-gone")])
    problem = only(root, "supersedes_unknown", 2, "c2")
    assert "c-gone" in problem.message


def test_supersedes_cycle_of_two(make_dataset):
    shared = "same response"
    root = make_dataset(
        [
            make_case("a", response=shared, group="g", supersedes="b"),
            make_case("b", response=shared, group="g", supersedes="a"),
        ]
    )
    problem = only(root, "supersedes_cycle", 1, "a")
    assert "a -> b -> a" in problem.message


def test_supersedes_itself(make_dataset):
    root = make_dataset([make_case("c0"), make_case("a", supersedes="a")])
    only(root, "supersedes_cycle", 2, "a")


def test_fork_two_corrections_of_one_record(make_dataset):
    shared = "same response"
    root = make_dataset(
        [
            make_case("a", response=shared, group="g"),
            make_case("b", response=shared, group="g", supersedes="a"),
            make_case("c", response=shared, group="g", supersedes="a"),
        ]
    )
    problem = only(root, "supersedes_fork", 3, "a")
    assert "b (line 2)" in problem.message and "c (line 3)" in problem.message


def test_correction_moving_partition(make_dataset):
    shared = "same response"
    root = make_dataset(
        [
            make_case("a", response=shared, group="g1", partition="development"),
            make_case("b", response=shared, group="g2", partition="held_out", supersedes="a"),
        ]
    )
    problem = only(root, "correction_moves_partition", 2, "b")
    assert "development" in problem.message and "held_out" in problem.message


def test_correction_changing_response(make_dataset):
    root = make_dataset([make_case("a", group="g"), make_case("b", group="g", supersedes="a")])
    only(root, "correction_changes_response", 2, "b")


def test_rubric_version_mismatch(make_dataset):
    problem = only(
        make_dataset([make_case("c1", rubric_version="r0")]), "rubric_version_mismatch", 1, "c1"
    )
    assert "'r0'" in problem.message and "'r1'" in problem.message


def test_unknown_field(make_dataset):
    problem = only(make_dataset([make_case("c1", lable="pass")]), "unknown_field", 1, "c1")
    assert "lable" in problem.message


def test_missing_grading_evidence(make_dataset):
    only(make_dataset([make_case("c1", grading_notes=None)]), "missing_grading_evidence", 1, "c1")


def test_many_defects_are_all_reported_in_one_call(make_dataset):
    same = "shared response"
    lines = [
        make_case("ok"),  # 1
        "{broken",  # 2
        make_case("ok", response="dup"),  # 3 duplicate_case_id
        make_case("p", partition="staging"),  # 4 unknown_partition
        make_case("s", slice="shipping"),  # 5 unknown_slice
        make_case("l", reviews={"rev-a": "pass", "rev-b": "maybe"}),  # 6 unknown_label
        make_case("h", response_hash="0" * 64),  # 7 response_hash_mismatch
        make_case("d", reviews={"rev-a": "pass", "rev-b": "fail"}, adjudication=None),  # 8
        make_case("n", adjudication=None),  # 9 no_adjudication
        make_case("r", reviews={"rev-a": "pass"}),  # 10 too_few_reviews
        make_case("e", evidence=["ev-404"]),  # 11 unresolved_evidence
        make_case("u", supersedes="nowhere"),  # 12 supersedes_unknown
        make_case("v", rubric_version="r0"),  # 13 rubric_version_mismatch
        make_case("f", extra_field=True),  # 14 unknown_field
        make_case("x", group="leak", partition="development"),  # 15 group_leakage
        make_case("y", group="leak", partition="held_out"),  # 16
        make_case("self", supersedes="self"),  # 17 supersedes_cycle
        make_case("base", response=same, group="fam"),  # 18
        make_case("fix1", response=same, group="fam", supersedes="base"),  # 19
        make_case("fix2", response=same, group="fam", supersedes="base"),  # 20 supersedes_fork
        make_case(
            "moved", response=same, group="fam2", partition="calibration", supersedes="fix1"
        ),  # 21
        make_case("newtext", group="fam", supersedes="fix2"),  # 22 correction_changes_response
    ]
    root = make_dataset(lines)
    report = validate_dataset(root)  # must not raise
    gold = root / "gold.jsonl"
    found = {(p.code, p.location) for p in report.errors}
    expected = {
        ("malformed_json", 2),
        ("duplicate_case_id", 3),
        ("unknown_partition", 4),
        ("unknown_slice", 5),
        ("unknown_label", 6),
        ("response_hash_mismatch", 7),
        ("unresolved_disagreement", 8),
        ("no_adjudication", 9),
        ("too_few_reviews", 10),
        ("unresolved_evidence", 11),
        ("supersedes_unknown", 12),
        ("rubric_version_mismatch", 13),
        ("unknown_field", 14),
        ("group_leakage", 15),
        ("supersedes_cycle", 17),
        ("supersedes_fork", 20),
        ("correction_moves_partition", 21),
        ("correction_changes_response", 22),
    }
    assert {(code, f"{gold}:{line}") for code, line in expected} <= found
    assert report.dataset is None
    with pytest.raises(WorkbenchError) as exc:
        load_dataset(root)
    assert exc.value.problems == report.errors
    text = str(exc.value)
    assert all(code in text for code, _ in expected)


@pytest.mark.parametrize(
    "gold_bytes",
    [b"", b"\n\n", b"\x00\xff\xfe\xfa garbage \x81\n", b"\x89PNG\r\n\x1a\n\x00\x00"],
    ids=["empty", "blank", "binary", "png"],
)
def test_validate_never_raises_on_garbage_gold(make_dataset, gold_bytes):
    root = make_dataset([])
    (root / "gold.jsonl").write_bytes(gold_bytes)
    report = validate_dataset(root)
    assert not report.ok and report.dataset is None
    assert all(p.fix.strip() for p in report.errors)


def test_binary_line_is_reported_as_not_utf8(make_dataset):
    root = make_dataset([make_case("c1"), b"\xff\xfe\x00bad"])
    only(root, "not_utf8", 2, None)


def test_empty_gold_file_is_an_error(make_dataset):
    root = make_dataset([])
    report = validate_dataset(root)
    assert [p.code for p in report.errors] == ["gold_empty"]
    assert report.errors[0].location == str(root / "gold.jsonl")


@pytest.mark.parametrize(
    ("rubric_text", "code"),
    [
        (None, "rubric_missing"),
        ("labels: [pass, fail\nslices: {", "rubric_yaml"),
        ("- just\n- a list\n", "rubric_shape"),
        ("name: x\nversion: r1\nlabels: [pass]\nslices: {}\n", "rubric_invalid"),
        (b"name: \xff\xfe\n", "rubric_encoding"),
    ],
    ids=["missing", "bad-yaml", "not-mapping", "invalid", "not-utf8"],
)
def test_validate_never_raises_on_bad_rubric(make_dataset, rubric_text, code):
    root = make_dataset([make_case("c1")])
    if rubric_text is None:
        (root / "rubric.yaml").unlink()
    elif isinstance(rubric_text, bytes):
        (root / "rubric.yaml").write_bytes(rubric_text)
    else:
        (root / "rubric.yaml").write_text(rubric_text)
    report = validate_dataset(root)
    assert not report.ok and report.dataset is None
    assert code in {p.code for p in report.errors}
    assert all(p.fix.strip() for p in report.errors)


def test_rubric_yaml_error_has_a_line_number(make_dataset):
    root = make_dataset([make_case("c1")], rubric="name: x\nversion: r1\nlabels: [a, b\n")
    (problem,) = [p for p in validate_dataset(root).errors if p.code == "rubric_yaml"]
    path, _, line = problem.location.rpartition(":")
    assert path == str(root / "rubric.yaml") and line.isdigit()


@pytest.mark.parametrize(
    "card",
    [
        "---\nintended_use: [: bad\n---\n",
        "---\nintended_use: {a: 1}\nknown_gaps: 3\n---\n",
        b"\xff\xfe",
    ],
    ids=["bad-yaml", "wrong-types", "not-utf8"],
)
def test_validate_never_raises_on_bad_card(make_dataset, card):
    root = make_dataset([make_case("c1")], card=None)
    path = root / "card.md"
    path.write_bytes(card) if isinstance(card, bytes) else path.write_text(card)
    report = validate_dataset(root)
    # a bad card is documentation debt: reported as a warning, the data still loads
    assert report.ok and report.dataset is not None
    assert report.problems and all(p.severity == "warning" for p in report.problems)


def test_validate_never_raises_on_bad_evidence_snapshot(make_dataset):
    root = make_dataset([make_case("c1", evidence=["ev-1"])])
    (root / "evidence.jsonl").write_bytes(b'{"id": "ev-1"}\n\xff\xfe\n{"id": "ev-1"}\n')
    report = validate_dataset(root)
    codes = {(p.code, p.location.rpartition(":")[2]) for p in report.errors}
    assert ("evidence_duplicate_id", "3") in codes
    assert any(code.startswith("evidence_") and line == "2" for code, line in codes)


def test_missing_gold_file(tmp_path):
    report = validate_dataset(tmp_path)
    assert [p.code for p in report.errors] == ["gold_missing"]


def test_correction_chain_resolves_to_the_latest_record(make_dataset):
    shared = "the reviewed response"
    root = make_dataset(
        [
            make_case("A", "pass", response=shared, group="g"),
            make_case("other", "pass"),
            make_case("B", "pass", response=shared, group="g", supersedes="A"),
            make_case("C", "fail", response=shared, group="g", supersedes="B"),
        ]
    )
    dataset = load_dataset(root)
    assert list(dataset.cases) == ["other", "C"]
    assert [c.case_id for c in dataset.history["C"]] == ["A", "B"]
    assert dataset.superseded_by == {"A": "C", "B": "C"}
    assert dataset.latest_id("A") == "C" and dataset.latest_id("other") == "other"
    assert len(dataset.records) == 4
    stats = card_statistics(dataset)
    # active cases: other (pass) and C (fail); A and B (both pass) must not count
    assert stats["by_label"] == {"fail": 1, "pass": 1}
    assert stats["cases"] == 2 and stats["records"] == 4 and stats["superseded_records"] == 2
    assert stats["by_partition_slice_label"] == {"development": {"general": {"fail": 1, "pass": 1}}}


def test_partition_lists_active_cases_only(make_dataset):
    shared = "x"
    root = make_dataset(
        [
            make_case("a", response=shared, group="g", partition="calibration"),
            make_case("b", partition="held_out"),
            make_case("a2", response=shared, group="g", partition="calibration", supersedes="a"),
        ]
    )
    dataset = load_dataset(root)
    assert [c.case_id for c in dataset.partition("calibration")] == ["a2"]
    assert [c.case_id for c in dataset.partition("held_out")] == ["b"]
    assert dataset.partition("development") == []
    assert [c.case_id for c in dataset.partition(None)] == ["b", "a2"]


def test_dataset_hash_changes_with_the_gold_file(make_dataset):
    first = load_dataset(make_dataset([make_case("c1")])).sha256
    again = load_dataset(make_dataset([make_case("c1")])).sha256
    other = load_dataset(make_dataset([make_case("c1", "fail")])).sha256
    assert first == again != other


def test_evidence_cited_without_a_declared_snapshot(make_dataset):
    rubric = {k: v for k, v in RUBRIC.items() if k != "evidence_snapshot"}
    assert validate_dataset(make_dataset([make_case("c1")], rubric=rubric)).ok
    root = make_dataset([make_case("c1"), make_case("c2", evidence=["ev-1"])], rubric=rubric)
    only(root, "unresolved_evidence", 2, "c2")


@pytest.mark.parametrize(
    "change",
    [
        {"pass_label": "ok"},
        {"fail_label": None},
        {"abstain_labels": ["pass"]},
        {"labels": ["pass", "fail", "pass"]},
        {"min_reviews": 0},
        {"slices": {}},
        {"colour": "blue"},
    ],
    ids=[
        "pass-not-in-labels",
        "half-pass-fail",
        "abstain-is-pass",
        "dup-labels",
        "min-reviews",
        "no-slices",
        "unknown-key",
    ],
)
def test_inconsistent_rubric_is_reported(make_dataset, change):
    report = validate_dataset(make_dataset([make_case("c1")], rubric={**RUBRIC, **change}))
    # every problem at once: dup-labels also leaves the abstain label out of the vocabulary
    assert {p.code for p in report.errors} == {"rubric_invalid"}
    assert report.errors[0].location == str(report.path.parent / "rubric.yaml")


def test_problem_format_names_location_case_code_and_fix(make_dataset):
    root = make_dataset([make_case("c1", slice="shipping")])
    (problem,) = validate_dataset(root).errors
    text = problem.format()
    assert text.startswith(f"{root / 'gold.jsonl'}:1: case c1: error: ")
    assert "[unknown_slice]" in text and text.endswith(f"Fix: {problem.fix}")


def test_card_statistics_by_hand(make_dataset):
    cases = [
        make_case("c1", "pass", reviews={"a": "pass", "b": "pass"}),
        make_case("c2", "fail", reviews={"a": "pass", "b": "fail", "c": "fail"}, slice="billing"),
        make_case("c3", "fail", reviews={"a": "pass", "c": "pass"}, partition="held_out"),
    ]
    stats = card_statistics(load_dataset(make_dataset(cases)))
    assert stats["by_partition"] == {"development": 2, "held_out": 1}
    assert stats["reviewers"] == {"a": 3, "b": 2, "c": 2}
    assert stats["reviews_per_case"] == {"2": 2, "3": 1}
    # only c2 has disagreeing reviewers: 1 of 3
    assert stats["disagreement"] == {"cases": 1, "n": 3, "rate": pytest.approx(1 / 3)}
    # c3: both reviewers said pass, the adjudicator decided fail
    assert stats["adjudication_overrode_unanimous"] == 1
    assert stats["groups"] == 3
