"""Stratified, declared sampling: a reviewed plan, a deterministic draw, reserved-first lanes.

See :mod:`workbench.sampling._plan` (the plan and its rules) and :mod:`workbench.sampling._draw`
(the draw and the work order). The run engine applies a plan (``run_candidate(sampling=...)``,
``workbench run --policy P`` or ``--sampling-plan FILE``); the alignment and the gate read the
plan back from the run manifest and re-draw it before they accept a case as sampled out.
"""

from ._draw import Lanes, SampleCase, draw_sample, plan_lanes
from ._plan import (
    RISK_ORDER,
    SamplingPlan,
    SamplingRuleError,
    SliceSampling,
    check_plan,
    load_sampling_plan,
    plan_problems,
)

__all__ = [
    "RISK_ORDER",
    "Lanes",
    "SampleCase",
    "SamplingPlan",
    "SamplingRuleError",
    "SliceSampling",
    "check_plan",
    "draw_sample",
    "load_sampling_plan",
    "plan_lanes",
    "plan_problems",
]
