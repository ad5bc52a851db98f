"""``ragas-noise``: Ragas' collections ``NoiseSensitivity`` on an OpenAI-compatible endpoint.

An :class:`~workbench.judges._llm.LLMJudge` kind (shared client, wire capture, usage, retries,
error classification). One score is :func:`calls_per_score` sequential calls; lower is better.
The mode comes from each pair's :class:`~workbench.noise.NoiseInput`, never from the spec. A
result is score-only; a NaN, infinite or out-of-range score is the error ``invalid_score``.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import math
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._io import sha256_text
from .._load import Problems
from ..errors import WorkbenchError
from ..judges import CandidateSpec, CaseRef, Exchange, LLMJudge, Verdict, make_identity
from ._pairs import NoiseInput

KIND = "ragas-noise"
"""The registered kind name."""
METRIC = "ragas.metrics.collections.NoiseSensitivity"
"""The Ragas metric this kind runs."""
_DEFAULT_MAX_TOKENS = 1024  # Ragas' InstructorModelArgs default
_OUTPUT_SCHEMA_ERRORS = {
    "ValidationError",
    "InstructorRetryException",
    "IncompleteOutputException",
    "JSONDecodeError",
}


def calls_per_score(n_contexts: int) -> int:
    """Model calls of one score: 2 decompositions, 2 per context, 1 against the reference."""
    return 3 + 2 * n_contexts


@functools.lru_cache(maxsize=1)
def metric_source_sha256() -> str:
    """sha256 over the source of NoiseSensitivity and its prompts (the kind's ``prompt_sha256``)."""
    from ragas.metrics.collections.noise_sensitivity import metric, util
    from ragas.prompt.metrics import common

    sources = (metric, util, common.statement_generator_prompt, common.nli_statement_prompt)
    try:
        parts = [inspect.getsource(s) for s in sources]
    except (OSError, TypeError):  # no sources installed: the Ragas version must do
        from ..judges import ragas_version

        parts = [METRIC, ragas_version()]
    return sha256_text("\n".join(parts))


class UnusableAnswer(Exception):
    """The model's answers parse but cannot be combined into a score."""


@functools.lru_cache(maxsize=1)
def _metric_class() -> type:
    from ragas.metrics.collections import NoiseSensitivity

    class TracedNoiseSensitivity(NoiseSensitivity):
        """NoiseSensitivity keeping its statements and verdict matrices for the reason, and
        refusing answers that cannot be combined (instead of a numpy shape error)."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.decomposed: list[list[str]] = []
            self.answers: dict[str, Any] | None = None

        async def _decompose_answer_into_statements(self, text: str, question: str) -> list[str]:
            statements = await super()._decompose_answer_into_statements(text, question)
            self.decomposed.append(list(statements))
            return statements

        async def _evaluate_statement_faithfulness(
            self, statements: list[str], context: str
        ) -> list[int]:
            verdicts = await super()._evaluate_statement_faithfulness(statements, context)
            if len(verdicts) != len(statements):
                raise UnusableAnswer(
                    f"the model returned {len(verdicts)} faithfulness verdicts for"
                    f" {len(statements)} statements"
                )
            return verdicts

        def _compute_score(self, answers: dict[str, Any]) -> float:
            self.answers = answers
            if answers["retrieved2ground_truth"].size == 0:
                raise UnusableAnswer(
                    "the model decomposed the reference into no statements, so no context can be"
                    " called relevant"
                )
            with warnings.catch_warnings():  # no response statements: NaN, invalid_score
                warnings.simplefilter("ignore", RuntimeWarning)
                return float(super()._compute_score(answers))

    return TracedNoiseSensitivity


@dataclass(frozen=True)
class _Scored:
    result: Any
    metric: Any


class NoiseJudge(LLMJudge):
    """A ``ragas-noise`` candidate: NoiseSensitivity scored per pair member, mode from the pair."""

    needs_prompt = False
    required_placeholder = None
    allowed_placeholders: frozenset[str] = frozenset()
    guard_calls = 1_000_000
    """Unused bound: :meth:`_score` applies its own guard of ``calls_per_score`` x timeout."""

    def __init__(self, spec: CandidateSpec, spec_path: Path) -> None:
        loc = str(spec_path)
        problems = Problems()
        if spec.prompt or spec.prompt_file:
            problems.add(
                loc,
                "prompt_not_allowed",
                "a ragas-noise candidate has no prompt: NoiseSensitivity uses Ragas' built-in"
                " statement and faithfulness prompts",
                "remove prompt/prompt_file; the prompts are fingerprinted through the Ragas version"
                " and their source hash",
            )
        if "mode" in spec.params:
            message = "params.mode is set; the NoiseSensitivity mode comes from each pair"
            fix = "remove params.mode and declare mode: on every pair"
            problems.add(loc, "mode_in_spec", message, fix)
        if spec.threshold is not None:
            problems.add(
                loc,
                "threshold_not_allowed",
                "a ragas-noise candidate is score-only; limits live in the pair suite's slices",
                "remove threshold: and set max_score per slice in the pairs file",
            )
        try:
            super().__init__(spec, spec_path)
        except WorkbenchError as exc:
            raise WorkbenchError("invalid candidate", [*problems, *exc.problems]) from None
        if problems:
            raise WorkbenchError("invalid candidate", problems)
        self.identity = make_identity(spec, metric_source_sha256(), metric=METRIC)

    # -- kind hooks -----------------------------------------------------------------------

    def _build_metric(self, spec: CandidateSpec, template: str) -> Any:
        # NoiseSensitivity is bound to one mode and one client: built per call in _score.
        _metric_class()
        return None

    def _score(self, llm: Any, judge_input: Any, ref: CaseRef | None) -> Any:
        if not isinstance(judge_input, NoiseInput):
            raise TypeError(
                f"a ragas-noise judge takes a NoiseInput, got {type(judge_input).__name__}"
            )
        metric = _metric_class()(llm=llm, mode=judge_input.mode)
        guard = (
            self.spec.endpoint.timeout_s * calls_per_score(len(judge_input.retrieved_contexts)) + 5
        )

        async def scored() -> _Scored:
            result = await asyncio.wait_for(
                metric.ascore(**judge_input.model_dump(exclude={"mode"})),
                timeout=guard,
            )
            return _Scored(result, metric)

        return scored()

    def _interpret(
        self, result: Any, exchange: Exchange, judge_input: Any, ref: CaseRef | None
    ) -> Verdict:
        value = result.result.value
        try:
            score = float(value)
        except (TypeError, ValueError):
            score = math.nan
        if not math.isfinite(score) or not 0.0 <= score <= 1.0:
            why = (
                " (the response was decomposed into no statements)"
                if result.metric.decomposed[1:2] == [[]]
                else ""
            )
            return self._failed(
                exchange,
                "invalid_score",
                f"NoiseSensitivity returned {value!r}{why}; a score must be a finite number in [0,"
                " 1] (lower is better)",
            )
        return self._verdict(
            exchange, value=None, score=score, reason=explain(result.metric, judge_input.mode)
        )

    def _classify_output_failure(self, exchange: Exchange, exc: Exception) -> tuple[str, str]:
        if isinstance(exc, UnusableAnswer):
            return "unparseable", str(exc)
        names = {c.__name__ for c in type(exc).__mro__}
        if not names & _OUTPUT_SCHEMA_ERRORS:
            return "judge_exception", f"{type(exc).__name__}: {str(exc)[:300]}"
        failure, content = self._answer_failure(exchange, exc)
        if failure is not None:
            return failure
        return (
            "unparseable",
            f"the answer does not match NoiseSensitivity's statements schema: {content[:200]!r}",
        )

    # -- requests -------------------------------------------------------------------------

    def render(self, judge_input: Any, ref: CaseRef | None = None) -> dict[str, Any]:
        """The planned request: metric, mode, model, parameters and the four scored fields."""
        return {
            "metric": METRIC,
            "mode": judge_input.mode,
            "model": self.spec.model,
            "params": self.spec.params,
            **judge_input.model_dump(exclude={"mode"}),
        }

    def estimate_cost(self, judge_input: Any) -> float:
        """Conservative: each call's prompt at ~3 characters per token plus a schema message, and
        the full ``max_tokens`` out."""
        from ragas.prompt.metrics.common import nli_statement_prompt, statement_generator_prompt

        q, resp, ref = judge_input.user_input, judge_input.response, judge_input.reference
        nli = [(ctx, text) for ctx in judge_input.retrieved_contexts for text in (ref, resp)]
        prompts = [len(statement_generator_prompt(q, text)) for text in (ref, resp)]
        prompts += [
            len(nli_statement_prompt(c, [text])) + len(text) for c, text in [*nli, (ref, resp)]
        ]
        tokens_in = sum(math.ceil(n / 3) + 400 for n in prompts)
        tokens_out = int(self.spec.params.get("max_tokens", _DEFAULT_MAX_TOKENS)) * len(prompts)
        return self.spec.pricing.cost(tokens_in, tokens_out)


def explain(metric: Any, mode: str) -> str | None:
    """A claim-level reason from the metric's own matrices: which response statements count."""
    answers = metric.answers
    if answers is None or len(metric.decomposed) < 2:
        return None
    statements = metric.decomposed[1]
    import numpy as np

    r2a = answers["retrieved2answer"]
    relevant = np.max(answers["retrieved2ground_truth"], axis=0)  # supports a reference statement
    incorrect = ~answers["ground_truth2answer"][0]
    none = np.zeros(len(statements), bool)
    rel_support = (r2a & relevant).any(axis=1) if r2a.size else none
    irr_support = (r2a & ~relevant).any(axis=1) & ~rel_support if r2a.size else none
    counted = incorrect & (rel_support if mode == "relevant" else irr_support)
    contexts = ", ".join(
        f"{i + 1}:{'relevant' if r else 'irrelevant'}" for i, r in enumerate(relevant)
    )
    head = (
        f"{mode} mode: {int(counted.sum())} of {len(statements)} response statements are incorrect"
        " (not supported by the reference) and supported by"
        f" {'a relevant' if mode == 'relevant' else 'only irrelevant'} context(s); contexts"
        f" {contexts}; lower is better"
    )
    listed = [
        f"- {s!r}" + (" [incorrect, counted]" if c else " [incorrect]" if inc else "")
        for s, c, inc in zip(statements, counted, incorrect, strict=False)
    ]
    claims = {
        "statements": [str(s) for s in statements],
        "incorrect": [bool(x) for x in incorrect],
        "counted": [bool(x) for x in counted],
        "contexts_relevant": [bool(x) for x in relevant],
    }
    data = json.dumps(claims, ensure_ascii=False, separators=(",", ":"))
    return "\n".join([head, *listed[:20], CLAIMS_PREFIX + data])


CLAIMS_PREFIX = "claims-json: "
"""The last line of a noise result's reason: the metric's claim verdicts as JSON."""


def parse_claims(reason: str | None) -> list[dict[str, Any]] | None:
    """The ``{statement, incorrect, counted}`` claim verdicts a result's reason records, or None."""
    if not reason:
        return None
    for line in reversed(reason.splitlines()):
        if line.startswith(CLAIMS_PREFIX):
            try:
                data = json.loads(line[len(CLAIMS_PREFIX) :])
                return [
                    {"statement": s, "incorrect": bool(i), "counted": bool(c)}
                    for s, i, c in zip(
                        data["statements"], data["incorrect"], data["counted"], strict=True
                    )
                ]
            except (ValueError, KeyError, TypeError):
                return None
    return None
