"""The one table of blocker codes: every code any check emits, its category, and whether (and
how) an override may waive it. :func:`workbench.policy.decide` and ``workbench override add``
read it; each feature's module docstring documents its own codes (tests keep them equal).

Deliberately a plain module (no pydantic): every feature imports it.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

Category = Literal["incomplete", "quality", "review"]
Feature = Literal["gate", "ranking", "noise", "controls", "repeatability", "migration", "certify"]
InCritical = Literal["yes", "by_case", "no"]


class BlockerCode(NamedTuple):
    """What one blocker code means for the decision and for overrides."""

    category: Category
    """``incomplete``, ``quality`` or ``review`` (the outcome it forces, by precedence)."""
    feature: Feature
    """The check that emits it (overrides for a feature's policy may name only its codes)."""
    never: str = ""
    """Why no override may ever waive it; empty when it is waivable."""
    in_critical: InCritical = "yes"
    """In a critical slice: ``yes`` (waivable as elsewhere), ``by_case`` (only by naming every
    case the blocker lists, never by slice) or ``no`` (never)."""

    @property
    def waivable(self) -> bool:
        """Whether an override may name it."""
        return not self.never


_MISSING = "missing evidence cannot be approved away"
_INPUTS = "the policy, rubric or evidence do not fit together: fix the inputs"
_DEFENSE = "a judge that never separates pass from fail cannot be certified, whatever the policy"
_SAMPLE = "a declared sample is never certified: no override turns a sample into the partition"
_TENANT = "cross-tenant retrieval is never waived as evaluator noise"
_INTEGRITY = "a malformed result, or the fixtures' or policy's integrity: fix them instead"
_SETTLED = "settled by evidence (a control run, a study, a transition review), never waived"


_ROLES = (
    "positive",
    "negative",
    "boundary",
    "verbosity",
    "terminology",
    "adversarial",
    "missing_evidence",
    "conflicting_evidence",
)
"""Every control role (a test keeps this equal to :data:`workbench.controls.ROLES`)."""


def _missing(feature: Feature) -> BlockerCode:
    return BlockerCode("incomplete", feature, _MISSING)


BLOCKER_CODES: dict[str, BlockerCode] = {
    # the release gate (workbench/policy/_gate.py)
    "no_cases": _missing("gate"),
    "missing_results": _missing("gate"),
    "evaluator_errors_exceeded": _missing("gate"),
    "budget_exhausted": _missing("gate"),
    "case_limit_reached": _missing("gate"),
    "pending_retries": _missing("gate"),
    "run_incomplete": _missing("gate"),
    "gold_changed": _missing("gate"),
    "cell_without_cases": _missing("gate"),
    "false_passes_exceeded": BlockerCode("quality", "gate", in_critical="by_case"),
    "false_pass_rate_exceeded": BlockerCode("quality", "gate", in_critical="by_case"),
    "false_fail_rate_exceeded": BlockerCode("quality", "gate"),
    "abstention_rate_exceeded": BlockerCode("quality", "gate", in_critical="no"),
    "constant_verdict": BlockerCode("quality", "gate", _DEFENSE),
    "policy_missing": BlockerCode("review", "gate", _INPUTS),
    "policy_rubric_mismatch": BlockerCode("review", "gate", _INPUTS),
    "rubric_mismatch": BlockerCode("review", "gate", _INPUTS),
    "partition_mismatch": BlockerCode("review", "gate", _INPUTS),
    "run_mismatch": BlockerCode("review", "gate", _INPUTS),
    "candidate_mismatch": BlockerCode("review", "gate", _INPUTS),
    "slice_not_in_policy": BlockerCode("review", "gate", _INPUTS),
    "policy_unknown_slice": BlockerCode("review", "gate", _INPUTS),
    "policy_risk_mismatch": BlockerCode("review", "gate", _INPUTS),
    "no_pass_fail_view": BlockerCode("review", "gate", _INPUTS),
    "too_few_cases": BlockerCode("review", "gate", in_critical="no"),
    "rate_unbounded": BlockerCode("review", "gate"),
    "false_pass_rate_unproven": BlockerCode("review", "gate", in_critical="no"),
    "false_fail_rate_unproven": BlockerCode("review", "gate"),
    "cost_exceeded": BlockerCode("review", "gate"),
    "cost_unverified": BlockerCode("review", "gate", _INPUTS),
    "sampled_out": BlockerCode("review", "gate", _SAMPLE),
    "predictions_match_labels": BlockerCode("review", "gate"),
    # the ranking gate (workbench/ranking/_gate.py)
    "ranking_incomplete": _missing("ranking"),
    "ranking_repeats_short": _missing("ranking"),
    "ranking_integration_defect": BlockerCode("quality", "ranking", _INTEGRITY),
    "ranking_reversal_confirmed": BlockerCode("quality", "ranking"),
    "ranking_agreement_drop": BlockerCode("quality", "ranking"),
    "ranking_reversal_unconfirmed": BlockerCode("review", "ranking"),
    "ranking_editorial_drift": BlockerCode("review", "ranking"),
    "ranking_metric_defect": BlockerCode("review", "ranking"),
    "ranking_assembly_defect": BlockerCode("review", "ranking"),
    "ranking_context_sensitive": BlockerCode("review", "ranking"),
    "ranking_fixture_changed_in_place": BlockerCode("review", "ranking", _INTEGRITY),
    "ranking_fixtures_unfrozen": BlockerCode("review", "ranking", _INTEGRITY),
    "ranking_must_win_unreviewed": BlockerCode("review", "ranking", _INTEGRITY),
    "ranking_no_baseline": BlockerCode("review", "ranking", _MISSING),
    "ranking_policy_mismatch": BlockerCode("review", "ranking", _INPUTS),
    # noise (workbench/noise/_analysis.py and _retrieval.py)
    "noise_controls_failed": _missing("noise"),
    "noise_controls_not_run": _missing("noise"),
    "noise_control_role_missing": _missing("noise"),
    "noise_score_invalid": _missing("noise"),
    "noise_evaluator_errors": _missing("noise"),
    "noise_repeat_incomplete": _missing("noise"),
    "noise_companion_missing": _missing("noise"),
    "retrieval_evidence_missing": _missing("noise"),
    "noise_score_exceeded": BlockerCode("quality", "noise"),
    "noise_delta_exceeded": BlockerCode("quality", "noise"),
    "noise_abstention_exceeded": BlockerCode("quality", "noise"),
    "noise_companion_exceeded": BlockerCode("quality", "noise"),
    "retrieval_forbidden_source": BlockerCode("quality", "noise"),
    "retrieval_expected_missing": BlockerCode("quality", "noise"),
    "retrieval_rank_violated": BlockerCode("quality", "noise"),
    "retrieval_cross_tenant": BlockerCode("quality", "noise", _TENANT),
    "noise_reference_defect_review": BlockerCode("review", "noise"),
    "noise_reference_challenged": BlockerCode("review", "noise"),
    "noise_abstention_unreviewed": BlockerCode("review", "noise"),
    "noise_repeat_unstable": BlockerCode("review", "noise"),
    "noise_suite_unfrozen": BlockerCode("review", "noise"),
    # controls, repeatability, migration and certification: settled by evidence, never waived
    **{f"control_failed_{role}": BlockerCode("quality", "controls", _SETTLED) for role in _ROLES},
    "repeatability_study_missing": _missing("repeatability"),
    "repeatability_study_other_candidate": _missing("repeatability"),
    "repeatability_study_other_gold": _missing("repeatability"),
    "repeatability_wrong_partition": _missing("repeatability"),
    "repeatability_too_few_repeats": _missing("repeatability"),
    "repeatability_incomplete": _missing("repeatability"),
    "flip_rate_unmeasured": _missing("repeatability"),
    "flip_rate_exceeded": BlockerCode("quality", "repeatability", _SETTLED),
    "boundary_crossing_critical": BlockerCode("review", "repeatability", _SETTLED),
    "critical_transition_unreviewed": BlockerCode("review", "migration", _SETTLED),
    "critical_transition_rejected": BlockerCode("quality", "migration", _SETTLED),
    "label_unmapped": _missing("migration"),
    "baseline_incomplete": _missing("migration"),
    "lineage_failed": _missing("certify"),
    "prompt_holds_held_out": BlockerCode("review", "certify"),
    "certification_failed": _missing("certify"),
    "notebook_unpinned": BlockerCode(
        "review",
        "certify",
        "a notebook the policy does not pin decided nothing: certify with the packaged notebook",
        "no",
    ),
}
"""code -> :class:`BlockerCode`: every blocker code, its category, feature and waivability."""

NON_WAIVABLE_CODES = frozenset(code for code, spec in BLOCKER_CODES.items() if not spec.waivable)
"""Codes no override may name."""

FALSE_PASS_CODES = frozenset(
    code for code, spec in BLOCKER_CODES.items() if spec.in_critical == "by_case"
)
"""In a critical slice these are waivable only case by case (every false-pass case named)."""

CRITICAL_NEVER_WAIVABLE = frozenset(
    code for code, spec in BLOCKER_CODES.items() if spec.in_critical == "no"
)
"""Codes no override can waive in a critical slice (a critical slice must be shown bounded)."""


def codes_of(feature: Feature) -> dict[str, Category]:
    """code -> category of the codes ``feature`` emits (its documented table)."""
    return {code: spec.category for code, spec in BLOCKER_CODES.items() if spec.feature == feature}
