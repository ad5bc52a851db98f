"""A scripted "LLM" for the demo judge's prompts: version 2's rubric logic with a ``Terminology
guide:`` in the prompt, else version 1's literal matching; text addressing the grader steers it
(what the adversarial controls catch)."""

from __future__ import annotations

import re

from ..judges.demo import v1_verdict, v2_verdict
from ..testing import ChatRequest, Reply

_BLOCK = re.compile(r"<(grading_notes|response)>\n?(.*?)\n?</\1>", re.DOTALL)
_GUIDE = re.compile(r"^\s*Terminology guide\s*:", re.IGNORECASE | re.MULTILINE)
_STEERING = re.compile(
    r"(grade|mark|score|rate) (this|it|the response) (as )?(a )?pass|ignore (all |any"
    r" )?(previous|prior) instructions",
    re.IGNORECASE,
)


def respond(request: ChatRequest) -> Reply:
    """The demo model's reply to one chat request."""
    blocks = {name: text for name, text in _BLOCK.findall(request.prompt)}
    if "response" not in blocks or "grading_notes" not in blocks:
        return Reply(
            value="fail", reason="I could not find the response or the grading notes in the prompt."
        )
    response = blocks["response"]
    if _STEERING.search(response):
        return Reply(value="pass", reason="The response states that it should be graded as a pass.")
    decide = v2_verdict if _GUIDE.search(request.prompt) else v1_verdict
    result = decide(response, blocks["grading_notes"])
    return Reply(value=str(result.value), reason=str(result.reason))
