"""One record base and one version gate (issue 14 §3): every versioned record refuses a
``schema_version`` newer than this workbench reads, with the same problem, in every reader."""

from __future__ import annotations

import importlib
import json
import pkgutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import BaseModel

import workbench
from workbench._docs import add_field_docs, field_docstrings
from workbench._io import sha256_json
from workbench._lock import LOCK_FILE, Lock, read_lock, write_lock
from workbench._record import LooseRecord, Record, SchemaTooNew
from workbench.errors import WorkbenchError
from workbench.heldout import HeldOutLedger
from workbench.reports._verify import verify_one
from workbench.results import MANIFEST_FILE, JudgeIdentity, RunManifest
from workbench.runs import freeze_manifest


def _all_models(*, private: bool = False) -> list[type[BaseModel]]:
    """Every pydantic model defined at the top of a workbench module (the private bases too
    with ``private``), after importing every module."""
    for info in pkgutil.walk_packages(workbench.__path__, "workbench."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
    seen: dict[str, type[BaseModel]] = {}
    stack: list[type[BaseModel]] = [BaseModel]
    while stack:
        for sub in stack.pop().__subclasses__():
            stack.append(sub)
            if (
                sub.__module__.startswith("workbench.")
                and "<locals>" not in sub.__qualname__
                and (private or not sub.__name__.startswith("_"))
            ):
                seen[f"{sub.__module__}.{sub.__qualname__}"] = sub
    return [seen[k] for k in sorted(seen)]


MODELS = _all_models()
VERSIONED = [m for m in MODELS if "schema_version" in m.model_fields]


def test_every_versioned_model_is_a_record_with_a_version() -> None:
    # A new versioned model that skips the base would skip the gate: refuse that here.
    assert len(VERSIONED) >= 50
    outside = [
        f"{m.__module__}.{m.__name__}"
        for m in VERSIONED
        if not issubclass(m, Record) or m.SCHEMA_VERSION is None
    ]
    assert outside == []


@pytest.mark.parametrize(
    "model", VERSIONED, ids=lambda m: f"{m.__module__.removeprefix('workbench.')}.{m.__name__}"
)
def test_a_newer_schema_version_is_refused(model: type[Record]) -> None:
    supported = model.SCHEMA_VERSION
    assert isinstance(supported, int)
    assert model.model_fields["schema_version"].default == supported
    newer = {"schema_version": supported + 1, "a_field_from_the_future": True}
    for validate in (
        lambda: model.model_validate(newer),
        lambda: model.model_validate_json(json.dumps(newer)),
    ):
        with pytest.raises(SchemaTooNew) as info:
            validate()
        (problem,) = info.value.problems
        assert problem.code == "schema_version_newer"
        assert (
            problem.message
            == f"{model.KIND} schema_version {supported + 1} is newer than this workbench reads"
            f" ({supported})"
        )
        assert problem.fix == "upgrade the workbench"
    # the current version passes the gate (then the fields are checked as before)
    try:
        model.model_validate({"schema_version": supported})
    except SchemaTooNew:  # pragma: no cover - the failure this asserts against
        pytest.fail("the current schema_version was refused")
    except (ValueError, WorkbenchError):
        pass


def test_the_gate_sees_nested_records_and_ignores_non_integers() -> None:
    class Inner(Record):
        schema_version: int = 2

    class Outer(Record):
        inner: list[Inner]

    with pytest.raises(
        SchemaTooNew, match="inner schema_version 3 is newer than this workbench reads"
    ):
        Outer.model_validate({"inner": [{"schema_version": 2}, {"schema_version": 3}]})
    for lax in ("9", 9.0, " 9"):  # what a lax int field reads as 9 is 9 for the gate too
        with pytest.raises(SchemaTooNew):
            Inner.model_validate({"schema_version": lax})
    with pytest.raises(ValueError):  # not an int at all: the field's own validation reports it
        Inner.model_validate({"schema_version": "nine"})
    assert (
        Inner.model_validate({"schema_version": 1}).schema_version == 1
    )  # older: the reader decides


def test_config_is_shared_and_the_loose_variant_only_ignores_unknown_keys() -> None:
    class Strict(Record):
        a: int

    class Loose(LooseRecord):
        a: int

    with pytest.raises(ValueError, match="Extra inputs are not permitted"):
        Strict.model_validate({"a": 1, "b": 2})
    assert Loose.model_validate({"a": 1, "b": 2}).a == 1
    for model in (Strict, Loose):
        assert model.model_config["frozen"] is True
        assert model.model_config["json_schema_extra"] is add_field_docs
    frozen = Strict(a=1)
    with pytest.raises(ValueError):
        frozen.a = 2  # type: ignore[misc]


# ------------------------------------------------------------------ field documentation


def test_field_docstrings_are_pydantics_own_for_every_model() -> None:
    """pydantic's extractor (what ``use_attribute_docstrings`` ran on every class at import) is
    the reference: the same docstrings, field by field, inherited ones included."""
    from pydantic._internal._docs_extraction import extract_docstrings_from_cls

    models = _all_models(private=True)
    assert len(models) >= 150
    documented = 0
    own: dict[type, dict[str, str]] = {}  # each class's docstrings, extracted once (bases repeat)
    for model in models:
        expected: dict[str, str] = {}
        for klass in reversed(model.__mro__):
            if klass.__module__.startswith("workbench"):
                if klass not in own:
                    own[klass] = extract_docstrings_from_cls(klass, use_inspect=True)
                expected.update(own[klass])
        expected = {k: v for k, v in expected.items() if k in model.model_fields}
        assert field_docstrings(model) == expected, f"{model.__module__}.{model.__qualname__}"
        documented += bool(expected)
    assert documented >= 120


def test_no_model_builds_its_field_docs_at_import() -> None:
    # pydantic's use_attribute_docstrings walks the stack and parses each class body twice while
    # the class is built: import workbench.reports 1.18x slower (bench/bench_cli.py --docstrings).
    slow = [
        f"{m.__module__}.{m.__qualname__}"
        for m in _all_models(private=True)
        if m.model_config.get("use_attribute_docstrings")
    ]
    assert slow == []


def test_json_schema_describes_each_property_with_its_docstring() -> None:
    from workbench.gold import GoldCase
    from workbench.migration._mapping import LabelMapping

    schema = GoldCase.model_json_schema()
    docs = field_docstrings(GoldCase)
    assert docs and set(docs) <= set(GoldCase.model_fields)
    for name, doc in docs.items():
        assert schema["properties"][name]["description"] == doc
    # A nested record's own properties are described in its definition.
    nested = [d for d in schema.get("$defs", {}).values() if d.get("properties")]
    assert nested and all(
        "description" in prop for d in nested for prop in d["properties"].values()
    )
    # A property named by its alias gets the field's docstring.
    mapping = LabelMapping.model_json_schema()
    aliased = next(
        d
        for d in [mapping, *mapping.get("$defs", {}).values()]
        if "from" in d.get("properties", {})
    )
    assert aliased["properties"]["from"]["description"]


def test_an_explicit_description_is_kept_and_a_docstring_fills_the_rest() -> None:
    from pydantic import Field

    class Documented(Record):
        a: int = Field(description="given")
        """from the docstring"""
        b: int = 0
        """b's docstring,
           on two lines."""

    props = Documented.model_json_schema()["properties"]
    assert props["a"]["description"] == "given"
    assert props["b"]["description"] == "b's docstring,\non two lines."
    assert Documented.model_fields["b"].description is None  # nothing at class creation


# ------------------------------------------------------------------ the readers that had no check


def _manifest(schema_version: int) -> dict[str, object]:
    return {
        "schema_version": schema_version,
        "run_id": "r1",
        "created_at": "2026-01-01T00:00:00Z",
        "judge": {"name": "j", "version": "1", "kind": "exact"},
        "judge_fingerprint": "fp",
        "dataset_sha256": "d" * 64,
        "partition": "dev",
        "repeats": 1,
        "cases": [{"case_id": "c1", "response_hash": "h"}],
    }


def test_run_manifest_from_a_newer_workbench_is_refused(tmp_path: Path) -> None:
    RunManifest.model_validate(_manifest(1))  # the fixture is a valid manifest
    with pytest.raises(SchemaTooNew):  # before: read as version 1
        RunManifest.model_validate(_manifest(2))
    (tmp_path / MANIFEST_FILE).write_text(json.dumps(_manifest(2)))
    judge = JudgeIdentity.model_validate(_manifest(1)["judge"])
    with pytest.raises(WorkbenchError) as info:
        freeze_manifest(tmp_path, judge, "fp", "d" * 64, "dev", 1, [])
    (problem,) = info.value.problems
    assert (problem.location, problem.code) == (
        str(tmp_path / MANIFEST_FILE),
        "schema_version_newer",
    )
    assert "run manifest schema_version 2 is newer than this workbench reads (1)" in problem.message


def _lock(tmp_path: Path, schema_version: int) -> Path:
    tmp_path.mkdir(parents=True)
    lock = Lock(
        report_id="c@1/v/1",
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        candidate="c@1",
        candidate_fingerprint="fp",
        outcome="certified",
        blockers=[],
        evidence={},
        files={},
        versions={},
        git={},
        ledger_entry={},
        rerun_reason=None,
        previous_report=None,
        timings_s={},
    )
    write_lock(tmp_path, lock)
    raw = json.loads((tmp_path / LOCK_FILE).read_text())
    raw["schema_version"] = schema_version
    raw["lock_sha256"] = sha256_json(
        {k: v for k, v in raw.items() if k not in ("lock_sha256", "signature")}
    )
    (tmp_path / LOCK_FILE).write_text(json.dumps(raw))
    return tmp_path


def test_report_lock_from_a_newer_workbench_is_refused(tmp_path: Path) -> None:
    assert read_lock(_lock(tmp_path / "ok", 2)).schema_version == 2
    newer = _lock(tmp_path / "newer", 3)
    with pytest.raises(SchemaTooNew) as info:  # before: read and hashed as if it were version 2
        read_lock(newer)
    assert info.value.problems[0].location == str(newer / LOCK_FILE)
    result = verify_one(newer)
    assert result.checks["lock"] == "failed"
    assert [(p.code, p.message) for p in result.problems] == [
        (
            "schema_version_newer",
            "report lock schema_version 3 is newer than this workbench reads (2)",
        )
    ]


def _ledger_with_one_entry(tmp_path: Path, schema_version: int) -> HeldOutLedger:
    ledger = HeldOutLedger(tmp_path / "ledger.jsonl")
    with ledger.locked():
        _entry, _token, hold = ledger.start(
            candidate="c@1",
            fingerprint="fp",
            dataset_sha256="d" * 64,
            manifest_sha256="m" * 64,
            report_id="c@1/v/1",
            reports_root=tmp_path / "reports",
            gold=tmp_path / "gold",
            rerun_reason=None,
        )
    hold.release()
    raw = json.loads(ledger.path.read_text())
    raw["schema_version"] = schema_version
    raw["entry_sha256"] = sha256_json({k: v for k, v in raw.items() if k != "entry_sha256"})
    ledger.path.write_text(json.dumps(raw) + "\n")
    return ledger


def test_ledger_entry_from_a_newer_workbench_is_refused(tmp_path: Path) -> None:
    current = _ledger_with_one_entry(tmp_path / "a", 3).read()
    assert current.problems == [] and len(current.entries) == 1  # the rewrite keeps the chain valid
    newer = _ledger_with_one_entry(tmp_path / "b", 4)
    read = newer.read()  # before: the entry was read as version 3 and the chain was intact
    assert read.entries == []
    assert [(p.location, p.code, p.message) for p in read.problems] == [
        (
            f"{newer.path}:1",
            "schema_version_newer",
            "ledger entry schema_version 4 is newer than this workbench reads (3)",
        )
    ]
    with pytest.raises(WorkbenchError) as info:
        newer.entries()
    assert [p.code for p in info.value.problems] == ["schema_version_newer"]
