"""The first index of a gold dataset, built in one streaming pass (issue 31, ``gold/_columnar.py``):
the same index as the full validation builds, and everything the columns cannot prove goes to the
full validation, which names the same problems as before."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import make_case, write_dataset

from workbench._io import sha256_file, sha256_json
from workbench.errors import WorkbenchError
from workbench.gold import _columnar as columnar
from workbench.gold import gold_index, index_table, load_dataset, record_json, validate_dataset
from workbench.gold._index import _stamped, cache_dir, index_schema


def _stream(gold: Path, tmp_path: Path) -> bool:
    """Whether the one pass proves ``gold`` valid (it writes the index into ``tmp_path``)."""
    files = {
        n: sha256_file(gold / f) for n, f in (("gold", "gold.jsonl"), ("rubric", "rubric.yaml"))
    }
    digest = sha256_json({**files, "evidence": sha256_file(gold / "evidence.jsonl")})
    schema = _stamped(index_schema(), "k", digest)
    return columnar.stream_index(gold, gold / "gold.jsonl", tmp_path / "i.arrow", schema, digest)


def _refused_as_before(gold: Path, tmp_path: Path) -> list[Any]:
    """The dataset has errors, the one pass does not vouch for it, and the index refuses it
    with the full validation's problems, every one."""
    report = validate_dataset(gold)
    assert report.errors
    assert not _stream(gold, tmp_path)
    with pytest.raises(WorkbenchError) as refused:
        gold_index(gold)
    assert refused.value.problems == report.errors
    return report.errors


def _rich() -> list[Any]:
    """Valid cases exercising every index column: metadata keys absent in some rows, non-ASCII
    and escaped text, null and empty rationales, no reason, reference only, cited evidence, no
    confidence, contexts, tags absent, a blank line between records."""
    cases: list[Any] = [
        make_case("c1", metadata={"language": "en", "source": "web"}, tags=["a", "b"]),
        make_case("c2", metadata={"language": "de"}, input="Größe\tÜBER  alles?"),
        make_case(
            "c3",
            reviews=[
                {"reviewer": "r1", "label": "fail", "rationale": "", "confidence": "low"},
                {"reviewer": "r2", "label": "fail", "evidence": ["ev-1"]},
            ],
            evidence=["ev-2"],
            contexts=['ctx "quoted" \\ back'],
            response='say "hi"\n\u2028 \U0001f600',
        ),
        "",
        make_case(  # written with \u escapes (json.dumps) beside a null
            "c4", partition="held_out", slice="billing", grading_notes=None, reference="ré"
        ),
    ]
    cases[4]["adjudication"] = {"label": "pass"}
    cases[2]["adjudication"] = {"label": "fail", "reason": "both said so", "adjudicator": "lead"}
    for case in cases:
        if isinstance(case, dict):
            case.pop("tags", None) if case["case_id"] == "c2" else None
            case["response_hash"] = hashlib.sha256(case["response"].encode()).hexdigest()
    return cases


def _same_index(gold: Path) -> None:
    """The cached index equals the index of the fully validated dataset, column by column."""
    built = gold_index(gold).table.combine_chunks()
    expected = index_table(load_dataset(gold)).combine_chunks()
    assert built.schema == expected.schema
    for name in built.column_names:
        if name == "record":
            got = [record_json(text) for text in built[name].to_pylist()]
            assert got == [json.loads(text) for text in expected[name].to_pylist()]
        else:
            assert built[name].to_pylist() == expected[name].to_pylist(), name


def test_the_one_pass_index_equals_the_validated_index(make_dataset, tmp_path):
    gold = make_dataset(_rich())
    assert _stream(gold, tmp_path)  # proven in one pass, no record validated one by one
    _same_index(gold)
    assert gold_index(gold).from_cache


def test_the_one_pass_reads_the_file_in_blocks(make_dataset, tmp_path, monkeypatch):
    cases = [make_case(f"c{i}", metadata={"k": str(i)} if i % 3 else {}) for i in range(40)]
    monkeypatch.setattr(columnar, "BLOCK_BYTES", 700)  # a few lines a block
    gold = make_dataset(cases)
    assert _stream(gold, tmp_path)
    _same_index(gold)


def test_windows_line_ends_and_padding_are_read_as_the_full_validation_reads_them(
    make_dataset, tmp_path
):
    lines = [" \t" + json.dumps(make_case(f"c{i}")) + "  \r" for i in range(3)]
    gold = make_dataset([*lines, "\r", json.dumps(make_case("c3"))])
    assert _stream(gold, tmp_path)
    _same_index(gold)


def _edit(case: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**case, **changes}


