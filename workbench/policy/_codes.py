"""Every blocker code the gate itself emits, with its category: the table overrides are checked
against.

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
    "no_pass_fail_view": "review",
    "too_few_cases": "review",
    "rate_unbounded": "review",
    "false_pass_rate_unproven": "review",
    "false_fail_rate_unproven": "review",
    "cost_exceeded": "review",
    "cost_unverified": "review",
    "sampled_out": "review",
}
"""code -> category (``incomplete``, ``quality`` or ``review``) of every release-gate blocker
code."""

RANKING_BLOCKER_CODES: dict[str, str] = {
    "ranking_incomplete": "incomplete",
    "ranking_repeats_short": "incomplete",
    "ranking_integration_defect": "quality",
    "ranking_reversal_confirmed": "quality",
    "ranking_agreement_drop": "quality",
    "ranking_reversal_unconfirmed": "review",
    "ranking_editorial_drift": "review",
    "ranking_metric_defect": "review",
    "ranking_assembly_defect": "review",
    "ranking_fixture_changed_in_place": "review",
    "ranking_fixtures_unfrozen": "review",
    "ranking_must_win_unreviewed": "review",
    "ranking_no_baseline": "review",
    "ranking_policy_mismatch": "review",
}
"""code -> category of every ranking-gate blocker (the table in :mod:`workbench.ranking._gate`)."""

RANKING_NON_WAIVABLE_CODES = frozenset(
    {
        "ranking_incomplete",
        "ranking_repeats_short",
        "ranking_integration_defect",
        "ranking_fixture_changed_in_place",
        "ranking_fixtures_unfrozen",
        "ranking_must_win_unreviewed",
        "ranking_no_baseline",
        "ranking_policy_mismatch",
    }
)
"""Ranking codes no override may name: missing evidence, a malformed result, fixture or policy
integrity."""


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

NOISE_NEVER_WAIVABLE = frozenset(
    {code for code, category in NOISE_BLOCKER_CODES.items() if category == "incomplete"}
    | {"retrieval_cross_tenant"}
)
"""Noise codes no override may name: missing evidence, and cross-tenant retrieval (never evaluator
noise)."""

BLOCKER_CODES: dict[str, str] = {
    **GATE_BLOCKER_CODES,
    **RANKING_BLOCKER_CODES,
    **NOISE_BLOCKER_CODES,
}
"""code -> category of every blocker code an override may name: the release gate's, the ranking
gate's and noise's."""

FALSE_PASS_CODES = frozenset({"false_passes_exceeded", "false_pass_rate_exceeded"})
"""In a critical slice these are waivable only case by case (every false-pass case named)."""

CRITICAL_NEVER_WAIVABLE = frozenset(
    {"too_few_cases", "false_pass_rate_unproven", "abstention_rate_exceeded"}
)
"""Codes no override can waive in a critical slice (a critical slice must be shown bounded)."""

DEFENSE_CODES = frozenset({"constant_verdict"})
"""Codes that hold whatever the policy says: a judge that never separates pass from fail."""

REPEATABILITY_BLOCKER_CODES: dict[str, str] = {
    "repeatability_study_missing": "incomplete",
    "repeatability_study_other_candidate": "incomplete",
    "repeatability_study_other_gold": "incomplete",
    "repeatability_wrong_partition": "incomplete",
    "repeatability_too_few_repeats": "incomplete",
    "repeatability_incomplete": "incomplete",
    "flip_rate_unmeasured": "incomplete",
    "flip_rate_exceeded": "quality",
    "boundary_crossing_critical": "review",
}
"""code -> category of the blockers certification adds from repeatability studies when a policy
slice sets ``max_flip_rate`` (:func:`workbench.repeatability.repeatability_blockers`)."""

MIGRATION_BLOCKER_CODES: dict[str, str] = {
    "critical_transition_unreviewed": "review",
    "critical_transition_rejected": "quality",
    "label_unmapped": "incomplete",
    "baseline_incomplete": "incomplete",
}
"""code -> category of the blockers a migration certification (``certify --baseline``) adds
(the table in :mod:`workbench.migration._certify`)."""

LIFECYCLE_BLOCKER_CODES: dict[str, str] = {**REPEATABILITY_BLOCKER_CODES, **MIGRATION_BLOCKER_CODES}
"""Repeatability and migration codes. None is waivable, so none is in :data:`BLOCKER_CODES`
(an override naming one is refused): a flip rate, a boundary crossing or a changed critical
verdict is settled by evidence (a study, a transition review), never waived."""
