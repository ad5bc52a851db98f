"""Judge candidates: specs, fingerprints, the allow-listed judge input and the kind registry
(docs/formats.md, "Judge kinds")."""

from ._code import (
    NOT_INSTALLED,
    CodeCoverage,
    code_coverage,
    distribution_key,
    project_requirements,
    requirement_allows,
)
from ._function import import_metric
from ._input import JUDGE_VISIBLE_FIELDS, JudgeInput
from ._llm import Exchange, LLMJudge, has_reason
from ._ping import PING_INPUT, PingResult, aping, ping
from ._registry import (
    BUILTIN_KINDS,
    CaseRef,
    HoldsResources,
    Judge,
    Kind,
    ModelJudge,
    NotAvailable,
    ReplayJudge,
    Verdict,
    available_kinds,
    build_judge,
    declare_kind,
    kind_info,
    kinds_where,
    load_candidate,
    make_identity,
    ragas_version,
    register_kind,
)
from ._spec import CHANGE_KINDS, CandidateSpec, Threshold, derive_spec, load_spec, save_spec

__all__ = [
    "NOT_INSTALLED",
    "CodeCoverage",
    "code_coverage",
    "distribution_key",
    "project_requirements",
    "requirement_allows",
    "Exchange",
    "import_metric",
    "has_reason",
    "BUILTIN_KINDS",
    "CHANGE_KINDS",
    "JUDGE_VISIBLE_FIELDS",
    "CandidateSpec",
    "CaseRef",
    "HoldsResources",
    "Judge",
    "JudgeInput",
    "Kind",
    "LLMJudge",
    "ModelJudge",
    "NotAvailable",
    "PING_INPUT",
    "PingResult",
    "ReplayJudge",
    "Threshold",
    "Verdict",
    "aping",
    "available_kinds",
    "build_judge",
    "declare_kind",
    "kind_info",
    "kinds_where",
    "load_candidate",
    "load_spec",
    "derive_spec",
    "save_spec",
    "make_identity",
    "ping",
    "ragas_version",
    "register_kind",
]
