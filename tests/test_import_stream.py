"""`workbench import results` of a results file in one streaming pass (issue 31, migrated
results): each line parsed once and validated once, the gold read through its index as `align`
reads it, the output written atomically as the lines pass; the held-out check keeps finding
held-out content under another id."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import make_case, make_result, write_results
from test_result_schema_v2 import v1_row

import workbench._io
import workbench.gold._dataset
from workbench.errors import WorkbenchError
from workbench.gold import gold_index, load_dataset
from workbench.heldout import HeldOutLedger, item_keys, ledger_path_for
from workbench.importers import import_results
from workbench.results import JudgeResult


@pytest.fixture
def gold(make_dataset: Any) -> Path:
    return make_dataset(
        [make_case("a"), make_case("b", "fail"), make_case("c", partition="calibration")]
    )


def _v1_file(tmp_path: Path) -> Path:
    cases = [make_case("a"), make_case("b", "fail"), make_case("c", partition="calibration")]
    rows = [v1_row(cases[0]), v1_row(cases[1], "fail"), v1_row(cases[2])]
    return write_results(tmp_path / "v1.jsonl", rows)


class _Counting:
    """A pydantic validator that counts its calls and hands them on."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls = 0

    def validate_python(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.inner.validate_python(*args, **kwargs)

    def validate_json(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.inner.validate_json(*args, **kwargs)


def test_each_v1_line_is_parsed_once_and_validated_once(
    gold: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Main parsed each v1 line twice (strict checker, then the strict decoder after a failed
    ``validate_json``) and validated it twice, and parsed every gold line as well."""
    source = _v1_file(tmp_path)
    gold_index(gold)  # the index align builds on its first call
    parses: list[str] = []
    strict = workbench._io._strict
    monkeypatch.setattr(
        workbench._io, "_strict", lambda decoder, text: parses.append(text) or strict(decoder, text)
    )
    validator = _Counting(JudgeResult.__pydantic_validator__)
    monkeypatch.setattr(JudgeResult, "__pydantic_validator__", validator)
    done = import_results(source, gold, tmp_path / "out")
    assert done.results == 3 and done.migration_note is not None
    assert sorted(parses) == sorted(source.read_text("utf-8").splitlines())
    assert validator.calls == 3


def test_the_gold_is_read_through_its_index(
    gold: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the gold's index cached, the import validates no gold record again (main called
    ``load_dataset``: the full validation, 7 s at 100k)."""
    gold_index(gold)

    def no_validation(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the gold was validated in full")

    monkeypatch.setattr(workbench.gold._dataset, "validate_dataset", no_validation)
    done = import_results(_v1_file(tmp_path), gold, tmp_path / "out")
    lines = (tmp_path / "out" / "results.jsonl").read_text("utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    assert done.results == 3 and [r["case_id"] for r in rows] == ["a", "b", "c"]
    assert {r["dataset_sha256"] for r in rows} == {done.dataset_sha256}
    assert [r["partition"] for r in rows] == ["development", "development", "calibration"]
    assert all(r["schema_version"] == 2 and r["migration"]["from_version"] == 1 for r in rows)


def test_a_refused_import_leaves_nothing_behind(gold: Path, tmp_path: Path) -> None:
    """Every line is written as it passes, into a temporary file: a problem found after the
    first lines (an unknown case on the last one) keeps none of them, nor the directories the
    import created."""
    rows = [json.loads(line) for line in _v1_file(tmp_path).read_text("utf-8").splitlines()]
    rows.append(make_result(make_case("zz"), "pass"))  # a current line for no case of the gold
    source = write_results(tmp_path / "late.jsonl", rows)
    out = tmp_path / "new" / "out"
    with pytest.raises(WorkbenchError) as info:
        import_results(source, gold, out)
    assert [p.code for p in info.value.problems] == ["unknown_case"]
    assert info.value.problems[0].location == f"{source}:4"
    assert not (tmp_path / "new").exists()


def test_an_interrupted_import_keeps_the_previous_results(
    gold: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Interrupted after the first line was written (Ctrl-C): the results it was replacing
    (--force) stay as they were, and no temporary file is left."""
    out = tmp_path / "out"
    import_results(_v1_file(tmp_path), gold, out)
    before = (out / "results.jsonl").read_bytes()
    import workbench.importers._results as module

    checked = module.check_against_gold
    calls: list[int] = []

    def interrupt(*args: Any) -> Any:
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return checked(*args)

    monkeypatch.setattr(module, "check_against_gold", interrupt)
    native = [make_result(make_case(c), "pass") for c in ("a", "b")]
    with pytest.raises(KeyboardInterrupt):
        import_results(write_results(tmp_path / "v2.jsonl", native), gold, out, force=True)
    assert len(calls) == 2
    assert (out / "results.jsonl").read_bytes() == before
    assert sorted(p.name for p in out.iterdir()) == ["results.jsonl"]


def test_a_development_copy_of_a_held_out_case_a_certification_used_is_refused(
    make_dataset: Any, tmp_path: Path
) -> None:
    """The held-out check keeps reading the project's ledger: results for a development case of
    another gold that copies a held-out case a certification used are refused (the records'
    item keys now come from the gold index)."""
    held = make_case("h1", partition="held_out", response="the held-out answer")
    first = make_dataset([held, make_case("a")])
    ledger = HeldOutLedger(ledger_path_for(first))
    with ledger.locked():  # what certify appends before its first held-out call
        _entry, _token, hold = ledger.start(
            candidate="judge@1",
            fingerprint="f" * 64,
            dataset_sha256="d" * 64,
            manifest_sha256="m" * 64,
            report_id="judge/1/1",
            reports_root=tmp_path / "reports",
            gold=first,
            rerun_reason=None,
            held_out_keys=item_keys(load_dataset(first).partition("held_out")),
        )
    hold.release()
    copy = make_case("d", response=held["response"], input=held["input"])
    second = make_dataset([copy, make_case("e")])
    source = write_results(tmp_path / "v1.jsonl", [v1_row(make_case("e")), v1_row(copy)])
    with pytest.raises(WorkbenchError) as info:
        import_results(source, second, tmp_path / "out")
    problems = [(p.code, p.case_id) for p in info.value.problems]
    assert problems == [("held_out_content_exposed", "d")]
    assert "ledger entry" in info.value.problems[0].message
    assert not (tmp_path / "out").exists()
