"""What a certification report shows beside its candidate (:func:`beside_candidate`): never a
silent fall-back to the last certified judge."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from .._docs import add_field_docs
from ..policy import Policy
from ._certified import ReportFacts, last_certified
from ._grant import RequestedAuthority, requested_authority
from ._stale import StaleReason, gold_state, staleness


class AuthorityContext(BaseModel):
    """The authority requested, and the last certified version of the judge with whether it
    still fits the gold."""

    model_config = ConfigDict(frozen=True, extra="forbid", json_schema_extra=add_field_docs)

    candidate: str
    """The candidate being certified (``name@version``)."""
    requested: RequestedAuthority
    """The use and scope its policy asks for."""
    last_certified: ReportFacts | None
    """The newest verified ``certified`` report of another version of the judge, or None."""
    last_certified_stale: list[StaleReason] = Field(default_factory=list)
    """How the gold, rubric or Ragas changed since that certification."""

    def describe(self) -> list[str]:
        """Lines for a report."""
        lines = [f"authority requested: {self.requested.describe()}"]
        last = self.last_certified
        if last is None:
            lines.append(
                "last complete certified version: none (no verified certified report of another"
                f" version of {self.candidate.split('@')[0]})"
            )
            return lines
        lines.append(
            f"last complete certified version: {last.candidate} (report {last.report_id},"
            f" {last.created_at:%Y-%m-%d}, policy {last.policy}; {last.grant.describe()})"
        )
        if self.last_certified_stale:
            lines.append(
                "  not a fallback: " + "; ".join(r.message for r in self.last_certified_stale)
            )
        return lines


def beside_candidate(
    policy: Policy, candidate: str, reports_root: str | Path, gold: str | Path
) -> AuthorityContext:
    """The authority ``policy`` requests for ``candidate`` and the last certified other version
    of the judge under ``reports_root``, checked against ``gold``."""
    name, _, version = candidate.partition("@")
    last = last_certified(name, reports_root, exclude_version=version or None, gold=None)
    stale: list[StaleReason] = []
    if last is not None:
        spec = _spec_copy(Path(last.report_dir))
        stale = [
            r
            for r in staleness(last, gold_state(gold), spec)
            if r.kind != "candidate" or spec is None
        ]
    return AuthorityContext(
        candidate=candidate,
        requested=requested_authority(policy),
        last_certified=last,
        last_certified_stale=stale,
    )


def _spec_copy(report_dir: Path) -> Path | None:
    from .._lock import read_lock

    try:
        rel = read_lock(report_dir).input_files.get("candidate")
    except (OSError, ValueError):
        return None
    return report_dir / rel if rel else None
