"""``workbench ci release``: ``certify``, then verify the locked report, then a machine-readable
summary (:class:`ReleaseSummary`, ``--json FILE``) and JUnit report, written also when the input
is invalid (``invalid_input``, exit 2). The only CI lane that touches held-out data.

Exit code: the certification's, 1 when the report does not verify, 2 invalid input."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from .._io import atomic_write_json
from .._record import LooseRecord
from ..errors import WorkbenchError
from ..outcomes import GATE_OUTCOMES, ExitCode, exit_codes
from ._junit import CheckResult, passed_check, problem_check

RELEASE_SCHEMA_VERSION = 1
OUTCOME_EXIT: dict[str, int] = exit_codes(*GATE_OUTCOMES, "invalid_input")
"""Exit code of each release-lane outcome (:mod:`workbench.outcomes`)."""
_CATEGORY: dict[str, Any] = {"quality": "failure", "incomplete": "incomplete", "review": "review"}
_WORST: dict[str, Any] = {
    "evaluation_incomplete": "incomplete",
    "quality_failed": "failure",
    "review_required": "review",
}


class ReleaseSummary(LooseRecord):
    """The machine-readable result of ``workbench ci release`` (``--json FILE``)."""

    schema_version: int = RELEASE_SCHEMA_VERSION
    """Summary format version."""
    kind: Literal["workbench.ci.release"] = "workbench.ci.release"
    """Summary kind."""
    candidate: str
    """The candidate spec given."""
    policy: str
    """The policy given."""
    gold: str
    """The gold dataset given."""
    outcome: Literal[
        "certified", "quality_failed", "evaluation_incomplete", "review_required", "invalid_input"
    ]
    """The certification outcome, or ``invalid_input`` (nothing was recorded in the ledger then)."""
    exit_code: int
    """The process exit code."""
    report_dir: str | None = None
    """The locked report directory."""
    report_id: str | None = None
    """``name/version/n``."""
    lock_sha256: str | None = None
    """The lock's sha256."""
    blockers: list[dict[str, Any]] = []
    """Every blocker of the gate (code, category, slice, message, evidence, case ids)."""
    verified: bool | None = None
    """Whether ``workbench verify`` accepts the report (None: no report)."""
    verify_problems: list[str] = []
    """What verification found, one line each."""
    problems: list[str] = []
    """Invalid input, one line per problem (outcome ``invalid_input``)."""
    budget_usd: float | None = None
    """The budget the held-out run ran under (from the lock)."""
    cost_usd: float = 0.0
    """Spend of the controls and held-out runs."""
    tokens_in: int = 0
    """Prompt tokens of those runs."""
    tokens_out: int = 0
    """Completion tokens of those runs."""
    calls: int = 0
    """Judge calls of those runs."""
    checks: list[CheckResult]
    """The JUnit testcases: the certification, one per blocker, the verification."""
    evaluated_at: datetime
    """When (UTC)."""


def _run_usage(report_dir: Path) -> dict[str, Any]:
    """Cost, tokens and calls of the report's controls and held-out runs."""
    from ..reports import CONTROLS_DIR, RUN_DIR
    from ..runs import RunDir

    runs = [RunDir(report_dir / sub).read_summary() for sub in (CONTROLS_DIR, RUN_DIR)]
    done = [r for r in runs if r is not None]
    usage = {k: sum(getattr(r, k) for r in done) for k in ("tokens_in", "tokens_out", "calls")}
    return {**usage, "cost_usd": round(sum((r.cost_usd for r in done), 0.0), 6)}


def _line(b: dict[str, Any]) -> str:
    where = f"{b['category']}{', ' + b['slice'] if b.get('slice') else ''}"
    return f"{b['code']} [{where}]: {b['message']}"


def _invalid(base: dict[str, Any], candidate: str | Path, exc: WorkbenchError) -> ReleaseSummary:
    lines = [p.format() for p in exc.problems] or [exc.summary]
    code = exc.problems[0].code if exc.problems else "invalid_input"
    check = problem_check(
        "certification", Path(candidate).stem, "contract", code, exc.summary, lines
    )
    exit_code = OUTCOME_EXIT["invalid_input"]
    return ReleaseSummary(
        **base, outcome="invalid_input", exit_code=exit_code, problems=lines, checks=[check]
    )


