"""Release policies, the deterministic gate and the override store."""

from ._gate import (
    EXIT_CODES,
    GATE_SCHEMA_VERSION,
    Blocker,
    GateOutcome,
    GateResult,
    PolicyRef,
    WaivedBlocker,
    evaluate_gate,
    format_gate,
    waiver_for,
)
from ._overrides import (
    DEFAULT_OVERRIDES_PATH,
    NON_WAIVABLE_CODES,
    OVERRIDE_SCHEMA_VERSION,
    Override,
    active_overrides,
    add_override,
    expired_overrides,
    load_overrides,
    override_id_of,
)
from ._policy import POLICY_SCHEMA_VERSION, Policy, SlicePolicy, load_policy, policy_sha256

__all__ = [
    "DEFAULT_OVERRIDES_PATH",
    "EXIT_CODES",
    "GATE_SCHEMA_VERSION",
    "NON_WAIVABLE_CODES",
    "OVERRIDE_SCHEMA_VERSION",
    "POLICY_SCHEMA_VERSION",
    "Blocker",
    "GateOutcome",
    "GateResult",
    "Override",
    "Policy",
    "PolicyRef",
    "SlicePolicy",
    "WaivedBlocker",
    "active_overrides",
    "add_override",
    "evaluate_gate",
    "expired_overrides",
    "format_gate",
    "load_overrides",
    "load_policy",
    "override_id_of",
    "policy_sha256",
    "waiver_for",
]
