"""The judge interface, its optional capabilities (Protocols the engine checks), and the registry
of judge kinds: a factory ``(spec, spec_path) -> Judge`` with flags (:class:`Kind`). Built-in
kinds are ``"module:attribute"`` stubs, imported when a judge of the kind is first built.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from .._io import sha256_json
from ..errors import refusal
from ..results import EvaluatorError, JudgeIdentity
from ._spec import CandidateSpec, load_spec

if TYPE_CHECKING:
    from ..gold import GoldDataset


@dataclass(frozen=True)
class CaseRef:
    """Which case and repeat a call is for (no label; never reaches a prompt)."""

    case_id: str
    response_hash: str
    repeat: int = 0
    presentation: dict[str, Any] | None = None


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
    retry_after_s: float | None = None
    latency_s: float | None = None
    """Latency to record instead of the measured one (replayed verdicts)."""
    cost_usd: float | None = None
    """Cost to record instead of the price-table one (replayed verdicts)."""
    score: float | None = None
    order: list[str] | None = None
    """A ranking judge's returned order, as stable candidate ids."""
    endpoint_failure: str | None = None
    """The kind of failure of the endpoint itself (:mod:`._http_errors`), for the breaker."""
    raw_response: str | None = None
    """The assistant message text the endpoint returned, before parsing (model judges)."""
    raw_response_source: str | None = None
    """Set when the raw answer was deliberately not kept (``not_kept``: a capture policy)."""

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
    """Raised by a judge without a verdict for a case: the engine leaves it unrun (missing)."""


class Judge(Protocol):
    """A runnable judge candidate: what every kind provides."""

    spec: CandidateSpec
    identity: JudgeIdentity

    def render(self, judge_input: Any, ref: CaseRef) -> dict[str, Any]:
        """The planned evaluator-visible request (deterministic; its hash keys the cache)."""
        ...

    def estimate_cost(self, judge_input: Any) -> float:
        """Upper estimate of one call's cost in USD, used to stop before a budget is exceeded."""
        ...

    async def evaluate(self, judge_input: Any, ref: CaseRef) -> Verdict:
        """Judge one case. Never raises for evaluator failures: returns ``Verdict.failed``."""
        ...


@runtime_checkable
class HoldsResources(Protocol):
    """Capability: resources the engine releases with ``aclose()`` after a run's last call."""

    async def aclose(self) -> None: ...


@runtime_checkable
class ModelJudge(HoldsResources, Protocol):
    """Capability: the judge calls a model at an endpoint (``ragas-llm`` and its subclasses)."""

    endpoint_url: str

    def prepare(self, concurrency: int) -> None: ...

    def secrets(self) -> list[str]: ...

    def estimate_usage(self, judge_input: Any) -> tuple[int, int, str] | None: ...


@runtime_checkable
class PromptedJudge(Protocol):
    """Capability: the judge fills a prompt template (held-out text in it is leakage) that shows
    some judge-visible fields and not others."""

    template: str

    def shown_fields(self) -> frozenset[str] | None: ...


@runtime_checkable
class ReplayJudge(Protocol):
    """Capability: replays verdicts produced elsewhere; ``check_gold`` raises unless they were
    produced against ``dataset``."""

    def check_gold(self, dataset: GoldDataset) -> None: ...


JudgeFactory = Callable[[CandidateSpec, Path], Judge]

Output = Literal["label", "ranking", "score"]


@dataclass(frozen=True)
class Kind:
    """A registered judge kind: its factory and the flags other commands read."""

    target: str | JudgeFactory
    """``"module:attribute"`` of the factory, or the factory itself."""
    output: Output = "label"
    deterministic: bool = False
    """It makes no model call: CI runs it over the controls on every change."""
    replayed: bool = False
    """Its verdicts were recorded elsewhere and are replayed, never re-run."""
    command: str = "workbench run --candidate {spec} --gold G --partition P --out DIR"
    """The command that runs a candidate of this kind (``{spec}``: its spec file)."""


_RANKING = "workbench ranking run --candidate {spec} --fixtures FILE --policy P"

