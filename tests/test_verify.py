"""Issue 8 §4: ``verify`` catches a forged lock, and signed locks can be trusted.

Two real certifications of a copy of the demo gold (the first signed with an OpenSSH Ed25519
key, the second a re-run under a policy budget) are verified, then copies of the reports root
are forged the ways the issue reproduced: an outcome rewritten with its own hash recomputed,
a deleted latest report, an added ``restricted/lock.json``, a removed ``previous_report``.
"""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from conftest import make_project, use_project

from workbench._lock import hash_tree, write_lock
from workbench.cli import main
from workbench.errors import WorkbenchError
from workbench.heldout import HeldOutLedger, ledger_path_for
from workbench.policy import load_policy
from workbench.reports import (
    Lock,
    certify,
    list_reports,
    load_signer,
    read_lock,
    resolve_budget,
    verify_one,
    verify_report,
)

pytestmark = pytest.mark.notebook

ROOT = Path(__file__).resolve().parents[1]
# The tests that use this module's certified world run in its project, to read its held-out
# ledger (tests/conftest.py); every other test has a project of its own.
MODULE_PROJECT = True
CANDIDATE = ROOT / "data" / "candidates" / "rubric-judge@2.yaml"
POLICY = ROOT / "data" / "policies" / "support-release@1.yaml"
DEMO = ROOT / "data" / "demo"


def _keypair(directory: Path, name: str, fmt: str) -> tuple[Path, Path]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    private_format = (
        serialization.PrivateFormat.OpenSSH
        if fmt == "openssh"
        else serialization.PrivateFormat.PKCS8
    )
    private = directory / name
    private.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, private_format, serialization.NoEncryption())
    )
    public = directory / f"{name}.pub"
    public.write_text(
        key.public_key()
        .public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        .decode()
        + f" {name}@test\n"
    )
    return private, public


def invoke(*args: str):
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        result.output
    )  # never a traceback
    assert "Traceback" not in result.output
    return result


