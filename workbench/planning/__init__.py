"""Sample-size planning: how many decided cases each slice of a policy needs (``workbench
plan``)."""

from ._chart import plan_chart
from ._plan import PlanRow, SamplePlan, format_plan, plan_frame, plan_policy
from ._simulate import OperatingReport, format_simulation, simulate_gate, simulation_frames

__all__ = [
    "OperatingReport",
    "PlanRow",
    "SamplePlan",
    "format_plan",
    "format_simulation",
    "plan_chart",
    "plan_frame",
    "plan_policy",
    "simulate_gate",
    "simulation_frames",
]