INVALID: dict[str, Any] = {
    "duplicate_key": lambda c: json.dumps(c)[:-1] + ', "case_id": "again"}',
    "nan_in_metadata": lambda c: json.dumps(_edit(c, metadata={"x": float("nan")})),
    "null_schema_version": lambda c: json.dumps(_edit(c, schema_version=None)),
    "escaped_null_key": lambda c: json.dumps(c)[:-1] + ', "schema_\\u0076ersion": null}',
    "null_tags": lambda c: json.dumps(_edit(c, tags=None)),
    "null_review_evidence": lambda c: json.dumps(
        _edit(c, reviews=[{**c["reviews"][0], "evidence": None}, c["reviews"][1]])
    ),
    "unknown_field": lambda c: json.dumps(_edit(c, colour="red")),
    "unknown_review_field": lambda c: json.dumps(
        _edit(c, reviews=[{**c["reviews"][0], "mood": "ok"}, c["reviews"][1]])
    ),
    "newer_schema": lambda c: json.dumps(_edit(c, schema_version=2)),
    "float_schema": lambda c: json.dumps(c)[:-1] + ', "schema_version": 1.0}',
    "bool_escalate_as_text": lambda c: json.dumps(
        _edit(c, reviews=[{**c["reviews"][0], "escalate": "yes"}, c["reviews"][1]])
    ),
    "empty_case_id": lambda c: json.dumps(_edit(c, case_id="")),
    "number_as_text": lambda c: json.dumps(_edit(c, group=7)),
    "hash_mismatch": lambda c: json.dumps(_edit(c, response_hash="0" * 64)),
    "unknown_label": lambda c: json.dumps(_edit(c, adjudication={"label": "maybe"})),
    "unknown_slice": lambda c: json.dumps(_edit(c, slice="nowhere")),
    "unknown_partition": lambda c: json.dumps(_edit(c, partition="train")),
    "unknown_confidence": lambda c: json.dumps(
        _edit(c, reviews=[{**c["reviews"][0], "confidence": "sure"}, c["reviews"][1]])
    ),
    "same_reviewer_twice": lambda c: json.dumps(_edit(c, reviews=[c["reviews"][0]] * 2)),
    "too_few_reviews": lambda c: json.dumps(_edit(c, reviews=[c["reviews"][0]])),
    "no_adjudication": lambda c: json.dumps(_edit(c, adjudication=None)),
    "no_grading_evidence": lambda c: json.dumps(_edit(c, grading_notes=None)),
    "unresolved_evidence": lambda c: json.dumps(_edit(c, evidence=["ev-9"])),
    "missing_response": lambda c: json.dumps({k: v for k, v in c.items() if k != "response"}),
    "null_in_tags": lambda c: json.dumps(_edit(c, tags=["a", None])),
    "two_objects_on_a_line": lambda c: json.dumps(c) + json.dumps(_edit(c, case_id="c9")),
    "byte_order_mark": lambda c: "\ufeff" + json.dumps(c),
    "not_utf8": lambda c: json.dumps(c).encode().replace(b"response for", b"response \xff"),
    "array": lambda c: json.dumps([c]),
    "blank": lambda c: "  ",
    "duplicate_case_id": lambda c: json.dumps(_edit(c, case_id="c0")),
    "group_in_two_partitions": lambda c: json.dumps(
        _edit(c, group="group-c0", partition="held_out")
    ),
    "same_item_in_two_partitions": lambda c: json.dumps(
        _edit(
            c,
            partition="held_out",
            input="QUESTION  for c0",
            response="response for c0",
            response_hash=hashlib.sha256(b"response for c0").hexdigest(),
        )
    ),
}


@pytest.mark.parametrize("damage", sorted(INVALID))
def test_an_invalid_line_is_left_to_the_full_validation_and_its_problems(
    make_dataset, tmp_path, damage
):
    valid = [make_case(f"c{i}") for i in range(3)] if damage != "blank" else []
    lines = [*valid, INVALID[damage](make_case("c3"))]  # "blank": an empty dataset
    gold = make_dataset(lines)
    _refused_as_before(gold, tmp_path)  # the damage is an error the index must not hide
    assert not (tmp_path / "i.arrow").exists()
    assert not list(cache_dir().glob("gold-*.arrow"))  # type: ignore[union-attr]


def _reviewed(case: dict[str, Any], **review: Any) -> dict[str, Any]:
    return _edit(case, reviews=[{**case["reviews"][0], **review}, case["reviews"][1]])


def test_annotated_reviews_are_proven_in_one_pass(make_dataset, tmp_path):
    annotated = _reviewed(
        make_case("c3", input="Größe 😀 of it?"),
        spans=[
            {"field": "response", "start": 0, "end": 8, "text": "response"},
            {"field": "input", "start": 6, "end": 10, "text": "😀 of"},
        ],
        assigned_at="2026-12-01T10:00:00Z",
        completed_at="2026-12-01T10:05:30.250+01:00",
        training_version="t1",
        blinded=["model_identity"],
        escalate=True,
    )
    gold = make_dataset([make_case(f"c{i}") for i in range(3)] + [annotated])
    assert _stream(gold, tmp_path)
    _same_index(gold)


