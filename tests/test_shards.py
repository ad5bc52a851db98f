"""The sharded run layout and the Ray executor's refusals; none of these needs Ray installed."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from conftest import make_case, undocumented_fields

from workbench.cli import main
from workbench.errors import WorkbenchError
from workbench.gold import load_dataset
from workbench.judges import load_candidate
from workbench.results import ManifestCase, RunManifest
from workbench.runs import RunDir, RunOptions, run_candidate_sync
from workbench.runs._shards import ShardPlan, merge_results, shard_of

ROOT = Path(__file__).resolve().parents[1]
SPEC = {
    "name": "kw",
    "version": "1",
    "kind": "ragas-function",
    "labels": ["pass", "fail"],
    "function": "judge_fixtures:keyword_judge",
}


def shard_dir(out: Path, index: int) -> Path:
    return RunDir(out).shard(index).path


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    path = tmp_path / "kw@1.yaml"
    path.write_text(yaml.safe_dump(SPEC), encoding="utf-8")
    return path


@pytest.fixture
def gold(make_dataset) -> Path:
    return make_dataset(
        [
            make_case(f"d{i}", "pass", response="A refund is possible after review.")
            for i in range(6)
        ]
    )


def test_shard_of_follows_the_documented_rule() -> None:
    ids = [f"case-{i}" for i in range(200)]
    for case_id in ids:
        assert (
            shard_of(case_id, 7) == int(hashlib.sha256(case_id.encode()).hexdigest()[:16], 16) % 7
        )
    assert {shard_of(c, 4) for c in ids} == {0, 1, 2, 3}
    assert shard_of("x", 1) == 0
    assert ShardPlan.model_fields["assignment"].default == "int(sha256(case_id)[:16], 16) % shards"


def test_the_local_engine_refuses_a_sharded_run_directory(
    spec: Path, gold: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "shards.json").write_text(
        json.dumps(ShardPlan(run_id="r", shards=2, cases_per_shard=[3, 3]).model_dump(mode="json"))
    )
    with pytest.raises(WorkbenchError) as caught:
        run_candidate_sync(
            load_candidate(spec),
            load_dataset(gold),
            "development",
            out,
            RunOptions(progress=False, cache_dir=False),
        )
    assert [p.code for p in caught.value.problems] == ["executor_mismatch"]
    assert not (out / "results.jsonl").exists()  # nothing was written beside the shards


def _cli(*args: str) -> object:
    return CliRunner().invoke(main, ["run", *args])


def test_cli_flag_combinations_are_refused_in_one_line(
    spec: Path, gold: Path, tmp_path: Path
) -> None:
    base = [
        "--candidate",
        str(spec),
        "--gold",
        str(gold),
        "--partition",
        "development",
        "--out",
        str(tmp_path / "o"),
        "--no-progress",
    ]
    no_shards = _cli(*base, "--executor", "ray")
    assert no_shards.exit_code == 2 and "--executor ray needs --shards N" in no_shards.output
    local_shards = _cli(*base, "--shards", "2")
    assert local_shards.exit_code == 2 and "apply only with --executor ray" in local_shards.output
    rate = _cli(*base, "--calls-per-second", "3")
    assert rate.exit_code == 2 and "apply only with --executor ray" in rate.output
    zero = _cli(*base, "--executor", "ray", "--shards", "0")
    assert zero.exit_code == 2
    assert not (tmp_path / "o").exists()


def test_without_the_extra_the_ray_executor_says_how_to_install_it(
    spec: Path, gold: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import workbench.runs._ray as executor

    monkeypatch.setattr(executor, "ray_available", lambda: False)
    result = _cli(
        "--candidate",
        str(spec),
        "--gold",
        str(gold),
        "--partition",
        "development",
        "--out",
        str(tmp_path / "o"),
        "--executor",
        "ray",
        "--shards",
        "2",
    )
    assert result.exit_code == 2, result.output
    assert (
        "pip install 'judge-workbench[ray]'" in result.output and "Traceback" not in result.output
    )
    assert not (tmp_path / "o").exists()


def test_a_resume_with_another_shard_count_is_refused(spec: Path, tmp_path: Path) -> None:
    from workbench.runs._ray import _freeze_plan

    judge = load_candidate(spec)
    manifest = RunManifest(
        run_id="run-1",
        created_at=datetime.now(UTC),
        judge=judge.identity,
        judge_fingerprint=judge.identity.fingerprint(),
        dataset_sha256="0" * 64,
        partition="development",
        repeats=1,
        cases=[ManifestCase(case_id=f"c{i}", response_hash="h") for i in range(10)],
    )
    out = tmp_path / "run"
    out.mkdir()
    by_shard = _freeze_plan(out, manifest, 3)
    assert sorted(c for ids in by_shard for c in ids) == sorted(f"c{i}" for i in range(10))
    for index, ids in enumerate(by_shard):
        assert all(shard_of(c, 3) == index for c in ids)
        if ids:
            written = RunManifest.model_validate_json(
                (shard_dir(out, index) / "manifest.json").read_text()
            )
            assert written.run_id == "run-1" and [c.case_id for c in written.cases] == ids
    assert _freeze_plan(out, manifest, 3) == by_shard  # the same plan resumes
    with pytest.raises(WorkbenchError) as caught:
        _freeze_plan(out, manifest, 2)
    assert [p.code for p in caught.value.problems] == ["shards_changed"]
    assert "resume with --shards 3" in caught.value.problems[0].fix


def test_merge_keeps_whole_lines_only(tmp_path: Path) -> None:
    for index, body in enumerate([b'{"a": 1}\n{"a": 2}\n', b'{"a": 3}\n{"a": 4, "torn']):
        shard_dir(tmp_path, index).mkdir(parents=True)
        (shard_dir(tmp_path, index) / "results.jsonl").write_bytes(body)
    assert merge_results(tmp_path, 3, tmp_path / "results.jsonl") == 3
    assert (tmp_path / "results.jsonl").read_bytes() == b'{"a": 1}\n{"a": 2}\n{"a": 3}\n'


def test_the_shard_plan_is_documented() -> None:
    doc = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
    section = doc.split("### Sharded run directory", 1)[1].split("\n## ", 1)[0]
    assert [name for name in ShardPlan.model_fields if f"`{name}`" not in section] == []
    assert undocumented_fields(ShardPlan, "schema_version") == []
    for name in ("shards/<k>/results.jsonl", "worker.json", "RAY_ADDRESS"):
        assert name in section


@pytest.mark.parametrize(
    ("options", "code"),
    [
        ({"shards": 0}, "invalid_shards"),
        ({"shards": None}, "invalid_shards"),
        ({"shards": 2, "calls_per_second": -1.0}, "invalid_rate"),
        ({"shards": 2, "concurrency": "8"}, "invalid_concurrency"),
    ],
)
def test_the_ray_executor_checks_its_options_before_anything_else(
    spec: Path, gold: Path, tmp_path: Path, options: dict, code: str
) -> None:
    from workbench.runs._ray import run_candidate_ray

    with pytest.raises(WorkbenchError) as caught:
        run_candidate_ray(
            spec, gold, "development", tmp_path / "o", RunOptions(executor="ray", **options)
        )
    assert [p.code for p in caught.value.problems] == [code]
    assert not (tmp_path / "o").exists()
    with pytest.raises(WorkbenchError) as local:
        run_candidate_ray(spec, gold, "development", tmp_path / "o", RunOptions(shards=2))
    assert [p.code for p in local.value.problems] == ["executor_mismatch"]
