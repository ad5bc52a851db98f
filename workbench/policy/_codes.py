"""Every blocker code the gate itself emits, with its category: the table overrides are checked against.

This mapping is the machine-readable form of the table in :mod:`workbench.policy._gate`'s
docstring (a test keeps the two equal). ``workbench override add`` refuses a code that is not
here: an override naming a code the gate never emits could never apply. Blockers from other
checks (controls, lineage, a failed certification notebook) are never waivable, so no
override needs to name them.
"""

from __future__ import annotations

GATE_BLOCKER_CODES: dict[str, str] = {
    "no_cases": "incomplete",
    "missing_results": "incomplete",
    "evaluator_errors_exceeded": "incomplete",
    "budget_exhausted": "incomplete",
    "case_limit_reached": "incomplete",
    "pending_retries": "incomplete",
    "run_incomplete": "incomplete",
    "gold_changed": "incomplete",
    "false_passes_exceeded": "quality",
    "false_pass_rate_exceeded": "quality",
    "false_fail_rate_exceeded": "quality",
    "abstention_rate_exceeded": "quality",
    "constant_verdict": "quality",
    "policy_missing": "review",
    "policy_rubric_mismatch": "review",
    "rubric_mismatch": "review",
    "partition_mismatch": "review",
    "run_mismatch": "review",
    "candidate_mismatch": "review",
    "slice_not_in_policy": "review",
    "policy_unknown_slice": "review",
    "policy_risk_mismatch": "review",
    "too_few_cases": "review",
    "rate_unbounded": "review",
    "false_pass_rate_unproven": "review",
    "false_fail_rate_unproven": "review",
    "cost_exceeded": "review",
    "cost_unverified": "review",
}
"""code -> category of every code the release gate emits (the table in :mod:`._gate`)."""

NOISE_BLOCKER_CODES: dict[str, str] = {
    "noise_controls_failed": "incomplete",
    "noise_controls_not_run": "incomplete",
    "noise_control_role_missing": "incomplete",
    "noise_score_invalid": "incomplete",
    "noise_evaluator_errors": "incomplete",
    "noise_repeat_incomplete": "incomplete",
    "noise_companion_missing": "incomplete",
    "retrieval_evidence_missing": "incomplete",
    "noise_score_exceeded": "quality",
    "noise_delta_exceeded": "quality",
    "noise_abstention_exceeded": "quality",
    "noise_companion_exceeded": "quality",
    "retrieval_cross_tenant": "quality",
    "retrieval_forbidden_source": "quality",
    "retrieval_expected_missing": "quality",
    "retrieval_rank_violated": "quality",
    "noise_reference_defect_review": "review",
    "noise_reference_challenged": "review",
    "noise_abstention_unreviewed": "review",
    "noise_repeat_unstable": "review",
    "noise_suite_unfrozen": "review",
}
"""code -> category of the codes only ``workbench noise`` emits (the tables in
:mod:`workbench.noise._analysis` and :mod:`workbench.noise._retrieval`). It also emits the
gate's ``missing_results``, ``budget_exhausted``, ``case_limit_reached`` and ``run_incomplete``."""

NOISE_NEVER_WAIVABLE = frozenset({code for code, category in NOISE_BLOCKER_CODES.items() if category == "incomplete"} | {"retrieval_cross_tenant"})
"""Noise codes no override may name: missing evidence, and cross-tenant retrieval (never evaluator noise)."""

BLOCKER_CODES: dict[str, str] = {**GATE_BLOCKER_CODES, **NOISE_BLOCKER_CODES}
"""code -> category (``incomplete``, ``quality`` or ``review``) of every blocker code an override may name."""

FALSE_PASS_CODES = frozenset({"false_passes_exceeded", "false_pass_rate_exceeded"})
"""In a critical slice these are waivable only case by case (every false-pass case named)."""

CRITICAL_NEVER_WAIVABLE = frozenset({"too_few_cases", "false_pass_rate_unproven", "abstention_rate_exceeded"})
"""Codes no override can waive in a critical slice (a critical slice must be shown bounded)."""

DEFENSE_CODES = frozenset({"constant_verdict"})
"""Codes that hold whatever the policy says: a judge that never separates pass from fail."""
