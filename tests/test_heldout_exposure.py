"""Held-out content is never judged or shown outside a certification (issue 28, points 8 and 9).

Each attack is the audit's: a fresh project copy of the demo (its workbench.yaml and
``data/demo``), then the attack, then the refusal with its error code and exit 2. A held-out
case is copied with new ids and a zero-width space (Unicode category ``Cf``) in its response,
so neither its id nor its exact text gives it away: only its normalized content does.
"""

from __future__ import annotations

import csv
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from _certified import lenient_certification
from click.testing import CliRunner

from workbench.cli.main import main
from workbench.controls import load_suite
from workbench.errors import WorkbenchError
from workbench.gold import load_dataset
from workbench.heldout import HeldOutLedger, item_keys, ledger_path_for

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo"
JUDGE = ROOT / "data" / "candidates" / "rubric-judge@2.yaml"
OLD_JUDGE = ROOT / "data" / "candidates" / "rubric-judge@1.yaml"
EXAMPLE = ROOT / "examples" / "faq-reviews"
ZWSP = "\u200b"
EXPOSED = "held_out_content_exposed"


def cli(*args: Any, cwd: Path | None = None, monkeypatch: Any = None) -> Any:
    if cwd is not None:  # the project root is pinned: the working directory and the env agree
        monkeypatch.chdir(cwd)
        monkeypatch.setenv("WORKBENCH_PROJECT_ROOT", str(cwd))
    return CliRunner().invoke(main, [str(a) for a in args])


def _project(tmp_path: Path, config: str | None = None) -> Path:
    """A fresh project: the demo's workbench.yaml (or ``config``) and a copy of the demo gold."""
    project = tmp_path / "project"
    (project / "data").mkdir(parents=True)
    text = config if config is not None else (ROOT / "workbench.yaml").read_text("utf-8")
    (project / "workbench.yaml").write_text(text, encoding="utf-8")
    shutil.copytree(DEMO, project / "data" / "demo")
    return project


def _rows(gold: Path) -> list[dict[str, Any]]:
    lines = (gold / "gold.jsonl").read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines]


def _held_out(gold: Path, n: int) -> list[dict[str, Any]]:
    rows = _rows(gold)
    superseded = {r.get("supersedes") for r in rows}
    held = [r for r in rows if r["partition"] == "held_out" and r["case_id"] not in superseded]
    return held[:n]


def _disguised(text: str) -> str:
    """``text`` with a zero-width space inside: another string, the same content."""
    return text[:7] + ZWSP + text[7:]


def _control(row: dict[str, Any], n: int) -> dict[str, Any]:
    label = row["adjudication"]["label"]
    control = {
        "control_id": f"probe-{n}",
        "role": "positive" if label == "pass" else "negative",
        "input": row["input"],
        "response": _disguised(row["response"]),
        "expected_label": label,
        "rationale": "copied from the held-out partition (the attack)",
    }
    for key in ("grading_notes", "reference", "contexts"):
        if row.get(key) is not None:
            control[key] = row[key]
    return control


