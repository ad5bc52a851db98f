"""Fail closed at the join and the gate (issue 28, point 10).

Each test models the audit's reproduction: a fresh project copy of the demo gold, a run of a
demo judge, then the attack on the files a user holds, then the command a user runs and the
refusal it must give (its error code and exit code).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from click.testing import CliRunner, Result
from conftest import canonical_sha256

from workbench.cli import main
from workbench.gold import load_dataset
from workbench.heldout import ledger_path_for
from workbench.importers import results_from_dataframe

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo"
CANDIDATES = ROOT / "data" / "candidates"
POLICIES = ROOT / "data" / "policies"

LLM_IDENTITY = {
    "kind": "ragas-llm",
    "model": "fake-judge",
    "prompt_sha256": "a" * 64,
    "ragas_version": "0.4.3",
}
"""A complete ``ragas-llm`` identity (the fields its kind requires)."""


def _cli(*args: str) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def _refused(result: Result, code: str) -> None:
    """Exit 2 (invalid input), the code in brackets, no traceback."""
    assert result.exit_code == 2, result.output
    assert f"[{code}]" in result.output, result.output
    assert "Traceback" not in result.output


def _project(tmp_path: Path, partition: str = "development") -> tuple[Path, Path]:
    """A fresh copy of the demo gold and a run of rubric-judge@2 on ``partition``: (gold, run)."""
    gold = tmp_path / "gold"
    shutil.copytree(DEMO, gold)
    run = tmp_path / "run"
    result = _cli(
        "run",
        "--candidate",
        CANDIDATES / "rubric-judge@2.yaml",
        "--gold",
        gold,
        "--partition",
        partition,
        "--out",
        run,
    )
    assert result.exit_code == 0, result.output
    return gold, run


@pytest.fixture(scope="module")
def dev_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """:func:`_project` on development once per module: the tests that start from it copy it
    (:func:`_copy`). They made the same run of the same judge on the same gold each (its own
    verdict cache here too, never the user's)."""
    base = tmp_path_factory.mktemp("dev-run")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("WORKBENCH_CACHE_DIR", str(base / "cache"))
        return _project(base)


def _copy(dev_run: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path]:
    """This test's own copy of :func:`dev_run`'s gold and run: (gold, run), as :func:`_project`
    leaves them in ``tmp_path``."""
    gold, run = tmp_path / "gold", tmp_path / "run"
    shutil.copytree(dev_run[0], gold)
    shutil.copytree(dev_run[1], run)
    return gold, run


def _lenient_policy(tmp_path: Path, partition: str = "development", **changes: Any) -> Path:
    """support-release@1 with limits a perfect judge meets, for ``partition``, no controls."""
    policy = yaml.safe_load((POLICIES / "support-release@1.yaml").read_text(encoding="utf-8"))
    policy.update(
        name="lenient", version="1", partition=partition, min_n_per_slice=1, max_cost_usd=None
    )
    for limits in policy["slices"].values():
        limits.update(max_false_pass_rate=1.0, max_false_fail_rate=1.0, max_abstention_rate=1.0)
        limits.pop("max_false_passes", None)
    policy.update(changes)
    path = tmp_path / "policies" / "lenient@1.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(yaml.safe_dump(policy), encoding="utf-8")
    return path


def _forge(run: Path, gold: Path, *, judge: dict[str, Any] | None = None, **fields: Any) -> Path:
    """Rewrite the run's results as a perfect judge (every verdict the gold label), with
    ``judge`` fields and result ``fields`` changed and the fingerprint recomputed, as a forger
    would; the run manifest follows the new identity."""
    labels = {r.case_id: r.gold_label for r in load_dataset(gold).records}
    path = run / "results.jsonl"
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["error"] is None:
            record["value"] = labels[record["case_id"]]
        record["judge"].update(judge or {})
        record["judge_fingerprint"] = canonical_sha256(record["judge"])
        record.update(fields)
        out.append(json.dumps(record))
    path.write_text("".join(line + "\n" for line in out), encoding="utf-8")
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    manifest["judge"].update(judge or {})
    manifest["judge_fingerprint"] = canonical_sha256(manifest["judge"])
    (run / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return path


def _gate(gold: Path, results: Path, policy: Path, *extra: Any) -> Result:
    return _cli("gate", "--gold", gold, "--results", results, "--policy", policy, *extra)


# --- a. an LLM verdict without a reason ---------------------------------------------------------


@pytest.mark.parametrize("reason", ["", "   ", None])
def test_a_llm_verdict_without_a_reason_is_refused_by_align_and_gate(
    tmp_path: Path, dev_run: tuple[Path, Path], reason: str | None
) -> None:
    """Before: align and gate read ``"reason": ""`` (or null) verdicts of a ragas-llm judge as
    verdicts, and the gate certified them (exit 0). `workbench run` records such an answer as a
    ``missing_reason`` evaluator error; a file holding them anyway is refused."""
    gold, run = _copy(dev_run, tmp_path)
    results = _forge(run, gold, judge=LLM_IDENTITY, reason=reason)
    _refused(_gate(gold, results, _lenient_policy(tmp_path)), "verdict_reason_missing")
    _refused(_cli("align", "--gold", gold, "--results", results), "verdict_reason_missing")


def test_a_the_same_results_with_reasons_are_read(
    tmp_path: Path, dev_run: tuple[Path, Path]
) -> None:
    gold, run = _copy(dev_run, tmp_path)
    results = _forge(run, gold, judge=LLM_IDENTITY)
    result = _gate(gold, results, _lenient_policy(tmp_path))
    assert result.exit_code == 6, result.output  # advisory: development results (see f)


def test_a_import_results_refuses_a_verdict_whose_mapped_reason_is_empty(tmp_path: Path) -> None:
    """Before: an imported prediction whose reason cell was empty became a verdict with a null
    reason (exit 0)."""
    gold = tmp_path / "gold"
    shutil.copytree(DEMO, gold)
    cases = load_dataset(gold).partition("development")[:3]
    table = tmp_path / "predictions.csv"
    table.write_text(
        "case,verdict,why\n"
        + f"{cases[0].case_id},pass,states the window\n"
        + f"{cases[1].case_id},fail,\n"
        + f"{cases[2].case_id},pass,   \n",
        encoding="utf-8",
    )
    result = _cli(
        "import", "results", table, "--gold", gold, "--out", tmp_path / "out",
        "--case-id", "case", "--label", "verdict", "--reason", "why",
        "--name", "vendor", "--version", "1", "--model", "gpt-x",
            "--prompt-description", "is the answer right",
    )  # fmt: skip
    _refused(result, "verdict_reason_missing")
    assert "rows 3, 4" in result.output or "3, 4" in result.output, result.output
    assert not (tmp_path / "out" / "results.jsonl").exists()


# --- b. a fingerprint that does not say what judged ----------------------------------------------


@pytest.mark.parametrize(
    "nulls", [("model", "prompt_sha256", "ragas_version"), ("model",), ("ragas_version",)]
)
def test_b_a_ragas_llm_identity_without_its_fingerprint_fields_is_refused(
    tmp_path: Path, dev_run: tuple[Path, Path], nulls: tuple[str, ...]
) -> None:
    """Before: `gate` printed CERTIFIED (exit 0) for ragas-llm results whose model, prompt hash
    and Ragas version were all null."""
    gold, run = _copy(dev_run, tmp_path)
    results = _forge(run, gold, judge={**LLM_IDENTITY, **dict.fromkeys(nulls)})
    result = _gate(gold, results, _lenient_policy(tmp_path))
    _refused(result, "fingerprint_incomplete")
    for name in nulls:
        assert name in result.output


def test_b_a_function_judge_needs_its_source_hash(
    tmp_path: Path, dev_run: tuple[Path, Path]
) -> None:
    gold, run = _copy(dev_run, tmp_path)
    results = _forge(run, gold, judge={"prompt_sha256": None})
    _refused(_cli("align", "--gold", gold, "--results", results), "fingerprint_incomplete")


# --- c. attempts deleted from a run's results -----------------------------------------------------


def _drop_lines(results: Path, keep: int) -> None:
    lines = results.read_text(encoding="utf-8").splitlines(keepends=True)
    results.write_text("".join(lines[:keep]), encoding="utf-8")


def _retried(run: Path, extra: int) -> None:
    """The run's records as if ``extra`` more attempts (retries) had been counted."""
    for name in ("run.json", "invocations.jsonl"):
        path = run / name
        out = []
        for line in (
            path.read_text(encoding="utf-8").splitlines()
            if name.endswith("l")
            else [path.read_text(encoding="utf-8")]
        ):
            record = json.loads(line)
            record.update(calls=record["calls"] + extra, retries=record["retries"] + extra)
            out.append(json.dumps(record))
        path.write_text("\n".join(out) + "\n", encoding="utf-8")


def test_c_retry_attempts_deleted_from_the_results_are_noticed(
    tmp_path: Path, dev_run: tuple[Path, Path]
) -> None:
    """Before: 55 retry attempts deleted from a results file went unnoticed although the run
    counted 164 calls for 109 lines (gate exit 0). The run directory's counts are compared with
    the attempts present (``attempts_missing``)."""
    gold, run = _copy(dev_run, tmp_path)
    _retried(run, 55)  # the run counted 164 calls; the 55 retry lines are gone
    results = _forge(run, gold)
    result = _gate(gold, results, _lenient_policy(tmp_path), "--run", run)
    _refused(result, "attempts_missing")
    assert "164" in result.output and "109" in result.output, result.output
    _refused(_cli("align", "--gold", gold, "--results", results), "attempts_missing")


def test_c_with_only_run_json_a_deleted_line_is_noticed(
    tmp_path: Path, dev_run: tuple[Path, Path]
) -> None:
    gold, run = _copy(dev_run, tmp_path)
    (run / "invocations.jsonl").unlink()
    _drop_lines(run / "results.jsonl", 100)
    _refused(_cli("align", "--gold", gold, "--results", run / "results.jsonl"), "attempts_missing")


def test_c_an_added_attempt_is_noticed_and_an_unreadable_count_is_refused(
    tmp_path: Path, dev_run: tuple[Path, Path]
) -> None:
    gold, run = _copy(dev_run, tmp_path)
    results = run / "results.jsonl"
    lines = results.read_text(encoding="utf-8").splitlines(keepends=True)
    results.write_text("".join(lines[:-1]), encoding="utf-8")
    (run / "invocations.jsonl").write_text(
        (run / "invocations.jsonl")
        .read_text(encoding="utf-8")
        .replace('"calls": 109', '"calls": 108'),
        encoding="utf-8",
    )
    assert _cli("align", "--gold", gold, "--results", results).exit_code == 0
    results.write_text("".join(lines), encoding="utf-8")  # one attempt more than counted
    _refused(_cli("align", "--gold", gold, "--results", results), "attempts_unrecorded")
    (run / "invocations.jsonl").write_text('{"calls": "many"}\n', encoding="utf-8")
    _refused(_cli("align", "--gold", gold, "--results", results), "attempts_unverifiable")


# --- f. the gate certifies only held-out results a certification recorded ------------------------


@pytest.mark.parametrize("partition", ["calibration", "development"])
def test_f_gate_never_says_certified_for_results_that_are_not_held_out(
    tmp_path: Path, dev_run: tuple[Path, Path], partition: str
) -> None:
    """Before: `gate` printed CERTIFIED (exit 0) for calibration-partition results under a
    policy for calibration. Now: WOULD_CERTIFY (advisory), exit 6."""
    gold, run = (
        _copy(dev_run, tmp_path) if partition == "development" else _project(tmp_path, partition)
    )
    results = _forge(run, gold, judge=LLM_IDENTITY)
    result = _gate(gold, results, _lenient_policy(tmp_path, partition))
    assert result.exit_code == 6, result.output
    assert "CERTIFIED" not in result.output.replace("WOULD_CERTIFY", "")
    assert "WOULD_CERTIFY (advisory" in result.output
    as_json = _gate(gold, results, _lenient_policy(tmp_path, partition), "--json")
    assert json.loads(as_json.stdout)["outcome"] == "would_certify"


# --- e. certification reads a frozen gold release only -------------------------------------------


def test_e_certify_refuses_an_unfrozen_gold_before_any_held_out_use(tmp_path: Path) -> None:
    """Before: `certify` accepted a gold that was never frozen (its lineage row for the gold
    release was written ``ok: true`` whatever the release); it now refuses it with the approval
    kernel's ``gold_not_frozen`` (exit 2) before the held-out ledger is touched."""
    gold = tmp_path / "gold"
    shutil.copytree(DEMO, gold)
    (gold / "releases.jsonl").unlink()  # a copy of the gold that was never frozen
    result = _cli(
        "certify",
        "--candidate",
        CANDIDATES / "rubric-judge@3.yaml",
        "--policy",
        POLICIES / "support-release@3.yaml",
        "--gold",
        gold,
        "--reports",
        tmp_path / "reports",
    )
    _refused(result, "gold_not_frozen")
    assert not ledger_path_for(gold).exists()
    assert not (tmp_path / "reports").exists()


def test_e_run_on_development_stays_allowed_on_an_unfrozen_gold(
    tmp_path: Path, dev_run: tuple[Path, Path]
) -> None:
    """`run` on development or calibration data is not a certification: allowed, and its run
    manifest records that no release froze the gold (``gold_release: null``)."""
    gold, run = _copy(dev_run, tmp_path)
    (gold / "releases.jsonl").unlink()
    again = tmp_path / "again"
    result = _cli(
        "run", "--candidate", CANDIDATES / "rubric-judge@2.yaml", "--gold", gold,
        "--partition", "development", "--out", again,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads((again / "manifest.json").read_text(encoding="utf-8"))["gold_release"] is None


# --- g. imported predictions that copy the gold labels -------------------------------------------


def _oracle(gold: Path, out: Path, partition: str) -> Path:
    """Imported "predictions" that are the adjudicated labels of ``partition``, copied."""
    dataset = load_dataset(gold)
    frame = pd.DataFrame(
        [{"case": c.case_id, "label": c.gold_label} for c in dataset.partition(partition)]
    )
    mapping = {
        "case_id": "case",
        "label": "label",
        "judge": {
            "name": "oracle",
            "version": "1",
            "model": "vendor-model",
            "prompt_description": "a vendor judge",
        },
    }
    written = results_from_dataframe(frame, mapping, gold=dataset).write(out)
    return Path(written.spec)


@pytest.mark.notebook
def test_g_imported_copies_of_the_held_out_labels_are_not_certified(tmp_path: Path) -> None:
    """Before: `certify` of imported predictions that copy the held-out labels under a policy
    without controls ended CERTIFIED (exit 0). Now: REVIEW_REQUIRED (exit 4) with the
    ``predictions_match_labels`` blocker."""
    gold = tmp_path / "gold"
    shutil.copytree(DEMO, gold)
    spec = _oracle(gold, tmp_path / "oracle", "held_out")
    result = _cli(
        "certify", "--candidate", spec, "--policy", _lenient_policy(tmp_path, "held_out"),
        "--gold", gold, "--reports", tmp_path / "reports",
    )  # fmt: skip
    assert result.exit_code == 4, result.output
    assert "predictions_match_labels" in result.output


# --- d. route and block need a policy that runs controls -----------------------------------------


@pytest.mark.notebook
def test_d_a_policy_without_controls_cannot_carry_route_or_block(tmp_path: Path) -> None:
    """Before: a policy without ``controls:`` certified rubric-judge@2 (which fails its negative
    and adversarial controls) with ``use: block``, and the judge was granted and promoted to
    block. Now the certification still certifies, but its grant is capped at advisory with
    ``controls_not_required`` named, and `authority promote` to route refuses it (exit 2)."""
    gold = tmp_path / "gold"
    shutil.copytree(DEMO, gold)
    scope = {"slices": ["billing_payments", "shipping_delivery"]}
    policy = _lenient_policy(tmp_path, "held_out", use="block", scope=scope)
    spec = CANDIDATES / "rubric-judge@2.yaml"
    result = _cli(
        "certify", "--candidate", spec, "--policy", policy, "--gold", gold,
        "--reports", tmp_path / "reports",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (report,) = (tmp_path / "reports" / "rubric-judge" / "2").iterdir()
    grant = json.loads((report / "lock.json").read_text(encoding="utf-8"))["grant"]
    assert grant["use"] == "advisory", grant
    assert any("controls_not_required" in w for w in grant["withheld"]), grant
    common = ("--gold", gold, "--candidate", spec, "--report", report)
    people = ("--approver", "Support Quality lead (demo)", "--reason", "certified")
    granted = _cli("authority", "grant", *common, *people)
    assert granted.exit_code == 0, granted.output
    _refused(_cli("authority", "promote", *common, *people), "controls_not_required")


@pytest.mark.parametrize(
    ("controls", "use", "granted"),
    [
        (None, "block", "advisory"),
        (None, "route", "advisory"),
        (None, "advisory", "advisory"),
        ({"suite": "c.yaml", "blocking_roles": ["positive"]}, "block", "advisory"),
        ({"suite": "c.yaml", "blocking_roles": ["negative", "adversarial"]}, "block", "block"),
        ({"suite": "c.yaml"}, "route", "route"),
    ],
)
def test_d_route_and_block_rest_on_blocking_negative_and_adversarial_controls(
    tmp_path: Path, controls: dict[str, Any] | None, use: str, granted: str
) -> None:
    from workbench.authority import grant_for
    from workbench.policy import controls_for_authority, load_policy

    scope = {"slices": ["billing_payments"]}
    path = _lenient_policy(tmp_path, "held_out", use=use, scope=scope, controls=controls)
    policy = load_policy(path)
    gate = {
        "outcome": "certified",
        "partition": "held_out",
        "figures": [{"slice": "billing_payments", "decided": 5}],
        "waived": [],
    }
    grant = grant_for(policy, gate)
    assert grant.use == granted
    capped = [w for w in grant.withheld if "controls_not_required" in w]
    assert bool(capped) == (granted != use), grant.withheld
    assert (controls_for_authority(policy) is None) == (granted == use)
