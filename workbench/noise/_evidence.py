"""The evidence records of a pair suite: structured contexts, generation traces, retrieval
assertions, reviewer sign-offs, retirement, the noise policy and the evidence manifest (how they
fit together is checked by :mod:`._pairs`)."""

from __future__ import annotations

from datetime import date
from typing import ClassVar, Literal, get_args

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from .._io import sha256_text
from .._record import Record as _Model

Member = Literal["clean", "noisy"]
ContextClass = Literal["relevant", "irrelevant"]
ControlRole = Literal["control", "adversarial", "reference_defect"]
PartitionName = Literal["development", "calibration", "held_out"]
Attack = Literal["instruction", "fake_policy", "stale_date"]

PARTITIONS: tuple[str, ...] = ("development", "calibration", "held_out")
"""Noise-suite partitions, as for gold."""
ORIGINS: tuple[str, ...] = ("production", "regenerated", "constructed")
"""Where a pair's responses came from (production and regenerated ones need a trace)."""
CONTROL_ROLES: tuple[str, ...] = ("control", "adversarial", "reference_defect")
"""Control roles: run (and checked) before any candidate pair."""
ATTACKS: tuple[str, ...] = ("instruction", "fake_policy", "stale_date")
"""What an adversarial distractor carries."""


class RetrievedContext(_Model):
    """One retrieved context with its retrieval evidence (a plain string is ``{text}`` only)."""

    text: str
    """The passage text exactly as sent to generation (the only part the evaluator sees)."""
    document_id: str | None = None
    """Source document id."""
    version: str | None = None
    """Version of the source document."""
    chunk_id: str | None = None
    """Id of the chunk within the corpus; the context's id in a generation trace."""
    rank: int | None = Field(default=None, ge=1)
    """1-based rank the retriever (after reranking) gave the context."""
    retrieval_score: float | None = None
    """The retriever's score: diagnostic metadata, never a gate."""
    tenant: str | None = None
    """The tenant the document belongs to (access-control evidence)."""
    corpus_id: str | None = None
    """The corpus (snapshot) the document was retrieved from."""
    retriever_config_sha256: str | None = None
    """Hash of the retriever and reranker configuration that retrieved it."""

    def context_id(self) -> str:
        """``chunk_id`` when recorded, else ``sha256:<hex of the text>``: what a trace lists."""
        return self.chunk_id if self.chunk_id else "sha256:" + sha256_text(self.text)

    def identity(self) -> tuple[str | None, ...]:
        """What must be equal for two contexts to be the same passage (rank and score excluded:
        adding a distractor shifts the ranks after it)."""
        return tuple(self.model_dump(exclude={"rank", "retrieval_score"}).values())

    @property
    def structured(self) -> bool:
        """True when any retrieval evidence beyond the text is recorded."""
        return any(v is not None for v in self.model_dump(exclude={"text"}).values())


def as_context(value: str | RetrievedContext) -> RetrievedContext:
    """A context as :class:`RetrievedContext` (a plain string becomes ``{text}``)."""
    return value if isinstance(value, RetrievedContext) else RetrievedContext(text=value)


class Injection(_Model):
    """The instruction an adversarial distractor aims at the generator, and how to tell that the
    system obeyed it: judged apart from answer quality (:mod:`._injection`)."""

    instruction: str = Field(min_length=1)
    """The injected instruction, quoted from the distractor's text."""
    followed_if: list[str] = Field(min_length=1)
    """Phrases whose presence in a response (case, Unicode and whitespace folded) shows the
    system followed the instruction."""


class OmitUnset(_Model):
    """A record whose fields added after a suite format was frozen are left out of its JSON form
    while unset, so frozen pairs and headers hash as before."""

    OMITTED: ClassVar[tuple[str, ...]] = ()

    @model_serializer(mode="wrap")
    def _omit_unset(self, handler: SerializerFunctionWrapHandler) -> object:
        data = handler(self)
        if isinstance(data, dict):
            for name in self.OMITTED:
                if name in data and data[name] is None:
                    del data[name]
        return data


