"""What a non-retryable HTTP error from an endpoint says: its *class*, from the status AND the body.

One reading for ``workbench run`` (its circuit breaker, :func:`endpoint_failure`) and for
``workbench ping`` (its problem codes), so the two never disagree about whether a wrong key,
a wrong model name or a misconfigured proxy is to blame:

================  ===========================================================================
class             when
================  ===========================================================================
``proxy``         a 4xx whose body speaks of the proxy's own state: LiteLLM's "No connected db"
                  (a key that is not the master key, on a proxy with no database to check
                  virtual keys), a budget, a team, a user missing from the proxy's database
``auth``          HTTP 401 or 403, or a 4xx whose body speaks of the key or authentication
``not_found``     HTTP 404, or a 4xx whose body says the model (or deployment) does not exist
``bad_request``   any other HTTP 400
None              retryable (408, 409, 429, 5xx), another 4xx, or a 4xx about *this case*
                  only (context length, content filter): the next case may well succeed
================  ===========================================================================

The order is the table's: a proxy's "Authentication Error, No connected db." is ``proxy``
(the key may be a virtual key the proxy cannot check), LiteLLM's 400 for an unknown model
(which ends "... available models for your key") is ``not_found``.
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
"""A 400 about this request's content, not the endpoint: other cases may succeed."""

PROXY_STATE = re.compile(
    r"(?i)no connected db|not connected to db|db not connected|no_db_connection|\bin db\b"
    r"|database|budget|\bteams?\b"
)
"""Words of a proxy refusing from its own configuration (LiteLLM: no database for virtual keys,
a key's or team's budget, a team's model access)."""

KEY_WORDS = re.compile(
    r"(?i)api[ _-]?key|invalid_api_key|\bauth|unauthori[sz]ed|credential|\bkey\b.{0,40}"
    r"\b(invalid|incorrect|missing|expired|revoked|not valid|wrong)\b|\b(invalid|incorrect"
    r"|missing|expired|revoked|wrong)\b.{0,20}\b(key|token)\b"
)
"""Words of a refused key, whatever the status (some proxies answer 400 for a bad key)."""

MODEL_MISSING = re.compile(
    r"(?i)\b(model|deployment)\b.*\b(not found|does not exist|not"
    r" exist|unknown|invalid)\b|\binvalid model\b|\bunknown"
    r" model\b|deploymentnotfound|model_not_found"
)
"""Words of a model (or Azure deployment) the endpoint does not serve."""


def status_text(error: Any) -> str:
    """The error's body as text (every field, for the patterns above), else its message."""
    body = getattr(error, "body", None)
    try:
        return json.dumps(body) if body is not None else str(error)
    except (TypeError, ValueError):
        return str(error)


def endpoint_failure(status: int, text: str) -> EndpointFailure | None:
    """The class of an HTTP ``status`` error whose body reads ``text`` (see the module table);
    None when the failure may be transient or belongs to this case only."""
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
