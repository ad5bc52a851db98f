"""Judge candidates: specs, fingerprints, the allow-listed judge input and the kind registry.

Built-in kinds: ``ragas-llm`` (a Ragas ``DiscreteMetric`` on an OpenAI-compatible endpoint),
``ragas-function`` (a deterministic Ragas ``@discrete_metric``) and ``imported`` (verdicts
replayed from a results file).
"""

from . import _function, _imported, _llm  # noqa: F401  (register the built-in kinds)
from ._input import JUDGE_VISIBLE_FIELDS, JudgeInput
from ._ping import PING_CODES, PING_INPUT, PingResult, aping, ping
from ._registry import (
    CaseRef,
    Judge,
    NotAvailable,
    Verdict,
    available_kinds,
    build_judge,
    load_candidate,
    make_identity,
    ragas_version,
    register_kind,
)
from ._spec import (
    CANDIDATE_SCHEMA_VERSION,
    CHANGE_KINDS,
    CandidateSpec,
    Endpoint,
    Pricing,
    Threshold,
    derive_spec,
    load_spec,
    save_spec,
)

__all__ = [
    "CANDIDATE_SCHEMA_VERSION",
    "CHANGE_KINDS",
    "JUDGE_VISIBLE_FIELDS",
    "CandidateSpec",
    "CaseRef",
    "Endpoint",
    "Judge",
    "JudgeInput",
    "NotAvailable",
    "PING_CODES",
    "PING_INPUT",
    "PingResult",
    "Pricing",
    "Threshold",
    "Verdict",
    "aping",
    "available_kinds",
    "build_judge",
    "load_candidate",
    "load_spec",
    "derive_spec",
    "save_spec",
    "make_identity",
    "ping",
    "ragas_version",
    "register_kind",
]

from ..noise import _judge as _noise_judge  # noqa: E402,F401  (register ragas-noise)
from ..ranking import _judges as _ranking_kinds  # noqa: E402,F401  (register ragas-ranking, ragas-ranking-function)
