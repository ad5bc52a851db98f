"""Offline demo judges: deterministic Ragas metrics over the demo's structured grading notes
(``Required: "<phrase>" | <meaning>``, ``Prohibited: ...``), wrong in explainable ways.

``rubric_judge_v1`` matches phrases literally (misses abbreviations, denials and paraphrases);
``rubric_judge_v2`` adds a terminology guide and negation handling, with new errors (an
over-broad guide entry, "No problem, ..." read as a denial); ``rubric_judge_v3`` fixes what v2's
controls and review found and abstains on unaccounted claims.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragas.metrics import discrete_metric, numeric_metric
from ragas.metrics.result import MetricResult

import workbench  # noqa: F401  (sets RAGAS_DO_NOT_TRACK before ragas is imported)

ALLOWED_VALUES = ["pass", "fail"]

_NOTE_LINE = re.compile(r'^\s*(Required|Prohibited)\s*:\s*"([^"]+)"', re.IGNORECASE | re.MULTILINE)
_SENTENCE_END = re.compile(r"[.!?;]+(?=\s|$)")
_CONTRACTIONS: tuple[tuple[str, str], ...] = (
    ("can't", "cannot"),
    ("won't", "will not"),
    ("n't", " not"),
    ("'ll", " will"),
    ("'re", " are"),
    ("'m", " am"),
)

# The terminology and abbreviation guide of version 2: canonical term -> accepted alternatives.
TERMINOLOGY_GUIDE: dict[str, tuple[str, ...]] = {
    "two-factor authentication": (
        "2FA",
        "two-step verification",
        "multi-factor authentication",
        "MFA",
    ),
    "return authorization": ("RMA", "return merchandise authorization"),
    "business days": ("biz days", "working days"),
    "business day": ("biz day", "working day"),
    # Over-broad on purpose: "verification" alone also matches "two-step verification".
    "identity verification": ("ID check", "ID verification", "identity check", "verification"),
    "original payment method": ("card you paid with", "original form of payment", "original card"),
    "one-time passcode": ("OTP", "one-time code"),
    "password reset": ("pw reset",),
    "sign out of all sessions": ("log out everywhere", "sign out everywhere"),
    "order number": ("order no", "order ID"),
    "tracking number": ("tracking no", "tracking ID"),
    "reference number": ("ref no", "ref number"),
    "prepaid return label": ("free return label", "prepaid label"),
    "data protection officer": ("DPO",),
    "personal data": ("PII", "personal information"),
    "end of the billing period": ("end of your billing cycle", "end of the billing cycle"),
    "membership year": ("plan year",),
    "tier 2": ("T2",),
    "hours": ("hrs",),
    "hour": ("hr",),
    "minutes": ("mins",),
    "years": ("yrs",),
    "photo": ("picture", "pic"),
    "VAT invoice": ("tax invoice",),
    "company name": ("business name",),
    "cash on delivery": ("COD",),
    "unsubscribe": ("opt out",),
    "customs duties": ("import duties",),
    "standard": ("std",),
    "shipping": ("postage",),
    "prorated": ("pro rata", "pro-rated"),
    "center": ("centre",),
    "authorization": ("authorisation",),
    "neighbours": ("neighbors",),
    "payment details": ("card details", "billing details"),
}

_NUMBER_WORDS: dict[str, str] = {
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
    "ten": "10",
    "eleven": "11",
    "twelve": "12",
    "twenty": "20",
    "thirty": "30",
}

NEGATION_CUES = frozenset({"not", "no", "never", "cannot", "nor", "none", "nothing", "without"})
NEGATION_WINDOW = 6  # words before a prohibited phrase version 2 searches for a negation cue


@dataclass(frozen=True)
class Notes:
    required: tuple[str, ...]
    prohibited: tuple[str, ...]


def parse_notes(grading_notes: str) -> Notes:
    """Read the ``Required: "..."`` and ``Prohibited: "..."`` lines of the grading notes."""
    required: list[str] = []
    prohibited: list[str] = []
    for kind, phrase in _NOTE_LINE.findall(grading_notes or ""):
        (required if kind.lower() == "required" else prohibited).append(phrase.strip())
    return Notes(tuple(required), tuple(prohibited))


def _tokens(text: str, *, number_words: bool = False) -> list[str]:
    text = text.lower().replace("\u2019", "'")
    for short, long in _CONTRACTIONS:
        text = text.replace(short, long)
    words = re.sub(r"[^a-z0-9]+", " ", text).split()
    if number_words:
        words = [_NUMBER_WORDS.get(w, w) for w in words]
    return words


def _find(haystack: list[str], needle: list[str]) -> list[int]:
    """Start indices of ``needle`` as a whole-word run inside ``haystack``."""
    n = len(needle)
    if n == 0:
        return []
    return [i for i in range(len(haystack) - n + 1) if haystack[i : i + n] == needle]


def _sentence(parts: list[str]) -> str:
    text = "; ".join(parts)
    return text[:1].upper() + text[1:] + "."


def _no_notes() -> MetricResult:
    return MetricResult(
        value="fail", reason="The grading notes contain no Required or Prohibited lines to check."
    )


def _failed(*parts: tuple[str, list[str]]) -> MetricResult | None:
    """A fail naming every non-empty ``(what, items)`` part, or None."""
    listed = [f"{what} {', '.join(items)}" for what, items in parts if items]
    return MetricResult(value="fail", reason=_sentence(listed)) if listed else None


def v1_verdict(response: str, grading_notes: str) -> MetricResult:
    notes = parse_notes(grading_notes)
    if not notes.required and not notes.prohibited:
        return _no_notes()
    words = _tokens(response)
    missing = [p for p in notes.required if not _find(words, _tokens(p))]
    matched = [p for p in notes.prohibited if _find(words, _tokens(p))]
    failed = _failed(
        ("missing required concept", [f"'{p}'" for p in missing]),
        ("prohibited claim matched", [f"'{p}'" for p in matched]),
    )
    if failed is not None:
        return failed
    found = ", ".join(f"'{p}'" for p in notes.required) or "none listed"
    return MetricResult(
        value="pass", reason=f"All required concepts found ({found}); no prohibited claim matched."
    )


@discrete_metric(name="rubric_judge_v1", allowed_values=ALLOWED_VALUES)
def rubric_judge_v1(user_input: str, response: str, grading_notes: str) -> MetricResult:
    """Pass iff every required phrase appears in the response and no prohibited phrase does."""
    del user_input  # the verdict depends on the response and the notes only
    return v1_verdict(response, grading_notes)


Guide = list[tuple[list[str], list[list[str]]]]


def _guide_tokens(guide: dict[str, tuple[str, ...]]) -> Guide:
    return [
        (_tokens(term, number_words=True), [_tokens(alt, number_words=True) for alt in alts])
        for term, alts in guide.items()
    ]


_GUIDE = _guide_tokens(TERMINOLOGY_GUIDE)


def _spellings(phrase: str, guide: Guide = _GUIDE) -> list[tuple[list[str], str]]:
    """The phrase and its guide alternatives, each with the surface form it stands for."""
    base = _tokens(phrase, number_words=True)
    out: list[tuple[list[str], str]] = [(base, phrase)]
    for term, alternatives in guide:
        for start in _find(base, term):
            for alt in alternatives:
                variant = base[:start] + alt + base[start + len(term) :]
                out.append((variant, " ".join(variant)))
    return out


def _sentences(text: str) -> list[list[str]]:
    return [_tokens(s, number_words=True) for s in _SENTENCE_END.split(text) if s.strip()]


def _find_required(sentences: list[list[str]], phrase: str) -> str | None:
    """The form in which a required phrase appears, or ``None``."""
    for tokens, surface in _spellings(phrase):
        if any(_find(words, tokens) for words in sentences):
            return surface
    return None


def _find_claim(sentences: list[list[str]], phrase: str) -> tuple[str | None, str | None]:
    """``(asserted_form, denied_cue)``: a non-negated occurrence wins over a negated one."""
    denied: str | None = None
    for tokens, surface in _spellings(phrase):
        for words in sentences:
            for start in _find(words, tokens):
                window = words[max(0, start - NEGATION_WINDOW) : start]
                cue = next((w for w in reversed(window) if w in NEGATION_CUES), None)
                if cue is None:
                    return surface, None
                denied = denied or cue
    return None, denied


def v2_verdict(response: str, grading_notes: str) -> MetricResult:
    notes = parse_notes(grading_notes)
    if not notes.required and not notes.prohibited:
        return _no_notes()
    sentences = _sentences(response)
    found: list[str] = []
    missing: list[str] = []
    for phrase in notes.required:
        surface = _find_required(sentences, phrase)
        if surface is None:
            missing.append(phrase)
        elif _tokens(surface, number_words=True) != _tokens(phrase, number_words=True):
            found.append(f"'{phrase}' (as '{surface}')")
        else:
            found.append(f"'{phrase}'")
    asserted: list[str] = []
    denials: list[str] = []
    for phrase in notes.prohibited:
        surface, cue = _find_claim(sentences, phrase)
        if surface is not None:
            asserted.append(f"'{phrase}'" + (f" (as '{surface}')" if surface != phrase else ""))
        elif cue is not None:
            denials.append(f"'{phrase}' only under negation ('{cue}')")
    failed = _failed(
        ("missing required concept", [f"'{p}'" for p in missing]),
        ("prohibited claim matched", asserted),
    )
    if failed is not None:
        return failed
    reason = (
        f"All required concepts found ({', '.join(found) or 'none listed'}); no prohibited claim"
        " asserted"
    )
    if denials:
        reason += "; mentioned " + ", ".join(denials)
    return MetricResult(value="pass", reason=reason + ".")


@discrete_metric(name="rubric_judge_v2", allowed_values=ALLOWED_VALUES)
def rubric_judge_v2(user_input: str, response: str, grading_notes: str) -> MetricResult:
    """Version 1 plus a terminology guide and negation handling for prohibited claims."""
    del user_input  # the verdict depends on the response and the notes only
    return v2_verdict(response, grading_notes)


@numeric_metric(name="concept_coverage", allowed_values=(0.0, 1.0))
def concept_coverage(user_input: str, response: str, grading_notes: str) -> MetricResult:
    """The share of required concepts found (version-2 matching) minus 0.5 per asserted
    prohibited claim, in [0, 1]; the candidate's ``threshold`` makes it a label."""
    del user_input
    notes = parse_notes(grading_notes)
    if not notes.required and not notes.prohibited:
        return MetricResult(
            value=0.0, reason="The grading notes contain no Required or Prohibited lines."
        )
    sentences = _sentences(response)
    found = [p for p in notes.required if _find_required(sentences, p) is not None]
    asserted = [p for p in notes.prohibited if _find_claim(sentences, p)[0] is not None]
    coverage = len(found) / len(notes.required) if notes.required else 1.0
    score = max(0.0, min(1.0, coverage - 0.5 * len(asserted)))
    reason = f"{len(found)} of {len(notes.required)} required concepts found"
    if asserted:
        reason += "; prohibited claim asserted: " + ", ".join(f"'{p}'" for p in asserted)
    return MetricResult(value=round(score, 4), reason=reason + ".")


