"""Judge candidate specs: versioned YAML files, e.g. ``data/candidates/<name>@<version>.yaml``.

A spec names what judges and where (the endpoint and the NAME of the key's variable; a key itself
is refused).
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from .._args import closest, invalid_arguments
from .._docs import add_field_docs
from .._load import read_yaml, validation_problems
from .._record import Record, SchemaTooNew
from .._redact import find_secrets
from ..errors import Problem, WorkbenchError, problem, refusal

CANDIDATE_SCHEMA_VERSION = 1

MAX_RETRIES_LIMIT = 20

_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
_ENV_EXAMPLES = {
    "api_key_env": ("OPENAI_API_KEY", "never the key itself"),
    "base_url_env": ("WORKBENCH_DEMO_LLM_URL", "not a URL"),
}

CHANGE_KINDS: tuple[str, ...] = (
    "prompt",
    "model",
    "params",
    "function",
    "threshold",
    "labels",
    "endpoint",
    "pricing",
    "kind",
    "results",
    "ragas",
)
"""What a version may declare it changes relative to its ``parent``: a spec field (``prompt``
also covers ``prompt_file`` and its content, ``function`` its module's source), or ``ragas``."""

_DERIVABLE = {name: name for name in CHANGE_KINDS[1:-1]} | {"prompt_file": "prompt"}
"""Spec fields :func:`derive_spec` may replace, and the change kind each one is."""


_OMITTED_WHEN_DEFAULT: dict[str, Any] = {
    "base_url_env": None,
    "provider": "openai",
    "deployment": None,
    "api_version": None,
    "json_mode": "json_object",
}
"""Endpoint fields left out of the dump (and the fingerprint) while they hold their default."""


_PART = ConfigDict(
    frozen=True, extra="forbid", json_schema_extra=add_field_docs, allow_inf_nan=False
)


def _omit(data: Any, defaults: dict[str, Any]) -> Any:
    if isinstance(data, dict):
        for name, default in defaults.items():
            if name in data and data[name] == default:
                del data[name]
    return data


class Endpoint(BaseModel):
    """Where an OpenAI-compatible evaluator is served."""

    model_config = _PART

    base_url: str | None = None
    """Base URL of the OpenAI-compatible API; the default when ``base_url_env`` is unset."""
    base_url_env: str | None = None
    """NAME of an environment variable whose value, when set, is used instead of ``base_url``
    (the name is fingerprinted, the URL is not)."""
    api_key_env: str | None = None
    """NAME of the environment variable that holds the API key. Never the key."""
    timeout_s: float = Field(default=60.0, gt=0, strict=True)
    """Per-call timeout."""
    max_retries: int = Field(default=4, ge=0, le=MAX_RETRIES_LIMIT, strict=True)
    """Retries after a retryable failure (429, 5xx, timeout, connection, unusable answer)."""
    circuit_breaker_after: int = Field(default=8, ge=1, strict=True)
    """Stop the run (incomplete) after this many consecutive calls failed at the endpoint."""
    provider: Literal["openai", "azure"] = "openai"
    """``openai``: any OpenAI-compatible server, ``Authorization: Bearer <key>``. ``azure``: Azure
    OpenAI at the resource endpoint ``base_url``, key in an ``api-key`` header."""
    deployment: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
    """Azure OpenAI deployment name (``provider: azure`` only; required there)."""
    api_version: str | None = Field(
        default=None, pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}(-preview)?$"
    )
    """Azure OpenAI ``api-version``, e.g. ``2024-10-21`` (``provider: azure`` only; required)."""
    json_mode: Literal["json_object", "md_json"] = "json_object"
    """``json_object``: JSON mode (``response_format``); ``md_json``: for servers without it, the
    answer is asked for in a fenced ```` ```json ```` block."""

    @field_validator("api_key_env", "base_url_env")
    @classmethod
    def _env_name_only(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and not _ENV_NAME.match(value):
            example, never = _ENV_EXAMPLES[info.field_name or ""]
            raise ValueError(
                f"{info.field_name} must be the NAME of an environment variable (e.g. {example}),"
                f" {never}"
            )
        return value

    @field_validator("api_version", mode="before")
    @classmethod
    def _api_version_text(cls, value: Any) -> Any:
        import datetime  # YAML reads an unquoted 2024-10-21 as a date

        return value.isoformat() if isinstance(value, datetime.date) else value

    @model_validator(mode="after")
    def _provider_fields(self) -> Endpoint:
        given = [name for name in ("deployment", "api_version") if getattr(self, name) is not None]
        missing = [name for name in ("deployment", "api_version") if name not in given]
        if self.provider != "azure" and given:
            raise ValueError(
                f"{' and '.join(given)} {'apply' if len(given) > 1 else 'applies'} only to"
                " provider: azure; an OpenAI-compatible server takes the model name in model:"
            )
        if self.provider == "azure" and missing:
            raise ValueError(
                f"provider azure needs {' and '.join(missing)} (the Azure deployment name and"
                " the api-version, e.g. 2024-10-21)"
            )
        if self.provider == "azure" and not (self.base_url or self.base_url_env):
            raise ValueError(
                "provider azure needs base_url (or base_url_env): the resource endpoint,"
                " https://<resource>.openai.azure.com"
            )
        return self

    @model_serializer(mode="wrap")
    def _omit_unset_url_env(self, handler: SerializerFunctionWrapHandler) -> Any:
        return _omit(handler(self), _OMITTED_WHEN_DEFAULT)

    def resolved_base_url(self) -> str | None:
        """``$base_url_env`` when set and non-empty, else ``base_url``; ``ValueError`` when the
        variable holds no ``http(s)://host[:port][/path]`` URL or one with credentials."""
        if not self.base_url_env:
            return self.base_url
        value = os.environ.get(self.base_url_env, "").strip()
        if not value:
            return self.base_url
        from urllib.parse import urlsplit

        try:
            parts = urlsplit(value)
            parts.port  # noqa: B018  (raises ValueError on a malformed port)
        except ValueError:
            raise ValueError(f"${self.base_url_env} is not a URL") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"${self.base_url_env} is not an http(s)://host[:port]/path URL")
        if parts.username is not None or parts.password is not None:
            raise ValueError(
                f"${self.base_url_env} holds credentials (user:password@); keys belong in the"
                " variable named by api_key_env"
            )
        return value