INVALID_ANNOTATIONS: dict[str, Any] = {
    "span_not_the_text": lambda c: _reviewed(
        c, spans=[{"field": "response", "start": 1, "end": 8, "text": "response"}]
    ),
    "span_of_an_absent_field": lambda c: _reviewed(
        c, spans=[{"field": "reference", "start": 0, "end": 1, "text": "r"}]
    ),
    "span_of_an_unknown_field": lambda c: _reviewed(
        c, spans=[{"field": "metadata", "start": 0, "end": 1, "text": "r"}]
    ),
    "span_negative_start": lambda c: _reviewed(
        c, spans=[{"field": "response", "start": -1, "end": 8, "text": "response"}]
    ),
    "span_without_text": lambda c: _reviewed(
        c, spans=[{"field": "response", "start": 0, "end": 8, "text": ""}]
    ),
    "span_extra_key": lambda c: _reviewed(
        c, spans=[{"field": "response", "start": 0, "end": 8, "text": "response", "x": 1}]
    ),
    "impossible_date": lambda c: _reviewed(c, assigned_at="2026-02-30T10:00:00Z"),
    "not_a_date": lambda c: _reviewed(c, completed_at="yesterday"),
}


@pytest.mark.parametrize("damage", sorted(INVALID_ANNOTATIONS))
def test_an_annotation_pydantic_refuses_is_refused_as_before(make_dataset, tmp_path, damage):
    lines = [make_case(f"c{i}") for i in range(3)]
    gold = make_dataset([*lines, INVALID_ANNOTATIONS[damage](make_case("c3"))])
    _refused_as_before(gold, tmp_path)


def _correction(
    case_id: str, corrects: str, first: str | None = None, **changes: Any
) -> dict[str, Any]:
    """A record correcting ``corrects`` (the response, partition and group of ``first``, the
    chain's first record, default ``corrects``)."""
    first = first or corrects
    base = make_case(first, group=f"group-{first}")
    return {**base, "case_id": case_id, "supersedes": corrects, **changes}


def test_corrections_are_proven_and_the_corrected_records_inactive(make_dataset, tmp_path):
    lines = [
        _correction(
            "c1b",
            "c1",
            adjudication={"label": "fail"},
            reviews=[
                {"reviewer": "rev-a", "label": "fail"},
                {"reviewer": "rev-b", "label": "fail"},
            ],
        )
    ]
    lines += [make_case(f"c{i}") for i in range(4)]  # the correction before what it corrects
    lines.append(_correction("c1c", "c1b", "c1"))  # a chain of two
    gold = make_dataset(lines)
    assert _stream(gold, tmp_path)
    _same_index(gold)
    index = gold_index(gold)
    active = dict(
        zip(index.table["case_id"].to_pylist(), index.table["active"].to_pylist(), strict=True)
    )
    assert [cid for cid, on in active.items() if not on] == ["c1b", "c1"]
    assert index.case_ids() == ["c0", "c2", "c3", "c1c"]
    # the chain as the full dataset resolves it, read from the index (both record forms)
    assert index.superseded_by() == {"c1": "c1c", "c1b": "c1c"}
    assert index.superseded_by() == load_dataset(gold).superseded_by
    assert gold_index(make_dataset([make_case("a")])).superseded_by() == {}


BROKEN_CORRECTIONS: dict[str, Any] = {
    "unknown_target": [_correction("c9", "nowhere", group="group-c9")],
    "moves_partition": [_correction("c1b", "c1", partition="held_out")],
    "changes_response": [_correction("c1b", "c1", response="other", response_hash="0" * 64)],
    "fork": [_correction("c1b", "c1"), _correction("c1c", "c1")],
    "cycle": [
        _correction("c1b", "c1c", group="group-c1"),
        _correction("c1c", "c1b", group="group-c1"),
    ],
    "itself": [_correction("c1b", "c1b", group="group-c1")],
}


@pytest.mark.parametrize("damage", sorted(BROKEN_CORRECTIONS))
def test_a_broken_correction_is_refused_as_before(make_dataset, tmp_path, damage):
    lines = [make_case(f"c{i}") for i in range(3)] + BROKEN_CORRECTIONS[damage]
    gold = make_dataset(lines)
    _refused_as_before(gold, tmp_path)


UNPROVEN: dict[str, Any] = {
    "number_in_metadata": lambda c: _edit(c, metadata={"n": 3, "nested": {"a": [1]}}),
    "date_in_metadata": lambda c: _edit(c, metadata={"sampled": "2026-11-29"}),
    "null_in_metadata": lambda c: _edit(c, metadata={"language": None}),
    "escaped_metadata_key_null": lambda c: json.dumps(c)[:-1] + ', "metadata": {"a\\/b": null}}',
}