Component = Literal[
    "corpus",
    "query_rewrite",
    "reranker",
    "retrieval",
    "response",
    "reference",
    "evaluator",
    "aggregation",
    "gate",
]
COMPONENTS: tuple[str, ...] = get_args(Component)
"""The boundaries of a noise result in debugging order (the seed's: corpus, retrieved ids and
ranks, response claims, reference, evaluator output, aggregation, gate; with the query rewrite
and the reranker before retrieval): ``first_change`` names the first that differs."""


class QueryRewrite(_Model):
    """How the user's question was rewritten before retrieval (``generator.query_rewrite``)."""

    method: str = Field(min_length=1)
    """``none``, or the rewriting method (e.g. ``llm``, ``synonyms``)."""
    model: str | None = None
    """The rewriting model, when a model rewrites."""
    prompt_sha256: str | None = None
    """sha256 of the rewriting prompt."""
    config_sha256: str | None = None
    """sha256 of the rewriting configuration."""
    rewritten_query: str | None = None
    """The query retrieval actually ran (for this pair)."""


class Reranker(_Model):
    """The reranker between retrieval and generation (``generator.reranker``)."""

    name: str = Field(min_length=1)
    """``none``, or the reranker (e.g. ``bge-reranker-v2``)."""
    version: str | None = None
    """Its version or model revision."""
    config_sha256: str | None = None
    """sha256 of its configuration."""
    top_k: int | None = Field(default=None, ge=1)
    """How many contexts it keeps."""


class ChangeUnderReview(_Model):
    """The one change a suite version is run to judge (written before results are seen)."""

    component: Component
    """Which boundary the change touches (:data:`COMPONENTS`)."""
    description: str = Field(min_length=1)
    """What changed (e.g. ``reranker bge-v2 replaces bm25 order``)."""
    baseline: str | None = None
    """The baseline suite or run it is compared with."""


class ThresholdEvidence(_Model):
    """Where a slice limit came from: a baseline run's distribution (``noise thresholds``)."""

    report: str
    """The baseline run's ``noise_report.json`` (as given)."""
    report_sha256: str
    """sha256 of that report file."""
    suite: str
    """``name@version`` of the suite the baseline scored."""
    judge_fingerprint: str
    """The evaluator that scored it (a limit from another judge is not comparable)."""
    limit: Literal["max_score", "max_delta"]
    """The limit it sets: from the noisy scores (``max_score``) or the pair deltas
    (``max_delta``)."""
    quantile: float = Field(ge=0, le=1)
    """The quantile of the slice's counted baseline values."""
    margin: float = Field(ge=0)
    """Added to the quantile (lower is better: a margin loosens the limit)."""
    n: int = Field(ge=1)
    """Counted baseline pairs of the slice the quantile is over."""
    value: float
    """The quantile's value over those pairs (the limit is ``min(1, value + margin)``)."""

    @property
    def proposed(self) -> float:
        """The limit the data gives: ``min(1, value + margin)``, rounded to 6 places."""
        return round(min(1.0, self.value + self.margin), 6)


class GenerationTrace(_Model):
    """What the system under test recorded when it generated a member's response."""

    run_id: str = Field(min_length=1)
    """The generation run that produced the response (companion metrics join by it)."""
    context_ids: list[str]
    """Ids of the contexts sent to generation, in order (:meth:`RetrievedContext.context_id`)."""
    response_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """sha256 of the UTF-8 response text as generated."""
    generator_model: str | None = None
    """Generator model of the run; must equal the pair's ``generator.model`` when set."""
    prompt_sha256: str | None = None
    """Generator prompt hash; must equal the pair's ``generator.prompt_sha256`` when set."""


class RetrievalAssertions(_Model):
    """Deterministic retrieval checks of one pair, run before any model call."""

    members: list[Member] = Field(default_factory=lambda: list[Member](["clean", "noisy"]))
    """Which members' contexts are checked (default both)."""
    expected_documents: list[str] = Field(default_factory=list)
    """Document ids that must be among the member's contexts."""
    forbidden_sources: list[str] = Field(default_factory=list)
    """Document ids or corpus ids no context may come from."""
    tenant: str | None = None
    """Every context must carry this tenant (none: absent access-control evidence)."""
    max_rank: dict[str, int] = Field(default_factory=dict)
    """Rank constraints: document id -> the worst rank it may have (it must be present)."""

    def empty(self) -> bool:
        """True when nothing is asserted."""
        return not (
            self.expected_documents or self.forbidden_sources or self.tenant or self.max_rank
        )


