"""Ranking judge kinds: ``ragas-ranking`` (LLM) and ``ragas-ranking-function`` (deterministic).

The judge sees candidates under neutral labels (A, B, C ...), never stable ids; a returned list
that is not a permutation of the labels is an ``invalid_ranking`` evaluator error.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from .._docs import add_field_docs
from .._io import sha256_text
from .._load import Problems
from ..errors import Problem, WorkbenchError, problem
from ..judges import (
    CandidateSpec,
    CaseRef,
    Exchange,
    LLMJudge,
    Verdict,
    code_coverage,
    has_reason,
    import_metric,
    make_identity,
)
from ._fixtures import NEUTRAL_LABELS, check_permutation

RANKING_PLACEHOLDERS = frozenset({"user_input", "context", "candidates"})
"""Placeholders a ranking prompt uses: every one is required (:data:`PROMPT_NEEDS`)."""

PROMPT_NEEDS: dict[str, str] = {
    "user_input": "the judge would rank answers to a question it never sees",
    "context": "the judge would rank without the passages the criterion is judged against",
    "candidates": "the judge would never see the candidates it ranks",
}
"""Why a ranker prompt must show each placeholder: a template without one is refused when the
candidate is built, before any call (so ``workbench ci contracts`` catches it offline)."""

CANDIDATE_FORMAT = "labelled-blocks-v1"
"""How ``{candidates}`` and ``{context}`` are rendered; part of the judge identity."""


class PresentedCandidate(BaseModel):
    """A candidate as the judge sees it: a neutral label and the full text."""

    model_config = ConfigDict(frozen=True, extra="forbid", json_schema_extra=add_field_docs)

    label: str
    """Neutral label (A, B, C ... in presented order)."""
    text: str
    """The candidate's full text."""


class RankingInput(BaseModel):
    """Everything a ranking judge receives for one presentation, and nothing else."""

    model_config = ConfigDict(frozen=True, extra="forbid", json_schema_extra=add_field_docs)

    user_input: str
    """The user's question."""
    context: list[str]
    """Context passage texts, in fixture order."""
    candidates: list[PresentedCandidate]
    """The candidates under neutral labels, in presented order."""

    @property
    def labels(self) -> list[str]:
        return [c.label for c in self.candidates]

    def arguments(self) -> dict[str, Any]:
        """Keyword arguments for a ``@ranking_metric`` function."""
        return {
            "user_input": self.user_input,
            "context": list(self.context),
            "candidates": [{"label": c.label, "text": c.text} for c in self.candidates],
        }


def format_candidates(candidates: list[PresentedCandidate]) -> str:
    """``{candidates}`` in a prompt: one ``<candidate label="A">`` block per candidate."""
    return "\n\n".join(f'<candidate label="{c.label}">\n{c.text}\n</candidate>' for c in candidates)


def format_context(context: list[str]) -> str:
    """``{context}`` in a prompt: numbered passages."""
    return "\n\n".join(f"[{i}] {text}" for i, text in enumerate(context, start=1))


def interpret_ranking(
    returned: Any, judge_input: RankingInput, ref: CaseRef | None
) -> tuple[list[str] | None, str | None, str | None]:
    """Map returned labels (best first) to ``(order, winner, None)`` in the fixture's direction,
    or ``(raw, None, message)`` when they are not a permutation of the presented labels."""
    if not isinstance(returned, list):
        return None, None, f"the ranking is not a list: {returned!r}"[:300]
    raw = [x if isinstance(x, str) else json.dumps(x) for x in returned]
    presentation = (ref.presentation if ref is not None else None) or {}
    labels: dict[str, str] = presentation.get("labels") or {}
    presented = judge_input.labels
    check = check_permutation(presented, [x.strip() for x in raw])
    if not check.ok:
        missing = [labels.get(x, x) for x in check.missing]
        dups = [labels.get(x, x) for x in check.duplicates]
        message = (
            f"the judge returned {raw}, not a permutation of the presented labels {presented}:"
            f" missing={missing}, unknown={check.unknown}, duplicates={dups}"
        )
        return raw, None, message
    if set(labels) != set(presented):
        message = (
            f"the presentation maps labels {sorted(labels)} but the judge was shown"
            f" {presented}: the candidate mapping is broken"
        )
        return raw, None, message
    best_first = [labels[x.strip()] for x in raw]
    worst_first = presentation.get("direction", "best-first") != "best-first"
    return best_first[::-1] if worst_first else best_first, best_first[0], None