def _certification_checks(result: Any) -> list[CheckResult]:
    """The certification, then one check per blocker."""
    name = result.report_id
    if result.outcome == "certified":
        checks = [
            passed_check("certification", name, f"certified; lock sha256 {result.lock_sha256}")
        ]
    else:
        worst = _WORST[result.outcome]
        message = f"{result.outcome.upper()}: {len(result.blockers)} blocker(s)"
        lines = [_line(b) for b in result.blockers]
        checks = [problem_check("certification", name, worst, result.outcome, message, lines)]
    for b in result.blockers:
        label = b["code"] + (f" [{b['slice']}]" if b.get("slice") else "")
        details = [json.dumps(b.get("evidence", {}), sort_keys=True)]
        cases = list(b.get("case_ids") or [])
        details += [f"cases: {', '.join(cases)}"] if cases else []
        category = _CATEGORY.get(b.get("category", ""), "failure")
        args = ("blockers", label, category, b["code"], b["message"], details)
        checks.append(problem_check(*args, failing=cases))
    return checks


def _verify_check(name: str, verification: Any) -> CheckResult:
    found = verification.problems
    lines = [p.format() for p in found] or [f"{k}: {v}" for k, v in verification.checks.items()]
    if verification.verified:
        return passed_check("verify", name, *lines)
    code = found[0].code if found else "not_verified"
    message = f"the locked report does not verify ({len(found)} problem(s))"
    return problem_check("verify", name, "failure", code, message, lines)


def run_release(
    candidate: str | Path,
    policy: str | Path,
    gold: str | Path,
    *,
    reports_root: str | Path = "reports",
    rerun_reason: str | None = None,
    budget_usd: float | None = None,
    concurrency: int = 8,
    notebook: str | Path | None = None,
    overrides: str | Path | None = None,
    sign_key: str | Path | None = None,
) -> ReleaseSummary:
    """Certify, verify, summarize (module doc); invalid input is in the summary, never raised."""
    from ..reports import certify, verify_path

    base: dict[str, Any] = {"candidate": str(candidate), "policy": str(policy), "gold": str(gold)}
    base["evaluated_at"] = datetime.now(UTC)
    try:
        result = certify(
            candidate,
            policy,
            gold,
            reports_root=reports_root,
            rerun_reason=rerun_reason,
            concurrency=concurrency,
            budget_usd=budget_usd,
            notebook=notebook,
            overrides=overrides,
            sign_key=sign_key,
        )
    except WorkbenchError as exc:
        return _invalid(base, candidate, exc)
    report_dir = Path(result.report_dir)
    verification = verify_path(report_dir, gold=gold)[0]
    checks = [*_certification_checks(result), _verify_check(result.report_id, verification)]
    lock = json.loads((report_dir / "lock.json").read_text(encoding="utf-8"))
    exit_code = OUTCOME_EXIT[result.outcome]
    if not verification.verified and exit_code == ExitCode.OK:
        exit_code = int(ExitCode.FAILED)  # the report does not verify
    return ReleaseSummary(
        **base,
        **_run_usage(report_dir),
        outcome=result.outcome,
        exit_code=exit_code,
        report_dir=str(report_dir),
        report_id=result.report_id,
        lock_sha256=result.lock_sha256,
        blockers=list(result.blockers),
        verified=verification.verified,
        verify_problems=[p.format() for p in verification.problems],
        budget_usd=lock.get("budget_usd"),
        checks=checks,
    )


def write_release_summary(path: str | Path, summary: ReleaseSummary) -> Path:
    """Write the summary as JSON (atomic, parents created)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(target, summary.model_dump(mode="json"))
    return target


def format_release(summary: ReleaseSummary) -> str:
    """Plain text for the terminal."""
    if summary.outcome == "invalid_input":
        head = "release: INVALID INPUT (exit 2); the held-out partition was not used"
        return "\n".join([head, *[f"  {p}" for p in summary.problems]])
    lines = [
        f"release: {summary.outcome.upper()} (exit {summary.exit_code}); report"
        f" {summary.report_dir} ({summary.report_id}), lock sha256 {summary.lock_sha256}"
    ]
    lines += [f"  - {_line(b)}" for b in summary.blockers]
    lines.append(
        f"verified: {'yes' if summary.verified else 'NO'}"
        + "".join(f"\n  {p}" for p in summary.verify_problems)
    )
    lines.append(
        f"cost ${summary.cost_usd:.6f} (budget"
        f" {'$' + format(summary.budget_usd, 'g') if summary.budget_usd is not None else 'none'});"
        f" tokens {summary.tokens_in} in + {summary.tokens_out} out; {summary.calls} call(s)"
    )
    return "\n".join(lines)