class Pricing(BaseModel):
    """Price table used to compute ``cost_usd`` of each call."""

    model_config = _PART

    input_per_million_usd: float = Field(default=0.0, ge=0)
    """USD per million prompt tokens."""
    output_per_million_usd: float = Field(default=0.0, ge=0)
    """USD per million completion tokens."""

    def cost(self, tokens_in: int | None, tokens_out: int | None) -> float:
        return (
            (tokens_in or 0) * self.input_per_million_usd
            + (tokens_out or 0) * self.output_per_million_usd
        ) / 1_000_000


class Threshold(BaseModel):
    """How a score-based judge's score becomes a label. Chosen on calibration data, then frozen."""

    model_config = _PART

    value: float
    """The cut-off score."""
    pass_if: Literal["at_least", "at_most"] = "at_least"
    """``at_least``: score >= value passes; ``at_most``: score <= value passes."""
    pass_label: str = "pass"
    """Label for a score on the passing side."""
    fail_label: str = "fail"
    """Label for a score on the failing side."""

    def label(self, score: float) -> str:
        passes = score >= self.value if self.pass_if == "at_least" else score <= self.value
        return self.pass_label if passes else self.fail_label


class CandidateSpec(Record):
    """A judge candidate, exactly as stored in its YAML file."""

    model_config = ConfigDict(allow_inf_nan=False)

    schema_version: int = CANDIDATE_SCHEMA_VERSION
    """Candidate spec format version."""
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
    """Candidate name."""
    version: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
    """Candidate version; a changed judge is a new version."""
    kind: str
    """Registered judge kind (``workbench.judges.available_kinds()``)."""
    description: str = ""
    """What changed in this version and why."""
    labels: list[str] = Field(min_length=2)
    """The label vocabulary the judge may return."""
    model: str | None = None
    """Evaluator model name (ragas-llm)."""
    prompt: str | None = None
    """Prompt template, inline (ragas-llm); placeholders are judge-visible fields."""
    prompt_file: str | None = None
    """Prompt template file, relative to the spec (ragas-llm)."""
    function: str | None = None
    """``module:attribute`` of a Ragas ``@discrete_metric`` (ragas-function)."""
    results: str | None = None
    """Results file produced elsewhere, relative to the spec (imported)."""
    endpoint: Endpoint = Field(default_factory=Endpoint)
    """OpenAI-compatible endpoint settings."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Generation parameters (temperature, max_tokens, seed ...)."""
    pricing: Pricing = Field(default_factory=Pricing)
    """Price table for cost accounting."""
    threshold: Threshold | None = None
    """For score-based judges (a Ragas ``@numeric_metric``): how a score becomes a label."""
    parent: str | None = Field(
        default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*@[A-Za-z0-9][A-Za-z0-9_.\-]*$"
    )
    """``name@version`` of the candidate this version was derived from (not fingerprinted)."""
    changes: list[str] | None = None
    """What this version changes relative to ``parent``, from :data:`CHANGE_KINDS` (not
    fingerprinted)."""
    omitted_fields: list[str] = Field(default_factory=list)
    """Judge-visible fields (``grading_notes``, ``reference`` ...) the prompt deliberately does not
    show. A run refuses a prompt that omits evidence the cases carry unless it is named here
    (not fingerprinted: it changes no request)."""

    @model_validator(mode="after")
    def _declared_changes(self) -> CandidateSpec:
        if self.changes is not None:
            if self.parent is None:
                raise ValueError(
                    "changes needs parent: name@version of the candidate the changes are"
                    " relative to"
                )
            unknown = [c for c in self.changes if c not in CHANGE_KINDS]
            if unknown:
                raise ValueError(
                    f"changes {unknown} are not change kinds; use {', '.join(CHANGE_KINDS)}"
                )
            if not self.changes or len(set(self.changes)) != len(self.changes):
                raise ValueError("changes must name at least one change kind, each once")
        if self.parent is not None and self.parent == f"{self.name}@{self.version}":
            raise ValueError("parent names this version itself")
        return self

    @model_serializer(mode="wrap")
    def _omit_unset_lineage(self, handler: SerializerFunctionWrapHandler) -> Any:
        return _omit(handler(self), {"parent": None, "changes": None})

    @model_validator(mode="after")
    def _threshold_labels(self) -> CandidateSpec:
        if self.threshold is not None:
            for label in (self.threshold.pass_label, self.threshold.fail_label):
                if label not in self.labels:
                    raise ValueError(
                        f"threshold label {label!r} is not one of labels {self.labels}"
                    )
        return self

    @model_validator(mode="after")
    def _finite_params(self) -> CandidateSpec:
        bad = _non_finite(self.params, "params")
        if bad:
            raise ValueError(f"{NON_FINITE}: {', '.join(bad)}")
        return self

    @model_validator(mode="after")
    def _no_secrets(self) -> CandidateSpec:
        found = find_secrets(self.model_dump(mode="json"))
        if found:
            raise ValueError(
                "; ".join(f"{field} holds {what}" for field, what in found) + f"; {SECRET_FIX}"
            )
        return self

    @property
    def label(self) -> str:
        return f"{self.name}@{self.version}"


