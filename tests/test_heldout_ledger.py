"""Issue 8 §3: held-out data is used once, whatever the reports directory.

Every reproduction of the issue, run against real certifications of a copy of the demo gold:
certifying into another ``--reports`` directory, editing or deleting ledger lines, two
certifications at the same moment, running ``03_certify.ipynb`` with a self-made ledger,
aligning held-out results no certification recorded, and a certification killed mid-run.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import _forked_cli
import pytest
import yaml
from _certified import demo_release_certification
from click.testing import CliRunner
from conftest import copy_project, current_project, make_project, use_project

from workbench.cli import main
from workbench.errors import WorkbenchError
from workbench.gold import load_dataset
from workbench.heldout import (
    LEDGER_FILE,
    HeldOutLedger,
    LedgerEntry,
    held_out_manifest_sha256,
    ledger_path_for,
)
from workbench.judges import load_candidate
from workbench.reports import certify, read_lock, verify_report

ROOT = Path(__file__).resolve().parents[1]
# The tests that use this module's certified world run in its project, to read its held-out
# ledger (tests/conftest.py); every other test has a project of its own.
MODULE_PROJECT = True
CANDIDATE = ROOT / "data" / "candidates" / "rubric-judge@2.yaml"
POLICY = ROOT / "data" / "policies" / "support-release@1.yaml"
DEMO = ROOT / "data" / "demo"
PYTHON = sys.executable


def fresh_gold(directory: Path, name: str = "gold") -> Path:
    gold = directory / name
    shutil.copytree(DEMO, gold)
    return gold


def certify_args(gold: Path, reports: Path, candidate: Path = CANDIDATE) -> list[str]:
    """``workbench certify`` of ``candidate`` under the module's policy, as arguments."""
    return [
        "certify",
        "--candidate",
        str(candidate),
        "--policy",
        str(POLICY),
        "--gold",
        str(gold),
        "--reports",
        str(reports),
    ]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``workbench <args>`` in-process (click's CliRunner): its exit code and separate stdout and
    stderr.

    A subprocess per call re-imported the workbench (seconds under load) to test refusals that
    happen in the command itself; the concurrent and killed certifications below stay processes.
    """
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        result.output
    )  # never a traceback
    return subprocess.CompletedProcess(
        ["workbench", *args], result.exit_code, result.stdout, result.stderr
    )


def lines(path: Path) -> list[str]:
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def certified(tmp_path_factory: pytest.TempPathFactory):
    """One real certification of a copy of the demo gold into reports root A (shared by the run,
    tests/_certified.py: read it, never write there)."""
    with demo_release_certification(tmp_path_factory).pinned() as shared:  # its project
        yield shared.gold, shared.reports, shared.results[0]


# -- where the ledger lives ----------------------------------------------------------------


@pytest.mark.notebook
def test_certifying_into_another_reports_directory_is_refused(certified, tmp_path: Path) -> None:
    gold, _, first = certified
    ledger = ledger_path_for(gold)
    assert ledger.is_file() and ledger.parent == current_project().resolve()  # the project's
    assert not (gold / LEDGER_FILE).exists()  # not beside the data
    assert not (first.report_dir.parents[2] / LEDGER_FILE).exists()  # not in the reports root
    before = ledger.read_bytes()
    other = tmp_path / "reports-B"
    result = run_cli(*certify_args(gold, other))
    assert result.returncode == 2, result.stdout + result.stderr
    assert (
        "held_out_reuse" in result.stderr
        and first.report_id in result.stderr
        and "Traceback" not in result.stderr
    )
    assert (
        not other.exists() and ledger.read_bytes() == before
    )  # nothing allocated, nothing recorded
    listing = run_cli("reports", "--reports", str(other), "--gold", str(gold), "--ledger")
    assert (
        listing.returncode == 0
        and "chain intact" in listing.stdout
        and first.report_id in listing.stdout
    )


def test_the_project_declares_one_ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "project"
    gold = fresh_gold(project / "data")
    use_project(monkeypatch, project)
    with pytest.raises(WorkbenchError) as info:
        ledger_path_for(gold)  # no workbench.yaml: no fallback to a fresh ledger anywhere
    assert [p.code for p in info.value.problems] == ["held_out_ledger_undeclared"]
    (project / "workbench.yaml").write_text("held_out_ledger: evidence/held_out.jsonl\n")
    assert ledger_path_for(gold) == (project / "evidence" / "held_out.jsonl").resolve()
    assert ledger_path_for(gold / "gold.jsonl") == ledger_path_for(gold)
    # markers dropped into the data directory change nothing
    (gold / ".git").mkdir()
    (gold / "workbench.yaml").write_text("held_out_ledger: fresh.jsonl\n")
    assert ledger_path_for(gold) == (project / "evidence" / "held_out.jsonl").resolve()
    (project / "workbench.yaml").write_text("held_out_ledger: [1, 2]\n")
    with pytest.raises(WorkbenchError) as info:
        ledger_path_for(gold)
    assert info.value.problems[0].code == "project_config_invalid"
    # uses recorded beside the data by an older workbench are not left behind
    (project / "workbench.yaml").write_text("held_out_ledger: evidence/held_out.jsonl\n")
    (gold / LEDGER_FILE).write_text('{"entry_id": "x"}\n')
    with pytest.raises(WorkbenchError) as info:
        ledger_path_for(gold)
    assert info.value.problems[0].code == "ledger_conflict"


def test_certify_offers_no_way_to_choose_the_ledger() -> None:
    import inspect

    help_text = CliRunner().invoke(main, ["certify", "--help"]).output
    assert "--ledger" not in help_text and "--gold" in help_text
    assert not [p for p in inspect.signature(certify).parameters if "ledger" in p]


# -- the chain -----------------------------------------------------------------------------


def _rehash(record: dict) -> dict:
    entry = LedgerEntry.model_validate({**record, "entry_sha256": ""})
    return {**record, "entry_sha256": entry.content_sha256()}


def _edit_outcome(rows: list[dict]) -> tuple[list[dict], int]:
    rows[1]["held_out_used"] = False  # "no held-out case was judged": would free a second run
    return rows, 2


def _edit_and_rehash_the_line(rows: list[dict]) -> tuple[list[dict], int]:
    rows[1] = _rehash({**rows[1], "held_out_used": False})  # the line is self-consistent again
    return rows, 3  # ... but the next line names the old hash


def _delete_first_line(rows: list[dict]) -> tuple[list[dict], int]:
    return rows[1:], 1


def _delete_a_middle_line(rows: list[dict]) -> tuple[list[dict], int]:
    return [rows[0], rows[2]], 2


@pytest.mark.notebook
@pytest.mark.parametrize(
    "tamper",
    [_edit_outcome, _edit_and_rehash_the_line, _delete_first_line, _delete_a_middle_line],
    ids=lambda f: f.__name__.strip("_"),
)
def test_an_edited_or_deleted_ledger_line_breaks_the_chain(
    certified, tmp_path: Path, tamper, monkeypatch: pytest.MonkeyPatch
) -> None:
    gold, _, first = certified
    copy = tmp_path / "gold"
    shutil.copytree(gold, copy)
    copy_project(monkeypatch, tmp_path / "project")  # the shared ledger is never written
    ledger = ledger_path_for(copy)
    rows = [json.loads(line) for line in lines(ledger)]
    assert [r["event"] for r in rows] == ["started", "finished"]
    rows.append(
        _rehash(
            {
                **rows[1],
                "entry_id": "ldg-later",
                "previous_sha256": rows[1]["entry_sha256"],
                "event": "aborted",
                "outcome": "aborted",
                "opens": rows[0]["entry_id"],
            }
        )
    )
    ledger.write_text("".join(json.dumps(r) + "\n" for r in rows))  # a valid three-line chain
    assert HeldOutLedger(ledger).read().ok
    tampered, broken_at = tamper(rows)
    ledger.write_text("".join(json.dumps(r) + "\n" for r in tampered))
    reports = tmp_path / "reports"
    result = run_cli(*certify_args(copy, reports))
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"chain broken at line {broken_at}" in result.stderr and "Traceback" not in result.stderr
    assert not reports.exists()  # held-out data untouched
    listing = run_cli("reports", "--gold", str(copy), "--ledger", "--reports", str(reports))
    assert (
        listing.returncode == 1
        and "CHAIN BROKEN" in listing.stdout
        and f"chain broken at line {broken_at}" in listing.stderr
    )


@pytest.mark.notebook
def test_deleting_the_last_lines_is_caught_by_the_reports_on_disk(tmp_path: Path) -> None:
    gold = fresh_gold(tmp_path)
    reports = tmp_path / "reports"
    first = certify(CANDIDATE, POLICY, gold, reports_root=reports)
    ledger_path_for(gold).write_text("")  # every line gone: no chain left to break
    result = run_cli(*certify_args(gold, reports))
    assert (
        result.returncode == 2
        and "ledger_truncated" in result.stderr
        and first.report_id in result.stderr
    )
    assert sorted(p.name for p in first.report_dir.parent.iterdir()) == ["1"]
    verified = run_cli("verify", str(first.report_dir))
    assert verified.returncode == 1 and "ledger_entry_missing" in verified.stderr


# -- two certifications at the same moment ---------------------------------------------------


@pytest.mark.notebook
def test_two_simultaneous_certifications_give_one_certification_and_one_refusal(
    tmp_path: Path,
) -> None:
    """Two ``workbench certify`` processes started together, end to end: one certifies, the other
    is refused. (One trial: each costs a full certification. The critical section is raced 24
    times, by two and three processes released by a barrier, in the test below.)"""
    env = {**os.environ, "RAGAS_DO_NOT_TRACK": "true"}
    gold = fresh_gold(tmp_path)
    procs = [  # two processes, forks of this one (tests/_forked_cli.py: no interpreter start-up)
        _forked_cli.Popen(
            [PYTHON, "-m", "workbench", *certify_args(gold, tmp_path / f"r{k}")], cwd=ROOT, env=env
        )
        for k in range(2)
    ]
    outs = [p.communicate(timeout=600) for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes[0] in (0, 1, 3, 4) and codes[1] == 2, (codes, outs)
    refused = next(err for p, (_, err) in zip(procs, outs, strict=True) if p.returncode == 2)
    assert "held_out_reuse" in refused and "Traceback" not in refused
    used = [
        d for k in range(2) for d in (tmp_path / f"r{k}").glob("*/*/*/restricted/run/results.jsonl")
    ]
    assert len(used) == 1, used  # held-out data judged once
    entries = HeldOutLedger(ledger_path_for(gold)).entries()
    assert [e.event for e in entries] == ["started", "finished"]


def _race_to_start(
    inputs: Any, root: Path, barrier: Any, answers: Any
) -> None:  # pragma: no cover - runs in a forked child
    """One contender: wait for the others, check-then-start as ``certify`` does, then stay alive
    (a winner that is still running is not reconciled as aborted) until every contender has
    answered."""
    from workbench.reports._certify import _start

    ledger = HeldOutLedger(ledger_path_for(inputs.gold))
    barrier.wait(timeout=60)
    try:
        started = _start(ledger, inputs, root, None)
    except WorkbenchError as exc:
        answers.put(("refused", sorted(p.code for p in exc.problems), str(root)))
    else:
        answers.put(("started", started.report_id, str(root)))
    barrier.wait(timeout=60)
    # the process ends without finishing its entry: its liveness hold is released with it


@pytest.mark.parametrize("contenders", [2, 3])
def test_check_then_start_admits_one_of_simultaneous_processes(
    tmp_path: Path, contenders: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The critical section ``certify`` runs under the ledger lock (reconcile, checks, allocate,
    append ``started``), raced by processes released together by a barrier, 12 times over: each
    time exactly one starts and the others are refused with ``held_out_reuse``, whatever their
    reports directories, and the ledger holds one ``started`` entry."""
    import multiprocessing

    from workbench.reports._certify import _check_inputs

    fork = multiprocessing.get_context("fork")  # the contenders share the loaded inputs
    for trial in range(12):
        use_project(monkeypatch, make_project(tmp_path / f"project-{trial}"))  # a fresh ledger
        gold = fresh_gold(tmp_path, f"gold-{trial}")
        inputs = _check_inputs(
            CANDIDATE,
            POLICY,
            gold,
            notebook=None,
            baseline=None,
            label_mapping=None,
            budget_usd=None,
            overrides=None,
            sign_key=None,
        )
        barrier, answers = fork.Barrier(contenders), fork.Queue()
        roots = [tmp_path / f"r{trial}-{k}" for k in range(contenders)]
        procs = [
            fork.Process(target=_race_to_start, args=(inputs, root, barrier, answers))
            for root in roots
        ]
        for proc in procs:
            proc.start()
        got = [answers.get(timeout=120) for _ in procs]
        for proc in procs:
            proc.join(timeout=60)
            assert proc.exitcode == 0, (trial, proc.exitcode)
        started = [a for a in got if a[0] == "started"]
        refused = [a for a in got if a[0] == "refused"]
        assert len(started) == 1 and len(refused) == contenders - 1, (trial, got)
        assert all(codes == ["held_out_reuse"] for _, codes, _ in refused), (trial, got)
        for _, _, root in refused:  # nothing allocated for a refused contender
            assert not list(Path(root).glob("*/*/*")), (trial, root)
        entries = HeldOutLedger(ledger_path_for(gold)).entries()
        assert [e.event for e in entries] == ["started"] and entries[0].reports_root == str(
            Path(started[0][2]).resolve()
        ), (trial, entries)


# -- the certification notebook ----------------------------------------------------------------


def _notebook_parameters(gold: Path, report_dir: Path, token: str, ledger_path: str) -> dict:
    return {
        "candidate": str(CANDIDATE),
        "policy": str(POLICY),
        "gold": str(gold),
        "report_dir": str(report_dir),
        "ledger_path": ledger_path,
        "certification_token": token,
    }


def _self_made_entry(ledger: HeldOutLedger, gold: Path, report_dir: Path):
    judge = load_candidate(CANDIDATE)
    dataset = load_dataset(gold)
    with ledger.locked():
        return ledger.start(
            candidate=judge.spec.label,
            fingerprint=judge.identity.fingerprint(),
            dataset_sha256=dataset.sha256,
            manifest_sha256=held_out_manifest_sha256(dataset.sha256, dataset.partition("held_out")),
            report_id=f"{report_dir.parent.parent.name}/{report_dir.parent.name}/{report_dir.name}",
            reports_root=report_dir.parents[2],
            gold=gold,
            rerun_reason=None,
        )


def _attack(attack: str, tmp_path: Path) -> tuple[dict, str, Any]:
    """The certification notebook's parameters for ``attack``, the refusal code expected and the
    liveness hold to release afterwards (None when none is held)."""
    gold = fresh_gold(tmp_path)
    report_dir = tmp_path / "reports" / "rubric-judge" / "2" / "1"
    report_dir.mkdir(parents=True)
    if attack == "self_made_ledger":
        mine = HeldOutLedger(tmp_path / "mine.jsonl")
        _, token, hold = _self_made_entry(mine, gold, report_dir)  # a live, valid-looking entry
        return (
            _notebook_parameters(gold, report_dir, token, str(mine.path)),
            "ledger_mismatch",
            hold,
        )
    if attack == "token_not_opened":
        return (
            _notebook_parameters(gold, report_dir, "0" * 64, ""),
            "certification_not_opened",
            None,
        )
    # an entry appended to the real ledger by hand, with a valid chain, no certify running
    canonical = HeldOutLedger(ledger_path_for(gold))
    _, token, hold = _self_made_entry(canonical, gold, report_dir)
    hold.release()
    return _notebook_parameters(gold, report_dir, token, ""), "certification_not_running", None


def _nothing_judged(params: dict) -> None:
    report_dir = Path(params["report_dir"])
    assert (
        not (report_dir / "restricted" / "run").exists() and not (report_dir / "gate.json").exists()
    )  # no held-out case judged


@pytest.mark.parametrize("attack", ["self_made_ledger", "token_not_opened", "hand_appended_entry"])
def test_the_certification_refuses_to_start_unless_certify_opened_its_entry(
    tmp_path: Path, attack: str
) -> None:
    """What 03_certify.ipynb builds from its parameters (``Certification``), in-process: each
    attack is refused before any held-out case is judged."""
    from workbench.reports import Certification

    params, expected, hold = _attack(attack, tmp_path)
    try:
        with pytest.raises(WorkbenchError) as info:
            Certification(
                candidate=params["candidate"],
                policy=params["policy"],
                gold=params["gold"],
                report_dir=params["report_dir"],
                ledger_path=params["ledger_path"] or None,
                certification_token=params["certification_token"],
            )
    finally:
        if hold is not None:
            hold.release()
    assert expected in [p.code for p in info.value.problems]
    _nothing_judged(params)


@pytest.mark.notebook
def test_the_notebook_refuses_to_run_unless_certify_opened_its_entry(tmp_path: Path) -> None:
    """The notebook itself, given a self-made ledger with a live, valid-looking entry (the other
    attacks reach the same constructor: the test above)."""
    import papermill

    params, expected, hold = _attack("self_made_ledger", tmp_path)
    try:
        with pytest.raises(papermill.PapermillExecutionError) as info:
            papermill.execute_notebook(
                str(ROOT / "notebooks" / "03_certify.ipynb"),
                str(tmp_path / "out.ipynb"),
                parameters=params,
                cwd=params["report_dir"],
                progress_bar=False,
                log_output=False,
            )
    finally:
        hold.release()
    assert expected in str(info.value)
    _nothing_judged(params)


# -- align --partition held_out ------------------------------------------------------------


@pytest.mark.notebook
def test_align_refuses_held_out_results_no_certification_recorded(
    certified, tmp_path: Path
) -> None:
    gold, _, first = certified
    recorded = first.report_dir / "restricted" / "run" / "results.jsonl"
    ok = CliRunner().invoke(
        main, ["align", "--gold", str(gold), "--results", str(recorded), "--partition", "held_out"]
    )
    assert ok.exit_code == 0, ok.output
    altered = tmp_path / "results.jsonl"
    altered.write_text("".join(line + "\n" for line in lines(recorded)[1:]))  # one verdict dropped
    for partition in (["--partition", "held_out"], []):
        refused = CliRunner().invoke(
            main, ["align", "--gold", str(gold), "--results", str(altered), *partition]
        )
        assert refused.exit_code == 2 and "held_out_unaccounted" in refused.output, (
            partition,
            refused.output,
        )
    # a copy of the data is accounted for by the same project ledger; another project's ledger
    # (which recorded nothing) accounts for nothing
    elsewhere = fresh_gold(tmp_path, "copy")
    ok = CliRunner().invoke(
        main,
        ["align", "--gold", str(elsewhere), "--results", str(recorded), "--partition", "held_out"],
    )
    assert ok.exit_code == 0, ok.output
    with pytest.MonkeyPatch.context() as mp:
        use_project(mp, make_project(tmp_path / "other-project"))
        refused = CliRunner().invoke(
            main,
            [
                "align",
                "--gold",
                str(elsewhere),
                "--results",
                str(recorded),
                "--partition",
                "held_out",
            ],
        )
    assert refused.exit_code == 2 and "held_out_unaccounted" in refused.output


# -- a certification killed mid-run ----------------------------------------------------------


@pytest.mark.notebook
def test_a_killed_certification_is_aborted_listed_and_chained(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workbench.demo.fake_llm import respond
    from workbench.testing import FakeLLM

    gold = fresh_gold(tmp_path)
    reports = tmp_path / "reports"
    monkeypatch.setenv("DEMO_LLM_API_KEY", "sk-test-kill")
    with FakeLLM(responder=respond, latency_s=0.2) as server:
        spec = yaml.safe_load(
            (ROOT / "data" / "candidates" / "support-llm-judge@1.yaml").read_text()
        )
        spec["endpoint"]["base_url"] = server.base_url
        candidates = tmp_path / "candidates"
        (candidates / "prompts").mkdir(parents=True)
        shutil.copyfile(
            ROOT / "data" / "candidates" / "prompts" / "support-llm-judge@1.md",
            candidates / "prompts" / "support-llm-judge@1.md",
        )
        candidate = candidates / "support-llm-judge@1.yaml"
        candidate.write_text(yaml.safe_dump(spec))
        proc = _forked_cli.Popen(  # a process of its own, forked (tests/_forked_cli.py)
            [
                PYTHON,
                "-m",
                "workbench",
                *certify_args(gold, reports, candidate),
                "--concurrency",
                "1",
            ],
            cwd=ROOT,
            env={**os.environ, "RAGAS_DO_NOT_TRACK": "true"},
            start_new_session=True,
        )
        results = reports / "support-llm-judge" / "1" / "1" / "restricted" / "run" / "results.jsonl"
        deadline = time.monotonic() + 300
        try:
            while not (results.exists() and results.stat().st_size > 0):
                if proc.poll() is not None:
                    pytest.fail(
                        f"certification ended before it could be killed: {proc.communicate()}"
                    )
                assert time.monotonic() < deadline, "the held-out run never started"
                time.sleep(0.1)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)  # certify and its kernel, mid-run
            proc.wait(timeout=30)
        partial = results.parents[2]
        assert not (partial / "lock.json").exists()
        ledger = HeldOutLedger(ledger_path_for(gold))
        assert [e.event for e in ledger.entries()] == ["started"]  # nobody has looked yet

        listing = CliRunner().invoke(main, ["reports", "--reports", str(reports), "--json"])
        assert listing.exit_code == 0, listing.output
        # stdout only: the fake server's thread may report the killed run's broken connection
        # on stderr meanwhile (socketserver prints it), which CliRunner's output mixes in
        rows = json.loads(listing.stdout)
        assert [(r["report_id"], r["status"]) for r in rows] == [
            ("support-llm-judge/1/1", "aborted")
        ]
        entries = ledger.entries()
        assert [e.event for e in entries] == ["started", "aborted"] and entries[
            1
        ].held_out_used is True
        unlocked = run_cli("verify", str(partial))
        assert (
            unlocked.returncode == 1
            and "report_unlocked" in unlocked.stderr
            and "Traceback" not in unlocked.stderr
        )

        again = run_cli(*certify_args(gold, reports, candidate))
        assert (
            again.returncode == 2 and "held_out_reuse" in again.stderr
        )  # an aborted run counts as a use
        second = certify(
            candidate,
            POLICY,
            gold,
            reports_root=reports,
            rerun_reason="the first certification was killed",
            concurrency=16,
        )
    lock = read_lock(second.report_dir)
    assert second.report_id == "support-llm-judge/1/2"
    assert lock.previous_report is not None and lock.previous_report.model_dump() == {
        "report_id": "support-llm-judge/1/1",
        "lock_sha256": None,
        "status": "aborted",
    }
    assert verify_report(second.report_dir) == []
    assert [e.event for e in HeldOutLedger(ledger_path_for(gold)).entries()] == [
        "started",
        "aborted",
        "started",
        "finished",
    ]


@pytest.mark.notebook
def test_uses_in_the_earlier_reports_root_ledger_still_count(tmp_path: Path) -> None:
    """Before the ledger moved beside the data it lived in the reports root (schema 1, no chain)."""
    gold = fresh_gold(tmp_path)
    judge = load_candidate(CANDIDATE)
    dataset = load_dataset(gold)
    manifest = held_out_manifest_sha256(dataset.sha256, dataset.partition("held_out"))
    reports = tmp_path / "reports"
    reports.mkdir()
    legacy = {
        "schema_version": 1,
        "entry_id": "ldg-old",
        "event": "started",
        "who": "someone",
        "when": "2026-11-01T10:00:00Z",
        "candidate": judge.spec.label,
        "candidate_fingerprint": judge.identity.fingerprint(),
        "dataset_sha256": dataset.sha256,
        "held_out_manifest_sha256": manifest,
        "report_id": "rubric-judge/2/1",
    }
    (reports / LEDGER_FILE).write_text(json.dumps(legacy) + "\n")
    result = CliRunner().invoke(
        main,
        [
            *certify_args(gold, reports),
        ],
    )
    assert (
        result.exit_code == 2
        and "held_out_reuse" in result.output
        and "earlier held-out ledger" in result.output
    )
    assert not (reports / "rubric-judge").exists()


def test_held_out_access_cannot_be_made_by_hand(tmp_path: Path) -> None:
    from workbench.heldout import HeldOutAccess

    gold = fresh_gold(tmp_path)
    report_dir = tmp_path / "reports" / "rubric-judge" / "2" / "1"
    mine = HeldOutLedger(tmp_path / "mine.jsonl")
    entry, _, hold = _self_made_entry(mine, gold, report_dir)
    try:
        with pytest.raises(WorkbenchError) as info:
            HeldOutAccess(mine.path, entry)  # an open entry, but in a self-made ledger
        assert info.value.problems[0].code == "held_out_refused"
        with pytest.raises(WorkbenchError) as info:
            HeldOutAccess.grant(mine.path, entry.entry_id, entry.candidate_fingerprint)
        assert [p.code for p in info.value.problems] == ["held_out_refused"]
    finally:
        hold.release()
    canonical = HeldOutLedger(ledger_path_for(gold))
    real, _, hold = _self_made_entry(canonical, gold, report_dir)
    try:
        assert (
            HeldOutAccess(canonical.path, real).entry == real
        )  # the dataset's own ledger, open: granted
    finally:
        hold.release()


def test_no_test_runs_in_the_repositorys_project(tmp_path: Path) -> None:
    """The suite runs from the repository, whose workbench.yaml declares the demo's ledger: every
    test (and module and session fixture, tests/conftest.py) is pinned to a project of its own."""
    from workbench.approval import project_config
    from workbench.project import project_root

    assert project_root() == current_project().resolve() != ROOT
    assert ROOT not in ledger_path_for(fresh_gold(tmp_path)).parents
    config = project_config()
    assert config is not None and ROOT not in config.parents
