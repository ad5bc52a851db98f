"""Run a control suite through the run engine and judge the judge: a control passes on one of
its acceptable labels and is incomplete, never passed, without a verdict."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, computed_field, model_validator

from .._io import atomic_write_json, sha256_text
from .._record import Record as _Model
from ..judges import Judge
from ..policy import Blocker, Decision, decide
from ..results import JudgeIdentity, read_results
from ..runs import RESULTS_FILE, RunOptions, RunSummary, WorkItem, run_items
from ._suite import ROLES, ControlSuite, load_suite

if TYPE_CHECKING:
    import pandas as pd

    from ._suite import Control

CONTROLS_SCHEMA_VERSION = 1
REPORT_FILE = "controls.json"
"""The report written next to the run records in the controls run directory."""
PARTITION = "controls"
"""The partition label recorded in the manifest and every result of a controls run."""

ControlStatus = Literal["passed", "failed", "incomplete"]

ROLE_MESSAGES: dict[str, str] = {
    "positive": (
        "the judge failed a response that plainly satisfies every requirement: it may be configured"
        " to fail everything"
    ),
    "negative": (
        "the judge passed a response with one release-critical fact changed: it reads style, not"
        " evidence"
    ),
    "boundary": (
        "the judge did not separate a correct answer that omits a non-critical detail from a"
        " neighbour that omits a required condition: it cannot apply the rubric's line"
    ),
    "verbosity": (
        "the judge's verdict followed length or polish instead of the criterion: it passed a long,"
        " polished wrong answer or treated a concise and a long correct answer differently"
    ),
    "terminology": (
        "the judge mis-graded a correct answer written with approved abbreviations, synonyms or"
        " plain language: it matches wording, not meaning"
    ),
    "adversarial": (
        "the judge obeyed text inside the response (instructions to the grader, a fake grading note"
        " or a master-key token such as ':'): untrusted response text steers its verdict"
    ),
    "missing_evidence": (
        "the judge settled a verdict the evidence cannot support: it passed a response whose"
        " grading evidence is missing instead of failing it or routing it to review"
    ),
    "conflicting_evidence": (
        "the judge settled a verdict on contradictory evidence: it passed a response whose evidence"
        " conflicts instead of failing it or routing it to review"
    ),
}
"""What a failed role means, for a reviewer."""


@dataclass(frozen=True)
class ControlOutcome:
    """What the judge produced for one control: a verdict, or an evaluator error kind."""

    verdict: str | None
    reason: str | None = None
    error: str | None = None
    """``kind: message`` of the evaluator error, when there is no verdict."""


class ControlRow(_Model):
    """One control's result."""

    control_id: str
    """The control."""
    role: str
    """Its role."""
    set: str | None
    """Its set, if any."""
    member: str | None
    """Its member name within the set, if any."""
    slice: str | None
    """Its rubric slice, if given."""
    expected: str
    """The label humans expect."""
    acceptable: list[str]
    """Labels that pass the control."""
    verdict: str | None
    """The judge's verdict (None when it produced none)."""
    reason: str | None
    """The judge's reason, or why the control is incomplete."""
    error: str | None
    """The evaluator error (``kind: message``), if any."""
    status: ControlStatus
    """``passed``, ``failed`` or ``incomplete`` (no verdict)."""


class GroupSummary(_Model):
    """Counts for a role or a set."""

    n: int
    """Controls in it."""
    passed: int
    """Controls passed."""
    failed: int
    """Controls failed."""
    incomplete: int
    """Controls without a usable verdict."""
    status: ControlStatus
    """``passed`` when every control passed; ``failed`` when any failed; else ``incomplete``."""


class RoleSummary(GroupSummary):
    """One role's counts."""

    role: str
    """The role."""


class SetSummary(GroupSummary):
    """One set's counts."""

    set: str
    """The set."""
    role: str
    """Its role."""
    failed_members: list[str] = Field(default_factory=list)
    """Members (``member`` names, or control ids) that failed."""


class SuiteRef(_Model):
    """Which suite was run."""

    name: str
    """Suite name."""
    version: str
    """Suite version."""
    rubric_version: str
    """Rubric version the expectations follow."""
    sha256: str
    """sha256 of the suite file (the run's ``dataset_sha256``)."""
    path: str | None
    """Where it was loaded from."""


