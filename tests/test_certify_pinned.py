"""Issue 28 point 1: certification runs the notebook shipped in the package; a substituted
notebook cannot forge a certification, and ``verify --gold`` compares the report's stored
held-out records with the real gold.

The audit's attack: a project's ``notebooks/03_certify.ipynb`` (or ``--notebook``) with one
injected cell that makes every held-out verdict agree with the human label turned
rubric-judge@2 (quality failed under support-release@1) into a signed CERTIFIED report that
passed ``verify --gold --trust``. Each test certifies its own copy of the demo gold.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
import pytest
from click.testing import CliRunner

from workbench._io import sha256_file
from workbench.cli import main
from workbench.reports import read_lock

pytestmark = pytest.mark.notebook

ROOT = Path(__file__).resolve().parents[1]
CANDIDATE = ROOT / "data" / "candidates" / "rubric-judge@2.yaml"
POLICY = ROOT / "data" / "policies" / "support-release@1.yaml"
DEMO = ROOT / "data" / "demo"
SHIPPED = ROOT / "workbench" / "notebooks" / "03_certify.ipynb"

LOOSEN_THE_POLICY = """
# injected: the report's policy copy loosened (limits a perfect judge can show on 82 cases in
# 2 groups per critical slice)
import pathlib as _pl

import yaml as _yaml

_loose = _yaml.safe_load(_pl.Path(policy).read_text())
_loose["min_n_per_slice"] = 1
for _limits in _loose["slices"].values():
    _limits["max_false_pass_rate"] = 1.0
    _limits.pop("min_n", None)
_pl.Path(policy).write_text(_yaml.safe_dump(_loose))
"""

AGREE_WITH_THE_LABELS = """
# injected: every held-out verdict agrees with the human label
from workbench.gold import load_dataset as _load
from workbench.judges import Verdict as _Verdict
from workbench.judges._function import FunctionJudge as _FunctionJudge

_labels = {c.case_id: c.gold_label for c in _load(gold).partition("held_out")}
_evaluate = _FunctionJudge.evaluate


async def _agreeing(self, judge_input, ref=None):
    if ref is not None and _labels.get(ref.case_id) is not None:
        return _Verdict(value=_labels[ref.case_id], reason="agrees")
    return await _evaluate(self, judge_input, ref)


_FunctionJudge.evaluate = _agreeing
"""

THE_AUDIT_NOTEBOOK = LOOSEN_THE_POLICY + AGREE_WITH_THE_LABELS


def loose_policy(directory: Path) -> Path:
    """support-release@1 with the limits the audit's notebook wrote (a perfect judge passes)."""
    import yaml

    loose = yaml.safe_load(POLICY.read_text())
    loose["min_n_per_slice"] = 1
    for limits in loose["slices"].values():
        limits["max_false_pass_rate"] = 1.0
        limits.pop("min_n", None)
    path = directory / POLICY.name
    path.write_text(yaml.safe_dump(loose))
    return path


RELABEL_HELD_OUT = """
# injected: every held-out case relabelled "pass" in memory (and so in the stored evidence)
import dataclasses as _dc

import workbench.reports._certification as _cert_module

_real_load = _cert_module.load_dataset


def _relabelled(path):
    ds = _real_load(path)
    moved = {}
    for c in ds.partition("held_out"):
        if c.adjudication is not None:
            relabelled = c.adjudication.model_copy(update={"label": "pass"})
            moved[c.case_id] = c.model_copy(update={"adjudication": relabelled})
    return _dc.replace(
        ds,
        records=tuple(moved.get(r.case_id, r) for r in ds.records),
        cases={k: moved.get(k, v) for k, v in ds.cases.items()},
    )


_cert_module.load_dataset = _relabelled
"""


def injected(path: Path, code: str) -> Path:
    """The packaged certification notebook with ``code`` as a cell before the evaluation."""
    notebook = nbformat.read(SHIPPED, as_version=4)
    notebook.cells.insert(2, nbformat.v4.new_code_cell(code))
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, path)
    return path