# Version 3 (each change declared in data/candidates/rubric-judge@3.yaml): quoted text and
# note-formatted lines are removed; a required concept negated in its clause is denied (unless
# its meaning is negative); a restricted condition widened is contradicted; negation of a
# prohibited claim is scoped to its clause; the guide loses "verification"; an unaccounted
# claim of CLAIM_MIN_WORDS+ words routes a pass to review_required.

ALLOWED_VALUES_V3 = ["pass", "fail", "review_required"]
_QUOTED = re.compile(r'"[^"\n]*(?:\n[^"\n]*)*"|\u201c[^\u201d]*\u201d', re.DOTALL)
_NOTE_FORMAT = re.compile(
    r"(?im)^\s*(?:required|prohibited|verdict|grading notes|rule|sources)\s*:.*$"
)
_CLAUSE_END = re.compile(r"[,:.!?;]+(?=\s|$)")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+")
_REQUIRED_LINE = re.compile(
    r'^\s*Required\s*:\s*"([^"]+)"\s*\|?\s*(.*)$', re.IGNORECASE | re.MULTILINE
)
_RESTRICTED = re.compile(r"\bthe (?:(\w+) on file|original (\w+))", re.IGNORECASE)
_WIDENERS = ("any", "any other", "another", "a different")
_COURTESY = re.compile(
    r"(help with that|anything else|here if you need|other questions|hope that helps|happy to"
    r" help|thanks for|thank you|good question|here's how it works|"
    r"glad you asked|reply here|come back to us|here to help|walk you through|step by step)",
    re.IGNORECASE,
)
CLAIM_MIN_WORDS = 6
TERMINOLOGY_GUIDE_V3: dict[str, tuple[str, ...]] = {
    **TERMINOLOGY_GUIDE,
    "identity verification": ("ID check", "ID verification", "identity check"),
}
_GUIDE_V3 = _guide_tokens(TERMINOLOGY_GUIDE_V3)


