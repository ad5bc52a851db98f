"""The judge interface and the small registry of judge kinds.

A kind is a factory ``(spec, spec_path) -> Judge`` (a judge class is one). The built-in kinds
are declared in :data:`BUILTIN_KINDS` as ``"module:attribute"`` stubs: a kind's module is
imported only when a judge of that kind is built, so this package imports none of the
packages that define kinds (``workbench.noise``, ``workbench.ranking``), and they import it.
Kinds outside the core register with :func:`register_kind` (a decorator, for a factory that
is already imported) or :func:`declare_kind` (a stub, imported on first use).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

from .._io import sha256_json
from ..errors import Problem, WorkbenchError
from ..results import EvaluatorError, JudgeIdentity
from ._input import JudgeInput
from ._spec import CandidateSpec, load_spec


@dataclass(frozen=True)
class CaseRef:
    """Which case and repeat a call is for: bookkeeping the engine passes beside the judge input.

    It carries no label and never reaches a prompt; kinds that replay recorded verdicts
    (``imported``) use it to find the record.
    """

    case_id: str
    response_hash: str
    repeat: int = 0
    presentation: dict[str, Any] | None = None
    """How the case is presented (e.g. candidate order), for kinds where that matters."""


@dataclass(frozen=True)
class Verdict:
    """What one judge call produced: a label, or an evaluator error, plus usage."""

    value: str | None
    reason: str | None = None
    error: EvaluatorError | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    rendered_request: Any | None = None
    """The request as actually sent, when the kind captures it on the wire."""
    retryable: bool = False
    """The error is transient (rate limit, 5xx, timeout, connection): the engine may retry."""
    retry_after_s: float | None = None
    """The provider's Retry-After, when it sent one."""
    latency_s: float | None = None
    """Latency to record instead of the measured one (replayed verdicts)."""
    cost_usd: float | None = None
    """Cost to record instead of the price-table one (replayed verdicts)."""
    score: float | None = None
    """The raw score of a score-based judge, before its threshold (or the whole result)."""
    order: list[str] | None = None
    """A ranking judge's returned order, mapped back to stable candidate ids."""
    endpoint_failure: str | None = None
    """``connection``, ``auth`` (HTTP 401/403) or ``not_found`` (HTTP 404) when the endpoint
    itself failed; consecutive ones trip the run's circuit breaker."""

    @classmethod
    def failed(cls, kind: str, message: str, *, retryable: bool = False, **extra: Any) -> Verdict:
        return cls(
            value=None,
            reason=None,
            error=EvaluatorError(kind=kind, message=message, retryable=retryable),
            retryable=retryable,
            **extra,
        )


class NotAvailable(Exception):
    """Raised by a judge that has no verdict for a case (e.g. an imported file lacks it).

    The engine leaves the case unrun, so it is *missing*, never an error or a verdict.
    """


class Judge(Protocol):
    """A runnable judge candidate."""

    spec: CandidateSpec
    identity: JudgeIdentity

    def render(self, judge_input: JudgeInput, ref: CaseRef) -> dict[str, Any]:
        """The planned evaluator-visible request (deterministic; its hash keys the cache)."""
        ...

    def estimate_cost(self, judge_input: JudgeInput) -> float:
        """Upper estimate of one call's cost in USD, used to stop before a budget is exceeded."""
        ...

    async def evaluate(self, judge_input: JudgeInput, ref: CaseRef) -> Verdict:
        """Judge one case. Never raises for evaluator failures: returns ``Verdict.failed``."""
        ...


JudgeFactory = Callable[[CandidateSpec, Path], Judge]

BUILTIN_KINDS: dict[str, str] = {
    "ragas-llm": "workbench.judges._llm:LLMJudge",
    "ragas-function": "workbench.judges._function:FunctionJudge",
    "imported": "workbench.judges._imported:ImportedJudge",
    "ragas-noise": "workbench.noise._judge:NoiseJudge",
    "ragas-ranking": "workbench.ranking._judges:LLMRankingJudge",
    "ragas-ranking-function": "workbench.ranking._judges:FunctionRankingJudge",
}
"""kind -> ``"module:attribute"`` of its factory, for every kind the workbench ships."""