def answer_mapping(ref: CaseRef | None) -> dict[str, Any] | None:
    """How a returned ranking maps back to ids (labels and direction): part of the cache key."""
    presentation = (ref.presentation if ref is not None else None) or {}
    if "labels" not in presentation:
        return None
    return {
        "labels": presentation["labels"],
        "direction": presentation.get("direction", "best-first"),
    }


def _planned(visible: dict[str, Any], ref: CaseRef | None) -> dict[str, Any]:
    mapping = answer_mapping(ref)
    return {**visible, "answer_mapping": mapping} if mapping is not None else visible


def _check_labels(spec: CandidateSpec, loc: str) -> Problems:
    problems = Problems()
    expected = list(NEUTRAL_LABELS[: len(spec.labels)])
    if list(spec.labels) != expected:
        problems.add(
            loc,
            "labels_not_neutral",
            "a ranking candidate's labels are the neutral presentation labels in order, got"
            f" {spec.labels}",
            f"set labels: {expected} (one per candidate a fixture may have)",
        )
    return problems


def _refused(spec: CandidateSpec, judge_input: RankingInput, ref: CaseRef | None) -> Verdict | None:
    """Why a presentation is not sent: more candidates than labels, or an ``allowed_values``
    (the count the metric expects, recorded with the presentation) that is not the number of
    candidates presented."""
    n = len(judge_input.candidates)
    if n > len(spec.labels):
        return Verdict.failed(
            "judge_exception",
            f"{n} candidates but the candidate spec declares only {len(spec.labels)} labels",
        )
    recorded = ((ref.presentation if ref is not None else None) or {}).get("allowed_values")
    if recorded is not None and recorded != n:
        return Verdict.failed(
            "judge_exception",
            f"allowed_values_mismatch: the presentation records allowed_values={recorded!r} but"
            f" {n} candidates are presented; allowed_values is the candidate count, refused"
            " before the call",
        )
    return None