NON_FINITE = "not a finite number (.nan, .inf and -.inf would be recorded as null)"


def _non_finite(obj: Any, where: str) -> list[str]:
    """Paths of every NaN or infinite float in ``obj``."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return [where]
    if isinstance(obj, dict):
        return [p for k, v in obj.items() for p in _non_finite(v, f"{where}.{k}")]
    if isinstance(obj, list):
        return [p for i, v in enumerate(obj) for p in _non_finite(v, f"{where}[{i}]")]
    return []


SECRET_FIX = (
    "remove it: put the key in an environment variable and name that variable in"
    " endpoint.api_key_env (a spec never holds a credential)"
)


def secret_problems(raw: Any, location: str) -> list[Problem]:
    """One ``secret_in_spec`` problem per field of a spec that holds something secret-looking."""
    return [
        problem(location, "secret_in_spec", f"{field} holds {what}", SECRET_FIX)
        for field, what in find_secrets(raw)
    ]


def load_spec(path: str | Path) -> tuple[CandidateSpec, Path]:
    """Read a candidate spec; raise :class:`WorkbenchError` listing every problem."""
    path = Path(path)
    loc = str(path)
    if not path.exists():
        raise refusal(
            "no candidate",
            loc,
            "candidate_missing",
            "the candidate spec does not exist",
            "point --candidate at data/candidates/<name>@<version>.yaml",
        )
    raw = read_yaml(path, prefix="candidate")
    if not isinstance(raw, dict):
        raise refusal(
            "unreadable candidate",
            loc,
            "candidate_shape",
            "the spec must be a YAML mapping",
            "write the spec as key: value pairs",
        )
    secrets = secret_problems(raw, loc)
    if secrets:  # before validation, so no error message can echo the value
        raise WorkbenchError("a candidate spec must not hold secrets", secrets)
    bad = _non_finite(raw, "spec")
    if bad:
        fix = "write a finite number"
        problems = [problem(loc, "non_finite_number", f"{w[5:]} is {NON_FINITE}", fix) for w in bad]
        raise WorkbenchError("invalid candidate", problems)
    try:
        spec = CandidateSpec.model_validate(raw)
    except ValidationError as exc:
        raise WorkbenchError(
            "invalid candidate",
            validation_problems(
                exc,
                at=loc,
                code="candidate_invalid",
                root="spec",
                fix="correct this field; see docs/formats.md#candidate-specs",
                expand=_retries_problem,
            ),
        ) from None
    except SchemaTooNew as exc:
        raise WorkbenchError("candidate from a newer workbench", [exc.problem_at(loc)]) from None
    expected = spec.label
    if path.stem != expected:
        message = f"file name {path.name!r} does not match name@version {expected!r}"
        fix = f"rename the file to {expected}.yaml so versions cannot be confused"
        raise refusal("invalid candidate", loc, "candidate_filename", message, fix)
    return spec, path


def _retries_problem(err: Any, _where: str, loc: str) -> list[Problem] | None:
    if tuple(err["loc"]) == ("endpoint", "max_retries") and err["type"] == "less_than_equal":
        return [
            problem(
                loc,
                "max_retries_too_high",
                f"endpoint.max_retries is {err.get('input')!r}; at most {MAX_RETRIES_LIMIT}"
                " retries are allowed",
                f"set endpoint.max_retries to {MAX_RETRIES_LIMIT} or less; a provider failing"
                " that often needs attention, not more calls",
            )
        ]
    return None


def derive_spec(
    parent: CandidateSpec,
    *,
    version: str,
    prompt: str | None = None,
    description: str | None = None,
    changes: list[str] | None = None,
    allow_multiple: bool = False,
    **fields: Any,
) -> CandidateSpec:
    """A new candidate version from ``parent``: one declared change at a time.

    ``prompt`` replaces the template inline; ``fields`` replace :data:`_DERIVABLE` fields. The new
    spec records ``parent`` and ``changes`` (given, or inferred from what differs). More than one
    change is refused unless ``allow_multiple``; an undeclared change is refused.
    """
    loc = f"derive({parent.label} -> {parent.name}@{version})"
    current = parent.model_dump(mode="json")
    update: dict[str, Any] = {"version": version}
    if prompt is not None:
        update.update(prompt=prompt, prompt_file=None)
    if description is not None:
        update["description"] = description
    inferred, problems = _changed(current, fields, update, loc, prompt is not None)
    declared = list(dict.fromkeys(changes)) if changes is not None else inferred
    undeclared = [k for k in inferred if k not in declared]
    if undeclared:
        problems.append(
            problem(
                loc,
                "undeclared_change",
                f"the new version changes {', '.join(undeclared)}, which changes={declared}"
                " does not declare",
                "declare every change (changes=[...]), or change only what is declared",
            )
        )
    if len(declared) > 1 and not allow_multiple:
        problems.append(
            problem(
                loc,
                "derive_multiple_changes",
                f"the new version changes {len(declared)} things at once"
                f" ({', '.join(declared)}): a difference in verdicts could not be attributed to"
                " one of them",
                "derive one change per version, or pass allow_multiple=True to record a"
                " multi-change version deliberately",
            )
        )
    if problems:
        raise WorkbenchError(f"{loc}: refused", problems)
    update["parent"] = parent.label
    update["changes"] = declared or None
    try:
        return CandidateSpec.model_validate({**current, **update})
    except ValidationError as exc:  # e.g. version=3 (papermill's -p reads numbers)
        raise invalid_arguments(exc, "derive") from None


def _changed(
    current: dict[str, Any], fields: dict[str, Any], update: dict[str, Any], loc: str, prompt: bool
) -> tuple[list[str], list[Problem]]:
    """The change kinds ``fields`` make, in order, with ``update`` extended by them."""
    inferred = ["prompt"] if prompt else []
    problems: list[Problem] = []
    for name, value in fields.items():
        kind = _DERIVABLE.get(name)
        if kind is None:
            near = closest(name, ["prompt", "description", "changes", *_DERIVABLE])
            problems.append(
                problem(
                    loc,
                    "derive_field",
                    f"{name!r} is not a field a new version may change"
                    + (f"; did you mean {near!r}?" if near else ""),
                    "change one of prompt, " + ", ".join(sorted(_DERIVABLE)),
                )
            )
            continue
        update[name] = value
        dumped = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
        if dumped != current.get(name) and kind not in inferred:
            inferred.append(kind)
    return inferred, problems


def save_spec(spec: CandidateSpec, directory: str | Path) -> Path:
    """Write ``<name>@<version>.yaml`` (an inline prompt to ``prompts/<name>@<version>.md``)
    into ``directory``; never overwrite."""
    from .._io import atomic_write_text

    directory = Path(directory)
    target = directory / f"{spec.name}@{spec.version}.yaml"
    problems: list[Problem] = []
    if target.exists():
        fix = "candidate versions are immutable: choose a new version"
        problems.append(problem(str(target), "version_exists", f"{spec.label} already exists", fix))
    data = spec.model_dump(mode="json", exclude_defaults=True)
    data["schema_version"] = spec.schema_version
    if spec.prompt is not None:
        prompt_rel = f"prompts/{spec.name}@{spec.version}.md"
        if (directory / prompt_rel).exists():
            message = "the prompt file for this version already exists"
            fix = "choose a new version"
            problems.append(problem(str(directory / prompt_rel), "version_exists", message, fix))
        data.pop("prompt", None)
        data["prompt_file"] = prompt_rel
    if problems:
        raise WorkbenchError("cannot save candidate", problems)
    if spec.prompt is not None:
        atomic_write_text(directory / data["prompt_file"], spec.prompt)
    atomic_write_text(target, yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return target
