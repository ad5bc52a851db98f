"""The judge-result contract (``docs/formats.md#judge-results``): one JSON line per case per
attempt, with either a verdict (``value``) or an evaluator error (``error``), never both."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import ConfigDict, Field, field_validator, model_validator

from .._io import sha256_json
from .._record import Record

RESULT_SCHEMA_VERSION = 2
"""Version of the judge-result record format. 2 made ``reason``, ``partition``, ``attempt`` and
``repeat`` required (version 1 filled them with silent defaults) and added ``migration``."""

REQUIRED_SINCE_V2: tuple[str, ...] = ("reason", "partition", "attempt", "repeat")
"""Fields version 1 defaulted when absent and version 2 requires. Only an explicit, versioned
migration (:func:`workbench.results.migrate_record`) may fill them, and it records that it did."""

ERROR_KINDS: tuple[str, ...] = (
    ("provider_error", "rate_limited", "timeout")
    + ("unparseable", "invalid_label", "refusal")
    + ("judge_exception", "missing_verdict", "invalid_ranking", "invalid_score", "missing_reason")
)
"""Documented evaluator-error kinds. Importers and judge kinds may only use these."""

IDENTITY_FIELDS: dict[str, tuple[str, ...]] = {
    "ragas-llm": ("model", "prompt_sha256", "ragas_version"),
    "ragas-function": ("prompt_sha256", "ragas_version"),
}
"""The fingerprint fields a judge kind's identity must fill (``fingerprint_incomplete``
otherwise): results of an identity missing them are refused wherever they meet gold."""


class _Record(Record):
    # Numbers are finite; ints, floats and bools are strict (``"1"`` is not an attempt
    # number, ``1.0`` is not an int, ``"false"`` is not a bool): see the per-field ``strict``.
    model_config = ConfigDict(allow_inf_nan=False)


class JudgeIdentity(_Record):
    """Everything that determines what a judge does. Its hash is the judge fingerprint."""

    name: str = Field(min_length=1)
    """Candidate name, e.g. ``rubric-judge``."""
    version: str = Field(min_length=1)
    """Candidate version, e.g. ``2``."""
    kind: str = Field(min_length=1)
    """Registered judge kind: ``ragas-llm``, ``ragas-function`` or ``imported``."""
    model: str | None = None
    """Evaluator model name, or None for deterministic judges."""
    prompt_sha256: str | None = None
    """sha256 of the prompt template (for function judges, of the function's source)."""
    ragas_version: str | None = None
    """Installed Ragas version the judge ran with."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Generation parameters and the rest of the candidate spec that affects verdicts."""

    def fingerprint(self) -> str:
        """sha256 over the canonical JSON of this identity."""
        return sha256_json(self.model_dump(mode="json"))


class EvaluatorError(_Record):
    """Why an attempt produced no verdict."""

    kind: str
    """One of :data:`ERROR_KINDS`."""
    message: str
    """What happened, without secrets."""
    retryable: bool = Field(default=False, strict=True)
    """Transient (rate limit, 5xx, timeout, connection): a later attempt may succeed."""


class ResultMigration(_Record):
    """What an explicit migration filled in a record written under an older schema version."""

    from_version: int
    """The schema version the record was written under."""
    to_version: int
    """The schema version it was migrated to."""
    function: str
    """The migration function that filled it, e.g. ``workbench.results.migrate_v1_to_v2``."""
    filled: dict[str, Any]
    """Every field the record lacked and the migration filled, with the value filled (the older
    version's documented default, or the partition read from the gold)."""
    partition_source: str | None = None
    """Where a filled ``partition`` came from (``gold <dataset sha256>``); None when not filled."""
    migrated_at: datetime
    """When the migration ran (UTC)."""


RAW_RESPONSE_SOURCES: tuple[str, ...] = (
    "provider",
    "no_answer",
    "no_model_call",
    "imported",
    "not_kept",
)
"""Where a result's ``raw_response`` came from: ``provider`` (the assistant message text the
endpoint returned), ``no_answer`` (a model judge whose call returned no message text: a refusal,
an HTTP error, a timeout), ``no_model_call`` (a deterministic judge: there is no provider text)
``imported`` (verdicts produced elsewhere: the import carries no provider text) and ``not_kept``
(a capture policy keeps digests and excerpts only: a ranking run's ``digest_and_excerpts``)."""

EVIDENCE_STATUSES: tuple[str, ...] = ("full", "truncated", "omitted", "absent")
"""What the judge saw of one evidence field: ``full`` (all of it), ``truncated`` (the leading
``chars_sent`` characters only: cut or excerpted), ``omitted`` (none of it: the prompt does not
show the field) and ``absent`` (the case has no such field)."""


class EvidenceSeen(_Record):
    """What the judge actually saw of one judge-visible field of a case."""

    field: str
    """The judge argument (``user_input``, ``response``, ``grading_notes``, ``reference``,
    ``retrieved_contexts``)."""
    chars_in_case: int = Field(ge=0, strict=True)
    """Characters of the field in the gold case (all passages, for contexts)."""
    chars_sent: int = Field(ge=0, strict=True)
    """Characters of it found in the request sent, from its start (per passage, for contexts)."""
    status: str
    """One of :data:`EVIDENCE_STATUSES`."""

    @field_validator("status")
    @classmethod
    def _known_status(cls, value: str) -> str:
        if value not in EVIDENCE_STATUSES:
            raise ValueError(f"status {value!r} is not one of {EVIDENCE_STATUSES}")
        return value

    @property
    def truncated(self) -> bool:
        return self.status == "truncated"


class JudgeResult(_Record):
    """One attempt of one judge on one case (and one repeat index)."""

    schema_version: int = Field(default=RESULT_SCHEMA_VERSION, strict=True)
    """Result record format version (2). Readers route a record whose ``schema_version`` is
    absent or older to the migration instead of validating it here."""
    case_id: str = Field(min_length=1)
    """The gold case judged."""
    response_hash: str = Field(min_length=64, max_length=64)
    """sha256 of the response the judge saw; must equal the gold record's."""
    value: str | None
    """The verdict: a label from the rubric vocabulary, or None when ``error`` is set."""
    reason: str | None
    """The judge's stated reason; required (null when the judge gave none, e.g. on an error)."""
    score: float | None = Field(default=None, strict=True)
    """For score-based judges: the score (the verdict, if any, was thresholded from it); for
    score-only metrics such as noise sensitivity, the result itself."""
    order: list[str] | None = None
    """For ranking judges: the returned order, mapped back to stable candidate ids."""
    judge: JudgeIdentity
    """What judged."""
    judge_fingerprint: str
    """sha256 of ``judge``; all results joined in one analysis must share it."""
    run_id: str
    """The run that produced the attempt."""
    partition: str = Field(min_length=1)
    """Partition of the case, copied from gold at run time (or the run's label for non-gold
    runs: ``controls``, ``sentinels``, a ranking battery ...). Required."""
    started_at: datetime | None = None
    """When the attempt started (UTC)."""
    latency_s: float | None = Field(default=None, ge=0, strict=True)
    """Wall time of the attempt."""
    tokens_in: int | None = Field(default=None, ge=0, strict=True)
    """Prompt tokens reported by the provider."""
    tokens_out: int | None = Field(default=None, ge=0, strict=True)
    """Completion tokens reported by the provider."""
    cost_usd: float | None = Field(default=None, ge=0, strict=True)
    """Cost from the candidate's price table."""
    error: EvaluatorError | None = None
    """Set when the attempt produced no verdict."""
    attempt: int = Field(ge=1, strict=True)
    """1-based attempt number; retries of one case and repeat share everything but this.
    Required."""
    repeat: int = Field(ge=0, strict=True)
    """0-based repeat index for repeatability studies; alignment uses one repeat at a time.
    Required."""
    rendered_request_sha256: str | None = None
    """sha256 of the canonical JSON of the evaluator-visible request."""
    rendered_request: Any | None = None
    """The evaluator-visible request itself (e.g. ``{"messages": [...]}``), when stored inline."""
    rendered_request_ref: str | None = None
    """Pointer to the stored request (path relative to the results file) when not inline."""
    presentation: dict[str, Any] | None = None
    """How candidates were presented (e.g. presented order) for ranking and pairwise judges."""
    cached_from_run_id: str | None = None
    """Set when the verdict was reused from the cache instead of calling the judge: the run that
    produced it."""
    dataset_sha256: str | None = None
    """Lineage: hash of the gold dataset the case was drawn from when the attempt ran."""
    rubric_version: str | None = None
    """Lineage: the rubric version of that gold."""
    migration: ResultMigration | None = None
    """Set only by an explicit migration from an older schema version: what it filled. None on
    records written under the current version."""
    raw_response: str | None = None
    """The provider's raw answer before parsing: the exact assistant message text the endpoint
    returned for the attempt's last call (keys redacted). None when ``raw_response_source`` is
    not ``provider``."""
    raw_response_source: str | None = None
    """Why ``raw_response`` is what it is, one of :data:`RAW_RESPONSE_SOURCES`; None on records
    written before the workbench kept raw answers."""
    evidence_seen: list[EvidenceSeen] | None = None
    """What the judge actually saw of each judge-visible field (characters in the case and sent,
    truncation); None on records written before the workbench measured it."""

    @field_validator("schema_version")
    @classmethod
    def _current_version(cls, value: int) -> int:
        if value != RESULT_SCHEMA_VERSION:
            raise ValueError(
                f"schema_version {value} is not {RESULT_SCHEMA_VERSION}: older records are read"
                " through an explicit migration (`workbench migrate results FILE`), newer ones"
                " need a newer workbench"
            )
        return value

    @field_validator("raw_response_source")
    @classmethod
    def _known_source(cls, value: str | None) -> str | None:
        if value is not None and value not in RAW_RESPONSE_SOURCES:
            raise ValueError(f"raw_response_source {value!r} is not one of {RAW_RESPONSE_SOURCES}")
        return value

    @property
    def evidence_truncated(self) -> list[str]:
        """The judge-visible fields the judge saw only part of."""
        return [seen.field for seen in self.evidence_seen or () if seen.truncated]

    @model_validator(mode="after")
    def _verdict_xor_error(self) -> JudgeResult:
        if self.error is None and self.value is None and self.score is None:
            raise ValueError(
                "a result needs a value (verdict), a score, or an error; nothing at all is not"
                " allowed"
            )
        if self.error is not None and (self.value is not None or self.score is not None):
            raise ValueError(
                "a result with an error must have value and score null: errors are never verdicts"
            )
        return self

    def request_hash_matches(self) -> bool | None:
        """Whether the inline request hashes to ``rendered_request_sha256`` (None if not inline)."""
        if self.rendered_request is None or self.rendered_request_sha256 is None:
            return None
        return sha256_json(self.rendered_request) == self.rendered_request_sha256

    @property
    def is_error(self) -> bool:
        return self.error is not None


def has_reason(reason: Any) -> bool:
    """Whether a judge's stated reason is present and not blank."""
    return isinstance(reason, str) and bool(reason.strip())


def missing_identity_fields(judge: JudgeIdentity) -> list[str]:
    """The fields :data:`IDENTITY_FIELDS` requires of ``judge``'s kind that are null or blank."""
    return [
        name
        for name in IDENTITY_FIELDS.get(judge.kind, ())
        if not has_reason(getattr(judge, name))  # a present, non-blank string
    ]


def states_reasons(judge: JudgeIdentity) -> bool:
    """Whether every verdict of ``judge`` must state its reason (a ``ragas-llm`` judge); a
    verdict without one is refused (``verdict_reason_missing``)."""
    return judge.kind == "ragas-llm"
