"""Stratified, declared sampling: a reviewed plan (:mod:`._plan`), a deterministic draw and
reserved-first lanes (:mod:`._draw`)."""

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
