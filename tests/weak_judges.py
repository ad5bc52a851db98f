"""Deliberately weakened judges for the control tests (Ragas ``@discrete_metric`` functions).

``passes_anything_long`` is the demo's rubric judge v2 with one defect added: it passes any
response longer than 200 characters without reading it. The verbosity controls must catch it
(the long, polished, wrong member is passed). ``always_raises`` fails on every call, so every
control is incomplete.
"""

from __future__ import annotations

# isort: off
import workbench  # noqa: F401  (first: it sets RAGAS_DO_NOT_TRACK before ragas is imported)

# isort: on
from ragas.metrics import discrete_metric
from ragas.metrics.result import MetricResult

from workbench.judges.demo import v2_verdict

LONG = 200
"""Responses longer than this many characters are passed unread."""


@discrete_metric(name="passes_anything_long", allowed_values=["pass", "fail"])
def passes_anything_long(user_input: str, response: str, grading_notes: str) -> MetricResult:
    """Pass anything longer than ``LONG`` characters; otherwise the rubric_judge_v2 verdict."""
    del user_input
    if len(response) > LONG:
        return MetricResult(value="pass", reason=f"A thorough answer ({len(response)} characters).")
    return v2_verdict(response, grading_notes)


@discrete_metric(name="always_raises", allowed_values=["pass", "fail"])
def always_raises(user_input: str, response: str, grading_notes: str) -> MetricResult:
    """A faulty judge: every call raises."""
    raise RuntimeError("the evaluator crashed")
