"""``workbench ci release``: ``certify``, then verify the locked report, then a machine-readable
summary.

It is the only CI lane that touches held-out data (``contracts`` runs nothing on gold cases,
``sentinel`` runs only ``sentinels.yaml`` cases, which are never held out). Certification is
exactly ``workbench certify``: controls first, the held-out ledger, the locked report. The
report is then verified (``workbench verify``: hashes, the gate re-run from the stored
evidence, the ledger). The summary (:class:`ReleaseSummary`, ``--json FILE``) and the JUnit
report (``--junit FILE``) hold the outcome, every blocker, the verification, the report path
and the cost and tokens of the controls and held-out runs. Both are written also when the
input is invalid (outcome ``invalid_input``, exit 2), so a CI job always has its artifact.

Exit code: the certification's (0 certified, 1 quality failed, 3 evaluation incomplete, 4
review required), 1 when the report does not verify, 2 invalid input.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from .._io import atomic_write_json
from .._record import LooseRecord
from ..errors import WorkbenchError
from ..outcomes import GATE_OUTCOMES, ExitCode, exit_codes
from ._junit import CheckResult

RELEASE_SCHEMA_VERSION = 1
OUTCOME_EXIT: dict[str, int] = exit_codes(*GATE_OUTCOMES, "invalid_input")
"""Exit code of each release-lane outcome: certification's, and invalid input
(:mod:`workbench.outcomes`)."""
_CATEGORY = {"quality": "failure", "incomplete": "incomplete", "review": "review"}


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
    """The certification outcome, or ``invalid_input`` when certification refused its input
    (nothing was recorded in the held-out ledger then)."""
    exit_code: int
    """The process exit code."""
    report_dir: str | None
    """The locked report directory."""
    report_id: str | None
    """``name/version/n``."""
    lock_sha256: str | None
    """The lock's sha256."""
    blockers: list[dict[str, Any]]
    """Every blocker of the gate (code, category, slice, message, evidence, case ids)."""
    verified: bool | None
    """Whether ``workbench verify`` accepts the report (None: no report)."""
    verify_problems: list[str]
    """What verification found, one line each."""
    problems: list[str]
    """Invalid input, one line per problem (outcome ``invalid_input``)."""
    budget_usd: float | None
    """The budget the held-out run ran under (from the lock)."""
    cost_usd: float
    """Spend of the controls and held-out runs."""
    tokens_in: int
    """Prompt tokens of those runs."""
    tokens_out: int
    """Completion tokens of those runs."""
    calls: int
    """Judge calls of those runs."""
    checks: list[CheckResult]
    """The JUnit testcases: the certification, one per blocker, the verification."""
    evaluated_at: datetime
    """When (UTC)."""