def answer_text(response: str) -> str:
    """The response without quoted material and grading-note-formatted lines (version 3)."""
    return _QUOTED.sub(" ", _NOTE_FORMAT.sub(" ", response))


def _clauses(text: str) -> list[list[str]]:
    return [_tokens(s, number_words=True) for s in _CLAUSE_END.split(text) if s.strip()]


def _negated(words: list[str], start: int) -> str | None:
    return next((w for w in reversed(words[:start]) if w in NEGATION_CUES), None)


def _required_v3(
    clauses: list[list[str]], phrase: str, negation_expected: bool
) -> tuple[str | None, str | None]:
    """``("stated", surface)``, ``("denied", cue)`` or ``(None, None)``; a plain statement wins."""
    denied: str | None = None
    for tokens, surface in _spellings(phrase, _GUIDE_V3):
        for words in clauses:
            for start in _find(words, tokens):
                cue = None if negation_expected else _negated(words, start)
                if cue is None:
                    return "stated", surface
                denied = denied or cue
    return ("denied", denied) if denied else (None, None)


def _claim_v3(clauses: list[list[str]], phrase: str) -> str | None:
    """The form in which a prohibited claim is asserted (not negated within its clause), or None."""
    for tokens, surface in _spellings(phrase, _GUIDE_V3):
        for words in clauses:
            for start in _find(words, tokens):
                if _negated(words, start) is None:
                    return surface
    return None


