"""A stand-in for an LLM judge, to walk the span-annotation example offline with no API key.

``workbench fake-llm --responder number_judge:respond`` answers each chat request with this
function. It reads the source (the prompt's ``<question>``) and the summary (``<response>``)
and fails a summary that states a number, weekday or month the source does not contain. It
cannot see any other invented claim, so it passes those: the alignment table shows where.
"""

from __future__ import annotations

import re

from workbench.testing import ChatRequest, Reply

_TOKENS = re.compile(
    r"\d+(?:[.,:]\d+)*|\b(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|January|"
    r"February|March|April|May|June|July|August|September|October|November|December)\b"
)


def _between(prompt: str, tag: str) -> str:
    found = re.findall(rf"<{tag}>\s*(.*?)\s*</{tag}>", prompt, flags=re.S)
    return found[-1] if found else ""


def respond(request: ChatRequest) -> Reply:
    """``fail`` naming every number, weekday or month of the summary missing from the source."""
    source = _between(request.prompt, "question")
    summary = _between(request.prompt, "response")
    missing = sorted({t for t in _TOKENS.findall(summary) if t not in _TOKENS.findall(source)})
    if missing:
        return Reply(value="fail", reason=f"not in the source: {', '.join(missing)}")
    return Reply(value="pass", reason="every number, weekday and month is in the source")