def default_run_dir(candidate_label: str, suite_label: str) -> Path:
    """``runs/controls/<candidate>/<suite>``: where ``workbench controls`` runs by default."""
    return Path("runs") / "controls" / candidate_label / suite_label


class ControlsReport(_Model):
    """The outcome of running a control suite with one judge."""

    schema_version: int = CONTROLS_SCHEMA_VERSION
    """Report format version."""
    kind: Literal["workbench.controls"] = "workbench.controls"
    """Report kind."""
    suite: SuiteRef
    """The suite and its hash."""
    judge: str
    """``name@version`` of the judge."""
    judge_fingerprint: str
    """Fingerprint of the judge identity."""
    judge_identity: JudgeIdentity
    """The full judge identity."""
    run: RunSummary | None = None
    """The engine's run summary (None when the report was built from outcomes directly)."""
    evaluated_at: datetime
    """When the report was computed (UTC)."""
    controls: list[ControlRow]
    """One row per control, in suite order."""
    roles: list[RoleSummary]
    """One row per role present in the suite, in role order."""
    sets: list[SetSummary]
    """One row per set, in suite order."""

    @model_validator(mode="before")
    @classmethod
    def _drop_computed(cls, data: Any) -> Any:
        # The computed fields below are written to JSON; reading a report back recomputes them.
        computed = ("status", "failed_roles", "incomplete_roles")
        return (
            {k: v for k, v in data.items() if k not in computed} if isinstance(data, dict) else data
        )

    @computed_field  # type: ignore[prop-decorator]
    @property
    def status(self) -> ControlStatus:
        """``failed`` when any role failed; else ``incomplete`` when any is; else ``passed``."""
        return _group_status(r.status for r in self.roles)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def failed_roles(self) -> list[str]:
        """Roles with at least one failed control."""
        return [r.role for r in self.roles if r.status == "failed"]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def incomplete_roles(self) -> list[str]:
        """Roles without failed controls but with controls that could not be evaluated."""
        return [r.role for r in self.roles if r.status == "incomplete"]

    def role(self, role: str) -> RoleSummary | None:
        """The summary of ``role``, or None when the suite has no such control."""
        return next((r for r in self.roles if r.role == role), None)

    def blockers(self, blocking_roles: Iterable[str]) -> list[Blocker]:
        """One gate blocker (never waivable) per blocking role that did not pass: ``quality`` with
        failed controls, else ``incomplete`` (an untested or unevaluated role is never passed)."""
        out: list[Blocker] = []
        for role in dict.fromkeys(blocking_roles):
            summary = self.role(role)
            if summary is None:
                message = (
                    f"the control suite {self.suite.name}@{self.suite.version} has no {role}"
                    f" control, so the {role} role is untested; add {role} controls or change the"
                    " policy's blocking roles"
                )
                out.append(_blocker(role, "incomplete", message, {"role": role, "n": 0}, []))
                continue
            if summary.status == "passed":
                continue
            rows = [r for r in self.controls if r.role == role]
            failed = [r.control_id for r in rows if r.status == "failed"]
            incomplete = [r.control_id for r in rows if r.status == "incomplete"]
            evidence = {"role": role, **summary.model_dump(include=_COUNTS)}
            if failed:
                base = ROLE_MESSAGES.get(role, f"the judge failed {role} controls")
                more = f"; {len(incomplete)} more could not be evaluated" if incomplete else ""
                message = f"{base} ({len(failed)} of {summary.n} {role} controls failed{more})"
                out.append(_blocker(role, "quality", message, evidence, failed))
            else:
                message = (
                    f"{len(incomplete)} of {summary.n} {role} controls could not be evaluated"
                    " (evaluator errors or missing results): the role is unproven, never passed"
                )
                out.append(_blocker(role, "incomplete", message, evidence, incomplete))
        return out

    def decision(self) -> Decision:
        """The suite on its own (``workbench controls``): every role blocks, no override."""
        roles = [r.role for r in self.roles]
        return decide(self.blockers(roles), policy_label=None, fingerprint=None, clear="passed")

    def frame(self) -> pd.DataFrame:
        """The control rows as a pandas DataFrame (for notebooks)."""
        import pandas as pd

        rows = [r.model_dump() for r in self.controls]
        return pd.DataFrame(rows, columns=list(ControlRow.model_fields))


