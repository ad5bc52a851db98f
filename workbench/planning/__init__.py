"""Sample-size planning: how many decided cases each slice of a policy needs (``workbench
plan``)."""

from ._chart import plan_chart
from ._plan import PlanRow, SamplePlan, format_plan, plan_frame, plan_policy

__all__ = [
    "PlanRow",
    "SamplePlan",
    "format_plan",
    "plan_chart",
    "plan_frame",
    "plan_policy",
]