_KINDS: dict[str, JudgeFactory | str] = dict(BUILTIN_KINDS)
"""kind -> its factory, or the ``"module:attribute"`` stub that names it until first use."""


def register_kind(name: str) -> Callable[[JudgeFactory], JudgeFactory]:
    """Register a judge kind under ``name``: a decorator for its factory (or judge class)."""

    def decorate(factory: JudgeFactory) -> JudgeFactory:
        _KINDS[name] = factory
        return factory

    return decorate


def declare_kind(name: str, target: str) -> None:
    """Register a judge kind under ``name`` by the import path of its factory,
    ``"module:attribute"``.

    Nothing is imported now: the module loads when a judge of this kind is first built.
    """
    module, _, attribute = target.partition(":")
    if not module or not attribute:
        raise ValueError(f"a judge kind is declared as 'module:attribute', got {target!r}")
    _KINDS[name] = target


def available_kinds() -> list[str]:
    return sorted(_KINDS)


def _factory(kind: str, spec_path: Path) -> JudgeFactory:
    """The factory of ``kind``, importing its module the first time it is asked for."""
    entry = _KINDS.get(kind)
    if entry is None:
        raise WorkbenchError(
            "unknown judge kind",
            [
                Problem(
                    location=str(spec_path),
                    code="unknown_kind",
                    message=f"unknown judge kind {kind!r}",
                    fix="use one of " + ", ".join(available_kinds()),
                )
            ],
        )
    if not isinstance(entry, str):
        return entry
    module, _, attribute = entry.partition(":")
    try:
        factory: JudgeFactory = getattr(importlib.import_module(module), attribute)
    except (ImportError, AttributeError) as exc:
        raise WorkbenchError(
            "judge kind unavailable",
            [
                Problem(
                    location=str(spec_path),
                    code="kind_unavailable",
                    message=(
                        f"judge kind {kind!r} is declared as {entry!r}, which cannot be loaded"
                        f" ({exc})"
                    ),
                    fix="install the package that provides the kind, or correct its declaration",
                )
            ],
        ) from None
    if _KINDS.get(kind) == entry:  # importing it may have registered the factory already
        _KINDS[kind] = factory
    return factory


@functools.cache
def ragas_version() -> str:
    """The installed Ragas version, read once per process (``importlib.metadata`` scans the
    installed distributions on every call, about 2 ms; a process keeps the Ragas it
    imported)."""
    try:
        return metadata.version("ragas")
    except metadata.PackageNotFoundError:  # pragma: no cover - ragas is a dependency
        return "unknown"


def make_identity(spec: CandidateSpec, prompt_sha256: str | None, **extra: Any) -> JudgeIdentity:
    """The judge identity of a spec: every spec field, the prompt hash and the Ragas version.

    ``extra`` adds kind-specific provenance (e.g. the hash of an imported results file).
    """
    # The template's content is covered by prompt_sha256; where it is stored (inline or in a
    # file) is not part of what the judge does. The circuit breaker only decides when a run
    # gives up on an unreachable endpoint, never a verdict: it is not part of the identity.
    # parent/changes declare lineage, they change nothing the judge does: not part of it either.
    excluded: dict[str, Any] = dict.fromkeys(
        ("name", "version", "kind", "model", "prompt", "prompt_file", "parent", "changes"), True
    )
    rest = spec.model_dump(
        mode="json", exclude={**excluded, "endpoint": {"circuit_breaker_after": True}}
    )
    return JudgeIdentity(
        name=spec.name,
        version=spec.version,
        kind=spec.kind,
        model=spec.model,
        prompt_sha256=prompt_sha256,
        ragas_version=ragas_version(),
        params={"spec": rest, "spec_sha256": sha256_json(rest), **extra},
    )


def build_judge(spec: CandidateSpec, spec_path: Path) -> Judge:
    """Build the judge of ``spec``; its kind's module is imported here on first use."""
    return _factory(spec.kind, spec_path)(spec, spec_path)


def load_candidate(path: str | Path) -> Judge:
    """Read a candidate spec and build its judge."""
    spec, spec_path = load_spec(path)
    return build_judge(spec, spec_path)
