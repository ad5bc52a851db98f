"""Deterministic Ragas ``@discrete_metric`` judges for the migration and repeatability tests.

Each reads a marker word from the response, so a test decides every verdict by writing the
response. ``CALLS`` counts calls per judge, so tests can prove what was (not) called.
``flaky`` answers from a per-response queue (``FLAKY``), for repeatability studies.
"""

from __future__ import annotations

# isort: off
import workbench  # noqa: F401  (first: it sets RAGAS_DO_NOT_TRACK before ragas is imported)

# isort: on
from collections import Counter, defaultdict
from pathlib import Path

import yaml
from ragas.metrics import discrete_metric
from ragas.metrics.result import MetricResult

CALLS: Counter[str] = Counter()
FLAKY: dict[str, list[str]] = defaultdict(list)
"""response -> verdicts still to give, one per call (then ``pass``)."""


def _word(response: str, prefix: str, default: str) -> str:
    for token in response.split():
        if token.startswith(prefix):
            return token[len(prefix) :]
    return default


@discrete_metric(name="old_judge", allowed_values=["pass", "fail", "review_required"])
def old_judge(response: str) -> MetricResult:
    """The verdict written after ``old=`` in the response (``pass`` when absent)."""
    CALLS["old"] += 1
    return MetricResult(value=_word(response, "old=", "pass"), reason="old rule")


@discrete_metric(name="new_judge", allowed_values=["pass", "fail", "review_required"])
def new_judge(response: str) -> MetricResult:
    """The verdict written after ``new=`` in the response (``pass`` when absent)."""
    CALLS["new"] += 1
    return MetricResult(value=_word(response, "new=", "pass"), reason="new rule")


@discrete_metric(name="renamed_judge", allowed_values=["ok", "not_ok", "unsure"])
def renamed_judge(response: str) -> MetricResult:
    """An old version whose categories were later renamed: ok / not_ok / unsure."""
    CALLS["renamed"] += 1
    verdict = _word(response, "old=", "pass")
    return MetricResult(
        value={"pass": "ok", "fail": "not_ok", "review_required": "unsure"}[verdict],
        reason="old names",
    )


@discrete_metric(name="flaky", allowed_values=["pass", "fail", "review_required"])
def flaky(response: str) -> MetricResult:
    """The next verdict queued for this response in ``FLAKY`` (``pass`` when none is left)."""
    CALLS["flaky"] += 1
    queue = FLAKY[response]
    return MetricResult(value=queue.pop(0) if queue else "pass", reason="queued")


def flaky_spec(directory: Path, script: dict[str, list[str]]) -> Path:
    """A ``flaky@1`` candidate spec in ``directory``, its queues (``FLAKY``) set to ``script``
    (response -> verdict per call)."""
    FLAKY.clear()
    for response, verdicts in script.items():
        FLAKY[response] = list(verdicts)
    path = directory / "flaky@1.yaml"
    spec = {
        "name": "flaky",
        "version": "1",
        "kind": "ragas-function",
        "labels": ["pass", "fail", "review_required"],
        "function": "migration_judges:flaky",
    }
    path.write_text(yaml.safe_dump(spec))
    return path
