"""Authority: what a certified judge may do (``advisory``, ``route``, ``block``), in which scope,
and for how long: grants (:func:`grant_for`), the hash-chained record (``workbench authority``),
``workbench status``, shadow runs and the last certified version shown beside a candidate."""

from ._certified import ReportFacts, last_certified, open_report, read_report
from ._commands import attach_shadow, demote, grant, promote, revoke
from ._context import AuthorityContext, beside_candidate
from ._grant import (
    AuthorityGrant,
    RequestedAuthority,
    describe_scope,
    grant_for,
    level_rank,
    next_level,
    requested_authority,
)
from ._location import authority_path_for, shadow_log_path_for
from ._production import (
    SAMPLE_KEY,
    Finding,
    production_findings,
    sample_production,
    withdraw_on_critical,
)
from ._record import AuthorityEntry, AuthorityRecord
from ._shadow import (
    ShadowDisagreement,
    ShadowEntry,
    ShadowSlice,
    format_shadow,
    read_shadow_log,
    run_shadow,
    run_shadow_sync,
)
from ._stale import GoldState, StaleReason, gold_state, staleness
from ._status import (
    AuthorityStatus,
    DriftSummary,
    JudgeStatus,
    ShadowPair,
    authority_status,
    format_status,
)

__all__ = [
    "AuthorityContext",
    "AuthorityEntry",
    "AuthorityGrant",
    "AuthorityRecord",
    "AuthorityStatus",
    "DriftSummary",
    "Finding",
    "SAMPLE_KEY",
    "GoldState",
    "JudgeStatus",
    "ReportFacts",
    "RequestedAuthority",
    "ShadowDisagreement",
    "ShadowEntry",
    "ShadowPair",
    "ShadowSlice",
    "StaleReason",
    "attach_shadow",
    "authority_path_for",
    "authority_status",
    "beside_candidate",
    "demote",
    "describe_scope",
    "format_shadow",
    "format_status",
    "gold_state",
    "grant",
    "grant_for",
    "last_certified",
    "level_rank",
    "next_level",
    "open_report",
    "production_findings",
    "promote",
    "read_report",
    "read_shadow_log",
    "requested_authority",
    "revoke",
    "run_shadow",
    "run_shadow_sync",
    "sample_production",
    "shadow_log_path_for",
    "staleness",
    "withdraw_on_critical",
]