def keypair(directory: Path) -> tuple[Path, Path]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    private, public = directory / "team", directory / "team.pub"
    private.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.OpenSSH,
            serialization.NoEncryption(),
        )
    )
    public.write_text(
        key.public_key()
        .public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        .decode()
        + " team@test\n"
    )
    return private, public


def invoke(*args: str | Path):
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert "Traceback" not in result.output
    return result


def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh copy of the demo project's gold, the current directory."""
    shutil.copytree(DEMO, tmp_path / "gold")
    keys = tmp_path / "keys"
    keys.mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def certify_cli(*extra: str | Path, policy: Path = POLICY):
    return invoke(
        "certify",
        "--candidate",
        CANDIDATE,
        "--policy",
        policy,
        "--gold",
        "gold",
        "--reports",
        "reports",
        "--json",
        *extra,
    )


def test_a_notebook_in_the_project_is_never_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attack 1 as the audit ran it: notebooks/03_certify.ipynb in the project loosens the
    report's policy copy and makes every held-out verdict agree (old: a signed CERTIFIED report,
    exit 0, that verified). Certify runs the packaged notebook: quality failed (exit 1), as
    without the file, and the lock records what ran."""
    root = project(tmp_path, monkeypatch)
    injected(root / "notebooks" / "03_certify.ipynb", THE_AUDIT_NOTEBOOK)
    private, public = keypair(root / "keys")
    result = certify_cli("--sign", private)
    assert result.exit_code == 1, result.output
    data = json.loads(result.output)
    assert data["outcome"] == "quality_failed" and data["advisory"] is None
    from workbench.reports import package_sha256, packaged_notebook

    lock = read_lock(data["report_dir"])
    assert lock.provenance is not None
    assert lock.provenance["notebook"] == "packaged"
    assert lock.provenance["notebook_sha256"] == sha256_file(packaged_notebook())
    assert lock.provenance["package_sha256"] == package_sha256()
    assert lock.versions["workbench"] == lock.provenance["workbench"]
    verified = invoke("verify", data["report_dir"], "--gold", "gold", "--trust", public)
    assert verified.exit_code == 0, verified.output
    assert "outcome quality_failed" in verified.output
    assert "provenance: workbench" in verified.output and "packaged notebook" in verified.output


def test_a_custom_notebook_gives_an_advisory_report_never_a_certification(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attack 1 through --notebook, under a policy a perfect judge passes: the injected
    verdicts pass every limit (old: certified, exit 0), but the policy pins no notebook, so the
    gate gets notebook_unpinned: review required (exit 4), no authority, an advisory title;
    verify re-runs the gate with the same blocker and says ADVISORY."""
    root = project(tmp_path, monkeypatch)
    forged = injected(root / "forged.ipynb", AGREE_WITH_THE_LABELS)
    private, public = keypair(root / "keys")
    result = certify_cli("--notebook", forged, "--sign", private, policy=loose_policy(root))
    assert result.exit_code == 4, result.output
    data = json.loads(result.output)
    assert data["outcome"] == "review_required"
    assert [b["code"] for b in data["blockers"]] == ["notebook_unpinned"]
    assert data["advisory"].startswith("ADVISORY, not a certification: custom notebook")
    report = Path(data["report_dir"])
    lock = read_lock(report)
    assert lock.provenance is not None and lock.provenance["notebook"] == "custom"
    assert lock.provenance["notebook_sha256"] == sha256_file(forged)
    assert lock.grant is not None and lock.grant.get("use") in (None, "none")
    gate = json.loads((report / "gate.json").read_text())
    assert gate["outcome"] == "review_required"
    title = (report / "report.html").read_text().split("<title>")[1].split("</title>")[0]
    assert title.startswith("ADVISORY, not a certification")
    body = (report / "report.html").read_text().split("<main", 1)[1]
    first_heading = body[body.index("<h") :].split(">", 1)[1]
    assert first_heading.startswith("ADVISORY, not a certification")  # first on the page
    verified = invoke("verify", report, "--gold", "gold", "--trust", public)
    assert verified.exit_code == 0, verified.output  # a true advisory report, verified as such
    assert "outcome review_required" in verified.output and "ADVISORY" in verified.output


