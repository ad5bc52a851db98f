"""Lineage: results are compared only with the gold they were produced against (issue 8 §2).

The reproduction first: results of a real run on dataset X, aligned against a copy whose
rubric version changed and one adjudicated label was flipped in place, used to come out
COMPLETE with exit 0. They must be refused (exit 2) naming the case and what changed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from conftest import make_case, undocumented_fields

from workbench.cli import main
from workbench.gold import load_dataset
from workbench.judges import load_candidate
from workbench.runs import RunOptions, run_candidate_sync

POLICY = {
    "schema_version": 1,
    "name": "test-release",
    "version": "1",
    "owner": "QA lead",
    "rationale": "Limits for the unit-test rubric, written before results.",
    "slices": {
        "billing": {
            "risk": "critical",
            "max_false_passes": 0,
            "max_false_pass_rate": 0.5,
            "min_n": 0,
            "max_abstention_rate": 0.1,
        },
        "general": {
            "risk": "low",
            "max_false_pass_rate": 1.0,
            "false_pass_rate_basis": "point",
            "min_n": 0,
        },
        "empty": {"risk": "medium", "min_n": 0},
    },
}
SPEC = {
    "name": "kw",
    "version": "1",
    "kind": "ragas-function",
    "labels": ["pass", "fail"],
    "function": "judge_fixtures:keyword_judge",
}


def _cases() -> list[dict]:
    return [
        make_case("d1", "pass", response="A refund is possible after review."),
        make_case("d2", "fail", response="No money back, ever."),
        make_case("d3", "fail", response="Refund everything automatically."),
        make_case("c1", "pass", response="refund", partition="calibration"),
    ]


@pytest.fixture
def run_dir(make_dataset, tmp_path: Path) -> tuple[Path, Path]:
    """(gold directory, run directory) of a complete run of kw@1 on the development partition."""
    gold = make_dataset(_cases())
    spec = tmp_path / "kw@1.yaml"
    spec.write_text(yaml.safe_dump(SPEC), encoding="utf-8")
    out = tmp_path / "run"
    summary = run_candidate_sync(
        load_candidate(spec),
        load_dataset(gold),
        "development",
        out,
        RunOptions(progress=False, cache_dir=False),
    )
    assert summary.status == "complete"
    return gold, out


def changed_copy(
    gold: Path,
    target: Path,
    *,
    flip: str | None = "d2",
    rubric_version: str | None = "r2",
    edit: dict | None = None,
) -> Path:
    """A copy of ``gold`` with the rubric version changed and one adjudicated label flipped in
    place.
    """
    shutil.copytree(gold, target)
    rubric = yaml.safe_load((target / "rubric.yaml").read_text(encoding="utf-8"))
    if rubric_version is not None:
        rubric["version"] = rubric_version
        (target / "rubric.yaml").write_text(
            yaml.safe_dump(rubric, sort_keys=False), encoding="utf-8"
        )
    rows = [
        json.loads(line)
        for line in (target / "gold.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    for row in rows:
        row["rubric_version"] = rubric["version"]
        if row["case_id"] == flip:
            new = "pass" if row["adjudication"]["label"] == "fail" else "fail"
            row["adjudication"]["label"] = new
        if edit and row["case_id"] in edit:
            row.update(edit[row["case_id"]])
    (target / "gold.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8"
    )
    return target


def test_reproduction_changed_rubric_and_flipped_label_is_refused(
    run_dir: tuple[Path, Path], tmp_path: Path
) -> None:
    gold, out = run_dir
    copy = changed_copy(gold, tmp_path / "copy")
    result = CliRunner().invoke(
        main,
        [
            "align",
            "--gold",
            str(copy),
            "--results",
            str(out / "results.jsonl"),
            "--partition",
            "development",
        ],
    )
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert "[gold_changed]" in result.output
    changed = [line for line in result.output.splitlines() if "case d2:" in line]
    assert changed and "label" in changed[0], result.output
    assert not any("case d1:" in line or "case d3:" in line for line in result.output.splitlines())
    assert "r1" in result.output and "r2" in result.output  # the rubric version change is named
    gate = CliRunner().invoke(
        main,
        [
            "gate",
            "--gold",
            str(copy),
            "--results",
            str(out / "results.jsonl"),
            "--policy",
            str(policy_file(tmp_path)),
        ],
    )
    assert gate.exit_code == 2 and "[gold_changed]" in gate.output, gate.output
    assert [line for line in gate.output.splitlines() if "case d2:" in line and "label" in line]


def policy_file(directory: Path) -> Path:
    path = directory / "test-release@1.yaml"
    path.write_text(yaml.safe_dump(POLICY, sort_keys=False), encoding="utf-8")
    return path


def _json(result) -> dict:
    return json.loads(result.output[result.output.index("{") :])


def test_allow_gold_change_aligns_marked_not_comparable_and_the_gate_never_certifies(
    run_dir: tuple[Path, Path], tmp_path: Path
) -> None:
    gold, out = run_dir
    copy = changed_copy(gold, tmp_path / "copy")
    results = str(out / "results.jsonl")
    text = CliRunner().invoke(
        main, ["align", "--gold", str(copy), "--results", results, "--allow-gold-change"]
    )
    assert text.exit_code == 0, text.output
    assert "NOT COMPARABLE" in text.output and "case d2: label" in text.output
    as_json = CliRunner().invoke(
        main, ["align", "--gold", str(copy), "--results", results, "--allow-gold-change", "--json"]
    )
    report = json.loads(as_json.output)
    assert report["comparable"] is False
    assert report["gold_changes"] == [{"case_id": "d2", "changes": ["label"], "detail": "label"}]
    assert (
        report["lineage"]["results_rubric_version"] == "r1"
        and report["lineage"]["gold_rubric_version"] == "r2"
    )
    # d2 is now adjudicated pass and judged fail: the forced figures use the changed gold.
    assert report["overall"]["false_fails"] == 1
    gate = CliRunner().invoke(
        main,
        [
            "gate",
            "--gold",
            str(copy),
            "--results",
            results,
            "--policy",
            str(policy_file(tmp_path)),
            "--allow-gold-change",
            "--json",
        ],
    )
    assert gate.exit_code == 3, gate.output
    result = _json(gate)
    assert result["outcome"] == "evaluation_incomplete"
    blocker = next(b for b in result["blockers"] if b["code"] == "gold_changed")
    assert (
        blocker["waivable"] is False
        and blocker["case_ids"] == ["d2"]
        and blocker["evidence"]["changed_cases"] == {"d2": "label"}
    )
    # The same results against their own gold: comparable, and the gate has no gold_changed blocker.
    same = CliRunner().invoke(
        main,
        [
            "gate",
            "--gold",
            str(gold),
            "--results",
            results,
            "--policy",
            str(policy_file(tmp_path)),
            "--json",
        ],
    )
    assert "gold_changed" not in {b["code"] for b in _json(same)["blockers"]}


def test_every_kind_of_change_is_named(run_dir: tuple[Path, Path], tmp_path: Path) -> None:
    gold, out = run_dir
    copy = changed_copy(
        gold,
        tmp_path / "copy",
        flip=None,
        rubric_version=None,
        edit={
            "d1": {"grading_notes": "Required: mention the manual review."},
            "d2": {"reference": "No refund is possible.", "tags": ["new-tag"]},
            "d3": {
                "reviews": [
                    {"reviewer": "rev-a", "label": "fail"},
                    {"reviewer": "rev-c", "label": "fail"},
                ]
            },
        },
    )
    result = CliRunner().invoke(
        main, ["align", "--gold", str(copy), "--results", str(out / "results.jsonl")]
    )
    assert result.exit_code == 2, result.output
    lines = {
        cid: next(line for line in result.output.splitlines() if f"case {cid}:" in line)
        for cid in ("d1", "d2", "d3")
    }
    assert "notes changed" in lines["d1"]
    assert "grading fields" in lines["d2"] and "slice/partition/group/tags" in lines["d2"]
    assert "reviews changed" in lines["d3"]
    assert "rubric version" not in result.output  # the rubric did not change
    # A changed response is named too (and its verdict can never be compared).
    response = "A refund is possible after manual review."
    import hashlib

    copy2 = changed_copy(
        gold,
        tmp_path / "copy2",
        flip=None,
        rubric_version=None,
        edit={
            "d1": {
                "response": response,
                "response_hash": hashlib.sha256(response.encode()).hexdigest(),
            }
        },
    )
    refused = CliRunner().invoke(
        main,
        [
            "align",
            "--gold",
            str(copy2),
            "--results",
            str(out / "results.jsonl"),
            "--allow-gold-change",
        ],
    )
    assert refused.exit_code == 2 and "[response_hash_mismatch]" in refused.output
    plain = CliRunner().invoke(
        main, ["align", "--gold", str(copy2), "--results", str(out / "results.jsonl")]
    )
    assert "case d1: error: response changed" in plain.output


def test_results_without_lineage_are_refused(make_dataset, tmp_path: Path) -> None:
    from conftest import make_result, write_results

    cases = _cases()
    gold = make_dataset(cases)
    results = write_results(tmp_path / "r.jsonl", [make_result(c, "pass") for c in cases])
    refused = CliRunner().invoke(main, ["align", "--gold", str(gold), "--results", str(results)])
    assert refused.exit_code == 2 and "[lineage_missing]" in refused.output
    assert "workbench import results" in refused.output and "--allow-gold-change" in refused.output
    forced = CliRunner().invoke(
        main,
        ["align", "--gold", str(gold), "--results", str(results), "--allow-gold-change", "--json"],
    )
    report = json.loads(forced.output)
    assert report["comparable"] is False and report["lineage"]["source"] == "none"
    gate = CliRunner().invoke(
        main,
        [
            "gate",
            "--gold",
            str(gold),
            "--results",
            str(results),
            "--policy",
            str(policy_file(tmp_path)),
        ],
    )
    assert gate.exit_code == 2 and "[lineage_missing]" in gate.output
    pairwise = CliRunner().invoke(
        main, ["pairwise", "--gold", str(gold), "--results", str(results)]
    )
    assert pairwise.exit_code == 2 and "[lineage_missing]" in pairwise.output
    # Mixed: some lines stamped, some not.
    from lineage_support import stamped

    rows = [make_result(c, "pass") for c in cases]
    mixed = write_results(tmp_path / "mixed.jsonl", [*stamped(rows[:2], gold), *rows[2:]])
    result = CliRunner().invoke(main, ["align", "--gold", str(gold), "--results", str(mixed)])
    assert result.exit_code == 2 and "[lineage_mixed]" in result.output


def test_without_a_manifest_a_frozen_release_names_the_changes(
    run_dir: tuple[Path, Path], tmp_path: Path
) -> None:
    gold, out = run_dir
    moved = tmp_path / "moved"
    moved.mkdir()
    shutil.copyfile(
        out / "results.jsonl", moved / "results.jsonl"
    )  # results alone: lineage from their own fields
    copy = changed_copy(gold, tmp_path / "copy")
    unknown = CliRunner().invoke(
        main, ["align", "--gold", str(copy), "--results", str(moved / "results.jsonl")]
    )
    assert (
        unknown.exit_code == 2
        and "cannot be listed" in unknown.output
        and "case d2:" not in unknown.output
    )
    # Freeze the original, then correct d2 the right way (a superseding record): results on d2 are
    # refused as superseded.
    freeze = CliRunner().invoke(main, ["freeze", str(gold), "--who", "tester"])
    assert freeze.exit_code == 0 and "froze release rel-1-" in freeze.output
    rows = [json.loads(line) for line in (gold / "gold.jsonl").read_text().splitlines()]
    d2 = next(r for r in rows if r["case_id"] == "d2")
    correction = {
        **d2,
        "case_id": "d2-fix",
        "supersedes": "d2",
        "adjudication": {**d2["adjudication"], "label": "pass"},
    }
    corrected = tmp_path / "corrected"
    shutil.copytree(gold, corrected)
    (corrected / "gold.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in [*rows, correction])
    )
    validated = CliRunner().invoke(main, ["validate", str(corrected)])
    assert validated.exit_code == 0, validated.output
    result = CliRunner().invoke(
        main, ["align", "--gold", str(corrected), "--results", str(moved / "results.jsonl")]
    )
    assert result.exit_code == 2
    assert [
        line
        for line in result.output.splitlines()
        if "case d2:" in line and "superseded by 'd2-fix'" in line
    ]
    # And an in-place flip of the frozen gold is refused by validation itself.
    flipped = changed_copy(gold, tmp_path / "flipped", rubric_version=None)
    assert "[frozen_case_edited]" in CliRunner().invoke(main, ["validate", str(flipped)]).output


def test_a_foreign_manifest_beside_the_results_is_refused(
    run_dir: tuple[Path, Path], tmp_path: Path
) -> None:
    gold, out = run_dir
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["run_id"] = "another-run"
    (out / "manifest.json").write_text(json.dumps(manifest))
    result = CliRunner().invoke(
        main, ["align", "--gold", str(gold), "--results", str(out / "results.jsonl")]
    )
    assert result.exit_code == 2 and "[lineage_manifest_mismatch]" in result.output


def test_partition_comes_from_the_run_manifest(run_dir: tuple[Path, Path], tmp_path: Path) -> None:
    gold, out = run_dir
    results = str(out / "results.jsonl")
    text = CliRunner().invoke(main, ["align", "--gold", str(gold), "--results", results])
    assert text.exit_code == 0, text.output
    assert (
        "partition:  development (from the run manifest" in text.output
        and "3 in scope" in text.output
    )
    report = json.loads(
        CliRunner()
        .invoke(main, ["align", "--gold", str(gold), "--results", results, "--json"])
        .output
    )
    assert (report["partition"], report["partition_source"], report["status"]) == (
        "development",
        "run_manifest",
        "complete",
    )
    override = json.loads(
        CliRunner()
        .invoke(
            main,
            [
                "align",
                "--gold",
                str(gold),
                "--results",
                results,
                "--json",
                "--partition",
                "calibration",
            ],
        )
        .output
    )
    assert (override["partition"], override["partition_source"]) == ("calibration", "option")
    gate = CliRunner().invoke(
        main,
        ["gate", "--gold", str(gold), "--results", results, "--policy", str(policy_file(tmp_path))],
    )
    assert (
        "partition: development (from the run manifest" in gate.output
        and "partition development" in gate.output
    )
    gate_json = CliRunner().invoke(
        main,
        [
            "gate",
            "--gold",
            str(gold),
            "--results",
            results,
            "--policy",
            str(policy_file(tmp_path)),
            "--json",
        ],
    )
    assert _json(gate_json)["partition"] == "development"
    # Without a manifest beside the results, every partition is in scope (and the c1 case is
    # missing).
    moved = tmp_path / "moved"
    moved.mkdir()
    shutil.copyfile(out / "results.jsonl", moved / "results.jsonl")
    alone = json.loads(
        CliRunner()
        .invoke(
            main,
            ["align", "--gold", str(gold), "--results", str(moved / "results.jsonl"), "--json"],
        )
        .output
    )
    assert (alone["partition"], alone["partition_source"], alone["missing_case_ids"]) == (
        None,
        "all",
        ["c1"],
    )


def test_runs_record_their_lineage_and_release(make_dataset, tmp_path: Path) -> None:
    from conftest import canonical_sha256

    from workbench.gold import FIELD_GROUPS, case_hashes, freeze

    gold = make_dataset(_cases())
    release, created = freeze(gold, approver="tester", note="first")
    assert (
        created
        and release.approver == "tester"
        and release.note == "first"
        and release.previous_sha256 is None
    )
    spec = tmp_path / "kw@1.yaml"
    spec.write_text(yaml.safe_dump(SPEC), encoding="utf-8")
    dataset = load_dataset(gold)
    out = tmp_path / "run"
    run_candidate_sync(
        load_candidate(spec),
        dataset,
        "development",
        out,
        RunOptions(progress=False, cache_dir=False),
    )
    manifest = json.loads((out / "manifest.json").read_text())
    assert (manifest["dataset_sha256"], manifest["rubric_version"], manifest["gold_release"]) == (
        dataset.sha256,
        "r1",
        release.release_id,
    )
    d2 = next(c for c in manifest["cases"] if c["case_id"] == "d2")
    assert set(d2["gold"]) == set(FIELD_GROUPS)
    raw = next(c for c in _cases() if c["case_id"] == "d2")
    assert d2["gold"]["label"] == canonical_sha256("fail") and d2["gold"][
        "notes"
    ] == canonical_sha256(raw["grading_notes"])
    assert d2["gold"] == case_hashes(dataset.cases["d2"])
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert {(r["dataset_sha256"], r["rubric_version"]) for r in rows} == {(dataset.sha256, "r1")}


def test_a_run_started_before_a_freeze_resumes(make_dataset, tmp_path: Path) -> None:
    from workbench.gold import freeze

    gold = make_dataset(_cases())
    spec = tmp_path / "kw@1.yaml"
    spec.write_text(yaml.safe_dump(SPEC), encoding="utf-8")
    out = tmp_path / "run"
    first = run_candidate_sync(
        load_candidate(spec),
        load_dataset(gold),
        "development",
        out,
        RunOptions(progress=False, cache_dir=False, max_cases=1),
    )
    assert first.status == "incomplete"
    freeze(gold, approver="tester")
    again = run_candidate_sync(
        load_candidate(spec),
        load_dataset(gold),
        "development",
        out,
        RunOptions(progress=False, cache_dir=False),
    )
    assert (
        again.status == "complete"
        and json.loads((out / "manifest.json").read_text())["gold_release"] is None
    )


def test_case_hashes_cover_every_gold_field() -> None:
    from workbench.gold import FIELD_GROUPS, GoldCase

    covered = {name.split(".")[0] for fields in FIELD_GROUPS.values() for name in fields}
    assert covered == set(GoldCase.model_fields)
    names = [name for fields in FIELD_GROUPS.values() for name in fields]
    assert len(names) == len(set(names))  # each field in exactly one group


def test_lineage_models_are_documented() -> None:
    from workbench.align import GoldChange, Lineage
    from workbench.approval import Release
    from workbench.results import ManifestCase, RunManifest

    doc = (Path(__file__).resolve().parents[1] / "docs" / "formats.md").read_text(encoding="utf-8")
    for model in (Release, Lineage, GoldChange):
        missing = [
            name
            for name in model.model_fields
            if f"`{name}`" not in doc
            and f"{name}," not in doc
            and f"{name}}}" not in doc
            and f"{{{name}" not in doc
        ]
        assert missing == [], model.__name__
        assert undocumented_fields(model, "schema_version") == [], model.__name__
    for name in ("rubric_version", "gold_release", "gold"):
        assert name in RunManifest.model_fields or name in ManifestCase.model_fields
        assert f"`{name}`" in doc


def test_the_demo_gold_is_committed_frozen() -> None:
    from workbench.approval import read_release_log

    demo = Path(__file__).resolve().parents[1] / "data" / "demo"
    dataset = load_dataset(demo)
    log = read_release_log(demo)
    assert log.problems == () and len(log.releases) >= 1
    assert dataset.release is not None and dataset.release.dataset_sha256 == dataset.sha256
    assert set(dataset.release.items) == {r.case_id for r in dataset.records}
