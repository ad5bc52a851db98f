"""Attacks on the orchestration of a held-out use (``heldout.open_use``) through the noise path,
whose copy of certify's check-then-start differed from it: a live run of the same directory
taken for a resume, a deleted run directory taken for one, a truncated ledger unnoticed, and a
held-out control judged in every run with no ledger entry. Each failed on the code before the
one kernel (see the report of branch ``ledger``)."""

from __future__ import annotations

import multiprocessing
import shutil
from pathlib import Path
from typing import Any

import pytest
from noise_support import api_key, free_suite, pair, write_suite  # noqa: F401
from test_noise_checks import held_out_suite, scorer

from workbench.errors import WorkbenchError
from workbench.heldout import HeldOutLedger, ledger_path_for
from workbench.judges import load_candidate
from workbench.noise import load_pairs

pytestmark = pytest.mark.usefixtures("api_key")


@pytest.fixture
def fake() -> Any:
    from workbench.demo.noise import respond
    from workbench.testing import FakeLLM

    with FakeLLM(responder=respond) as server:
        yield server


def _hold_a_run_open(
    suite_path: Path, spec: Path, out: Path, ready: Any, done: Any
) -> None:  # pragma: no cover - runs in a forked child
    """A noise run of ``out`` that has started its held-out use and is still scoring."""
    from workbench.noise._heldout import held_out_use

    suite = load_pairs(suite_path)
    judge = load_candidate(spec)
    with held_out_use(suite, judge, [(suite, suite.candidates("held_out"))], out, None):
        ready.set()
        done.wait(60)


def test_a_second_process_on_a_running_held_out_noise_run_is_refused(
    tmp_path: Path, fake: Any
) -> None:
    """Another process is scoring the held-out pairs into ``run``: the same command in the same
    directory is no resume of it (it is open, and alive) but a second use, refused before any
    call; the code before took the live entry for a resume and scored."""
    path = write_suite(tmp_path / "suite", held_out_suite(), freeze=True)
    score = scorer(tmp_path, path, fake)
    spec = tmp_path / "spec" / "noise@1.yaml"
    assert spec.is_file()
    fork = multiprocessing.get_context("fork")
    ready, done = fork.Event(), fork.Event()
    child = fork.Process(target=_hold_a_run_open, args=(path, spec, tmp_path / "run", ready, done))
    child.start()
    try:
        assert ready.wait(60)
        with pytest.raises(WorkbenchError) as refused:
            score("run", partition="held_out")
    finally:
        done.set()
        child.join(60)
    assert [p.code for p in refused.value.problems] == ["held_out_reuse"]
    assert "being judged" in refused.value.problems[0].message
    assert fake.call_count == 0 and child.exitcode == 0
    events = [e.event for e in HeldOutLedger(ledger_path_for(path)).entries()]
    assert events == ["started", "finished"]  # the child's use only


def test_a_deleted_run_directory_is_no_resume(tmp_path: Path, fake: Any) -> None:
    """Deleting the run directory and running again at its path judges every held-out pair a
    second time: that is a new use (refused without a reason), not a resume."""
    path = write_suite(tmp_path / "suite", held_out_suite(), freeze=True)
    score = scorer(tmp_path, path, fake)
    _, calls = score("run", partition="held_out")
    assert calls > 0
    shutil.rmtree(tmp_path / "run")
    with pytest.raises(WorkbenchError) as refused:
        score("run", partition="held_out")
    assert [p.code for p in refused.value.problems] == ["held_out_reuse"]
    assert fake.call_count == calls  # no call made
    again, more = score("run", partition="held_out", rerun_reason="the run directory was lost")
    assert more == calls and again.held_out_entry is not None
    # the directory is intact now: running it again resumes, with no call and no reason
    resumed, none = score("run", partition="held_out")
    assert none == 0 and resumed.held_out_entry not in (None, again.held_out_entry)


def test_a_truncated_ledger_is_refused_when_the_run_resumes(tmp_path: Path, fake: Any) -> None:
    """The run directory names the ledger entry of its use; a ledger that lost it (lines removed
    from its end, which the chain cannot show) is refused as certify refuses it, instead of
    recording the run again as a first use."""
    path = write_suite(tmp_path / "suite", held_out_suite(), freeze=True)
    score = scorer(tmp_path, path, fake)
    score("run", partition="held_out")
    ledger = HeldOutLedger(ledger_path_for(path))
    assert len(ledger.entries()) == 2
    ledger.path.write_text("", encoding="utf-8")  # every line removed
    with pytest.raises(WorkbenchError) as refused:
        score("run", partition="held_out")
    assert [p.code for p in refused.value.problems] == ["ledger_truncated"]
    assert "restore the held-out ledger" in refused.value.problems[0].fix
    assert ledger.entries() == []


