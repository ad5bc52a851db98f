"""Sample-size planning: how many decided cases each slice of a policy needs (``workbench
plan``)."""

from ..stats import BoundPlan, bound_plan, cases_to_bound, too_few_cases_message
from ._chart import bound_curve, plan_chart
from ._plan import PLAN_SCHEMA_VERSION, PlanRow, SamplePlan, format_plan, plan_frame, plan_policy

__all__ = [
    "PLAN_SCHEMA_VERSION",
    "BoundPlan",
    "PlanRow",
    "SamplePlan",
    "bound_curve",
    "bound_plan",
    "cases_to_bound",
    "format_plan",
    "plan_chart",
    "plan_frame",
    "plan_policy",
    "too_few_cases_message",
]