def test_a_notebook_that_rewrites_the_policy_copy_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The audit's notebook through --notebook (old: certified, exit 0): it rewrites the
    report's policy copy, which certify checks after the notebook: refused (exit 2,
    input_changed_by_notebook), no lock, and the use is recorded as aborted."""
    root = project(tmp_path, monkeypatch)
    forged = injected(root / "forged.ipynb", THE_AUDIT_NOTEBOOK)
    result = certify_cli("--notebook", forged)
    assert result.exit_code == 2, result.output
    assert "input_changed_by_notebook" in result.output
    assert not list((root / "reports").rglob("lock.json"))


def test_a_notebook_that_relabels_held_out_cases_does_not_verify_against_the_real_gold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A custom notebook relabels every held-out case "pass" in memory, so the report stores
    relabelled held-out records and its gate is re-run on them (old: verify --gold exit 0).
    verify --gold compares the stored records with the real gold's and names the cases
    (gold_case_changed, exit 1); without --gold it is intact but not verified (exit 3)."""
    root = project(tmp_path, monkeypatch)
    relabel = injected(root / "relabel.ipynb", RELABEL_HELD_OUT)
    result = certify_cli("--notebook", relabel)
    assert result.exit_code in (1, 3, 4), result.output
    report = Path(json.loads(result.output)["report_dir"])
    checked = invoke("verify", report, "--gold", "gold", "--json")
    assert checked.exit_code == 1, checked.output
    found = json.loads(checked.output)["reports"][0]
    assert found["status"] == "failed"
    changed = [p for p in found["problems"] if p["code"] == "gold_case_changed"]
    assert changed and "held-out case(s) stored in the report differ" in changed[0]["message"]
    unchecked = invoke("verify", report)
    assert unchecked.exit_code == 3, unchecked.output
    assert "NOT VERIFIED (intact" in unchecked.output and "--gold" in unchecked.output


def test_a_policy_may_pin_a_custom_notebook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """certification.notebook_sha256 pins a custom notebook: it certifies like the packaged
    one (no notebook_unpinned; quality failed, exit 1) and the lock says ``pinned``; a notebook
    with another hash under the same policy is still advisory."""
    root = project(tmp_path, monkeypatch)
    notebook = injected(root / "annotated.ipynb", "# our team's annotated copy")
    policy = root / POLICY.name
    policy.write_text(
        POLICY.read_text() + f"certification:\n  notebook_sha256: {sha256_file(notebook)}\n"
    )
    result = certify_cli("--notebook", notebook, policy=policy)
    assert result.exit_code == 1, result.output
    data = json.loads(result.output)
    assert data["advisory"] is None and data["outcome"] == "quality_failed"
    assert "notebook_unpinned" not in {b["code"] for b in data["blockers"]}
    provenance = read_lock(data["report_dir"]).provenance
    assert provenance is not None and provenance["notebook"] == "pinned"
    verified = invoke("verify", data["report_dir"], "--gold", "gold")
    assert verified.exit_code == 0 and "pinned notebook" in verified.output


def test_a_custom_notebook_that_is_no_notebook_is_refused_before_the_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path, monkeypatch)
    garbage = root / "garbage.ipynb"
    garbage.write_text("not a notebook")
    result = certify_cli("--notebook", garbage)
    assert result.exit_code == 2 and "notebook_invalid" in result.output, result.output
    assert not (root / "reports").exists()
    from workbench.heldout import ledger_path_for

    ledger = ledger_path_for(root / "gold")
    assert not ledger.exists() or "started" not in ledger.read_text()