def _widened(meaning: str, words: list[str]) -> str | None:
    for match in _RESTRICTED.finditer(meaning):
        noun = (match.group(1) or match.group(2)).lower()
        for widener in _WIDENERS:
            if _find(words, [*_tokens(widener), noun]):
                return f"'{widener} {noun}' where the notes say '{match.group(0)}'"
    return None


def _unaccounted(sentences: list[str], phrases: list[str]) -> list[str]:
    out = []
    spellings = [tokens for p in phrases for tokens, _ in _spellings(p, _GUIDE_V3)]
    for sentence in sentences:
        words = _tokens(sentence, number_words=True)
        if len(words) < CLAIM_MIN_WORDS or _COURTESY.search(sentence):
            continue
        if not any(_find(words, tokens) for tokens in spellings):
            out.append(sentence.strip())
    return out


def v3_verdict(response: str, grading_notes: str) -> MetricResult:
    notes = parse_notes(grading_notes)
    if not notes.required and not notes.prohibited:
        return _no_notes()
    meanings = {p.strip(): m for p, m in _REQUIRED_LINE.findall(grading_notes or "")}
    answer = answer_text(response)
    clauses = _clauses(answer)
    words = _tokens(answer, number_words=True)
    found: list[str] = []
    missing: list[str] = []
    denied: list[str] = []
    widened: list[str] = []
    for phrase in notes.required:
        meaning = meanings.get(phrase, "")
        state, detail = _required_v3(
            clauses, phrase, negation_expected=bool(set(_tokens(meaning)) & NEGATION_CUES)
        )
        if state is None:
            missing.append(f"'{phrase}'")
        elif state == "denied":
            denied.append(f"'{phrase}' (under '{detail}')")
        elif (why := _widened(meaning, words)) is not None:
            widened.append(f"'{phrase}' ({why})")
        else:
            found.append(f"'{phrase}'" if detail == phrase else f"'{phrase}' (as '{detail}')")
    asserted = [f"'{p}'" for p in notes.prohibited if _claim_v3(clauses, p) is not None]
    failed = _failed(
        ("missing required concept", missing),
        ("required concept denied", denied),
        ("required condition widened", widened),
        ("prohibited claim matched", asserted),
    )
    if failed is not None:
        return failed
    extra = _unaccounted(_SENTENCE_SPLIT.split(answer), [*notes.required, *notes.prohibited])
    if extra:
        shown = extra[0] if len(extra[0]) <= 120 else extra[0][:117] + "..."
        more = f" (and {len(extra) - 1} more)" if len(extra) > 1 else ""
        return MetricResult(
            value="review_required",
            reason=(
                "Every required concept is stated, but a claim the grading notes do not cover"
                f" could be a paraphrased prohibited claim: '{shown}'{more}."
            ),
        )
    return MetricResult(
        value="pass",
        reason=(
            f"All required concepts found ({', '.join(found) or 'none listed'}); no prohibited"
            " claim asserted; every claim is covered by the notes."
        ),
    )


@discrete_metric(name="rubric_judge_v3", allowed_values=ALLOWED_VALUES_V3)
def rubric_judge_v3(user_input: str, response: str, grading_notes: str) -> MetricResult:
    """Version 2 hardened by its controls and development review; abstains on unaccounted claims."""
    del user_input  # the verdict depends on the response and the notes only
    return v3_verdict(response, grading_notes)