class SignOff(_Model):
    """A reviewer's sign-off on one pair. Mandatory for every control pair."""

    reviewer: str = Field(min_length=1)
    """Who signed off (a name or a controlled pseudonym)."""
    reference_sufficient: bool
    """The reference is sufficient and correct (``false`` routes the pair to review)."""
    context_classes: dict[Member, list[ContextClass]]
    """Per member, one ``relevant``/``irrelevant`` class per retrieved context, in order."""
    negative_adopts_false_claim: bool | None = None
    """The noisy member's response adopts the distractor's false claim (mandatory on controls)."""
    signed_on: date | None = None
    """When the sign-off was given."""
    notes: str | None = None
    """Free text."""


class Retirement(_Model):
    """Why and when a pair was retired (kept in the file, never scored)."""

    reason: str = Field(min_length=1)
    """Why (e.g. the source policy changed)."""
    by: str = Field(min_length=1)
    """Who retired it."""
    on: date
    """When."""


class CompanionMetric(_Model):
    """A metric declared beside NoiseSensitivity (e.g. completeness, refusal), joined by run id."""

    direction: Literal["higher_is_better", "lower_is_better"]
    """Which way is better; mandatory."""
    limit: float | None = None
    """The bound of the slice mean over candidate members, in its direction (None: reported)."""
    description: str | None = None
    """What the metric measures and where its values come from."""


class NoisePolicy(_Model):
    """The reviewed noise policy: run budget and case limit (mandatory) and process settings."""

    max_cases: int = Field(ge=1)
    """Most member scorings one invocation may start (all its runs together)."""
    max_cost_usd: float = Field(ge=0)
    """Total evaluator budget of one invocation in USD; ``--budget-usd`` may only lower it."""
    max_concurrency: int | None = Field(default=None, ge=1)
    """Most concurrent scorings; a higher ``--concurrency`` is refused."""
    max_provider_retries: int | None = Field(default=None, ge=0)
    """Most provider retries per call (a higher ``endpoint.max_retries`` is refused)."""
    token_accounting: str | None = None
    """How tokens are counted (e.g. provider-reported usage)."""
    required_control_roles: list[ControlRole] = Field(
        default_factory=lambda: list[ControlRole](["control", "adversarial", "reference_defect"])
    )
    """Control roles the suite must hold; a missing one blocks (incomplete)."""
    max_spread: float | None = Field(default=None, ge=0, le=1)
    """Largest score spread over ``--repeat`` runs before review (needed with sentinels)."""
    warn_delta: float = Field(default=0.0, ge=0, le=1)
    """A noisy score above the baseline's by more than this is a warning trend."""
    companions: dict[str, CompanionMetric] = Field(default_factory=dict)
    """Companion metrics (e.g. ``completeness``, ``refusal``) whose results must be joined."""
    owner: str | None = None
    """Who owns the policy."""
    rationale: str | None = None
    """Why these limits, written before results are seen."""


class EvidenceManifest(_Model):
    """The evidence manifest of a suite release (frozen with it)."""

    window: str = Field(min_length=1)
    """Inclusion window of the cases (e.g. ``2026-08-01..2026-09-30``)."""
    source_owners: list[str] = Field(min_length=1)
    """Owners of the source documents."""
    licences: list[str] = Field(min_length=1)
    """Document licences or usage authority."""
    redaction: str = Field(min_length=1)
    """Redaction method applied (personal data, secrets), or why none was needed."""
    known_gaps: list[str] = Field(min_length=1)
    """Known coverage gaps (write ``none known`` explicitly)."""
    reviewers: list[str] = Field(min_length=1)
    """Reviewer identities or controlled pseudonyms."""
    sampling: str = Field(min_length=1)
    """How cases were sampled (natural prevalence versus oversampled rare harmful noise)."""
    review_schedule: str = Field(min_length=1)
    """When references are reviewed again (tied to source change)."""
