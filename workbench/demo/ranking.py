"""Demo ranking judges for the Tallowmere fixtures: ``policy_evidence_order`` counts the
context-backed policy phrases; the scripted "LLM" :func:`respond` also penalises forbidden claims
and has a primacy bias (:data:`PRIMACY_BONUS`) for the position battery to find."""

from __future__ import annotations

import json
import re
from typing import Any

from ragas.metrics import ranking_metric

from ..testing import ChatRequest, Reply

DEMO_RANKING_URL_ENV = "WORKBENCH_DEMO_RANKER_URL"
"""The variable ``support-llm-ranker@1`` reads its base URL from (``endpoint.base_url_env``)."""

POLICY_PHRASES: tuple[str, ...] = (
    "password reset link",
    "password reset",
    "email on file",
    "60 minutes",
    "one-time passcode",
    "sign out of all sessions",
    "identity verification",
    "previous address",
    "7 days",
    "original payment method",
    "different card",
    "5 business days",
    "manual exception review",
    "returns team",
    "30 days",
    "48 hours",
    "photo",
    "prepaid return label",
    "store credit",
    "7 business days",
    "lost-parcel claim",
    "carrier investigation",
    "10 business days",
    "tier 2",
    "1 business day",
    "membership page",
    "end of the billing period",
    "free standard shipping",
    "current period",
    "contact support",
    "chargeback",
    "pending authorization",
    "3 business days",
    "membership benefits",
    "privacy center",
    "privacy@tallowmere.example",
    "injury",
    "stop using",
    "product safety team",
)
"""Policy phrases of the Tallowmere handbook the demo rankers look for (lower case)."""

RED_FLAGS: tuple[str, ...] = (
    "unlocked your account",
    "approved automatically",
    "to your new card",
    "read them the code",
    "refunded your order right away",
    "stops immediately",
    "refund the rest of this month",
    "account will be closed",
    "don't keep any personal data",
    "accept full responsibility",
    "compensation to your account",
    "i've changed it",
)
"""Claims the handbook forbids; the scripted LLM penalises them, the deterministic ranker cannot
see them."""

PRIMACY_BONUS = 1.1
"""The scripted LLM's bonus for the candidate shown first (just over one phrase)."""

_PHRASE_PATTERNS = {
    p: re.compile(rf"(?<![a-z0-9]){re.escape(p)}(?![a-z0-9])") for p in POLICY_PHRASES
}


def evidence_phrases(text: str, context: str) -> list[str]:
    """The policy phrases ``text`` states that ``context`` also states."""
    low, ctx = text.lower(), context.lower()
    return [
        p for p, pattern in _PHRASE_PATTERNS.items() if pattern.search(low) and pattern.search(ctx)
    ]


def red_flags(text: str) -> list[str]:
    """The forbidden claims ``text`` makes."""
    low = text.lower().replace("\u2019", "'")
    return [flag for flag in RED_FLAGS if flag in low]


@ranking_metric(name="policy_evidence_order", allowed_values=3)
def policy_evidence_order(
    user_input: str, context: list[str], candidates: list[dict[str, str]]
) -> list[str]:
    """Order candidates by the number of context-backed policy phrases they state, best first
    (ties on the label: the candidate shown first)."""
    evidence = "\n".join(context)
    scored = [(len(evidence_phrases(c["text"], evidence)), c["label"]) for c in candidates]
    return [label for _, label in sorted(scored, key=lambda item: (-item[0], item[1]))]


_CANDIDATE = re.compile(r'<candidate label="([^"]+)">\n?(.*?)\n?</candidate>', re.DOTALL)
_POLICY = re.compile(r"<policy>\n?(.*?)\n?</policy>", re.DOTALL)


def rank_prompt(prompt: str) -> tuple[list[str], str]:
    """The scripted model's ranking (labels, best first) and its reason for one prompt."""
    candidates = _CANDIDATE.findall(prompt)
    policy = _POLICY.search(prompt)
    context = policy.group(1) if policy else ""
    scores: list[tuple[float, int, str, list[str], list[str]]] = []
    for position, (label, text) in enumerate(candidates):
        found = evidence_phrases(text, context)
        flags = red_flags(text)
        score = len(found) - 2 * len(flags) + (PRIMACY_BONUS if position == 0 else 0.0)
        scores.append((score, position, label, found, flags))
    if not scores:
        return [], "I could not find any candidates in the prompt."
    unbiased = min(scores, key=lambda s: (-(s[0] - (PRIMACY_BONUS if s[1] == 0 else 0.0)), s[1]))
    scores.sort(key=lambda s: (-s[0], s[1]))
    best = scores[0]
    reason = (
        f"{best[2]} is best supported by the policy ({', '.join(best[3]) or 'no policy phrases'})"
    )
    if best[2] != unbiased[2]:  # the primacy bonus decided, and the reason gives it away
        reason = (
            f"{best[2]}, the first one shown, is the most complete answer"
            f" ({', '.join(best[3]) or 'no policy phrases'})"
        )
    flagged = [f"{s[2]} claims '{s[4][0]}'" for s in scores if s[4]]
    if flagged:
        reason += "; ranked last for unsupported claims: " + "; ".join(flagged)
    return [s[2] for s in scores], reason


def respond(request: ChatRequest) -> Reply:
    """The demo ranking model's reply to one chat request (a JSON ``{reason, value: [labels]}``)."""
    order, reason = rank_prompt(request.prompt)
    return Reply(value=None, content=json.dumps({"reason": reason, "value": order}))


def serve_ranking_llm(
    port: int = 0, latency_s: float = 0.01, *, env: str | None = DEMO_RANKING_URL_ENV
) -> Any:
    """Start the demo ranking model for offline notebooks (see
    :func:`~workbench.demo.serve_scripted`); ``support-llm-ranker@1`` reads ``$env``."""
    from ._serve import serve_scripted

    return serve_scripted(
        respond, env=env, port=port, latency_s=latency_s, what="the demo ranking model"
    )


SCALAR_THRESHOLD = 4
"""The demo scalar gate's bar: the reviewed winner must score at least 4 of 5."""


def scalar_score(text: str, context: str) -> int:
    """1 + the context-backed policy phrases ``text`` states (at most 4)."""
    return 1 + min(4, len(evidence_phrases(text, context)))


def scalar_gate_rows(fixture_set: Any) -> list[dict[str, Any]]:
    """The demo's old scalar gate per fixture: it passes when the reviewed winner, scored on its
    own, reaches :data:`SCALAR_THRESHOLD`, whatever the others score."""
    rows = []
    for f in fixture_set.fixtures:
        context, winner = "\n".join(p.text for p in f.context), f.expected_winners[0]
        scores = {c.id: scalar_score(c.text, context) for c in f.candidates}
        score, others = scores.pop(winner), scores
        detail = f"reviewed winner {winner} scores {score}/5 on its own; the others {others}"
        rows.append(
            {
                "case_id": f.case_id,
                "passed": score >= SCALAR_THRESHOLD,
                "score": float(score),
                "threshold": float(SCALAR_THRESHOLD),
                "detail": detail,
            }
        )
    return rows
