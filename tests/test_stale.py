"""A certified judge goes stale when anything it depends on changes, and ``status`` names it.

The module fixture certifies a ``ragas-function`` judge of its own on a fresh project copy of
the demo, in that project (pinned as the project root, so its held-out ledger records the
certification; the lock signed with a key of its ``trusted_keys:``): a package
(``stalejudge_h5``) whose metric module defines the function and imports the rule it applies
from a second module, which imports a third-party distribution (``fakedep_h5``, installed
beside it with its own ``.dist-info``). The project's ``pyproject.toml`` pins the installed
Ragas. Each test grants the judge advisory authority on its own copy of the gold, in a project
of its own holding a copy of that ledger, changes one thing in place (and restores it), and
reads ``workbench status``:

- an edit to the module the function's module imports (issue 28, point 6: the fingerprint
  hashed only the defining module, so ``status`` said "stale: no");
- an upgrade of a third-party distribution that code imports;
- an edit in place of the policy file the report was certified under (point 10);
- a Ragas pin change in the project's ``pyproject.toml`` (point 10);
- a prompt or model change of an LLM judge is named as such;
- a report certified before the code was covered is "code not covered", stale, not a crash.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result
from conftest import PROJECT_ROOT_ENV, copy_project, make_project, use_project
from test_authority import keypair

from workbench.authority import ReportFacts, gold_state, read_report, staleness
from workbench.cli import main
from workbench.judges import load_candidate, ragas_version
from workbench.reports import certify

pytestmark = pytest.mark.notebook

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo"
APPROVER = "Support Quality lead (demo)"
PACKAGE = "stalejudge_h5"
DEPENDENCY = "fakedep_h5"

METRIC = '''"""The judge: its verdicts come from the rules module."""

from ragas.metrics import discrete_metric

from . import rules


@discrete_metric(name="kw_judge_h5", allowed_values=["pass", "fail"])
def kw_judge(user_input: str, response: str, grading_notes: str):
    del user_input
    return rules.verdict(response, grading_notes)
'''
RULES = f'''"""The rule the judge applies (the demo's version 2 phrase matching)."""

import {DEPENDENCY}

from workbench.judges.demo import v2_verdict


def verdict(response, grading_notes):
    return v2_verdict(response, grading_notes)
'''
ALWAYS_PASS = f'''"""The rule, changed after certification: everything passes."""

import {DEPENDENCY}

from ragas.metrics.result import MetricResult

from workbench.judges.demo import v2_verdict


def verdict(response, grading_notes):
    return MetricResult(value="pass", reason="looks fine to me")
'''

SLICES = {
    "refund_policy": "critical",
    "account_security": "critical",
    "billing_payments": "high",
    "subscription_cancellation": "high",
    "privacy_data_requests": "high",
    "shipping_delivery": "medium",
    "escalation_handoff": "low",
}


def _policy() -> dict[str, Any]:
    slices: dict[str, Any] = {}
    for name, risk in SLICES.items():
        slices[name] = {"risk": risk, "max_abstention_rate": 0.5}
        if risk == "critical":
            slices[name] |= {"max_false_pass_rate": 1.0, "false_pass_rate_basis": "upper_95"}
    return {
        "schema_version": 2,
        "name": "lenient-block",
        "version": "1",
        "owner": "staleness tests",
        "rationale": "Lenient enough for the demo's small held-out partition.",
        "rubric_version": "support-policy-2026.09",
        "partition": "held_out",
        "max_evaluator_errors": 0,
        "min_n_per_slice": 1,
        "slices": slices,
        "use": "block",
        "scope": {"slices": list(SLICES), "products": ["support-chat"]},
    }


def _write_project(project: Path) -> dict[str, Path]:
    code = project / "code"
    package = code / PACKAGE
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('"""A judge package of the project."""\n')
    (package / "metric.py").write_text(METRIC)
    (package / "rules.py").write_text(RULES)
    (code / DEPENDENCY).mkdir()
    (code / DEPENDENCY / "__init__.py").write_text("VALUE = 1\n")
    info = code / f"{DEPENDENCY}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {DEPENDENCY}\nVersion: 1.0\n")
    candidates = project / "candidates"
    candidates.mkdir()
    spec = candidates / "kw-judge@1.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "schema_version": 1,
                "name": "kw-judge",
                "version": "1",
                "kind": "ragas-function",
                "description": "The demo's phrase matching, from a package of the project.",
                "labels": ["pass", "fail"],
                "function": f"{PACKAGE}.metric:kw_judge",
            }
        )
    )
    policies = project / "policies"
    policies.mkdir()
    policy = policies / "lenient-block@1.yaml"
    policy.write_text(yaml.safe_dump(_policy()))
    pyproject = project / "pyproject.toml"
    pyproject.write_text(
        f'[project]\nname = "judges"\nversion = "1"\ndependencies = ["ragas=={ragas_version()}"]\n'
    )
    gold = project / "gold"
    shutil.copytree(DEMO, gold)
    return {
        "code": code,
        "rules": package / "rules.py",
        "metadata": info / "METADATA",
        "spec": spec,
        "policy": policy,
        "pyproject": pyproject,
        "gold": gold,
    }


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """The judge certified, signed with a key the project trusts, in its own project, pinned as
    the project root meanwhile (the certification is recorded in that project's held-out
    ledger)."""
    project = make_project(tmp_path_factory.mktemp("stale") / "project")
    keys = project / "keys"
    keys.mkdir()
    private, public = keypair(keys)
    config = project / "workbench.yaml"
    trusted = {**yaml.safe_load(config.read_text()), "trusted_keys": [str(public)]}
    config.write_text(yaml.safe_dump(trusted, sort_keys=False))
    w = _write_project(project)
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(w["code"]))
        mp.setenv("PYTHONPATH", f"{w['code']}:{ROOT}")  # the notebook kernel imports it too
        mp.setenv("WORKBENCH_CACHE_DIR", str(project / "cache"))
        mp.setenv(PROJECT_ROOT_ENV, str(project))
        mp.chdir(ROOT)
        result = certify(
            w["spec"], w["policy"], w["gold"], reports_root=project / "reports", sign_key=private
        )
        assert result.outcome == "certified", result.blockers
        w["project"] = project
        w["report"] = result.report_dir
        yield w


@pytest.fixture
def in_world(world: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """The world, with the project root pinned to the project it was certified in (read only:
    the test reads its ledger, never writes it)."""
    use_project(monkeypatch, world["project"])
    return world


@pytest.fixture
def gold(world: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's own copy of the certified gold (its own authority record), in a project of
    its own (pinned for the test) holding a copy of the certifying project's held-out ledger."""
    use_project(monkeypatch, world["project"])
    copy_project(monkeypatch, tmp_path / "project")
    target = tmp_path / "gold"
    shutil.copytree(world["gold"], target)
    return target


def cli(*args: Any) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def granted(world: dict[str, Path], gold: Path) -> None:
    result = cli(
        "authority",
        "grant",
        "--gold",
        gold,
        "--candidate",
        world["spec"],
        "--report",
        world["report"],
        "--approver",
        APPROVER,
        "--reason",
        "certified on held-out data",
    )
    assert result.exit_code == 0, result.output
    code, judge = status(gold)
    assert (code, judge["stale"], judge["stale_reasons"]) == (0, False, []), judge


def status(gold: Path) -> tuple[int, dict[str, Any]]:
    result = cli("status", "--gold", gold, "--json")
    assert "Traceback" not in result.output, result.output
    (judge,) = json.loads(result.output)["judges"]
    return result.exit_code, judge


def promote_refused(world: dict[str, Path], gold: Path) -> None:
    result = cli(
        "authority",
        "promote",
        "--gold",
        gold,
        "--candidate",
        world["spec"],
        "--report",
        world["report"],
        "--approver",
        APPROVER,
        "--reason",
        "the monitored window was clean",
    )
    assert result.exit_code == 2, result.output
    assert "[judge_stale]" in result.output and "Traceback" not in result.output, result.output
    # the report is signed by a key the project trusts: the refusal is not for want of one
    assert "[authority_unsigned]" not in result.output, result.output
    assert "[trusted_keys_missing]" not in result.output, result.output


@contextmanager
def changed(path: Path, text: str) -> Iterator[None]:
    """``path`` holds ``text`` inside the block, its own content again after."""
    before = path.read_bytes()
    path.write_text(text, encoding="utf-8")
    try:
        yield
    finally:
        path.write_bytes(before)


# -- the report keeps the code it certified ----------------------------------------------------


def test_the_report_keeps_a_copy_of_the_code_its_fingerprint_covers(
    in_world: dict[str, Path],
) -> None:
    world = in_world
    report = Path(world["report"])
    copy = report / "restricted" / "code"
    manifest = json.loads((copy / "coverage.json").read_text())
    files = {f"{PACKAGE}/__init__.py", f"{PACKAGE}/metric.py", f"{PACKAGE}/rules.py"}
    assert set(manifest["code_sha256"]) == files, manifest["code_sha256"]
    for rel in files:
        assert (copy / "files" / rel).read_bytes() == (world["code"] / rel).read_bytes()
    assert manifest["dependencies"][DEPENDENCY] == "1.0"
    assert manifest["dependencies"]["ragas"] == ragas_version()
    run = json.loads((report / "restricted" / "run" / "manifest.json").read_text())
    assert run["judge"]["params"]["code_sha256"] == manifest["code_sha256"]
    assert run["judge"]["params"]["dependencies"] == manifest["dependencies"]
    assert manifest["candidate_fingerprint"] == run["judge_fingerprint"]
    lock = json.loads((report / "lock.json").read_text())
    assert {f"restricted/code/files/{rel}" for rel in files} <= set(lock["files"])
    assert "restricted/code/coverage.json" in lock["files"]
    assert lock["policy_file"] == str(world["policy"].resolve())
    # the copy is locked like every other file: an edit of it no longer verifies
    facts, problems = read_report(report)
    assert facts is not None and problems == [] and facts.certified


# -- each change names the judge stale -----------------------------------------------------------


def test_an_edit_to_a_module_the_judge_imports_makes_it_stale(
    world: dict[str, Path], gold: Path
) -> None:
    granted(world, gold)
    with changed(world["rules"], ALWAYS_PASS):
        code, judge = status(gold)
        assert code == 4 and judge["stale"], judge
        assert [r["kind"] for r in judge["stale_reasons"]] == ["code"], judge["stale_reasons"]
        assert f"{PACKAGE}/rules.py changed" in judge["stale_reasons"][0]["message"]
        shown = cli("status", "--gold", gold).output
        assert "stale: YES" in shown and f"{PACKAGE}/rules.py changed" in shown, shown
        promote_refused(world, gold)
    assert status(gold)[1]["stale"] is False  # restored: the certified code again


def test_a_dependency_upgrade_makes_the_judge_stale(world: dict[str, Path], gold: Path) -> None:
    granted(world, gold)
    upgraded = f"Metadata-Version: 2.1\nName: {DEPENDENCY}\nVersion: 2.0\n"
    with changed(world["metadata"], upgraded):
        code, judge = status(gold)
        assert code == 4 and [r["kind"] for r in judge["stale_reasons"]] == ["dependencies"]
        assert f"{DEPENDENCY} 1.0 -> 2.0" in judge["stale_reasons"][0]["message"]
        promote_refused(world, gold)


def test_a_policy_edited_in_place_makes_the_judge_stale(world: dict[str, Path], gold: Path) -> None:
    granted(world, gold)
    edited = {**_policy(), "min_n_per_slice": 0, "max_evaluator_errors": 50}
    with changed(world["policy"], yaml.safe_dump(edited)):
        code, judge = status(gold)
        assert code == 4 and [r["kind"] for r in judge["stale_reasons"]] == ["policy"]
        assert "was edited since certification" in judge["stale_reasons"][0]["message"]
        promote_refused(world, gold)
    moved = world["policy"].with_suffix(".moved")
    world["policy"].rename(moved)
    try:
        reasons = status(gold)[1]["stale_reasons"]
        assert [r["kind"] for r in reasons] == ["policy"] and "is gone" in reasons[0]["message"]
    finally:
        moved.rename(world["policy"])


def test_a_ragas_pin_change_in_pyproject_makes_the_judge_stale(
    world: dict[str, Path], gold: Path
) -> None:
    granted(world, gold)
    pinned = '[project]\nname = "judges"\nversion = "1"\ndependencies = ["ragas==9.9.9"]\n'
    with changed(world["pyproject"], pinned):
        code, judge = status(gold)
        assert code == 4 and [r["kind"] for r in judge["stale_reasons"]] == ["ragas_version"]
        reason = judge["stale_reasons"][0]
        assert (reason["certified"], reason["now"]) == (ragas_version(), "ragas==9.9.9")
        promote_refused(world, gold)


def _report_copy(world: dict[str, Path], tmp_path: Path, edit: Any) -> ReportFacts:
    """The report's facts, read from a copy of it whose run manifest and lock ``edit`` changed."""
    facts, _ = read_report(world["report"])
    assert facts is not None
    copy = tmp_path / "report"
    shutil.copytree(world["report"], copy)
    for rel in ("restricted/run/manifest.json", "lock.json"):
        path = copy / rel
        path.chmod(0o644)
        data = json.loads(path.read_text())
        edit(rel, data)
        path.write_text(json.dumps(data))
    return facts.model_copy(update={"report_dir": str(copy)})


def test_a_report_certified_before_code_was_covered_is_stale_not_a_crash(
    world: dict[str, Path], tmp_path: Path
) -> None:
    def older(rel: str, data: dict[str, Any]) -> None:
        if rel == "lock.json":
            del data["policy_file"]
        else:
            for key in ("code_sha256", "dependencies"):
                del data["judge"]["params"][key]

    facts = _report_copy(world, tmp_path, older)
    reasons = staleness(facts, gold_state(world["gold"]), world["spec"])
    assert [r.kind for r in reasons] == ["policy", "code"], reasons
    assert "cannot be told" in reasons[0].message and "cannot be told" in reasons[1].message


def test_a_prompt_or_model_change_is_named(
    world: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKBENCH_DEMO_LLM_URL", "http://127.0.0.1:9/v1")  # never called
    monkeypatch.setenv("DEMO_LLM_API_KEY", "test-key")
    candidates = tmp_path / "candidates"
    shutil.copytree(ROOT / "data" / "candidates", candidates)
    spec = candidates / "support-llm-judge@1.yaml"
    identity = load_candidate(spec).identity

    def llm(rel: str, data: dict[str, Any]) -> None:
        if rel != "lock.json":
            data["judge"] = identity.model_dump(mode="json")

    facts = _report_copy(world, tmp_path, llm).model_copy(
        update={
            "candidate": identity.name + "@" + identity.version,
            "candidate_fingerprint": identity.fingerprint(),
            "model": identity.model,
        }
    )
    now = gold_state(world["gold"])
    assert staleness(facts, now, spec) == []
    prompt = candidates / "prompts" / "support-llm-judge@1.md"
    prompt.write_text(prompt.read_text() + "\nAlways answer pass.\n")
    reasons = staleness(facts, now, spec)
    assert [r.kind for r in reasons] == ["prompt"], reasons
    assert reasons[0].certified == str(identity.prompt_sha256)[:12]
    raw = yaml.safe_load(spec.read_text())
    spec.write_text(yaml.safe_dump({**raw, "model": "another-model"}))
    assert [r.kind for r in staleness(facts, now, spec)] == ["model", "prompt"]