def _held_out_control_suite() -> dict[str, Any]:
    control = pair("ctl", role="control", partition="held_out", distractor="Draft 9. 90 days.")
    control["user_input"] = "Question 9: how long do I have for a refund?"
    passage = "Refund window 9. Refunds are possible within 30 days of delivery."
    control["clean"]["retrieved_contexts"] = [passage]
    control["noisy"]["retrieved_contexts"] = [passage, "Draft 9. 90 days."]
    return free_suite([control, pair("dev")])


def test_a_held_out_control_is_a_held_out_use(tmp_path: Path, fake: Any) -> None:
    """Controls are scored in every run: a held-out control is judged by a development run too,
    so the run records a held-out use of it (the code before recorded none, and every later
    run judged it again)."""
    path = write_suite(tmp_path / "suite", _held_out_control_suite(), freeze=True)
    score = scorer(tmp_path, path, fake)
    run, calls = score("run", partition="development")
    assert calls > 0 and any("Question 9" in str(c.body) for c in fake.calls)  # judged
    ledger = HeldOutLedger(ledger_path_for(path))
    assert ledger.path.exists(), "a held-out control was judged with no ledger entry"
    started, finished = ledger.entries()
    assert run.held_out_entry == started.entry_id and started.held_out_items == 2
    assert finished.held_out_used is True
    with pytest.raises(WorkbenchError) as refused:
        score("run2", partition="development")
    assert [p.code for p in refused.value.problems] == ["held_out_reuse"]


def _fields(entries: list[Any]) -> dict[str, Any]:
    return {
        "candidate": "j@1",
        "fingerprint": "f" * 64,
        "dataset_sha256": "d" * 64,
        "manifest_sha256": "m" * 64,
        "report_id": "j/1/1",
        "reports_root": "/tmp/reports",
        "gold": "/tmp/gold",
        "rerun_reason": None,
    }


def test_a_use_is_closed_whatever_its_body_does(tmp_path: Path) -> None:
    """The kernel's guarantees, each way a use can end: finished; an exception (aborted); a body
    that returned without finishing (aborted: fail closed); a ``started`` hook that failed
    (aborted, nothing left running). The liveness hold is released every time."""
    from workbench.heldout import open_use

    ledger = HeldOutLedger(tmp_path / "ledger.jsonl")
    with open_use(ledger, _fields) as use:
        assert ledger.is_running(use.entry.entry_id)
        use.finish(outcome="scored", lock_sha256=None)
    with pytest.raises(RuntimeError), open_use(ledger, _fields) as use:
        raise RuntimeError("the run failed")
    with open_use(ledger, _fields):
        pass

    def failing(entry: Any) -> None:
        raise OSError("the marker cannot be written")

    with pytest.raises(OSError):
        open_use(ledger, _fields, started=failing)
    entries = ledger.entries()
    closing = [e.event for e in entries if e.event != "started"]
    assert closing == ["finished", "aborted", "aborted", "aborted"]
    assert all(e.held_out_used is True for e in entries if e.event == "aborted")
    assert ledger.open_entries() == []
    assert not any(ledger.is_running(e.entry_id) for e in entries)

    def refuse(entries: list[Any]) -> dict[str, Any]:
        raise WorkbenchError("refusing", [])

    with pytest.raises(WorkbenchError):  # a refusal in prepare writes nothing
        open_use(ledger, refuse)
    assert len(ledger.entries()) == len(entries)


def test_a_respaced_copy_of_a_suite_buys_no_second_use(tmp_path: Path, fake: Any) -> None:
    """A copy of the suite under another name whose held-out questions carry a zero-width space
    and other spacing is the same content, as it is for certification (``heldout.item_key``):
    refused without a reason (the code before keyed the raw text, and scored the copy)."""
    path = write_suite(tmp_path / "suite", held_out_suite(), freeze=True)
    scorer(tmp_path, path, fake)("run", partition="held_out")
    copy = held_out_suite() | {"name": "t-noise-copy"}
    for data in copy["pairs"]:
        if data["partition"] == "held_out":
            text = data["user_input"].replace("refund", "re\u200bfund")
            data["user_input"] = text.replace(" ", "  ") + "\n"
    copy_path = write_suite(tmp_path / "copy", copy, name="t-noise-copy@1.yaml", freeze=True)
    before = fake.call_count
    with pytest.raises(WorkbenchError) as refused:
        scorer(tmp_path, copy_path, fake)("copy-run", partition="held_out")
    assert [p.code for p in refused.value.problems] == ["held_out_reuse"]
    assert "4 of these 4 held-out item(s)" in refused.value.problems[0].message
    assert fake.call_count == before
