"""Noise sensitivity: paired clean/noisy cases scored with Ragas ``NoiseSensitivity`` (lower is better).

- :mod:`._pairs`: the pair-suite format (:class:`NoiseSuite`, :class:`NoisePair`) and
  :func:`load_pairs`, which reports every problem at once.
- :mod:`._judge`: the ``ragas-noise`` judge kind (registered on import).
- :mod:`._analysis`: :func:`run_noise` (controls first; candidates only when every control
  pair separates), :func:`noise_report` and its blockers, :func:`noise_chart`.

The analysis names are loaded on first use, so the judge registry can import this package
(to register ``ragas-noise``) without importing the run engine it is itself imported by.
"""

from __future__ import annotations

from .._lazy import lazy_attributes
from . import _judge  # noqa: F401  (registers the ragas-noise kind)
from ._judge import KIND, METRIC, NoiseJudge, calls_per_score, explain
from ._pairs import (
    DIRECTION,
    MEMBERS,
    MODES,
    PAIRS_SCHEMA_VERSION,
    RELATIONS,
    ROLES,
    CleanMember,
    Distractor,
    NoiseInput,
    NoisePair,
    NoiseSuite,
    NoisyMember,
    SliceLimit,
    check_pairs,
    load_pairs,
    parse_pairs,
    validate_pairs,
)

_LAZY = {
    name: "._analysis"
    for name in (
        "CANDIDATES_PARTITION",
        "CONTROLS_PARTITION",
        "EXIT_CODES",
        "LOWER_IS_BETTER",
        "NOISE_REPORT_SCHEMA_VERSION",
        "ControlRow",
        "MemberError",
        "NoiseReport",
        "NoiseRun",
        "PairRow",
        "SliceRow",
        "check_controls",
        "format_noise",
        "member_items",
        "noise_chart",
        "noise_report",
        "run_noise",
        "run_noise_sync",
    )
}


__getattr__, __dir__ = lazy_attributes(__name__, globals(), _LAZY)


__all__ = [
    "CANDIDATES_PARTITION",
    "CONTROLS_PARTITION",
    "DIRECTION",
    "EXIT_CODES",
    "KIND",
    "LOWER_IS_BETTER",
    "MEMBERS",
    "METRIC",
    "MODES",
    "NOISE_REPORT_SCHEMA_VERSION",
    "PAIRS_SCHEMA_VERSION",
    "RELATIONS",
    "ROLES",
    "CleanMember",
    "ControlRow",
    "Distractor",
    "MemberError",
    "NoiseInput",
    "NoiseJudge",
    "NoisePair",
    "NoiseReport",
    "NoiseRun",
    "NoiseSuite",
    "NoisyMember",
    "PairRow",
    "SliceLimit",
    "SliceRow",
    "calls_per_score",
    "check_controls",
    "check_pairs",
    "explain",
    "format_noise",
    "load_pairs",
    "member_items",
    "noise_chart",
    "noise_report",
    "parse_pairs",
    "run_noise",
    "run_noise_sync",
    "validate_pairs",
]
