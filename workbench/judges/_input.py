"""What a judge may see: an allow-list of gold fields (built from them, never a stripped case)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from .._docs import add_field_docs
from ..gold import GoldCase

JUDGE_VISIBLE_FIELDS: dict[str, str] = {
    "input": "user_input",
    "response": "response",
    "grading_notes": "grading_notes",
    "reference": "reference",
    "contexts": "retrieved_contexts",
}
"""Gold field -> judge argument name (Ragas' names). Nothing else is ever copied."""


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
