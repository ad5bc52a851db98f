"""The judge-result contract and its reader."""

from __future__ import annotations

import pytest
from conftest import JUDGE, canonical_sha256, fingerprint, make_case, make_result, write_results
from pydantic import ValidationError

from workbench.errors import WorkbenchError
from workbench.results import ERROR_KINDS, JudgeIdentity, JudgeResult, read_results

CASE = make_case("c1")
TIMEOUT = {"kind": "timeout", "message": "no answer in 30 s"}


def codes_by_line(exc: WorkbenchError) -> dict[int, str]:
    return {int(p.location.rpartition(":")[2]): p.code for p in exc.problems}


def test_fingerprint_is_sha256_of_canonical_identity():
    identity = JudgeIdentity.model_validate(JUDGE)
    assert identity.fingerprint() == fingerprint(JUDGE)
    # defaults are part of the identity: omitting them gives the same fingerprint
    assert JudgeIdentity(
        name="rubric-judge", version="1", kind="imported"
    ).fingerprint() == fingerprint(JUDGE)
    assert JudgeIdentity.model_validate({**JUDGE, "model": "gpt-x"}).fingerprint() != fingerprint(
        JUDGE
    )


def test_verdict_and_error_results_are_valid():
    assert JudgeResult.model_validate(make_result(CASE, "fail")).value == "fail"
    errored = JudgeResult.model_validate(make_result(CASE, error=TIMEOUT))
    assert errored.is_error and errored.value is None


def test_value_and_error_together_are_refused():
    with pytest.raises(ValidationError, match="errors are never verdicts"):
        JudgeResult.model_validate({**make_result(CASE, "pass"), "error": TIMEOUT})


def test_neither_value_nor_error_is_refused():
    with pytest.raises(ValidationError, match="needs a value"):
        JudgeResult.model_validate(make_result(CASE, None))


def test_rendered_request_hash_is_checked(tmp_path):
    request = {"messages": [{"role": "user", "content": "Grade: é"}]}
    good = make_result(
        CASE, rendered_request=request, rendered_request_sha256=canonical_sha256(request)
    )
    bad = {**good, "rendered_request_sha256": canonical_sha256({"messages": []})}
    assert JudgeResult.model_validate(good).request_hash_matches() is True
    assert JudgeResult.model_validate(bad).request_hash_matches() is False
    assert JudgeResult.model_validate(make_result(CASE)).request_hash_matches() is None
    path = write_results(tmp_path / "r.jsonl", [good, bad])
    with pytest.raises(WorkbenchError) as exc:
        read_results(path, verify_requests=True)
    assert codes_by_line(exc.value) == {2: "request_hash_mismatch"}


@pytest.mark.parametrize(
    "override",
    [
        {"response_hash": "abc"},
        {"attempt": 0},
        {"repeat": -1},
        {"latency_s": -1.0},
        {"case_id": ""},
    ],
)
def test_field_constraints(override):
    with pytest.raises(ValidationError):
        JudgeResult.model_validate(make_result(CASE, **override))


def test_read_results_returns_lines_with_their_numbers(tmp_path):
    path = write_results(
        tmp_path / "r.jsonl", [make_result(CASE), "", make_result(CASE, error=TIMEOUT, attempt=2)]
    )
    lines = read_results(path)
    assert [(x.line, x.result.attempt) for x in lines] == [(1, 1), (3, 2)]


def test_fingerprint_mismatch_is_detected(tmp_path):
    row = make_result(CASE)
    row["judge"] = {**row["judge"], "version": "2"}  # edited identity, stale fingerprint
    with pytest.raises(WorkbenchError) as exc:
        read_results(write_results(tmp_path / "r.jsonl", [make_result(CASE), row]))
    (problem,) = exc.value.problems
    assert problem.code == "fingerprint_mismatch"
    assert problem.location == f"{tmp_path / 'r.jsonl'}:2" and problem.case_id == "c1"
    assert problem.fix


def test_unknown_error_kind(tmp_path):
    assert "gremlins" not in ERROR_KINDS
    row = make_result(CASE, error={"kind": "gremlins", "message": "?"})
    with pytest.raises(WorkbenchError) as exc:
        read_results(write_results(tmp_path / "r.jsonl", [row]))
    assert codes_by_line(exc.value) == {1: "unknown_error_kind"}


@pytest.mark.parametrize("kind", ERROR_KINDS)
def test_every_documented_error_kind_is_accepted(tmp_path, kind):
    row = make_result(CASE, error={"kind": kind, "message": "m"})
    assert read_results(write_results(tmp_path / "r.jsonl", [row]))[0].result.error.kind == kind


def test_malformed_line(tmp_path):
    with pytest.raises(WorkbenchError) as exc:
        read_results(
            write_results(tmp_path / "r.jsonl", [make_result(CASE), '{"case_id": "c1", "val'])
        )
    assert codes_by_line(exc.value) == {2: "malformed_json"}


def test_every_bad_line_is_reported_at_once(tmp_path):
    stale = make_result(CASE)
    stale["judge_fingerprint"] = "0" * 64
    rows = [
        make_result(CASE),  # 1 ok
        "not json",  # 2
        stale,  # 3
        make_result(CASE, error={"kind": "cosmic_ray", "message": "?"}),  # 4
        make_result(CASE, attempt=2),  # 5 ok
        {**make_result(CASE), "error": TIMEOUT},  # 6 value and error
        {k: v for k, v in make_result(CASE).items() if k != "run_id"},  # 7 missing field
        {**make_result(CASE), "verdict": "pass"},  # 8 unknown field
        b"\xff\xfe\x00 binary",  # 9
        "[1, 2]",  # 10 not an object
    ]
    with pytest.raises(WorkbenchError) as exc:
        read_results(write_results(tmp_path / "r.jsonl", rows))
    codes = codes_by_line(exc.value)
    assert list(codes) == [2, 3, 4, 6, 7, 8, 9, 10]  # in file order
    assert (codes[2], codes[3], codes[4]) == (
        "malformed_json",
        "fingerprint_mismatch",
        "unknown_error_kind",
    )
    assert codes[9] == "not_utf8"
    assert codes[6] == codes[7] == codes[8] == codes[10] == "invalid_result"
    assert all(p.fix for p in exc.value.problems)
    messages = {int(p.location.rpartition(":")[2]): p.message for p in exc.value.problems}
    assert "run_id" in messages[7] and "verdict" in messages[8]


def test_missing_results_file(tmp_path):
    with pytest.raises(WorkbenchError) as exc:
        read_results(tmp_path / "nope.jsonl")
    assert [p.code for p in exc.value.problems] == ["results_missing"]
