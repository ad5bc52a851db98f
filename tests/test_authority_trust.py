"""Issue 28 (points 2, 5, 9): authority only from trusted evidence.

The audit's routes, each on a fresh project copy of the demo, then the expected refusal:

- ``authority grant`` and ``status`` took a report the gold's held-out ledger never recorded
  (made on a ledger-less copy of the gold, or a lock whose ``gold`` names a path not on this
  machine): now ``report_not_in_ledger``, and status says "NOT VERIFIED";
- ``route`` and ``block`` rested on any lock: now only on one signed by a key the project
  trusts (``trusted_keys:`` in ``workbench.yaml``; ``--trust`` narrows, never widens);
- ``block`` came from one hand-written line in ``drift_log.jsonl`` (not chained, not tied to a
  sentinel run, dated in the future): now the log is chained, each entry bound to its run, and
  a future date refused;
- approvers were free text, the certifier could approve their own grant, and CI expected
  failures named anyone: now ``approver_unknown`` and ``approver_is_certifier``.

The module fixture certifies the demo's offline judge twice, signed with the project's key:
once on the project's gold, once on a copy of the demo data in another folder (its own,
fresh ledger: the "ledger-less copy").
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from ci_support import copy_project
from click.testing import CliRunner, Result
from conftest import PROJECT_ROOT_ENV, TEST_LEDGER, make_project
from test_authority import LENIENT, keypair, passing_controls

from workbench._chain import content_sha256
from workbench._lock import read_lock, write_lock
from workbench._signing import load_signer
from workbench.approval import current_user
from workbench.authority import authority_path_for
from workbench.cli import main
from workbench.repeatability import DriftEntry, drift_log_path_for, read_drift_log
from workbench.reports import certify

pytestmark = pytest.mark.notebook

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo"
APPROVER = "Ana Quality"


def project(folder: Path, trusted: Path | None) -> Path:
    """``folder`` as a test project (a held-out ledger of its own): the demo's approvers plus the
    tests' and the certifier's, and ``trusted`` as its trusted keys (None: none declared)."""
    if not (folder / "workbench.yaml").is_file():
        make_project(folder)
    path = folder / "workbench.yaml"
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    config["approvers"] = sorted({*(config.get("approvers") or []), APPROVER, current_user()})
    config.pop("trusted_keys", None)
    if trusted is not None:
        config["trusted_keys"] = [str(trusted)]
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def carry_ledger(source: Path, target: Path) -> None:
    """Copy project ``source``'s held-out ledger (with its items) into project ``target``."""
    for name in (TEST_LEDGER, TEST_LEDGER + ".items"):
        if (source / name).is_dir():
            shutil.copytree(source / name, target / name)
        elif (source / name).is_file():
            shutil.copyfile(source / name, target / name)
    for path in (target / TEST_LEDGER, *(target / (TEST_LEDGER + ".items")).glob("*")):
        if path.exists():
            path.chmod(path.stat().st_mode | 0o200)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("authority-trust")
    keys = base / "keys"
    keys.mkdir()
    private, public = keypair(keys, "release")
    other, other_public = keypair(keys, "other")
    spec = base / "rubric-judge@2.yaml"
    shutil.copyfile(ROOT / "data" / "candidates" / "rubric-judge@2.yaml", spec)
    policy = base / "lenient-block@1.yaml"
    passing_controls(base)  # route and block need blocking controls (controls_not_required)
    policy.write_text(yaml.safe_dump(LENIENT), encoding="utf-8")
    home, elsewhere = base / "project", base / "elsewhere"
    project(home, public)
    project(elsewhere, public)  # another project: a copy of the gold certified on its own ledger
    shutil.copytree(DEMO, home / "gold")
    shutil.copytree(DEMO, elsewhere / "gold")
    with pytest.MonkeyPatch.context() as pinned:
        pinned.setenv(PROJECT_ROOT_ENV, str(home))
        signed = certify(
            spec, policy, home / "gold", reports_root=home / "reports", sign_key=private
        )
        pinned.setenv(PROJECT_ROOT_ENV, str(elsewhere))
        copied = certify(
            spec, policy, elsewhere / "gold", reports_root=elsewhere / "reports", sign_key=private
        )
    assert (signed.outcome, copied.outcome) == ("certified", "certified")
    return {
        "home": home,
        "gold": home / "gold",
        "elsewhere_project": elsewhere,
        "elsewhere": elsewhere / "gold",
        "spec": spec,
        "signed": signed.report_dir,
        "copied": copied.report_dir,
        "public": public,
        "other": other,
        "other_public": other_public,
    }


