"""What a policy asks for (:func:`requested_authority`) and what a certification grants
(:func:`grant_for`): at most the declared use, only in the declared scope, less on weaker
evidence; every reduction is listed in :attr:`AuthorityGrant.withheld`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field

from .._record import Record as _Model
from ..policy import Policy, PolicyScope, controls_for_authority

GRANT_SCHEMA_VERSION = 1
Level = Literal["none", "advisory", "route", "block"]
"""An authority level, least to most."""
LEVELS: tuple[str, ...] = ("none", "advisory", "route", "block")


def level_rank(level: str | None) -> int:
    """0 for ``none`` (or None) up to 3 for ``block``."""
    return LEVELS.index(level) if level in LEVELS else 0


def lower(a: Level, b: Level) -> Level:
    """The lower of two levels."""
    return a if level_rank(a) <= level_rank(b) else b


def next_level(level: str) -> str | None:
    """The next step on the promotion path (advisory -> route -> block), None after block."""
    rank = level_rank(level)
    return LEVELS[rank + 1] if 0 < rank < len(LEVELS) - 1 else None


class RequestedAuthority(_Model):
    """The authority a policy asks certification to grant."""

    policy: str
    """``name@version`` of the policy."""
    use: Literal["advisory", "route", "block"] | None
    """The declared use; None: the policy declares none, so certification grants no authority."""
    scope: PolicyScope | None
    """Where the use applies."""

    def describe(self) -> str:
        """One line for a report."""
        if self.use is None or self.scope is None:
            return f"{self.policy} declares no use: certification grants no authority"
        return f"{self.policy} requests {self.use} on {describe_scope(self.scope)}"


class AuthorityGrant(_Model):
    """What one certification grants (:func:`grant_for`)."""

    schema_version: int = GRANT_SCHEMA_VERSION
    """Grant format version."""
    policy: str | None
    """``name@version`` of the policy certified under."""
    outcome: str | None
    """The gate's outcome."""
    requested: Literal["advisory", "route", "block"] | None
    """The policy's declared use."""
    use: Level
    """The use granted: at most ``requested``; ``none`` unless certified."""
    scope: PolicyScope | None
    """The scope granted: the declared scope less the slices left out; None with ``use: none``."""
    withheld: list[str] = Field(default_factory=list)
    """Why less than requested was granted, one sentence each (empty: all of it)."""
    report_id: str | None = None
    """The report this grant is read from, when it is one."""
    lock_sha256: str | None = None
    """That report's lock hash."""

    def describe(self) -> str:
        """One line for the terminal or a report."""
        if self.use == "none" or self.scope is None:
            why = "; ".join(self.withheld) or "nothing granted"
            return f"grants no authority ({why})"
        return f"grants {self.use} on {describe_scope(self.scope)}"


def describe_scope(scope: PolicyScope) -> str:
    """``slices a, b; products p; language: en``."""
    parts = [f"slices {', '.join(scope.slices)}"]
    if scope.products:
        parts.append(f"products {', '.join(scope.products)}")
    parts += [f"{name}: {', '.join(values)}" for name, values in sorted(scope.dimensions.items())]
    return "; ".join(parts)


def requested_authority(policy: Policy) -> RequestedAuthority:
    """The use and scope ``policy`` asks for (for a report to show beside the candidate)."""
    return RequestedAuthority(policy=policy.label, use=policy.use, scope=policy.scope)


def _as_dict(gate: Any) -> dict[str, Any]:
    if isinstance(gate, Mapping):
        return dict(gate)
    dump = getattr(gate, "model_dump", None)
    if dump is None:
        raise TypeError("gate must be a GateResult or its JSON (gate.json)")
    dumped: dict[str, Any] = dump(mode="json")
    return dumped


def grant_for(
    policy: Policy, gate: Any, *, report_id: str | None = None, lock_sha256: str | None = None
) -> AuthorityGrant:
    """What a certification under ``policy`` with ``gate`` (a result or its JSON) grants. Pure.

    Nothing unless ``certified`` on held-out under a policy with a use; scope slices without a
    decided verdict or certified only by a waiver are left out; a waiver without a slice caps the
    use at ``route``; a policy without blocking controls caps it at ``advisory``.
    """
    g = _as_dict(gate)
    outcome = g.get("outcome")
    base = {
        "policy": policy.label,
        "outcome": outcome,
        "requested": policy.use,
        "report_id": report_id,
        "lock_sha256": lock_sha256,
    }
    if policy.use is None or policy.scope is None:
        why = (
            f"policy {policy.label} declares no use: certification grants no authority (declare use"
            " and scope in a new policy version)"
        )
    elif outcome != "certified":
        why = f"the outcome is {outcome!r}: only a certified report grants authority"
    elif g.get("partition") != "held_out":
        why = (
            f"the gate evaluated {g.get('partition')!r}, not held_out: only a held-out"
            " certification grants authority"
        )
    else:
        return _grant_in_scope(policy, g, base)
    return AuthorityGrant(**base, use="none", scope=None, withheld=[why])


def _waived(waivers: list[Mapping[str, Any]]) -> str:
    return ", ".join(
        f"{(w.get('blocker') or {}).get('code')} (override {w.get('override_id')})" for w in waivers
    )


def _grant_in_scope(policy: Policy, g: dict[str, Any], base: dict[str, Any]) -> AuthorityGrant:
    """The declared use on the scope slices shown without a waiver (rules: :func:`grant_for`)."""
    assert policy.use is not None and policy.scope is not None
    figures = {f.get("slice"): f for f in g.get("figures") or [] if isinstance(f, Mapping)}
    waived = [w for w in g.get("waived") or [] if isinstance(w, Mapping)]
    withheld: list[str] = []
    kept: list[str] = []
    for name in policy.scope.slices:
        fig = figures.get(name)
        waivers = [w for w in waived if (w.get("blocker") or {}).get("slice") == name]
        if fig is None or not fig.get("decided"):
            withheld.append(
                f"slice {name}: no decided held-out verdict, so nothing was shown there"
            )
        elif waivers:
            withheld.append(
                f"slice {name}: certified only because an override waived {_waived(waivers)};"
                " authority does not rest on a waiver"
            )
        else:
            kept.append(name)
    use: str = policy.use
    general = [w for w in waived if not (w.get("blocker") or {}).get("slice")]
    if general and level_rank(use) > level_rank("route"):
        withheld.append(
            f"block withheld: an override waived {_waived(general)}; a judge never blocks"
            " unattended on a waived certification"
        )
        use = "route"
    capped = controls_for_authority(policy)
    if capped is not None and level_rank(use) > level_rank("advisory"):
        withheld.append(capped)
        use = "advisory"
    if not kept:
        withheld.append("no scope slice remains: no authority")
        return AuthorityGrant(**base, use="none", scope=None, withheld=withheld)
    scope = policy.scope.model_copy(update={"slices": kept})
    return AuthorityGrant(**base, use=use, scope=scope, withheld=withheld)