def _run_usage(report_dir: Path) -> tuple[float, int, int, int]:
    from ..reports._certify import CONTROLS_DIR, RUN_DIR
    from ..runs import RunDir

    cost, tin, tout, calls = 0.0, 0, 0, 0
    for sub in (CONTROLS_DIR, RUN_DIR):
        path = RunDir(report_dir / sub).summary
        if path.is_file():
            data = json.loads(path.read_text(encoding="utf-8"))
            cost += float(data.get("cost_usd") or 0.0)
            tin += int(data.get("tokens_in") or 0)
            tout += int(data.get("tokens_out") or 0)
            calls += int(data.get("calls") or 0)
    return cost, tin, tout, calls


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
) -> ReleaseSummary:
    """Certify, verify, summarize (module doc). Never raises for invalid input: the summary says
    it."""
    from ..reports import certify, verify_path

    base: dict[str, Any] = {
        "candidate": str(candidate),
        "policy": str(policy),
        "gold": str(gold),
        "evaluated_at": datetime.now(UTC),
    }
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
        )
    except WorkbenchError as exc:
        lines = [p.format() for p in exc.problems] or [exc.summary]
        check = CheckResult(
            group="certification",
            name=Path(candidate).stem,
            status="failed",
            category="contract",
            code=exc.problems[0].code if exc.problems else "invalid_input",
            message=exc.summary,
            details=lines,
        )
        return ReleaseSummary(
            **base,
            outcome="invalid_input",
            exit_code=OUTCOME_EXIT["invalid_input"],
            report_dir=None,
            report_id=None,
            lock_sha256=None,
            blockers=[],
            verified=None,
            verify_problems=[],
            problems=lines,
            budget_usd=None,
            cost_usd=0.0,
            tokens_in=0,
            tokens_out=0,
            calls=0,
            checks=[check],
        )
    report_dir = Path(result.report_dir)
    checks: list[CheckResult] = []
    name = result.report_id
    if result.outcome == "certified":
        checks.append(
            CheckResult(
                group="certification",
                name=name,
                status="passed",
                details=[f"certified; lock sha256 {result.lock_sha256}"],
            )
        )
    else:
        worst = {
            "evaluation_incomplete": "incomplete",
            "quality_failed": "failure",
            "review_required": "review",
        }[result.outcome]
        checks.append(
            CheckResult(
                group="certification",
                name=name,
                status="error" if worst == "incomplete" else "failed",
                category=worst,
                code=result.outcome,
                message=f"{result.outcome.upper()}: {len(result.blockers)} blocker(s)",
                details=[
                    f"{b['code']} [{b['category']}{', ' + b['slice'] if b.get('slice') else ''}]:"
                    f" {b['message']}"
                    for b in result.blockers
                ],
            )
        )
    for b in result.blockers:
        category = _CATEGORY.get(b.get("category", ""), "failure")
        label = b["code"] + (f" [{b['slice']}]" if b.get("slice") else "")
        checks.append(
            CheckResult(
                group="blockers",
                name=label,
                status="error" if category == "incomplete" else "failed",
                category=category,
                code=b["code"],
                message=b["message"],
                details=[json.dumps(b.get("evidence", {}), sort_keys=True)]
                + ([f"cases: {', '.join(b['case_ids'])}"] if b.get("case_ids") else []),
                failing=list(b.get("case_ids") or []),
            )
        )
    verification = verify_path(report_dir)[0]
    verify_lines = [p.format() for p in verification.problems]
    checks.append(
        CheckResult(
            group="verify",
            name=name,
            status="passed" if verification.verified else "failed",
            category="ok" if verification.verified else "failure",
            code=(
                None
                if verification.verified
                else (verification.problems[0].code if verification.problems else "not_verified")
            ),
            message=(
                ""
                if verification.verified
                else f"the locked report does not verify ({len(verification.problems)} problem(s))"
            ),
            details=verify_lines or [f"{k}: {v}" for k, v in verification.checks.items()],
        )
    )
    lock = json.loads((report_dir / "lock.json").read_text(encoding="utf-8"))
    cost, tin, tout, calls = _run_usage(report_dir)
    exit_code = OUTCOME_EXIT[result.outcome]
    if not verification.verified and exit_code == ExitCode.OK:
        exit_code = int(ExitCode.FAILED)  # the report does not verify
    return ReleaseSummary(
        **base,
        outcome=result.outcome,
        exit_code=exit_code,
        report_dir=str(report_dir),
        report_id=result.report_id,
        lock_sha256=result.lock_sha256,
        blockers=list(result.blockers),
        verified=verification.verified,
        verify_problems=verify_lines,
        problems=[],
        budget_usd=lock.get("budget_usd"),
        cost_usd=round(cost, 6),
        tokens_in=tin,
        tokens_out=tout,
        calls=calls,
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
        return "\n".join(
            [
                "release: INVALID INPUT (exit 2); the held-out partition was not used",
                *[f"  {p}" for p in summary.problems],
            ]
        )
    lines = [
        f"release: {summary.outcome.upper()} (exit {summary.exit_code}); report"
        f" {summary.report_dir} ({summary.report_id}), lock sha256 {summary.lock_sha256}"
    ]
    lines += [
        f"  - {b['code']} [{b['category']}{', ' + b['slice'] if b.get('slice') else ''}]:"
        f" {b['message']}"
        for b in summary.blockers
    ]
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