@pytest.fixture
def gold(world: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's own copy of the project's gold and held-out ledger, in a project (pinned for
    the test) that trusts the release key."""
    project(tmp_path, world["public"])
    carry_ledger(world["home"], tmp_path)
    target = tmp_path / "gold"
    shutil.copytree(world["gold"], target)
    monkeypatch.setenv(PROJECT_ROOT_ENV, str(tmp_path))
    return target


def cli(*args: Any) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def ok(result: Result) -> str:
    assert result.exit_code == 0, result.output
    return result.output


def refused(result: Result, code: str) -> str:
    assert result.exit_code == 2, result.output
    assert code in result.output, result.output
    assert "Traceback" not in result.output
    return result.output


def step(
    verb: str,
    world: dict[str, Path],
    gold: Path,
    report: Path,
    *more: Any,
    approver: str = APPROVER,
) -> Result:
    return cli(
        "authority",
        verb,
        "--gold",
        gold,
        "--candidate",
        world["spec"],
        "--report",
        report,
        "--approver",
        approver,
        "--reason",
        "certified on held-out data",
        *more,
    )


def writable_copy(report: Path, into: Path) -> Path:
    """A writable copy of a report directory (out of its reports root)."""
    target = into / "copy" / report.name
    shutil.copytree(report, target)
    for path in target.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    target.chmod(0o755)
    return target


def status(gold: Path, *more: Any) -> tuple[Result, dict[str, Any]]:
    result = cli("status", "--gold", gold, *more)
    body = json.loads(cli("status", "--gold", gold, "--json", *more).output)
    return result, body


# -- point 2: a report the gold's ledger never recorded ------------------------------------------


def test_grant_refuses_a_report_made_on_a_ledger_less_copy_of_the_gold(
    world: dict[str, Path], gold: Path
) -> None:
    output = refused(step("grant", world, gold, world["copied"]), "report_not_in_ledger")
    assert "the report was not certified on this gold" in output
    assert not authority_path_for(gold).exists()  # nothing recorded


def test_grant_refuses_a_lock_whose_gold_is_not_on_this_machine(
    world: dict[str, Path], gold: Path, tmp_path: Path
) -> None:
    forged = writable_copy(world["copied"], tmp_path)
    data = json.loads((forged / "lock.json").read_text(encoding="utf-8"))
    nowhere = "/not/on/this/machine/gold"
    data.update(gold=nowhere, ledger_path=f"{nowhere}/held_out_ledger.jsonl", signature=None)
    data["ledger_entry"] = {**data["ledger_entry"], "gold": nowhere}
    (forged / "lock.json").write_text(json.dumps(data), encoding="utf-8")
    write_lock(forged, read_lock(forged))  # the forger recomputes the lock's hash
    refused(step("grant", world, gold, forged), "report_not_in_ledger")
    assert not authority_path_for(gold).exists()


def test_status_shows_a_report_the_gold_ledger_never_recorded_as_not_verified(
    world: dict[str, Path], gold: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record is granted on the copy, in the project whose ledger holds the report, and
    carried to the gold."""
    other = tmp_path / "other"
    project(other, world["public"])
    carry_ledger(world["elsewhere_project"], other)
    copy = other / "gold"
    shutil.copytree(world["elsewhere"], copy)
    monkeypatch.setenv(PROJECT_ROOT_ENV, str(other))
    ok(step("grant", world, copy, world["copied"]))
    monkeypatch.setenv(PROJECT_ROOT_ENV, str(tmp_path))
    for path in copy.iterdir():
        if path.name.lstrip(".").startswith("authority.jsonl"):
            shutil.copyfile(path, gold / path.name)
    result, body = status(gold)
    assert result.exit_code == 1, result.output
    assert "rubric-judge@2: NONE (recorded advisory, effective none)" in result.output
    assert "NOT VERIFIED" in result.output and "report_not_in_ledger" in result.output
    judge = body["judges"][0]
    assert (judge["effective"], judge["report_verified"]) == ("none", False)


# -- route and block need a lock signed by a key the project trusts ------------------------------


def test_route_needs_a_lock_signed_by_a_key_the_project_trusts(
    world: dict[str, Path], gold: Path, tmp_path: Path
) -> None:
    assert "none -> advisory" in ok(step("grant", world, gold, world["signed"]))
    unsigned = writable_copy(world["signed"], tmp_path / "unsigned")
    write_lock(unsigned, read_lock(unsigned))  # the same lock, its signature dropped
    refused(step("promote", world, gold, unsigned), "authority_unsigned")
    other = writable_copy(world["signed"], tmp_path / "other")
    write_lock(other, read_lock(other), signer=load_signer(world["other"]))
    refused(step("promote", world, gold, other), "authority_key_untrusted")
    # --trust narrows the project's keys, it never widens them
    widened = step("promote", world, gold, other, "--trust", world["other_public"])
    refused(widened, "authority_key_untrusted")
    assert "advisory -> route" in ok(step("promote", world, gold, world["signed"]))


def test_without_trusted_keys_in_the_project_nothing_routes(
    world: dict[str, Path], gold: Path, tmp_path: Path
) -> None:
    ok(step("grant", world, gold, world["signed"]))
    ok(step("promote", world, gold, world["signed"]))
    project(tmp_path, None)  # the project no longer declares trusted keys
    refused(step("grant", world, gold, world["signed"]), "trusted_keys_missing")
    result, body = status(gold)
    assert result.exit_code == 4, result.output
    assert "rubric-judge@2: ADVISORY (recorded route, effective advisory)" in result.output
    assert "trusted_keys_missing" in result.output
    assert body["judges"][0]["effective"] == "advisory"
    # --trust cannot stand in for the project's declaration
    result, body = status(gold, "--trust", world["public"])
    assert body["judges"][0]["effective"] == "advisory", result.output


# -- point 5: block from the drift log -----------------------------------------------------------


def _drift(world: dict[str, Path], gold: Path, out: Path, *more: Any) -> None:
    base = ("drift", "--candidate", world["spec"], "--gold", gold, "--out", out, "--no-progress")
    ok(cli(*base, *more))


@pytest.fixture(scope="module")
def at_route(world: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the project's gold granted and promoted to ``route`` with the signed report,
    once per module, in a project made as :func:`gold` makes one (each step checked); the tests
    that start at ``route`` copy it (:func:`_at_route`): they ran the same two commands, each
    verifying the report again, on the same inputs."""
    base = tmp_path_factory.mktemp("at-route")
    project(base, world["public"])
    carry_ledger(world["home"], base)
    target = base / "gold"
    shutil.copytree(world["gold"], target)
    with pytest.MonkeyPatch.context() as pinned:
        pinned.setenv(PROJECT_ROOT_ENV, str(base))
        ok(step("grant", world, target, world["signed"]))
        ok(step("promote", world, target, world["signed"]))
    return target


def _at_route(world: dict[str, Path], gold: Path, at_route: Path) -> str:
    """``gold``, this test's fresh copy of the project's gold, becomes a copy of
    :func:`at_route`'s (its authority record at ``route``); the signed report's candidate
    fingerprint."""
    shutil.rmtree(gold)
    shutil.copytree(at_route, gold)
    return read_lock(world["signed"]).candidate_fingerprint


def old_drift_line(fingerprint: str) -> dict[str, Any]:
    """A stable check in the drift log's old, unchained format, written by hand."""
    return {
        "schema_version": 1,
        "entry_id": "drift-forged",
        "kind": "check",
        "recorded_at": datetime.now(UTC).isoformat(),
        "who": "someone",
        "candidate": "rubric-judge@2",
        "candidate_fingerprint": fingerprint,
        "dataset_sha256": "0" * 64,
        "rubric_version": "support-policy-2026.09",
        "sentinels_path": "sentinels.yaml",
        "sentinels_sha256": "0" * 64,
        "sentinel_ids": [],
        "run_dir": "nowhere",
        "run_id": "run-forged",
        "run_status": "complete",
        "observations": {},
        "baseline": {"source": "drift_log", "ref": "drift-0", "run_id": None, "recorded_at": None},
        "changes": [],
        "status": "stable",
    }


def test_block_does_not_rest_on_a_hand_written_drift_line(
    world: dict[str, Path], gold: Path, at_route: Path
) -> None:
    fingerprint = _at_route(world, gold, at_route)
    line = old_drift_line(fingerprint)
    drift_log_path_for(gold).write_text(json.dumps(line) + "\n", encoding="utf-8")
    output = refused(step("promote", world, gold, world["signed"]), "drift_check_required")
    assert "drift_log_unchained" in output


def _append_line(log: Path, entry: DriftEntry) -> None:
    """Append ``entry`` as a forger who recomputes the chain would (no run behind it changes)."""
    data = entry.model_dump(mode="json")
    if "entry_sha256" in data:  # chained format: link it to the last line and seal it
        last = read_drift_log(log)[-1]
        linked = entry.model_copy(update={"previous_sha256": last.entry_sha256})
        sealed = linked.model_copy(update={"entry_sha256": content_sha256(linked)})
        data = sealed.model_dump(mode="json")
    with log.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(data) + "\n")


def test_block_does_not_rest_on_a_drift_check_dated_in_the_future(
    world: dict[str, Path], gold: Path, at_route: Path, tmp_path: Path
) -> None:
    """A real stable check, then a copy dated tomorrow: "after the report" by a forged date."""
    _at_route(world, gold, at_route)
    _drift(world, gold, tmp_path / "drift", "--record-baseline", "--report", world["signed"])
    log = drift_log_path_for(gold)
    baseline = read_drift_log(log)[-1]
    future = DriftEntry.model_validate(
        {
            **baseline.model_dump(mode="json"),
            "entry_id": "drift-future",
            "kind": "check",
            "status": "stable",
            "recorded_at": (datetime.now(UTC) + timedelta(days=1)).isoformat(),
            "report_id": None,
            "baseline": {
                "source": "drift_log",
                "ref": baseline.entry_id,
                "run_id": baseline.run_id,
                "recorded_at": baseline.recorded_at.isoformat(),
            },
        }
    )
    _append_line(log, future)
    output = refused(step("promote", world, gold, world["signed"]), "drift_check_required")
    assert "drift_entry_future" in output


def test_block_does_not_rest_on_a_chained_check_without_its_sentinel_run(
    world: dict[str, Path], gold: Path, at_route: Path, tmp_path: Path
) -> None:
    _at_route(world, gold, at_route)
    _drift(world, gold, tmp_path / "drift", "--record-baseline", "--report", world["signed"])
    _drift(world, gold, tmp_path / "drift")
    log = drift_log_path_for(gold)
    check = read_drift_log(log)[-1]
    assert check.status == "stable" and check.run_results_sha256
    from workbench.repeatability import verify_drift_run

    assert verify_drift_run(check) == []
    # an old run under a new date, or other verdicts than the run holds, is no evidence
    too_early = verify_drift_run(check, after=datetime.now(UTC))
    assert [p.code for p in too_early] == ["drift_run_too_early"]
    case_id = check.sentinel_ids[0]
    seen = check.observations[case_id]
    flipped = seen.model_copy(update={"value": "pass" if seen.value != "pass" else "fail"})
    edited = check.model_copy(update={"observations": {**check.observations, case_id: flipped}})
    assert [p.code for p in verify_drift_run(edited)] == ["drift_run_mismatch"]
    shutil.rmtree(check.run_dir)  # the run the entry summarizes is gone
    output = refused(step("promote", world, gold, world["signed"]), "drift_check_required")
    assert "drift_run_missing" in output


def test_status_withholds_block_when_the_drift_log_is_edited(
    world: dict[str, Path], gold: Path, at_route: Path, tmp_path: Path
) -> None:
    _at_route(world, gold, at_route)
    _drift(world, gold, tmp_path / "drift", "--record-baseline", "--report", world["signed"])
    _drift(world, gold, tmp_path / "drift")
    assert "route -> block" in ok(step("promote", world, gold, world["signed"]))
    log = drift_log_path_for(gold)
    lines = log.read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[-1])
    row["who"] = "someone else"  # an edit by hand
    log.write_text("\n".join([*lines[:-1], json.dumps(row)]) + "\n", encoding="utf-8")
    result, body = status(gold)
    assert result.exit_code == 4, result.output
    assert "rubric-judge@2: ROUTE (recorded block, effective route)" in result.output
    assert "drift_log_chain_broken" in result.output
    assert body["judges"][0]["effective"] == "route"