class LLMRankingJudge(LLMJudge):
    """``ragas-ranking``: a Ragas ``RankingMetric`` through ``llm_factory``; the prompt must use
    ``{candidates}`` and may use ``{user_input}`` and ``{context}``."""

    allowed_placeholders = RANKING_PLACEHOLDERS
    required_placeholder = None  # every ranking placeholder is required: _placeholder_problems

    def __init__(self, spec: CandidateSpec, spec_path: Path) -> None:
        mine = _check_labels(spec, str(spec_path))
        try:
            super().__init__(spec, spec_path)
        except WorkbenchError as exc:
            raise WorkbenchError(exc.summary, [*exc.problems, *mine]) from None
        if mine:
            raise WorkbenchError("invalid candidate", mine)
        self.identity = make_identity(
            spec, sha256_text(self.template), candidate_format=CANDIDATE_FORMAT
        )
        self._metrics: dict[int, Any] = {}

    def _placeholder_problems(
        self, template: str, used: list[str], malformed: list[str], loc: str
    ) -> list[Problem]:
        """The shared checks, then one ``prompt_placeholder_missing`` per ranking placeholder the
        template never shows (a prompt that drops the context is a defect, not a variant)."""
        problems = super()._placeholder_problems(template, used, malformed, loc)
        return problems + [
            problem(
                loc,
                "prompt_placeholder_missing",
                f"the ranking prompt never shows {{{name}}}: {why}",
                f"add {{{name}}} to the prompt template (a ranking prompt shows {{user_input}},"
                " {context} and {candidates})",
            )
            for name, why in PROMPT_NEEDS.items()
            if template and name not in used
        ]

    def _build_metric(self, spec: CandidateSpec, template: str) -> Any:
        from ragas.metrics import RankingMetric

        return RankingMetric(name=spec.name, allowed_values=len(spec.labels), prompt=template)

    def _metric_for(self, n: int) -> Any:
        from ragas.metrics import RankingMetric

        metric = self._metrics.get(n)
        if metric is None:
            metric = self._metrics[n] = RankingMetric(
                name=self.spec.name, allowed_values=n, prompt=self.template
            )
        return metric

    def _arguments(self, judge_input: Any) -> dict[str, str]:
        values = {
            "user_input": judge_input.user_input,
            "context": format_context(judge_input.context),
            "candidates": format_candidates(judge_input.candidates),
        }
        return {name: values[name] for name in self.placeholders}

    def visible_request(self, judge_input: Any) -> dict[str, Any]:
        """What the model is asked: model, parameters and the prompt with neutral labels only."""
        return {
            "model": self.spec.model,
            "params": self.spec.params,
            "prompt": self._prompt(judge_input),
        }

    def render(self, judge_input: Any, ref: CaseRef | None = None) -> dict[str, Any]:
        """The visible request plus the answer mapping (its hash keys the cache)."""
        return _planned(self.visible_request(judge_input), ref)

    async def evaluate(self, judge_input: Any, ref: CaseRef | None = None) -> Verdict:
        verdict = _refused(self.spec, judge_input, ref) or await super().evaluate(judge_input, ref)
        if verdict.rendered_request is None:  # nothing reached the wire: what would have been sent
            verdict = dataclasses.replace(
                verdict, rendered_request=self.visible_request(judge_input)
            )
        return verdict

    def _score(self, llm: Any, judge_input: Any, ref: CaseRef | None) -> Any:
        # Every per-count metric formats the same template: the prompt is the one rendered.
        return self._ascore(llm, self._metric_for(len(judge_input.candidates)), judge_input)

    def _interpret(
        self, result: Any, exchange: Exchange, judge_input: Any, ref: CaseRef | None
    ) -> Verdict:
        order, winner, problem = interpret_ranking(result.value, judge_input, ref)
        if problem is not None:
            verdict = self._failed(exchange, "invalid_ranking", problem)
            return dataclasses.replace(verdict, order=order)
        if not has_reason(result.reason):
            return dataclasses.replace(self._missing_reason(exchange, winner), order=order)
        return self._verdict(exchange, value=winner, reason=result.reason, order=order)

    def _classify_output_failure(self, exchange: Exchange, exc: Exception) -> tuple[str, str]:
        try:
            body = exchange.responses[-1]["body"]  # IndexError: no response at all
            parsed = json.loads(body["choices"][0]["message"]["content"])
        except (TypeError, KeyError, IndexError, ValueError):
            parsed = None
        if isinstance(parsed, dict) and isinstance(parsed.get("value"), list):
            raw = [x if isinstance(x, str) else json.dumps(x) for x in parsed["value"]]
            exchange.raw_order = raw  # type: ignore[attr-defined]
            return "invalid_ranking", f"the judge returned {raw}, not a list of presented labels"
        if isinstance(parsed, dict) and "value" in parsed:
            return "unparseable", f"the ranking is not a JSON list: {str(parsed['value'])[:200]!r}"
        return super()._classify_output_failure(exchange, exc)

    def _failed(
        self,
        exchange: Exchange,
        kind: str,
        message: str,
        *,
        retryable: bool = False,
        endpoint_failure: str | None = None,
    ) -> Verdict:
        verdict = super()._failed(
            exchange, kind, message, retryable=retryable, endpoint_failure=endpoint_failure
        )
        raw = getattr(exchange, "raw_order", None)
        return dataclasses.replace(verdict, order=raw) if raw is not None else verdict


