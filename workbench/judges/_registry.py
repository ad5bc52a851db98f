"""The judge interface, its optional capabilities, and the small registry of judge kinds.

Every judge is a :class:`Judge`. What only some judges do is a capability Protocol the engine
checks with ``isinstance``: :class:`ModelJudge` (calls a model at an endpoint),
:class:`HoldsResources` (has something to close after a run) and :class:`ReplayJudge` (replays
verdicts recorded against some gold).

A kind is a factory ``(spec, spec_path) -> Judge`` (a judge class is one) and the flags other
commands read (:class:`Kind`). The built-in kinds are declared in :data:`BUILTIN_KINDS` as
``"module:attribute"`` stubs: a kind's module is imported only when a judge of that kind is
built, so this package imports none of the packages that define kinds (``workbench.noise``,
``workbench.ranking``), and they import it. Kinds outside the core register with
:func:`register_kind` (a decorator, for a factory that is already imported) or
:func:`declare_kind` (a stub, imported on first use).
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
from ..errors import Problem, WorkbenchError
from ..results import EvaluatorError, JudgeIdentity
from ._spec import CandidateSpec, load_spec

if TYPE_CHECKING:
    from ..gold import GoldDataset


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
    """When the endpoint itself failed, not this case: ``connection``, ``auth`` (HTTP 401/403, or
    a body about the key), ``proxy`` (a proxy refusing from its own configuration: no database
    for virtual keys, a budget, a team), ``not_found`` (HTTP 404, or a body naming an unknown
    model) or ``bad_request`` (any other HTTP 400 not about this case's content; see
    :mod:`workbench.judges._http_errors`); consecutive ones trip the run's circuit breaker."""

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
    """Capability: the judge holds resources (HTTP clients, open files) the engine releases with
    ``aclose()`` after a run's last call, on the run's event loop."""

    async def aclose(self) -> None: ...


@runtime_checkable
class ModelJudge(HoldsResources, Protocol):
    """Capability: the judge calls a model at an endpoint (``ragas-llm`` and its subclasses).

    The engine sizes its HTTP clients for the run's concurrency before the first call
    (``prepare``), reserves budget from the prompt's token estimate (``estimate_usage``; None: use
    ``estimate_cost``), redacts ``secrets()`` from everything it records, and names
    ``endpoint_url`` in the run summary and in the circuit breaker's message.
    """

    endpoint_url: str

    def prepare(self, concurrency: int) -> None: ...

    def secrets(self) -> list[str]: ...

    def estimate_usage(self, judge_input: Any) -> tuple[int, int, str] | None: ...


@runtime_checkable
class ReplayJudge(Protocol):
    """Capability: the judge replays verdicts produced elsewhere (``imported``).

    ``check_gold(dataset)`` raises :class:`~workbench.errors.WorkbenchError` unless the verdicts
    were produced against ``dataset``; every run calls it before it plans a case.
    """

    def check_gold(self, dataset: GoldDataset) -> None: ...


JudgeFactory = Callable[[CandidateSpec, Path], Judge]

Output = Literal["label", "ranking", "score"]


@dataclass(frozen=True)
class Kind:
    """A registered judge kind: its factory and the flags other commands read."""

    target: str | JudgeFactory
    """``"module:attribute"`` of the factory ``(spec, spec_path) -> Judge`` (imported when a judge
    of the kind is first built), or the factory itself."""
    output: Output = "label"
    """What a result carries: a ``label`` (align, gate, certify), a ``ranking`` (order) or a
    ``score`` (noise sensitivity)."""
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
"""Every kind the workbench ships: its ``"module:attribute"`` stub and flags."""

_KINDS: dict[str, Kind] = dict(BUILTIN_KINDS)
"""Every registered kind (the built-in ones and those registered since)."""


def register_kind(name: str, **flags: Any) -> Callable[[JudgeFactory], JudgeFactory]:
    """Register a judge kind under ``name``: a decorator for its factory (or judge class);
    ``flags`` are :class:`Kind`'s (``output``, ``deterministic``, ``replayed``, ``command``)."""

    def decorate(factory: JudgeFactory) -> JudgeFactory:
        _KINDS[name] = Kind(factory, **flags)
        return factory

    return decorate


def declare_kind(name: str, target: str, **flags: Any) -> None:
    """Register a judge kind under ``name`` by the import path of its factory,
    ``"module:attribute"``, with :class:`Kind`'s ``flags``.

    Nothing is imported now: the module loads when a judge of this kind is first built.
    """
    module, _, attribute = target.partition(":")
    if not module or not attribute:
        raise ValueError(f"a judge kind is declared as 'module:attribute', got {target!r}")
    _KINDS[name] = Kind(target, **flags)


def kind_info(name: str) -> Kind | None:
    """The registered kind ``name`` (None when there is none)."""
    return _KINDS.get(name)


def kinds_where(**flags: Any) -> tuple[str, ...]:
    """The registered kinds whose :class:`Kind` flags have these values, in registration order,
    e.g. ``kinds_where(output="label", replayed=False)``."""
    return tuple(
        name
        for name, kind in _KINDS.items()
        if all(getattr(kind, flag) == value for flag, value in flags.items())
    )


def available_kinds() -> list[str]:
    return sorted(_KINDS)


def _factory(kind: str, spec_path: Path) -> JudgeFactory:
    """The factory of ``kind``, importing its module the first time it is asked for."""
    entry = _KINDS.get(kind)
    if entry is None:
        raise _refused(
            "unknown judge kind",
            spec_path,
            "unknown_kind",
            f"unknown judge kind {kind!r}",
            "use one of " + ", ".join(available_kinds()),
        )
    if not isinstance(entry.target, str):
        return entry.target
    module, _, attribute = entry.target.partition(":")
    try:
        factory: JudgeFactory = getattr(importlib.import_module(module), attribute)
    except (ImportError, AttributeError) as exc:
        raise _refused(
            "judge kind unavailable",
            spec_path,
            "kind_unavailable",
            f"judge kind {kind!r} is declared as {entry.target!r}, which cannot be loaded ({exc})",
            "install the package that provides the kind, or correct its declaration",
        ) from None
    if _KINDS.get(kind) == entry:  # importing it may have registered the factory already
        _KINDS[kind] = dataclasses.replace(entry, target=factory)
    return factory


def _refused(summary: str, path: Path, code: str, message: str, fix: str) -> WorkbenchError:
    return WorkbenchError(
        summary, [Problem(location=str(path), code=code, message=message, fix=fix)]
    )


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