def test_drift_refuses_to_append_to_an_old_unchained_log(
    world: dict[str, Path], gold: Path, tmp_path: Path
) -> None:
    old = old_drift_line(read_lock(world["signed"]).candidate_fingerprint)
    drift_log_path_for(gold).write_text(json.dumps(old) + "\n", encoding="utf-8")
    base = ("drift", "--candidate", world["spec"], "--gold", gold, "--no-progress")
    result = cli(*base, "--out", tmp_path / "drift", "--record-baseline")
    assert result.exit_code == 2 and "drift_log_unchained" in result.output, result.output
    assert "move the old log aside" in result.output
    assert not (tmp_path / "drift").exists()  # refused before any sentinel call


# -- point 9: approvers --------------------------------------------------------------------------


def test_the_approver_must_be_listed_and_must_not_be_the_certifier(
    world: dict[str, Path], gold: Path
) -> None:
    refused(step("grant", world, gold, world["signed"], approver="Mallory"), "approver_unknown")
    output = refused(
        step("grant", world, gold, world["signed"], approver=current_user()),
        "approver_is_certifier",
    )
    assert "nobody approves authority on their own certification" in output
    assert not authority_path_for(gold).exists()
    ok(step("grant", world, gold, world["signed"]))
    demote = ("authority", "demote", "--gold", gold, "--judge", "rubric-judge@2")
    refused(cli(*demote, "--reason", "r", "--approver", "Mallory"), "approver_unknown")
    assert "advisory -> none" in ok(cli(*demote, "--reason", "a sampled false pass"))


def test_a_ci_expected_failure_approver_must_be_on_the_approver_list(tmp_path: Path) -> None:
    from workbench.ci import run_contracts

    root = copy_project(tmp_path / "p")
    config = yaml.safe_load((root / "workbench.yaml").read_text(encoding="utf-8"))
    for entry in config["ci"]["expected_failures"]:
        if entry["check"].startswith("control-runs/rubric-judge@2"):
            entry["approver"] = "Mallory"
    (root / "workbench.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    report = run_contracts(root, out=tmp_path / "run")
    assert "approver_unknown" in {c.code for c in report.checks}
    assert report.exit_code == 2
    check = next(
        c
        for c in report.checks
        if c.check_id == "control-runs/rubric-judge@2 on support-controls@1"
    )
    assert check.status == "failed"  # the unlisted entry covers nothing
