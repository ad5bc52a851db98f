"""The candidate diff of a ``candidates_changed`` result: what the judge was shown against the
frozen fixture, as text, for the application owner (seed 000: "send that case to the
application owner with the candidate diff and the evaluator rationale").

The judged text comes from the stored request: a function ranker's ``arguments`` (user input,
context and candidates under their labels) or an LLM ranker's prompt (``<candidate label="A">``
blocks, :data:`workbench.ranking._judges.CANDIDATE_FORMAT`). When the request was not retained
(``digest_and_excerpts`` capture, or pruned) the diff says so: only the two digests compare.
"""

from __future__ import annotations

import difflib
import re
from typing import Any, Literal

from .._record import Record as _Frozen
from ._capture import _strings
from ._fixtures import RankingFixture

_BLOCK = re.compile(r'<candidate label="([A-Z])">\n(.*?)\n</candidate>', re.DOTALL)


class CandidateDiff(_Frozen):
    """One field of a changed fixture: the text judged against the frozen text."""

    field: str
    """``user_input``, ``context`` or ``candidate <id>``."""
    change: Literal["edited", "added", "removed", "unavailable"]
    """``edited`` (both texts, a diff), ``added`` (only the fixture has it), ``removed`` (only
    the judged request had it) or ``unavailable`` (the judged text was not retained)."""
    diff: str
    """``difflib.unified_diff`` from the judged text to the frozen text (empty when
    unavailable)."""


def judged_fields(request: Any, presentation: dict[str, Any] | None) -> dict[str, str] | None:
    """The fields a stored request showed (candidates under their fixture ids), or None when
    the request holds no candidate text."""
    if not isinstance(request, dict):
        return None
    labels: dict[str, str] = (presentation or {}).get("labels") or {}
    arguments = request.get("arguments")
    if isinstance(arguments, dict) and isinstance(arguments.get("candidates"), list):
        out = {
            f"candidate {labels.get(str(c.get('label')), c.get('label'))}": str(c.get("text"))
            for c in arguments["candidates"]
            if isinstance(c, dict)
        }
        if isinstance(arguments.get("user_input"), str):
            out["user_input"] = arguments["user_input"]
        if isinstance(arguments.get("context"), list):
            out["context"] = "\n\n".join(str(x) for x in arguments["context"])
        return out
    found = [hit for text in _strings(request) for hit in _BLOCK.findall(text)]
    if not found:  # an LLM request: the prompt, or the messages sent on the wire
        return None
    return {f"candidate {labels.get(label, label)}": text for label, text in found}


def frozen_fields(fixture: RankingFixture) -> dict[str, str]:
    """The same fields from the frozen fixture."""
    return {
        "user_input": fixture.user_input,
        "context": "\n\n".join(p.text for p in fixture.context),
        **{f"candidate {c.id}": c.text for c in fixture.candidates},
    }


def candidate_diff(fixture: RankingFixture, judged: dict[str, str] | None) -> list[CandidateDiff]:
    """Every field that differs between the judged request and the frozen fixture."""
    if judged is None:
        return [CandidateDiff(field="candidates", change="unavailable", diff="")]
    frozen = frozen_fields(fixture)
    out: list[CandidateDiff] = []
    for name in [*frozen, *(k for k in judged if k not in frozen)]:
        old, new = judged.get(name), frozen.get(name)
        if old == new or (old is None and not name.startswith("candidate ")):
            continue  # equal, or a field the request does not show (an LLM prompt's context)
        change: Literal["edited", "added", "removed"] = (
            "added" if old is None else "removed" if new is None else "edited"
        )
        lines = difflib.unified_diff(
            (old or "").splitlines(),
            (new or "").splitlines(),
            fromfile=f"{name} (judged)",
            tofile=f"{name} (frozen fixture)",
            lineterm="",
        )
        out.append(CandidateDiff(field=name, change=change, diff="\n".join(lines)))
    return out