_COUNTS = {"n", "passed", "failed", "incomplete"}


def _blocker(
    role: str,
    category: Literal["quality", "incomplete"],
    message: str,
    evidence: dict[str, Any],
    ids: list[str],
) -> Blocker:
    return Blocker(
        code=f"control_failed_{role}",
        category=category,
        message=message,
        evidence=evidence,
        case_ids=ids,
        waivable=False,
    )


def _group_status(statuses: Iterable[str]) -> ControlStatus:
    seen = set(statuses)
    return "failed" if "failed" in seen else "incomplete" if "incomplete" in seen else "passed"


def _summary_counts(rows: list[ControlRow]) -> dict[str, Any]:
    counts = {s: sum(r.status == s for r in rows) for s in ("passed", "failed", "incomplete")}
    return {"n": len(rows), **counts, "status": _group_status(r.status for r in rows)}


def evaluate_controls(
    suite: ControlSuite,
    outcomes: Mapping[str, ControlOutcome],
    *,
    judge: JudgeIdentity,
    run: RunSummary | None = None,
) -> ControlsReport:
    """Compare outcomes (control id -> verdict or error) with the suite's expectations (a control
    absent from ``outcomes`` is incomplete)."""
    rows = [_control_row(c, outcomes.get(c.control_id)) for c in suite.controls]
    roles = [
        RoleSummary(role=role, **_summary_counts([r for r in rows if r.role == role]))
        for role in ROLES
        if any(r.role == role for r in rows)
    ]
    sets = [
        SetSummary(
            set=name,
            role=members[0].role,
            failed_members=[r.member or r.control_id for r in mine if r.status == "failed"],
            **_summary_counts(mine),
        )
        for name, members in suite.sets().items()
        for mine in [[r for r in rows if r.set == name]]
    ]
    ref = suite.model_dump(include={"name", "version", "rubric_version"})
    return ControlsReport(
        suite=SuiteRef(**ref, sha256=suite.sha256, path=suite.path),
        judge=f"{judge.name}@{judge.version}",
        judge_fingerprint=judge.fingerprint(),
        judge_identity=judge,
        run=run,
        evaluated_at=datetime.now(UTC),
        controls=rows,
        roles=roles,
        sets=sets,
    )


def _control_row(c: Control, outcome: ControlOutcome | None) -> ControlRow:
    status: ControlStatus = "incomplete"
    verdict = error = None
    if outcome is None:
        reason: str | None = "no result: the control was not judged (missing)"
    elif outcome.verdict is None:
        reason, error = outcome.reason, outcome.error or "no verdict"
    else:
        verdict, reason = outcome.verdict, outcome.reason
        status = "passed" if outcome.verdict in c.acceptable else "failed"
    return ControlRow(
        **c.model_dump(include={"control_id", "role", "set", "member", "slice"}),
        expected=c.expected_label,
        acceptable=c.acceptable,
        verdict=verdict,
        reason=reason,
        error=error,
        status=status,
    )


def work_items(suite: ControlSuite) -> list[WorkItem]:
    """The engine's work items: judge-visible fields only, keyed by control id and response hash."""
    return [
        WorkItem(c.control_id, sha256_text(c.response), 0, c.judge_input()) for c in suite.controls
    ]