BUILTIN_KINDS: dict[str, Kind] = {
    "ragas-llm": Kind("workbench.judges._llm:LLMJudge"),
    "ragas-function": Kind("workbench.judges._function:FunctionJudge", deterministic=True),
    "imported": Kind(
        "workbench.judges._imported:ImportedJudge",
        replayed=True,
        command=(
            "workbench ci contracts (it checks the results file; an imported judge's verdicts are"
            " replayed, never re-run)"
        ),
    ),
    "ragas-noise": Kind(
        "workbench.noise:NoiseJudge",
        output="score",
        command="workbench noise --candidate {spec} --pairs FILE --sentinels-only",
    ),
    "ragas-ranking": Kind("workbench.ranking:LLMRankingJudge", output="ranking", command=_RANKING),
    "ragas-ranking-function": Kind(
        "workbench.ranking:FunctionRankingJudge",
        output="ranking",
        deterministic=True,
        command=_RANKING,
    ),
}

_KINDS: dict[str, Kind] = dict(BUILTIN_KINDS)


def register_kind(name: str, **flags: Any) -> Callable[[JudgeFactory], JudgeFactory]:
    """Register a judge kind under ``name``: a decorator for its factory, with :class:`Kind`'s
    ``flags``."""

    def decorate(factory: JudgeFactory) -> JudgeFactory:
        _KINDS[name] = Kind(factory, **flags)
        return factory

    return decorate


def declare_kind(name: str, target: str, **flags: Any) -> None:
    """Register a judge kind under ``name`` by its factory's ``"module:attribute"`` (imported when
    a judge of the kind is first built), with :class:`Kind`'s ``flags``."""
    module, _, attribute = target.partition(":")
    if not module or not attribute:
        raise ValueError(f"a judge kind is declared as 'module:attribute', got {target!r}")
    _KINDS[name] = Kind(target, **flags)


def kind_info(name: str) -> Kind | None:
    return _KINDS.get(name)


def kinds_where(**flags: Any) -> tuple[str, ...]:
    """The registered kinds whose :class:`Kind` flags have these values, in registration order."""
    return tuple(
        name
        for name, kind in _KINDS.items()
        if all(getattr(kind, flag) == value for flag, value in flags.items())
    )


def available_kinds() -> list[str]:
    return sorted(_KINDS)


def _factory(kind: str, spec_path: Path) -> JudgeFactory:
    entry = _KINDS.get(kind)
    if entry is None:
        message = f"unknown judge kind {kind!r}"
        fix = "use one of " + ", ".join(available_kinds())
        raise refusal("unknown judge kind", str(spec_path), "unknown_kind", message, fix)
    if not isinstance(entry.target, str):
        return entry.target
    module, _, attribute = entry.target.partition(":")
    try:
        factory: JudgeFactory = getattr(importlib.import_module(module), attribute)
    except (ImportError, AttributeError) as exc:
        raise refusal(
            "judge kind unavailable",
            str(spec_path),
            "kind_unavailable",
            f"judge kind {kind!r} is declared as {entry.target!r}, which cannot be loaded ({exc})",
            "install the package that provides the kind, or correct its declaration",
        ) from None
    if _KINDS.get(kind) == entry:  # importing it may have registered the factory already
        _KINDS[kind] = dataclasses.replace(entry, target=factory)
    return factory


@functools.cache
def ragas_version() -> str:
    """The installed Ragas version, read once per process."""
    try:
        return metadata.version("ragas")
    except metadata.PackageNotFoundError:  # pragma: no cover - ragas is a dependency
        return "unknown"


def make_identity(spec: CandidateSpec, prompt_sha256: str | None, **extra: Any) -> JudgeIdentity:
    """The judge identity of a spec: every field that changes verdicts, the prompt hash, the
    Ragas version and kind-specific ``extra`` (not where the prompt is stored, the circuit
    breaker or the declared lineage)."""
    excluded: dict[str, Any] = dict.fromkeys(
        ("name", "version", "kind", "model", "prompt", "prompt_file", "parent", "changes")
        + ("omitted_fields",),
        True,
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
    """Build the judge of ``spec``."""
    return _factory(spec.kind, spec_path)(spec, spec_path)


def load_candidate(path: str | Path) -> Judge:
    """Read a candidate spec and build its judge."""
    spec, spec_path = load_spec(path)
    return build_judge(spec, spec_path)