@pytest.mark.parametrize("case", sorted(UNPROVEN))
def test_a_valid_line_the_columns_cannot_prove_is_validated_in_full(make_dataset, tmp_path, case):
    lines = [make_case(f"c{i}", metadata={"language": "en"}) for i in range(3)]
    lines.append(UNPROVEN[case](make_case("c3")))
    gold = make_dataset(lines)
    assert validate_dataset(gold).ok
    assert not _stream(gold, tmp_path)
    _same_index(gold)  # built by the full validation, as before


def test_a_dataset_in_its_frozen_state_is_proven_in_one_pass(make_dataset, tmp_path):
    from workbench.gold import freeze

    gold = make_dataset([make_case(f"c{i}") for i in range(3)])
    release, _ = freeze(gold, approver="tester")
    assert _stream(gold, tmp_path)  # the records are those the release hashed
    assert gold_index(gold).release == release
    _same_index(gold)


def test_a_dataset_changed_since_its_release_is_validated_in_full(make_dataset, tmp_path):
    from workbench.gold import freeze

    cases = [make_case(f"c{i}") for i in range(3)]
    gold = make_dataset(cases)
    freeze(gold, approver="tester")
    write_dataset(gold, [*cases, make_case("c3")])  # a case added: allowed, lineage compares
    assert validate_dataset(gold).ok
    assert not _stream(gold, tmp_path)
    _same_index(gold)
    write_dataset(gold, [{**cases[0], "slice": "billing"}, *cases[1:]])  # a frozen case edited
    errors = _refused_as_before(gold, tmp_path)
    assert [p.code for p in errors] == ["frozen_case_edited"]


def test_a_release_by_an_approver_no_longer_listed_is_refused_as_before(make_dataset, tmp_path):
    import yaml

    from workbench.approval import project_config
    from workbench.gold import freeze

    gold = make_dataset([make_case(f"c{i}") for i in range(3)])
    freeze(gold, approver="tester")
    config = project_config(gold)
    assert config is not None
    raw = yaml.safe_load(config.read_text(encoding="utf-8"))
    config.write_text(yaml.safe_dump({**raw, "approvers": ["someone-else"]}), encoding="utf-8")
    assert "approver_unknown" in {p.code for p in _refused_as_before(gold, tmp_path)}


def test_a_dataset_changed_while_read_is_not_cached(make_dataset, tmp_path):
    gold = make_dataset([make_case(f"c{i}") for i in range(3)])
    target = tmp_path / "i.arrow"
    assert not columnar.stream_index(gold, gold / "gold.jsonl", target, index_schema(), "0" * 64)
    assert not target.exists()


def test_a_settled_file_is_read_once_and_trusted_by_its_stat(make_dataset, tmp_path, monkeypatch):
    from workbench.gold import _index

    gold = make_dataset([make_case(f"c{i}") for i in range(3)])
    monkeypatch.setattr(_index, "MEMO_MARGIN_NS", 0)  # the file counts as settled at once
    hashes: list[int] = []
    monkeypatch.setattr(columnar, "_blocks", _counting(columnar._blocks, hashes))
    _same_index(gold)
    assert hashes == [0]  # read once, not hashed again: its stat vouches it did not change
    target = tmp_path / "i.arrow"
    changed = columnar.stream_index(
        gold, gold / "gold.jsonl", target, index_schema(), "0" * 64, lambda: False
    )
    assert not changed and not target.exists()


def _counting(blocks: Any, hashes: list[int]) -> Any:
    def counted(path: Path, digest: Any) -> Any:
        hashes.append(0 if digest is None else 1)
        return blocks(path, digest)

    return counted


def test_the_stream_knows_every_field_of_a_gold_record():
    from workbench.gold import Adjudication, GoldCase, Review, Span

    schema = columnar.gold_schema()
    assert set(schema.names) | {"metadata"} == set(GoldCase.model_fields)
    review = schema.field("reviews").type.value_type
    assert {f.name for f in review} == set(Review.model_fields)
    assert {f.name for f in review.field("spans").type.value_type} == set(Span.model_fields)
    adjudication = schema.field("adjudication").type
    assert {f.name for f in adjudication} == set(Adjudication.model_fields)


def test_write_dataset_helper_is_what_the_widget_reads(tmp_path):
    """``record_json`` gives the validated record whichever form the index holds."""
    case = make_case("c1")
    gold = write_dataset(tmp_path / "g", [case])
    line = (gold / "gold.jsonl").read_text(encoding="utf-8").strip()
    dumped = load_dataset(gold).records[0].model_dump_json()
    assert record_json(line) == record_json(dumped) == json.loads(dumped)