def writable_copy(reports: Path, target: Path) -> Path:
    shutil.copytree(reports, target)
    for path in [target, *target.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    return target


def rewrite_lock(report: Path, **changes) -> None:
    """Edit lock.json and recompute its own sha256, as the issue's forger did."""
    data = json.loads((report / "lock.json").read_text())
    data.update(changes)
    data["lock_sha256"] = Lock.model_validate({**data, "lock_sha256": ""}).content_sha256()
    (report / "lock.json").write_text(json.dumps(data))


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("verify")
    gold = base / "gold"
    shutil.copytree(DEMO, gold)
    keys = base / "keys"
    keys.mkdir()
    openssh, openssh_pub = _keypair(keys, "team", "openssh")
    pem, pem_pub = _keypair(keys, "other", "pem")
    policies = base / "policies"
    policies.mkdir()
    budget_policy = policies / POLICY.name  # support-release@1 plus a budget
    budget_policy.write_text(POLICY.read_text() + "budget_usd: 1.0\n")
    reports = base / "reports"
    first = certify(CANDIDATE, POLICY, gold, reports_root=reports, sign_key=openssh)
    second = certify(
        CANDIDATE,
        budget_policy,
        gold,
        reports_root=reports,
        rerun_reason="re-run under the policy budget with a case limit",
        max_cases=5,
        budget_usd=0.25,
    )
    return {
        "base": base,
        "gold": gold,
        "reports": reports,
        "first": first,
        "second": second,
        "openssh": openssh,
        "openssh_pub": openssh_pub,
        "pem": pem,
        "pem_pub": pem_pub,
        "budget_policy": budget_policy,
    }


def test_the_reports_verify_with_every_check(setup) -> None:
    result = invoke("verify", str(setup["reports"]), "--gold", str(setup["gold"]), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["verified"] is True and [r["report_id"] for r in data["reports"]] == [
        setup["first"].report_id,
        setup["second"].report_id,
    ]
    for r in data["reports"]:
        assert r["checks"]["outcome"] == "ok (recomputed from the evidence)"
        assert (
            r["checks"]["ledger"] == "ok"
            and r["checks"]["chain"] == "ok"
            and r["checks"]["files"] == "ok"
            and r["checks"]["gold"].startswith("ok (")
            and r["status"] == "verified"
        )
    first, second = data["reports"]
    assert (
        first["checks"]["signature"] == "valid"
        and "not checked against a trust list" in first["signature"]
    )
    assert (
        second["checks"]["signature"] == "unsigned"
        and "only show accidental change" in second["signature"]
    )
    text = invoke("verify", str(setup["second"].report_dir), "--gold", str(setup["gold"]))
    assert text.exit_code == 0 and "only show accidental change" in text.output


def test_without_the_gold_a_report_is_intact_but_not_verified(setup) -> None:
    """Issue 28 point 2: ``verify`` without --gold called a certification verified (exit 0);
    the report's own stored gold proves nothing about the real dataset. Now: not verified
    (status not_verified, exit 3), its integrity checks reported apart."""
    report = str(setup["first"].report_dir)
    text = invoke("verify", report)
    assert text.exit_code == 3, text.output
    assert "NOT VERIFIED (intact" in text.output and "verify with --gold G" in text.output
    data = json.loads(invoke("verify", report, "--json").output)
    first = data["reports"][0]
    assert data["verified"] is False and first["verified"] is False
    assert first["status"] == "not_verified" and first["intact"] is True
    assert first["problems"] == [] and first["checks"]["gold"] == "not checked: no --gold"
    assert invoke("verify", report, "--gold", str(setup["gold"])).exit_code == 0


def test_a_lock_from_before_provenance_verifies_with_a_note(setup) -> None:
    """Locks written before provenance was recorded hash as before (the field is omitted when
    None) and verify on their other checks, with the note "not recorded"."""
    from workbench._lock import Verification
    from workbench.reports._verify import _check_provenance

    report = setup["first"].report_dir
    lock = read_lock(report)
    assert lock.provenance is not None and lock.provenance["notebook"] == "packaged"
    older = lock.model_copy(update={"provenance": None})
    assert "provenance" not in older.model_dump(mode="json")
    result = Verification(path=report)
    assert _check_provenance(report, older, result) is None
    assert result.problems == [] and result.checks["provenance"].startswith("not recorded")
    bad = lock.model_copy(update={"provenance": {"notebook": "packaged"}})
    assert _check_provenance(report, bad, result) is None
    assert [p.code for p in result.problems] == ["provenance_invalid"]


def test_the_gold_must_be_the_certified_one_and_its_ledger_must_record_the_lock(
    setup, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--gold G: the stored held-out records are compared with G's held-out cases, case by
    case, and the project's ledger must record this lock as finished. A fresh copy of the demo
    (the same held-out cases) verifies in the project that recorded the certification and fails
    in another project (its own, empty ledger); a copy with one held-out case relabelled fails."""
    report = str(setup["first"].report_dir)
    fresh = tmp_path / "fresh"
    shutil.copytree(DEMO, fresh)
    recorded = invoke("verify", report, "--gold", str(fresh))
    assert recorded.exit_code == 0, recorded.output  # the same held-out content, recorded
    with monkeypatch.context() as elsewhere:
        use_project(elsewhere, make_project(tmp_path / "other-project"))
        unrecorded = json.loads(invoke("verify", report, "--gold", str(fresh), "--json").output)
    codes = {p["code"] for p in unrecorded["reports"][0]["problems"]}
    assert unrecorded["reports"][0]["checks"]["gold"].startswith("ok (")
    assert codes & {"ledger_missing", "ledger_entry_missing"}, codes
    relabelled = tmp_path / "relabelled"
    shutil.copytree(setup["gold"], relabelled)
    rows = [json.loads(line) for line in (relabelled / "gold.jsonl").read_text().splitlines()]
    target = next(r for r in rows if r["partition"] == "held_out" and r.get("adjudication"))
    target["adjudication"]["label"] = (
        "pass" if target["adjudication"]["label"] == "fail" else "fail"
    )
    (relabelled / "gold.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (relabelled / "releases.jsonl").unlink()  # unfrozen, so the relabelled copy loads
    result = invoke("verify", report, "--gold", str(relabelled))
    assert result.exit_code == 1, result.output
    assert "gold_case_changed" in result.output and target["case_id"] in result.output


# -- the chain of two certifications ---------------------------------------------------------


def test_a_second_certification_needs_a_reason_then_chains(setup) -> None:
    """The setup's second certification is the re-run: a third without a reason is refused,
    naming both earlier reports, and nothing is recorded."""
    first, second, gold, reports = setup["first"], setup["second"], setup["gold"], setup["reports"]
    ledger = ledger_path_for(gold)
    before = ledger.read_bytes()
    with pytest.raises(WorkbenchError) as info:
        certify(CANDIDATE, POLICY, gold, reports_root=reports)
    problem = info.value.problems[0]
    assert problem.code == "held_out_reuse" and first.report_id in problem.message
    assert second.report_id in problem.message and ledger.read_bytes() == before
    assert first.report_id.endswith("/1") and second.report_id.endswith("/2")
    assert second.report_dir != first.report_dir
    assert second.outcome == "evaluation_incomplete"
    assert "case_limit_reached" in {b["code"] for b in second.blockers}
    lock = read_lock(second.report_dir)
    assert (
        lock.previous_report is not None and lock.previous_report.lock_sha256 == first.lock_sha256
    )
    assert lock.rerun_reason and "case limit" in (second.report_dir / "report.html").read_text()
    assert verify_report(second.report_dir) == [] and verify_report(first.report_dir) == []
    entries = HeldOutLedger(ledger).entries()
    assert [(e.event, e.report_id) for e in entries] == [
        ("started", first.report_id),
        ("finished", first.report_id),
        ("started", second.report_id),
        ("finished", second.report_id),
    ]
    assert entries[-1].outcome == "evaluation_incomplete" and entries[-2].rerun_reason
    assert [r["outcome"] for r in list_reports(reports)] == [
        first.outcome,
        "evaluation_incomplete",
    ]
    listing = CliRunner().invoke(main, ["reports", "--reports", str(reports)])
    assert first.report_id in listing.output and second.report_id in listing.output


# -- the forged lock ---------------------------------------------------------------------------


def test_a_forged_outcome_with_its_own_hash_recomputed_is_refused(setup, tmp_path: Path) -> None:
    reports = writable_copy(setup["reports"], tmp_path / "reports")
    latest = reports / setup["second"].report_id
    assert read_lock(latest).outcome == "evaluation_incomplete"
    rewrite_lock(latest, outcome="certified")
    assert verify_one(latest).checks["lock"] == "ok"  # the lock is self-consistent, as in the issue
    result = invoke("verify", str(latest))
    assert result.exit_code == 1 and "NOT VERIFIED" in result.output
    assert "outcome_mismatch" in result.output and "lock_not_in_ledger" in result.output


def test_a_thorough_forgery_of_lock_gate_and_hashes_is_still_refused(setup, tmp_path: Path) -> None:
    reports = writable_copy(setup["reports"], tmp_path / "reports")
    latest = reports / setup["second"].report_id
    gate = json.loads((latest / "gate.json").read_text())
    gate.update(outcome="certified", blockers=[], summary="CERTIFIED")
    (latest / "gate.json").write_text(json.dumps(gate))
    lock = json.loads((latest / "lock.json").read_text())
    files = {**lock["files"], "gate.json": hash_tree(latest)["gate.json"]}
    rewrite_lock(latest, outcome="certified", blockers=[], files=files)
    report = verify_one(latest)
    codes = {p.code for p in report.problems}
    assert report.checks["files"] == "ok" and report.checks["lock"] == "ok"  # every hash agrees
    assert {"outcome_mismatch", "blockers_mismatch", "gate_mismatch", "lock_not_in_ledger"} <= codes


def test_changed_figures_are_refused(setup, tmp_path: Path) -> None:
    reports = writable_copy(setup["reports"], tmp_path / "reports")
    report = reports / setup["first"].report_id
    figures = json.loads((report / "lock.json").read_text())["figures"]
    figures["overall"]["false_passes"] = 0
    rewrite_lock(report, figures=figures)
    assert "figures_mismatch" in {p.code for p in verify_one(report).problems}


def test_a_deleted_latest_report_is_found(setup, tmp_path: Path) -> None:
    reports = writable_copy(setup["reports"], tmp_path / "reports")
    shutil.rmtree(reports / setup["second"].report_id)
    result = invoke("verify", str(reports / setup["first"].report_id))
    assert (
        result.exit_code == 1
        and "report_missing" in result.output
        and setup["second"].report_id in result.output
    )
    root = invoke("verify", str(reports), "--gold", str(setup["gold"]), "--json")
    assert root.exit_code == 1
    problems = [p for r in json.loads(root.output)["reports"] for p in r["problems"]]
    assert [p["code"] for p in problems] == ["report_missing"]


def test_an_added_restricted_lock_json_is_caught(setup, tmp_path: Path) -> None:
    reports = writable_copy(setup["reports"], tmp_path / "reports")
    report = reports / setup["first"].report_id
    (report / "restricted" / "lock.json").write_text("{}")
    problems = {
        (p.code, Path(p.location).relative_to(report).as_posix())
        for p in verify_one(report).problems
    }
    assert ("file_added", "restricted/lock.json") in problems


def test_a_removed_previous_report_is_caught(setup, tmp_path: Path) -> None:
    reports = writable_copy(setup["reports"], tmp_path / "reports")
    latest = reports / setup["second"].report_id
    assert read_lock(latest).previous_report is not None
    rewrite_lock(latest, previous_report=None)
    codes = {p.code for p in verify_one(latest).problems}
    assert {"chain_mismatch", "chain_broken", "lock_inconsistent"} <= codes


def test_a_report_copied_on_its_own_verifies_with_the_chain_not_checked(
    setup, tmp_path: Path
) -> None:
    alone = tmp_path / "shared-copy"
    shutil.copytree(setup["second"].report_dir, alone)
    result = verify_one(alone, gold=setup["gold"])
    assert result.verified, result.problems
    assert result.checks["chain"].startswith("not checked") and result.checks["ledger"] == "ok"
    moved = setup["gold"].with_name("gold-moved")
    setup["gold"].rename(moved)  # the dataset (and so its ledger) is not on this machine
    try:
        result = invoke("verify", str(alone), "--json")
        report = json.loads(result.output)["reports"][0]
        assert result.exit_code == 3 and report["checks"]["ledger"].startswith("not checked")
        assert report["status"] == "not_verified" and report["intact"] is True
        assert report["checks"]["chain"].startswith("not checked") and report["checks"][
            "outcome"
        ].startswith("ok")
        given = invoke("verify", str(alone), "--gold", str(moved))  # the ledger can still be named
        assert given.exit_code == 0 and "ledger: ok" in given.output
    finally:
        moved.rename(setup["gold"])


def test_no_traceback_on_any_path(setup, tmp_path: Path) -> None:
    lock_file = setup["first"].report_dir / "lock.json"
    assert invoke("verify", str(lock_file), "--gold", str(setup["gold"])).exit_code == 0
    missing = invoke("verify", str(tmp_path / "nope"))
    assert missing.exit_code == 2 and "report_missing" in missing.output
    empty = tmp_path / "empty"
    empty.mkdir()
    assert invoke("verify", str(empty)).exit_code == 2
    for name, content in {
        "garbage": "not json",
        "deep": "[" * 1000 + "]" * 1000,
        "shape": '{"outcome": "certified"}',
        "binary": "\udcff",
    }.items():
        d = tmp_path / name
        d.mkdir()
        (d / "lock.json").write_bytes(content.encode("utf-8", "surrogateescape"))
        for extra in ([], ["--json"]):
            result = invoke("verify", str(d), *extra)
            assert result.exit_code == 1 and "lock_unreadable" in result.output, (
                name,
                result.output,
            )
    as_json = invoke("verify", str(tmp_path / "garbage"), "--json")
    assert json.loads(as_json.output)["verified"] is False


# -- signing -----------------------------------------------------------------------------------


def test_a_signed_lock_is_trusted_only_for_a_trusted_key(setup, tmp_path: Path) -> None:
    first = setup["first"].report_dir
    lock = read_lock(first)
    assert (
        lock.signature is not None
        and lock.signature.public_key.split()[:2] == setup["openssh_pub"].read_text().split()[:2]
    )
    assert lock.content_sha256() == lock.lock_sha256  # the signature is outside the hashed content
    trusted = invoke(
        "verify", str(first), "--gold", str(setup["gold"]), "--trust", str(setup["openssh_pub"])
    )
    assert trusted.exit_code == 0 and "signed by a trusted key: team@test" in trusted.output
    untrusted = invoke("verify", str(first), "--trust", str(setup["pem_pub"]))
    assert untrusted.exit_code == 1 and "signature_untrusted" in untrusted.output
    unsigned = invoke(
        "verify", str(setup["second"].report_dir), "--trust", str(setup["openssh_pub"])
    )
    assert unsigned.exit_code == 1 and "unsigned" in unsigned.output


def test_a_tampered_signature_is_invalid(setup, tmp_path: Path) -> None:
    reports = writable_copy(setup["reports"], tmp_path / "reports")
    report = reports / setup["first"].report_id
    data = json.loads((report / "lock.json").read_text())
    sig = data["signature"]["signature"]
    data["signature"]["signature"] = ("A" if sig[0] != "A" else "B") + sig[1:]
    (report / "lock.json").write_text(json.dumps(data))
    assert "signature_invalid" in {p.code for p in verify_one(report).problems}
    # re-signing a forged lock with a key nobody trusts does not help
    rewrite_lock(report, outcome="certified", signature=None)
    forged = read_lock(report)
    write_lock(report, forged, signer=load_signer(setup["pem"]))
    result = invoke("verify", str(report), "--trust", str(setup["openssh_pub"]))
    assert (
        result.exit_code == 1
        and "signature_untrusted" in result.output
        and "outcome_mismatch" in result.output
    )


def test_pem_keys_sign_and_a_trusted_resigner_is_trusted(setup, tmp_path: Path) -> None:
    """The documented limit: whoever holds a trusted key vouches for what it signs."""
    reports = writable_copy(setup["reports"], tmp_path / "reports")
    report = reports / setup["second"].report_id
    write_lock(report, read_lock(report), signer=load_signer(setup["pem"]))
    result = invoke(
        "verify", str(report), "--gold", str(setup["gold"]), "--trust", str(setup["pem_pub"])
    )
    assert result.exit_code == 0 and "other@test" in result.output


def test_bad_keys_and_trust_files_exit_2_before_the_ledger_is_touched(
    setup, tmp_path: Path
) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    ledger = ledger_path_for(setup["gold"])
    before = ledger.read_bytes()
    garbage = tmp_path / "garbage.key"
    garbage.write_text("not a key")
    rsa_key = tmp_path / "rsa.key"
    rsa_key.write_bytes(
        rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    for key, code in (
        (garbage, "signing_key_invalid"),
        (rsa_key, "signing_key_not_ed25519"),
        (tmp_path / "absent.key", "signing_key_unreadable"),
    ):
        result = invoke(
            "certify",
            "--candidate",
            str(CANDIDATE),
            "--policy",
            str(POLICY),
            "--gold",
            str(setup["gold"]),
            "--reports",
            str(tmp_path / "r"),
            "--sign",
            str(key),
            "--rerun-reason",
            "x",
        )
        assert result.exit_code == 2 and code in result.output, (key, result.output)
    assert ledger.read_bytes() == before and not (tmp_path / "r").exists()
    bad_trust = tmp_path / "trust"
    bad_trust.write_text("ssh-ed25519 not-base64!!\n")
    result = invoke("verify", str(setup["first"].report_dir), "--trust", str(bad_trust))
    assert result.exit_code == 2 and "trust_invalid" in result.output


# -- the policy budget ---------------------------------------------------------------------


def test_a_policy_budget_bounds_certification(setup, tmp_path: Path) -> None:
    second = read_lock(setup["second"].report_dir)
    run = json.loads((setup["second"].report_dir / "restricted" / "run" / "run.json").read_text())
    assert (
        second.budget_usd == 0.25 == run["budget_usd"] == second.ledger_entry["budget_usd"]
    )  # the lower one is used
    assert read_lock(setup["first"].report_dir).budget_usd is None  # no policy budget: unchanged
    ledger = ledger_path_for(setup["gold"])
    before = ledger.read_bytes()
    above = invoke(
        "certify",
        "--candidate",
        str(CANDIDATE),
        "--policy",
        str(setup["budget_policy"]),
        "--gold",
        str(setup["gold"]),
        "--reports",
        str(tmp_path / "r"),
        "--budget-usd",
        "2",
        "--rerun-reason",
        "x",
    )
    assert above.exit_code == 2 and "budget_above_policy" in above.output
    assert ledger.read_bytes() == before and not (tmp_path / "r").exists()
    policy = load_policy(setup["budget_policy"])
    assert resolve_budget(policy, None, "p") == 1.0 and resolve_budget(policy, 0.5, "p") == 0.5
    assert (
        resolve_budget(load_policy(POLICY), None, "p") is None
        and resolve_budget(load_policy(POLICY), 3.0, "p") == 3.0
    )
    with pytest.raises(WorkbenchError) as refused:
        resolve_budget(policy, 1.01, "p")
    assert [p.code for p in refused.value.problems] == ["budget_above_policy"]
    entries = HeldOutLedger(ledger).entries()
    assert [e.event for e in entries] == ["started", "finished", "started", "finished"]
    assert yaml.safe_load(setup["budget_policy"].read_text())["budget_usd"] == 1.0