class FunctionRankingJudge:
    """``ragas-ranking-function``: a deterministic Ragas ``@ranking_metric`` by import path."""

    def __init__(self, spec: CandidateSpec, spec_path: Path) -> None:
        self.spec = spec
        loc = str(spec_path)
        problems = _check_labels(spec, loc)
        metric, module = import_metric(
            spec, loc, "@ranking_metric", "workbench.demo.ranking:policy_evidence_order", problems
        )
        allowed = getattr(metric, "allowed_values", None)
        if not hasattr(metric, "ascore") or type(allowed) is not int:  # bool is no count
            problems.add(
                loc,
                "function_not_metric",
                f"{spec.function!r} is not a Ragas ranking metric",
                "decorate the function with ragas.metrics.ranking_metric(allowed_values=<n>)",
            )
        func = getattr(metric, "_func", None) or metric
        params = inspect.signature(func).parameters
        unknown = [
            n
            for n, p in params.items()
            if n not in RANKING_PLACEHOLDERS and p.default is inspect.Parameter.empty
        ]
        if unknown:
            message = f"the function requires {unknown}, which a ranking judge does not receive"
            problems.add(
                loc, "function_parameters", message, "take only user_input, context and candidates"
            )
        if "candidates" not in params:
            problems.add(
                loc,
                "function_parameters",
                "the function does not take candidates",
                "add a candidates parameter (a list of {label, text} in presented order)",
            )
        problems.raise_if_any("invalid candidate")
        self.metric = metric
        self._parameters = [n for n in params if n in RANKING_PLACEHOLDERS]
        self.code = code_coverage(module)  # the fingerprint covers the code it runs
        self.identity = make_identity(
            spec,
            sha256_text(inspect.getsource(module)),
            candidate_format=CANDIDATE_FORMAT,
            **self.code.params(),
        )

    def _arguments(self, judge_input: RankingInput) -> dict[str, Any]:
        args = judge_input.arguments()
        return {name: args[name] for name in self._parameters}

    def visible_request(self, judge_input: RankingInput) -> dict[str, Any]:
        """``{function, arguments}``: what the function receives (neutral labels only)."""
        return {"function": self.spec.function, "arguments": self._arguments(judge_input)}

    def render(self, judge_input: RankingInput, ref: CaseRef | None = None) -> dict[str, Any]:
        """The visible request plus the answer mapping (its hash keys the cache)."""
        return _planned(self.visible_request(judge_input), ref)

    def estimate_cost(self, judge_input: RankingInput) -> float:
        return 0.0

    async def evaluate(self, judge_input: RankingInput, ref: CaseRef | None = None) -> Verdict:
        verdict = await self._evaluate(judge_input, ref)
        return dataclasses.replace(verdict, rendered_request=self.visible_request(judge_input))

    async def _evaluate(self, judge_input: RankingInput, ref: CaseRef | None) -> Verdict:
        refused = _refused(self.spec, judge_input, ref)
        if refused is not None:
            return refused
        # A per-call copy: allowed_values is this fixture's candidate count, and the raw
        # value is captured before Ragas' length check can replace it with None.
        metric = copy.copy(self.metric)
        metric.allowed_values = len(judge_input.candidates)
        captured: dict[str, Any] = {}
        validate = metric._validate_result_value

        def capture(value: Any) -> Any:
            captured["value"] = value
            return validate(value)

        metric._validate_result_value = capture
        try:
            result = await metric.ascore(**self._arguments(judge_input))
        except Exception as exc:  # a user-supplied metric may raise anything; record it
            return Verdict.failed("judge_exception", f"{type(exc).__name__}: {exc}")
        returned = result.value if result.value is not None else captured.get("value")
        if returned is None:
            return Verdict.failed(
                "judge_exception", str(result.reason or "the metric returned nothing")[:500]
            )
        order, winner, problem = interpret_ranking(returned, judge_input, ref)
        if problem is not None:
            return Verdict.failed("invalid_ranking", problem, order=order)
        return Verdict(
            value=winner, reason=None if result.reason is None else str(result.reason), order=order
        )