def _leaky_suite(project: Path, rows: list[dict[str, Any]]) -> Path:
    suite = {
        "schema_version": 1,
        "name": "leaky",
        "version": "1",
        "rubric_version": "support-policy-2026.09",
        "labels": ["pass", "fail", "review_required"],
        "controls": [_control(row, i) for i, row in enumerate(rows)],
    }
    path = project / "data" / "controls" / "leaky@1.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(suite, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def _append_development_copy(gold: Path, row: dict[str, Any], case_id: str) -> None:
    """Copy a held-out case into development: new id, new group, a zero-width space."""
    copy = dict(row, case_id=case_id, partition="development", group=f"g-{case_id}")
    copy.pop("supersedes", None)
    copy["response"] = _disguised(row["response"])
    copy["response_hash"] = hashlib.sha256(copy["response"].encode("utf-8")).hexdigest()
    with open(gold / "gold.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps(copy, ensure_ascii=False) + "\n")


# ------------------------------------------------------------------------------ the library


def test_controls_copying_held_out_cases_are_refused_by_content(tmp_path: Path) -> None:
    from workbench.heldout import held_out_item_keys, refuse_held_out_content

    dataset = load_dataset(DEMO)
    rows = _held_out(DEMO, 3)
    suite = load_suite(_leaky_suite(tmp_path, rows))
    with pytest.raises(WorkbenchError) as info:
        refuse_held_out_content(suite.controls, dataset, "leaky@1.yaml", what="control")
    problems = info.value.problems
    assert [p.code for p in problems] == [EXPOSED] * 3
    assert [p.case_id for p in problems] == ["probe-0", "probe-1", "probe-2"]
    assert all(row["case_id"] in p.message for p, row in zip(problems, rows, strict=True))
    # the demo's own control suite shares no content with the held-out partition
    refuse_held_out_content(
        load_suite(ROOT / "data/controls/support-controls@1.yaml").controls,
        dataset,
        "support-controls@1.yaml",
    )
    # the gold path (read as it is) gives the same keys as the validated dataset
    with pytest.raises(WorkbenchError):
        refuse_held_out_content(suite.controls, DEMO, "leaky@1.yaml")
    held = [r for r in dataset.records if r.partition.value == "held_out"]
    assert set(held_out_item_keys(dataset)) == item_keys(held)  # superseded records too


# ------------------------------------------------------------------------------ the commands


def test_controls_command_refuses_a_suite_built_from_held_out_cases(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attack: a control suite of held-out cases (new ids, a zero-width space) run with
    `workbench controls`, which prints each control's verdict against the human label."""
    project = _project(tmp_path)
    rows = _held_out(project / "data" / "demo", 4)
    suite = _leaky_suite(project, rows)
    out = project / "runs" / "leaky"
    result = cli(
        "controls",
        "--candidate",
        JUDGE,
        "--suite",
        suite,
        "--out",
        out,
        "--no-progress",
        cwd=project,
        monkeypatch=monkeypatch,
    )
    assert result.exit_code == 2, result.output
    assert f"[{EXPOSED}]" in result.output
    for i, row in enumerate(rows):
        assert f"probe-{i}" in result.output and row["case_id"] in result.output
    assert not out.exists()  # nothing was judged
    # an explicit --gold is checked the same way
    named = cli(
        "controls",
        "--candidate",
        JUDGE,
        "--suite",
        suite,
        "--gold",
        project / "data" / "demo",
        "--out",
        out,
        "--no-progress",
        cwd=project,
        monkeypatch=monkeypatch,
    )
    assert named.exit_code == 2 and f"[{EXPOSED}]" in named.output


def test_ci_contracts_fail_a_control_suite_built_from_held_out_cases(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = yaml.safe_load((ROOT / "workbench.yaml").read_text("utf-8"))
    config.pop("ci")  # no expected failures of checks this project does not have
    project = _project(tmp_path, yaml.safe_dump(config, sort_keys=False))
    _leaky_suite(project, _held_out(project / "data" / "demo", 2))
    result = cli("ci", "contracts", "--project", project, cwd=project, monkeypatch=monkeypatch)
    assert result.exit_code == 2, result.output
    assert f"[{EXPOSED}]" in result.output
    assert "FAILED           controls/data/controls/leaky@1.yaml" in result.output


def test_ci_sentinel_refuses_a_policy_control_suite_built_from_held_out_cases(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attack: held-out cases added to the policy's control suite (unfrozen); the sentinel lane
    runs them and prints each expected label against the verdict."""
    from ci_support import git, git_project

    from workbench.phases import serve_demo_llm

    project = git_project(tmp_path / "repo")
    suite = project / "data" / "controls" / "support-controls@1.yaml"
    (project / "data" / "controls" / "releases.jsonl").unlink()
    data = yaml.safe_load(suite.read_text("utf-8"))
    data["controls"] += [_control(r, i) for i, r in enumerate(_held_out(project / "data/demo", 2))]
    suite.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "controls from held-out cases")
    monkeypatch.setenv("DEMO_LLM_API_KEY", "test-placeholder-key")
    server = serve_demo_llm(latency_s=0.0)
    try:
        result = cli(
            "ci", "sentinel", "--project", project, "--since", "HEAD~1", "--out", tmp_path / "lane"
        )
    finally:
        server.stop()
    assert result.exit_code == 2, result.output
    assert result.output.count(f"[{EXPOSED}]") == 2 and "probe-1" in result.output
    assert server.call_count == 0


def test_compare_refuses_held_out_controls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = _project(tmp_path)
    suite = _leaky_suite(project, _held_out(project / "data" / "demo", 2))
    out = project / "runs" / "cmp"
    result = cli(
        "compare",
        "--old",
        OLD_JUDGE,
        "--new",
        JUDGE,
        "--gold",
        project / "data" / "demo",
        "--partition",
        "development",
        "--controls",
        suite,
        "--out",
        out,
        "--no-progress",
        cwd=project,
        monkeypatch=monkeypatch,
    )
    assert result.exit_code == 2, result.output
    assert f"[{EXPOSED}]" in result.output and "probe-1" in result.output
    assert not (out / "comparison.json").exists()


def test_validate_catches_a_held_out_case_copied_into_development_with_invisible_characters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _project(tmp_path)
    gold = project / "data" / "demo"
    [row] = _held_out(gold, 1)
    _append_development_copy(gold, row, "dev-copy-1")
    result = cli("validate", gold, cwd=project, monkeypatch=monkeypatch)
    assert result.exit_code == 2, result.output
    assert "[cross_partition_duplicate]" in result.output
    assert "dev-copy-1" in result.output and row["case_id"] in result.output


@pytest.mark.parametrize("command", ["drift", "repeatability", "compare", "import results"])
def test_commands_refuse_a_gold_with_a_disguised_held_out_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """Attack: sentinels (or a development run) on a held-out case copied into development with
    a zero-width space: drift, repeatability and compare show per-case outcomes."""
    project = _project(tmp_path)
    gold = project / "data" / "demo"
    [row] = _held_out(gold, 1)
    _append_development_copy(gold, row, "dev-copy-1")
    sentinels = project / "leaky-sentinels.yaml"
    sentinels.write_text(
        yaml.safe_dump(
            {
                "schema_version": 1,
                "name": "leaky",
                "sentinels": [{"case_id": "dev-copy-1", "reason": "the attack"}],
            }
        ),
        encoding="utf-8",
    )
    out = project / "runs" / command
    args: dict[str, list[Any]] = {
        "drift": [
            "drift",
            "--candidate",
            JUDGE,
            "--gold",
            gold,
            "--sentinels",
            sentinels,
            "--record-baseline",
            "--out",
            out,
            "--log",
            project / "drift.jsonl",
        ],
        "repeatability": [
            "repeatability",
            "--candidate",
            JUDGE,
            "--gold",
            gold,
            "--partition",
            "development",
            "--repeats",
            "2",
            "--out",
            out,
            "--log",
            project / "studies.jsonl",
        ],
        "compare": [
            "compare",
            "--old",
            OLD_JUDGE,
            "--new",
            JUDGE,
            "--gold",
            gold,
            "--partition",
            "development",
            "--no-controls",
            "--out",
            out,
        ],
    }
    preds = project / "preds.csv"
    preds.write_text("id,verdict\ndev-copy-1,pass\n", encoding="utf-8")
    args["import results"] = [
        "import",
        "results",
        preds,
        "--gold",
        gold,
        "--out",
        out,
        "--case-id",
        "id",
        "--label",
        "verdict",
        "--name",
        "vendor",
        "--version",
        "1",
        "--model",
        "m",
        "--prompt-description",
        "a vendor's verdicts",
    ]
    progress = [] if command == "import results" else ["--no-progress"]
    result = cli(*args[command], *progress, cwd=project, monkeypatch=monkeypatch)
    assert result.exit_code == 2, result.output
    assert "[cross_partition_duplicate]" in result.output and "dev-copy-1" in result.output
    assert not out.exists() or not any(out.rglob("results.jsonl"))


def _import_example(tmp_path: Path, seed: int, out: Path, *force: str) -> Any:
    mapping = (EXAMPLE / "mapping.yaml").read_text("utf-8").replace("seed: 2026", f"seed: {seed}")
    path = tmp_path / f"mapping-{seed}.yaml"
    path.write_text(mapping, encoding="utf-8")
    return CliRunner().invoke(
        main,
        [
            "import",
            "table",
            str(EXAMPLE / "reviews.csv"),
            "--mapping",
            str(path),
            "--out",
            str(out),
            *force,
        ],
    )


def _record_use(gold: Path) -> None:
    """A certification's `started` ledger entry for ``gold`` (what certify appends before the
    first held-out call)."""
    ledger = HeldOutLedger(ledger_path_for(gold))
    with ledger.locked():
        _entry, _token, hold = ledger.start(
            candidate="faq-judge@1",
            fingerprint="f" * 64,
            dataset_sha256="d" * 64,
            manifest_sha256="m" * 64,
            report_id="faq-judge/1/1",
            reports_root=gold.parent / "reports",
            gold=gold,
            rerun_reason=None,
        )
    hold.release()


def _partitions(gold: Path) -> dict[str, str]:
    return {r["case_id"]: r["partition"] for r in _rows(gold)}


def test_import_table_force_cannot_move_held_out_cases_a_certification_used(
    tmp_path: Path,
) -> None:
    """Attack: re-import with another partition seed and --force: held-out cases a
    certification used land in development, the ledger not consulted."""
    out = tmp_path / "faq"
    assert _import_example(tmp_path, 2026, out).exit_code == 0
    probe = tmp_path / "probe"
    assert _import_example(tmp_path, 7, probe).exit_code == 0
    before, after = _partitions(out), _partitions(probe)
    moved = sorted(c for c, p in before.items() if p == "held_out" and after[c] != "held_out")
    assert moved  # the reseeded split moves held-out cases out of held_out
    _record_use(out)
    gold_before = (out / "gold.jsonl").read_bytes()
    result = _import_example(tmp_path, 7, out, "--force")
    assert result.exit_code == 2, result.output
    assert f"[{EXPOSED}]" in result.output
    assert all(cid in result.output for cid in moved)
    assert (out / "gold.jsonl").read_bytes() == gold_before
    # without a recorded use, --force still replaces the split (a new dataset version)
    fresh = tmp_path / "fresh"
    assert _import_example(tmp_path, 2026, fresh).exit_code == 0
    assert _import_example(tmp_path, 7, fresh, "--force").exit_code == 0


def _split_source(tmp_path: Path, name: str, extra: list[list[str]]) -> tuple[Path, Path]:
    """The example's reviews with a ``split`` column (every fourth case held out) plus ``extra``
    rows, and a mapping that reads it."""
    with open(EXAMPLE / "reviews.csv", encoding="utf-8", newline="") as fh:
        header, *rows = list(csv.reader(fh))
    ids = sorted({row[0] for row in rows})
    split = {cid: "held_out" if i % 4 == 0 else "development" for i, cid in enumerate(ids)}
    source = tmp_path / f"{name}.csv"
    with open(source, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow([*header, "split"])
        writer.writerows([*row, split[row[0]]] for row in rows)
        writer.writerows(extra)
    mapping = (EXAMPLE / "mapping.yaml").read_text("utf-8")
    mapping = "\n".join(
        "partition: {column: split}" if line.startswith("partition:") else line
        for line in mapping.splitlines()
    )
    path = tmp_path / f"{name}.yaml"
    path.write_text(mapping + "\n", encoding="utf-8")
    return source, path


def test_import_table_refuses_a_used_held_out_case_under_a_new_id(tmp_path: Path) -> None:
    """Attack: a used held-out case re-imported into development under a new id with a
    zero-width space: no existing case moves, so even --force was not needed."""
    out = tmp_path / "faq"
    source, mapping = _split_source(tmp_path, "first", [])
    first = CliRunner().invoke(
        main, ["import", "table", str(source), "--mapping", str(mapping), "--out", str(out)]
    )
    assert first.exit_code == 0, first.output
    _record_use(out)
    target = next(r for r in _rows(out) if r["partition"] == "held_out")
    with open(EXAMPLE / "reviews.csv", encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))[1:]
    copies = [
        ["faq-copy", _disguised(row[1]), _disguised(row[2]), *row[3:], "development"]
        for row in rows
        if row[0] == target["case_id"]
    ]
    source, mapping = _split_source(tmp_path, "second", copies)
    before = (out / "gold.jsonl").read_bytes()
    for force in ((), ("--force",)):
        result = CliRunner().invoke(
            main,
            ["import", "table", str(source), "--mapping", str(mapping), "--out", str(out), *force],
        )
        assert result.exit_code == 2, result.output
        assert f"[{EXPOSED}]" in result.output
        assert "faq-copy" in result.output and target["case_id"] in result.output
        assert (out / "gold.jsonl").read_bytes() == before


# ------------------------------------------------------------------------------ reviewers


def _config_with(reviewers: list[str] | None) -> str:
    config = yaml.safe_load((ROOT / "workbench.yaml").read_text("utf-8"))
    config.pop("reviewers", None)
    if reviewers is not None:
        config["reviewers"] = reviewers
    return yaml.safe_dump(config, sort_keys=False)


def test_reviewers_and_adjudicators_must_be_on_the_project_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attack: reviewer and adjudicator names in gold are free text."""
    listed = ["reviewer-a", "reviewer-b", "reviewer-c", "adjudicator-m"]  # no reviewer-d, adj-n
    project = _project(tmp_path, _config_with(listed))
    gold = project / "data" / "demo"
    result = cli("validate", gold, "--json", cwd=project, monkeypatch=monkeypatch)
    assert result.exit_code == 2, result.output
    problems = [p for p in json.loads(result.output)["problems"] if p["code"] == "reviewer_unknown"]
    rows = {r["case_id"]: r for r in _rows(gold)}
    expected = {
        cid
        for cid, r in rows.items()
        if any(v["reviewer"] == "reviewer-d" for v in r.get("reviews", []))
        or (r.get("adjudication") or {}).get("adjudicator") == "adjudicator-n"
    }
    assert expected and {p["case_id"] for p in problems} == expected
    assert any("'adjudicator-n'" in p["message"] for p in problems)
    assert any("'reviewer-d'" in p["message"] for p in problems)


def test_without_a_reviewer_list_validate_accepts_with_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _project(tmp_path, _config_with(None))
    result = cli("validate", project / "data" / "demo", cwd=project, monkeypatch=monkeypatch)
    assert result.exit_code == 0, result.output
    assert result.output.count("[reviewers_undeclared]") == 1
    listed = cli("validate", DEMO, cwd=ROOT, monkeypatch=monkeypatch)  # the demo declares its own
    assert listed.exit_code == 0 and "reviewers_undeclared" not in listed.output


# ------------------------------------------------------------------------------ estimate


@pytest.mark.notebook
def test_estimate_refuses_traffic_holding_the_reports_held_out_cases(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Attack: the certified judge's verdicts on held-out cases, renamed as production traffic
    (with a labelled sample), corrected by the report's own held-out error rates. The report:
    rubric-judge@2 certified under a lenient policy, shared with test_estimate.py (certified
    once per run, tests/_certified.py; read in its project, never written)."""
    shared = lenient_certification(tmp_path_factory)
    result = shared.results[0]
    assert result.outcome == "certified", result.blockers
    run = tmp_path / "run"
    ran = CliRunner().invoke(
        main,
        [
            "run",
            "--candidate",
            str(JUDGE),
            "--gold",
            str(DEMO),
            "--partition",
            "development",
            "--out",
            str(run),
            "--no-cache",
            "--no-progress",
        ],
    )
    assert ran.exit_code == 0, ran.output
    lines = [json.loads(x) for x in (run / "results.jsonl").read_text("utf-8").splitlines()]
    held = [
        json.loads(x)
        for x in (result.report_dir / "restricted/gold/held_out.jsonl").read_text().splitlines()
    ][:5]
    traffic = [
        dict(
            lines[i], case_id=f"prod-{i}", response_hash=h["response_hash"], partition="production"
        )
        for i, h in enumerate(held)
    ]
    results = tmp_path / "traffic.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in traffic), encoding="utf-8")
    slices = tmp_path / "slices.csv"
    slices.write_text(
        "case_id,slice\n" + "".join(f"prod-{i},{h['slice']}\n" for i, h in enumerate(held)),
        encoding="utf-8",
    )
    with shared.pinned():  # the report verifies against its project's held-out ledger
        out = CliRunner().invoke(
            main,
            [
                "estimate",
                "--report",
                str(result.report_dir),
                "--results",
                str(results),
                "--slices",
                str(slices),
                "--rubric",
                str(DEMO),
                "--json",
            ],
        )
    assert out.exit_code == 2, out.output
    assert out.output.count(f"[{EXPOSED}]") == len(held)
    assert all(f"prod-{i}" in out.output for i in range(len(held)))
