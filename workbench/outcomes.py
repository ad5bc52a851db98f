"""The one table of outcomes and process exit codes (the README's table is checked against it);
a plain module: the CLI imports it at start."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum


class ExitCode(IntEnum):
    """The process exit codes every command shares."""

    OK = 0
    """Certified, passed, complete."""
    FAILED = 1
    """Quality failed: the judge misses a limit, a deterministic check or ``verify`` failed."""
    INVALID_INPUT = 2
    """Invalid input: bad data or arguments, a refused join, a contract problem."""
    INCOMPLETE = 3
    """Evaluation incomplete: a run stopped early (budget, case limit, circuit breaker), evidence
    missing."""
    REVIEW_REQUIRED = 4
    """Review required: a person must decide."""
    EVALUATOR_ERRORS = 5
    """A run finished, but some cases ended in evaluator errors (their verdicts are unknown)."""
    ADVISORY = 6
    """The release gate's limits are met on results that cannot certify; never 0."""


@dataclass(frozen=True)
class Style:
    """How the certification report shows a gate outcome."""

    title: str
    """The banner text."""
    css: str
    """The badge class suffix (``r-<css>``)."""
    color: str
    """Banner border and text colour."""
    background: str
    """Banner background colour."""


@dataclass(frozen=True)
class Outcome:
    """One outcome: its name in records, its exit code and, for a gate outcome, its report style."""

    name: str
    """The outcome as records spell it, e.g. ``quality_failed``."""
    exit_code: ExitCode
    """The process exit code of a command that ends in it."""
    style: Style | None = None
    """The report's banner and badge (gate outcomes only)."""


OUTCOMES: dict[str, Outcome] = {
    o.name: o
    for o in (
        Outcome("certified", ExitCode.OK, Style("CERTIFIED", "pass", "#1b5e20", "#e8f5e9")),
        Outcome("passed", ExitCode.OK),
        Outcome("complete", ExitCode.OK),
        Outcome(
            "quality_failed", ExitCode.FAILED, Style("QUALITY FAILED", "fail", "#b71c1c", "#ffebee")
        ),
        Outcome("failed", ExitCode.FAILED),
        Outcome("invalid_input", ExitCode.INVALID_INPUT),
        Outcome("contract_problems", ExitCode.INVALID_INPUT),
        Outcome(
            "evaluation_incomplete",
            ExitCode.INCOMPLETE,
            Style("EVALUATION INCOMPLETE", "incomplete", "#e65100", "#fff3e0"),
        ),
        Outcome("incomplete", ExitCode.INCOMPLETE),
        Outcome(
            "review_required",
            ExitCode.REVIEW_REQUIRED,
            Style("REVIEW REQUIRED", "review", "#4a148c", "#f3e5f5"),
        ),
        Outcome("evaluator_errors", ExitCode.EVALUATOR_ERRORS),
        Outcome(
            "would_certify",
            ExitCode.ADVISORY,
            Style("WOULD CERTIFY (ADVISORY, NOT HELD-OUT)", "notrun", "#33691e", "#f1f8e9"),
        ),
    )
}
"""Every outcome a command can end in, by name."""

GATE_OUTCOMES = ("certified", "quality_failed", "evaluation_incomplete", "review_required")
"""The release gate's (and certification's) outcomes."""

ADVISORY_CLEAR = "would_certify"
"""The release gate's clear outcome on results that are not held-out: limits met, nothing
certified (only held-out results a certification recorded can certify)."""

CATEGORY_OUTCOMES: dict[str, str] = {
    "incomplete": "evaluation_incomplete",
    "quality": "quality_failed",
    "review": "review_required",
}
"""Blocker category -> the outcome it forces, in precedence order (first wins)."""


def outcome_of(categories: Iterable[str], *, clear: str = "certified") -> str:
    """The outcome of blockers with these categories; ``clear`` when there is none."""
    present = set(categories)
    for category, outcome in CATEGORY_OUTCOMES.items():
        if category in present:
            return outcome
    return clear


def exit_code(outcome: str) -> int:
    """The exit code of ``outcome`` (raises ``KeyError`` for a name not in :data:`OUTCOMES`)."""
    return int(OUTCOMES[outcome].exit_code)


def exit_codes(*names: str) -> dict[str, int]:
    """``{name: exit code}`` for ``names``: a command's outcomes, read from the one table."""
    return {name: exit_code(name) for name in names}


def style(outcome: str) -> Style:
    """How the report shows ``outcome``: a gate outcome in its colours, others on grey."""
    known = OUTCOMES.get(outcome)
    if known is not None and known.style is not None:
        return known.style
    return Style(outcome.upper(), "notrun", "#000", "#eee")
