"""Deterministic Ragas metrics used as ragas-function judges in tests.

``SEEN`` records every argument set a judge received, so tests can prove what reached it.
"""

from __future__ import annotations

from ragas.metrics import discrete_metric, numeric_metric
from ragas.metrics.result import MetricResult

import workbench  # noqa: F401  (conftest imports workbench first, which sets RAGAS_DO_NOT_TRACK)

SEEN: list[dict[str, object]] = []


@discrete_metric(name="keyword_judge", allowed_values=["pass", "fail"])
def keyword_judge(user_input: str, response: str, grading_notes: str) -> MetricResult:
    """Pass when the response contains the word 'refund'; records what it saw."""
    SEEN.append({"user_input": user_input, "response": response, "grading_notes": grading_notes})
    verdict = "pass" if "refund" in response.lower() else "fail"
    return MetricResult(
        value=verdict, reason=f"'refund' {'found' if verdict == 'pass' else 'absent'}"
    )


@discrete_metric(name="off_vocabulary", allowed_values=["pass", "fail"])
def off_vocabulary(response: str) -> str:
    return "maybe"


@discrete_metric(name="raising", allowed_values=["pass", "fail"])
def raising(response: str) -> str:
    raise RuntimeError("judge blew up")


@discrete_metric(name="needs_reference", allowed_values=["pass", "fail"])
def needs_reference(response: str, reference: str) -> str:
    return "pass"


@discrete_metric(name="wide", allowed_values=["pass", "fail", "maybe"])
def wide(response: str) -> str:
    return "pass"


not_a_metric = "just a string"


@numeric_metric(name="length_score", allowed_values=(0.0, 1.0))
def length_score(response: str) -> MetricResult:
    """Score = the number in the response text divided by 10 (e.g. "score 7" -> 0.7)."""
    digits = "".join(ch for ch in response if ch.isdigit())
    return MetricResult(value=int(digits) / 10, reason=f"read {digits}")