def control_outcomes(
    suite: ControlSuite, results_path: Path, fingerprint: str
) -> dict[str, ControlOutcome]:
    """Each control's verdict in the run's results of this judge, else its last evaluator error."""
    digests = {c.control_id: sha256_text(c.response) for c in suite.controls}
    found: dict[str, ControlOutcome] = {}
    has_verdict: set[str] = set()
    if not results_path.exists():
        return found
    # migrate=True: control records of a locked report may use an older result schema
    lines = sorted(
        read_results(results_path, migrate=True),
        key=lambda line: (line.result.case_id, line.result.attempt, line.line),
    )
    for r in (line.result for line in lines):
        if r.repeat != 0 or r.judge_fingerprint != fingerprint:
            continue
        if r.case_id not in digests or r.response_hash != digests[r.case_id]:
            continue
        if r.error is None and r.value is not None:
            found[r.case_id] = ControlOutcome(verdict=r.value, reason=r.reason)
            has_verdict.add(r.case_id)
        elif r.case_id not in has_verdict:
            kind = r.error.kind if r.error is not None else "missing_verdict"
            message = r.error.message if r.error is not None else "the result has no verdict"
            retry = " (retryable)" if r.error is not None and r.error.retryable else ""
            found[r.case_id] = ControlOutcome(
                verdict=None,
                reason=f"evaluator error{retry}: {message}",
                error=f"{kind}: {message}",
            )
    return found


async def run_controls(
    judge: Judge,
    suite: ControlSuite | str | Path,
    out_dir: str | Path,
    **engine_kwargs: Any,
) -> ControlsReport:
    """Run ``judge`` on every control through the run engine (``engine_kwargs``: its options) and
    write ``out_dir/controls.json``."""
    if not isinstance(suite, ControlSuite):
        suite = load_suite(suite)
    reserved = {"partition", "dataset_sha256", "repeats", "grid"} & set(engine_kwargs)
    if reserved:
        raise TypeError(f"run_controls sets {sorted(reserved)} itself")
    out = Path(out_dir)
    summary = await run_items(
        judge,
        work_items(suite),
        out,
        RunOptions(**engine_kwargs),
        partition=PARTITION,
        dataset_sha256=suite.sha256,
    )
    outcomes = control_outcomes(suite, out / RESULTS_FILE, judge.identity.fingerprint())
    report = evaluate_controls(suite, outcomes, judge=judge.identity, run=summary)
    atomic_write_json(out / REPORT_FILE, report.model_dump(mode="json"))
    return report


def run_controls_sync(
    judge: Judge, suite: ControlSuite | str | Path, out_dir: str | Path, **engine_kwargs: Any
) -> ControlsReport:
    """:func:`run_controls` for scripts and the CLI (not inside a running event loop)."""
    return asyncio.run(run_controls(judge, suite, out_dir, **engine_kwargs))


def format_controls(report: ControlsReport) -> str:
    """A plain-text account: one line per control, then each role and the outcome."""
    lines = [
        f"controls {report.suite.name}@{report.suite.version} (sha256 {report.suite.sha256[:12]})"
        f" with {report.judge} (fingerprint {report.judge_fingerprint[:12]})"
    ]
    width = max(len(r.control_id) for r in report.controls)
    for r in report.controls:
        want = r.expected if r.acceptable == [r.expected] else "|".join(r.acceptable)
        got = (
            r.verdict
            if r.verdict is not None
            else f"({r.error.split(':', 1)[0] if r.error else 'missing'})"
        )
        where = r.role + (
            f"/{r.set}:{r.member}" if r.set and r.member else f"/{r.set}" if r.set else ""
        )
        reason = (r.reason or "").replace("\n", " ")
        if len(reason) > 110:
            reason = reason[:107] + "..."
        lines.append(
            f"  {r.status.upper():10} {r.control_id:{width}}  {where}: expected {want}, got {got}"
            + (f" - {reason}" if reason else "")
        )
    lines.append("roles:")
    lines += [
        f"  {s.status.upper():10} {s.role}: {s.passed}/{s.n} passed, {s.failed} failed,"
        f" {s.incomplete} incomplete"
        for s in report.roles
    ]
    lines += [
        f"  set {s.set} ({s.role}) {s.status}"
        + (f": failed {', '.join(s.failed_members)}" if s.failed_members else "")
        for s in report.sets
        if s.status != "passed"
    ]
    if report.failed_roles:
        lines.append("FAILED roles: " + ", ".join(report.failed_roles))
    if report.incomplete_roles:
        lines.append("INCOMPLETE roles: " + ", ".join(report.incomplete_roles))
    if report.status == "passed":
        lines.append("every role passed")
    return "\n".join(lines)
