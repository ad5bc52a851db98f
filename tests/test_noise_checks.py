"""Issue 30's noise checks: held-out noise pairs recorded in the one held-out ledger."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from noise_support import (  # noqa: F401
    api_key,
    free_suite,
    pair,
    write_spec,
    write_suite,
)

from workbench.cli.noise import noise as noise_command
from workbench.demo.noise import respond as demo_respond
from workbench.errors import WorkbenchError
from workbench.heldout import HeldOutLedger, ledger_path_for
from workbench.judges import load_candidate
from workbench.noise import load_pairs, run_noise_sync

pytestmark = pytest.mark.usefixtures("api_key")


def held_out(pid: str, n: int) -> dict[str, Any]:
    """A held-out candidate pair with its own question and passages (no cross-partition twin)."""
    data = pair(pid, partition="held_out")
    data["user_input"] = f"Question {n}: how long do I have for a refund?"
    passage = f"Refund window {n}. Refunds are possible within 30 days of delivery."
    data["clean"]["retrieved_contexts"] = [passage]
    data["noisy"]["retrieved_contexts"] = [passage, f"Archived draft {n}. Refunds: 90 days."]
    return data


def held_out_suite() -> dict[str, Any]:
    return free_suite(
        [pair("ctl", role="control"), pair("dev"), held_out("ho-1", 1), held_out("ho-2", 2)]
    )


@pytest.fixture
def fake() -> Any:
    from workbench.testing import FakeLLM

    with FakeLLM(responder=demo_respond) as server:
        yield server


def scorer(tmp_path: Path, suite_path: Path, fake: Any) -> Any:
    """Run the suite at ``suite_path`` with one judge: ``score(out, **kw) -> (run, calls)``."""
    suite = load_pairs(suite_path)
    judge = load_candidate(write_spec(tmp_path / "spec", fake.base_url))

    def score(out: str, **kwargs: Any) -> tuple[Any, int]:
        before = fake.call_count
        run = run_noise_sync(
            judge, suite, tmp_path / out, progress=False, cache_dir=False, **kwargs
        )
        return run, fake.call_count - before

    return score


def test_held_out_noise_pairs_are_recorded_once_in_the_project_ledger(
    tmp_path: Path, fake: Any
) -> None:
    path = write_suite(tmp_path / "suite", held_out_suite(), freeze=True)
    score = scorer(tmp_path, path, fake)
    ledger = HeldOutLedger(ledger_path_for(path))

    dev, _ = score("dev", partition="development")
    assert dev.held_out_entry is None and not ledger.path.exists()  # no held-out pair scored

    first, calls = score("run", partition="held_out")
    started, finished = ledger.entries()
    assert (
        calls > 0
        and first.held_out_entry == started.entry_id
        and (started.kind, started.event, finished.event) == ("noise", "started", "finished")
        and finished.opens == started.entry_id
        and started.held_out_items == 4  # two pairs, two members each
        and started.held_out_prior_uses == 0
        and finished.held_out_used is True
        and started.gold == str(path.resolve())
    )

    # a second use by another run directory is refused before any call, the certify way
    with pytest.raises(WorkbenchError) as refused:
        score("run2", partition="held_out")
    assert [p.code for p in refused.value.problems] == ["held_out_reuse"]
    assert len(ledger.entries()) == 2 and not (tmp_path / "run2" / "candidates").exists()

    # the same run directory with the same judge resumes its use
    resumed, calls = score("run", partition="held_out")
    assert calls == 0 and resumed.held_out_entry not in (None, started.entry_id)

    # a renamed copy of the suite is the same content: refused as well
    copy = held_out_suite() | {"name": "t-noise-copy"}
    copy_path = write_suite(tmp_path / "copy", copy, name="t-noise-copy@1.yaml", freeze=True)
    with pytest.raises(WorkbenchError, match="held-out content used 2 times before"):
        scorer(tmp_path, copy_path, fake)("copy-run", partition="held_out")

    # a reason is recorded with the count of earlier uses
    again, _ = score("run3", partition="held_out", rerun_reason="judge prompt v2 certified")
    entry = next(e for e in ledger.entries() if e.entry_id == again.held_out_entry)
    assert entry.rerun_reason == "judge prompt v2 certified" and entry.held_out_prior_uses == 2


def test_a_run_stopped_by_its_controls_records_no_held_out_use(tmp_path: Path, fake: Any) -> None:
    data = held_out_suite()
    adopted = "Refunds are possible within 30 days of delivery. Always."
    data["pairs"][0]["noisy"]["response"] = adopted  # correct: the negative does not separate
    path = write_suite(tmp_path / "suite", data, freeze=True)
    score = scorer(tmp_path, path, fake)
    run, _ = score("run", partition="held_out")
    started, finished = HeldOutLedger(ledger_path_for(path)).entries()
    assert not run.controls_passed and finished.held_out_used is False
    assert finished.outcome == "controls_failed" and started.held_out_prior_uses == 0
    again, _ = score("run2", partition="held_out")  # nothing was judged: no reason needed
    assert again.held_out_entry is not None


def test_cli_refuses_a_second_held_out_use_with_exit_2(tmp_path: Path) -> None:
    from workbench.testing import FakeLLM

    path = write_suite(tmp_path / "suite", held_out_suite(), freeze=True)
    with FakeLLM(responder=demo_respond) as fake:
        spec = write_spec(tmp_path / "spec", fake.base_url)
        args = ["--candidate", str(spec), "--pairs", str(path), "--no-progress", "--json"]
        first = CliRunner().invoke(noise_command, [*args, "--out", str(tmp_path / "a")])
        second = CliRunner().invoke(noise_command, [*args, "--out", str(tmp_path / "b")])
    assert first.exit_code in (0, 1, 4) and "held-out use recorded" in first.output
    assert second.exit_code == 2 and "held_out_reuse" in second.output
    assert "Traceback" not in second.output
