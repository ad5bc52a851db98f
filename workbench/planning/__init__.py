"""Sample-size planning: how many decided cases each slice of a policy needs (``workbench
plan``)."""

from ..stats import BoundPlan, bound_plan, cases_to_bound, too_few_cases_message
from ._chart import plan_chart
from ._plan import PlanRow, SamplePlan, format_plan, plan_frame, plan_policy

__all__ = [
    "BoundPlan",
    "PlanRow",
    "SamplePlan",
    "bound_plan",
    "cases_to_bound",
    "format_plan",
    "plan_chart",
    "plan_frame",
    "plan_policy",
    "too_few_cases_message",
]
