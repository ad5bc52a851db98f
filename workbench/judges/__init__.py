"""Judge candidates: specs, fingerprints, the allow-listed judge input and the kind registry.

Built-in kinds: ``ragas-function`` (a deterministic Ragas ``@discrete_metric``).
"""

from . import _function  # noqa: F401  (registers the built-in kinds)
from ._input import JUDGE_VISIBLE_FIELDS, JudgeInput
from ._registry import (
    Judge,
    Verdict,
    available_kinds,
    build_judge,
    load_candidate,
    make_identity,
    ragas_version,
    register_kind,
)
from ._spec import CANDIDATE_SCHEMA_VERSION, CandidateSpec, Endpoint, Pricing, load_spec

__all__ = [
    "CANDIDATE_SCHEMA_VERSION",
    "JUDGE_VISIBLE_FIELDS",
    "CandidateSpec",
    "Endpoint",
    "Judge",
    "JudgeInput",
    "Pricing",
    "Verdict",
    "available_kinds",
    "build_judge",
    "load_candidate",
    "load_spec",
    "make_identity",
    "ragas_version",
    "register_kind",
]
