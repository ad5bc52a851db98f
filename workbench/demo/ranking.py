"""Demo ranking judges for the Tallowmere fixtures: one deterministic, one scripted "LLM".

``policy_evidence_order`` (candidate ``policy-ranker@1``) is the seed-style deterministic
ranker: it counts the policy phrases a candidate states that the supplied context also
states, and orders by that count. Ties are broken on the neutral label, which is **not a
quality rule**: labels follow the presented order, so on a tie the candidate shown first wins.
The position battery finds exactly that. The metric also has no notion of a false claim, so a
candidate that stuffs in policy phrases around a wrong statement can outrank a correct one.

``respond`` (served by ``FakeLLM`` for ``support-llm-ranker@1``) reads the question's policy
passages and the labelled candidates from the prompt, scores each candidate by the policy
phrases it states minus a penalty for claims the policy forbids, and has a **scripted primacy
bias**: the candidate shown first gets a bonus worth a little more than one phrase, so when
it is within one phrase of the best it wins. It is deterministic, so its repeatability is
perfect and only the permutations reveal the bias, unless the fixture's identity order
itself shows the weaker candidate first: then the repeat baseline reverses every time (a
confirmed reversal, ``refund-timing-013``). When the bonus decided the winner, its reason says
so ("the first one shown"): criterion leakage the ranking report flags as a metric defect.
"""

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
    """Order candidates by the number of context-backed policy phrases they state, best first.

    The tie-break on the label is not a quality rule: it only makes the order reproducible,
    and because labels follow the presented order it favours the candidate shown first.
    """
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
    """Start the demo ranking model on 127.0.0.1 for offline notebooks.

    Binds a free port (``port=0``) and sets ``$WORKBENCH_DEMO_RANKER_URL`` (``env``) to its base
    URL, which ``support-llm-ranker@1`` reads: build the judge after this call. Returns the
    running :class:`~workbench.testing.FakeLLM` (call ``.stop()``). Sets a placeholder
    ``DEMO_LLM_API_KEY`` when none is set: the fake server needs no key.
    """
    from ._serve import serve_scripted

    return serve_scripted(
        respond, env=env, port=port, latency_s=latency_s, what="the demo ranking model"
    )


SCALAR_THRESHOLD = 4
"""The demo scalar gate's bar: the reviewed winner must score at least 4 of 5."""
DEMO_SCALAR_PATH = "data/ranking/support-scalar-gate@1.jsonl"
"""Where the committed demo scalar outcomes live (regenerated by :func:`write_scalar_gate`)."""


def scalar_score(text: str, context: str) -> int:
    """A 1-5 scalar score of one answer on its own: 1 + the context-backed policy phrases it states
    (at most 4)."""
    return 1 + min(4, len(evidence_phrases(text, context)))


def scalar_gate_rows(fixture_set: Any) -> list[dict[str, Any]]:
    """The demo's old scalar gate on each ranking fixture, the way a scalar dashboard would decide
    it.

    Each candidate is scored on its own (:func:`scalar_score`); the case passes when the
    reviewed winner scores at least :data:`SCALAR_THRESHOLD`, whatever the other candidates
    score. Two answers can both score well while one of them misstates the policy: the scalar
    cannot say which one a judge would put first, which is what the ranking gate checks.
    """
    rows = []
    for f in fixture_set.fixtures:
        context = "\n".join(p.text for p in f.context)
        winner = f.expected_winners[0]
        text = next(c.text for c in f.candidates if c.id == winner)
        score = scalar_score(text, context)
        others = {c.id: scalar_score(c.text, context) for c in f.candidates if c.id != winner}
        rows.append(
            {
                "case_id": f.case_id,
                "passed": score >= SCALAR_THRESHOLD,
                "score": float(score),
                "threshold": float(SCALAR_THRESHOLD),
                "detail": (
                    f"reviewed winner {winner} scores {score}/5 on its own; the others {others}"
                ),
            }
        )
    return rows


def write_scalar_gate(
    path: str = DEMO_SCALAR_PATH, fixtures: str = "data/ranking/support-ranking@1.yaml"
) -> int:
    """Regenerate the committed demo scalar outcomes; returns the number of rows."""
    from .._io import write_jsonl
    from ..ranking import load_fixtures

    return write_jsonl(path, scalar_gate_rows(load_fixtures(fixtures)))
