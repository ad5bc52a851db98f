"""What a non-retryable HTTP error from an endpoint says: its *class*, from the status and the body.

One reading for the run's circuit breaker and for ``workbench ping``, in this order: ``proxy``
(the body speaks of the proxy's own state: no database, a budget, a team), ``auth`` (401/403,
or a body about the key), ``not_found`` (404, or an unknown model or deployment),
``bad_request`` (another 400); None for retryable statuses and 4xx about this case only.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

EndpointFailure = Literal["connection", "auth", "proxy", "not_found", "bad_request"]

PER_CASE = re.compile(
    r"(?i)context[_ ]length|maximum context|too many tokens|prompt is too long|content[_ ]filter"
    r"|content management policy|responsibleaipolicyviolation|string_above_max_length"
)

PROXY_STATE = re.compile(
    r"(?i)no connected db|not connected to db|db not connected|no_db_connection|\bin db\b"
    r"|database|budget|\bteams?\b"
)

KEY_WORDS = re.compile(
    r"(?i)api[ _-]?key|invalid_api_key|\bauth|unauthori[sz]ed|credential|\bkey\b.{0,40}"
    r"\b(invalid|incorrect|missing|expired|revoked|not valid|wrong)\b|\b(invalid|incorrect"
    r"|missing|expired|revoked|wrong)\b.{0,20}\b(key|token)\b"
)

MODEL_MISSING = re.compile(
    r"(?i)\b(model|deployment)\b.*\b(not found|does not exist|not"
    r" exist|unknown|invalid)\b|\binvalid model\b|\bunknown"
    r" model\b|deploymentnotfound|model_not_found"
)


def status_text(error: Any) -> str:
    """The error's body as text, else its message."""
    body = getattr(error, "body", None)
    try:
        return json.dumps(body) if body is not None else str(error)
    except (TypeError, ValueError):
        return str(error)


def endpoint_failure(status: int, text: str) -> EndpointFailure | None:
    """The class of an HTTP ``status`` error whose body reads ``text`` (module doc)."""
    if status >= 500 or status in (408, 409, 429) or status < 400:
        return None
    if status in (400, 413) and PER_CASE.search(text):
        return None
    if PROXY_STATE.search(text):
        return "proxy"
    if status in (401, 403):
        return "auth"
    if MODEL_MISSING.search(text):
        return "not_found"
    if KEY_WORDS.search(text):
        return "auth"
    if status == 404:
        return "not_found"
    return "bad_request" if status == 400 else None
