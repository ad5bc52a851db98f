"""Stratified, declared sampling: a reviewed plan, a deterministic draw, reserved-first lanes.

See :mod:`workbench.sampling._plan` (the plan and its rules) and :mod:`workbench.sampling._draw`
(the draw and the work order). The run engine applies a plan (``run_candidate(sampling=...)``,
``workbench run --policy P`` or ``--sampling-plan FILE``); the alignment and the gate read the
plan back from the run manifest and re-draw it before they accept a case as sampled out.
"""

from ._draw import (
    OTHER_PRIORITY,
    RESERVED_PRIORITY,
    Lanes,
    Sample,
    SampleCase,
    SliceDraw,
    draw_sample,
    plan_lanes,
    sample_key,
)
from ._plan import (
    PLAN_SCOPES,
    RISK_ORDER,
    SAMPLING_SCHEMA_VERSION,
    SamplingPlan,
    SamplingRuleError,
    SliceSampling,
    check_plan,
    load_sampling_plan,
    plan_problems,
    validation_problems,
)

__all__ = [
    "OTHER_PRIORITY",
    "PLAN_SCOPES",
    "RESERVED_PRIORITY",
    "RISK_ORDER",
    "SAMPLING_SCHEMA_VERSION",
    "Lanes",
    "Sample",
    "SampleCase",
    "SamplingPlan",
    "SamplingRuleError",
    "SliceDraw",
    "SliceSampling",
    "check_plan",
    "draw_sample",
    "load_sampling_plan",
    "plan_lanes",
    "plan_problems",
    "sample_key",
    "validation_problems",
]
