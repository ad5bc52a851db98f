"""What a judge may see: an allow-list of gold fields (built from them, never a stripped case)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from pydantic import BaseModel, ConfigDict

from .._docs import add_field_docs
from ..gold import GoldCase
from ..results import EvidenceSeen

JUDGE_VISIBLE_FIELDS: dict[str, str] = {
    "input": "user_input",
    "response": "response",
    "grading_notes": "grading_notes",
    "reference": "reference",
    "contexts": "retrieved_contexts",
}
"""Gold field -> judge argument name (Ragas' names). Nothing else is ever copied."""

EVIDENCE_ARGUMENTS: tuple[str, ...] = ("grading_notes", "reference")
"""The judge arguments that carry a case's evidence (the gold requires one of them): a prompt
must show each one the judged cases carry, or its spec must name it in ``omitted_fields``."""


class JudgeInput(BaseModel):
    """The only data a judge receives for one case."""

    model_config = ConfigDict(frozen=True, extra="forbid", json_schema_extra=add_field_docs)

    user_input: str
    """The user's input."""
    response: str
    """The response under judgment."""
    grading_notes: str | None = None
    """Controlled grading evidence."""
    reference: str | None = None
    """Reference answer."""
    retrieved_contexts: list[str] | None = None
    """Context passages."""

    @classmethod
    def from_case(cls, case: GoldCase) -> JudgeInput:
        """Build the judge input from the allow-listed fields of ``case`` only."""
        return cls(**{arg: getattr(case, field) for field, arg in JUDGE_VISIBLE_FIELDS.items()})

    def arguments(self) -> dict[str, Any]:
        """Non-null fields as keyword arguments for a metric."""
        return {k: v for k, v in self.model_dump().items() if v is not None}


def evidence_seen(
    judge_input: Any, sent: Any, unshown: Collection[str] = ()
) -> list[EvidenceSeen] | None:
    """What of each judge-visible field of ``judge_input`` the request ``sent`` (the wire request,
    or the planned one) holds: characters in the case and characters found in the request from the
    field's start (each passage, for contexts). Measured on the request itself, so a cut made by
    any layer (a prompt builder, a metric, a client) is seen; ``unshown`` fields (the prompt has
    no placeholder for them) count as not sent, whatever words of theirs the prompt happens to
    hold. None for other inputs (rankings, noise pairs)."""
    if not isinstance(judge_input, JudgeInput):
        return None
    haystack = "\x00".join(_strings(sent))
    seen = []
    for name, value in judge_input.model_dump().items():
        texts = value if isinstance(value, list) else [] if value is None else [value]
        in_case = sum(len(t) for t in texts)
        sent_chars = 0 if name in unshown else sum(_sent_prefix(t, haystack) for t in texts)
        status = (
            "absent"
            if value is None
            else "full"
            if sent_chars == in_case
            else "omitted"
            if sent_chars == 0
            else "truncated"
        )
        seen.append(
            EvidenceSeen(field=name, chars_in_case=in_case, chars_sent=sent_chars, status=status)
        )
    return seen


def _sent_prefix(text: str, haystack: str) -> int:
    """The length of the longest start of ``text`` that ``haystack`` holds (a start present means
    every shorter one is: a binary search)."""
    if text in haystack:
        return len(text)
    low, high = 0, len(text) - 1  # text[:low] is held, text[:high + 1] is not
    while low < high:
        mid = (low + high + 1) // 2
        if text[:mid] in haystack:
            low = mid
        else:
            high = mid - 1
    return low


def _strings(obj: Any) -> list[str]:
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [s for v in obj.values() for s in _strings(v)]
    if isinstance(obj, list | tuple):
        return [s for v in obj for s in _strings(v)]
    return []
