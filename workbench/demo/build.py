"""Generate the demo gold dataset deterministically from the authored content.

``python -m workbench.demo.build [OUT_DIR]`` (default ``data/demo``): one ``random.Random(SEED)``
consumed in a fixed order, so two runs write byte-identical files."""

from __future__ import annotations

import argparse
import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

import yaml

from .._io import atomic_write_text, sha256_text, write_jsonl, yaml_loads
from ..gold import GoldCase
from ._content import (
    APPROVED_TERMS,
    CLOSERS,
    CONTENT,
    EVIDENCE,
    HANDBOOK,
    OPENERS,
    SLICES,
    TOPICS,
    VARIANTS,
    VERBOSE_CLOSERS,
    VERBOSE_OPENERS,
    Concept,
    SliceInfo,
    Special,
    Topic,
)

SEED = 20260915
DEFAULT_OUT = Path("data/demo")
RUBRIC_NAME = "support-policy-correctness"
RUBRIC_VERSION = "support-policy-2026.09"
DATASET_VERSION = "1.0.0"
REVIEWERS = ("reviewer-a", "reviewer-b", "reviewer-c", "reviewer-d")
REVIEWER_PAIRS = tuple((a, b) for i, a in enumerate(REVIEWERS) for b in REVIEWERS[i + 1 :])
ADJUDICATORS = ("adjudicator-m", "adjudicator-n")
GENERATORS = ("support-bot-v3.1", "support-bot-v3.2", "support-bot-v4.0-rc1")
SAMPLED = "2026-09"
CORRECTION_DATE = "2026-10-06"

RULE_LINE = (
    "Rule: a required concept counts when it is stated in equivalent words or an approved "
    "abbreviation; a prohibited claim counts when it is asserted in any wording, but not when it "
    "is explicitly denied."
)

OPTIONAL_KINDS = tuple(
    (kind, t.chance) for kind, t in VARIANTS.kinds.items() if t.chance is not None
)
"""Which optional variants a topic gets, with the probability of including each one."""
DISAGREEMENT = VARIANTS.disagreement
BORDERLINE_KINDS = frozenset(kind for kind, share in DISAGREEMENT.items() if share >= 0.15)
RUBRIC_RULES = {k: t.rule for k, t in (VARIANTS.kinds | VARIANTS.specials).items() if t.rule}


@dataclass
class Variant:
    """One response to a topic, before reviews."""

    kind: str
    response: str
    label: str
    tags: list[str]
    why: str
    dissent: str


def grading_notes(topic: Topic) -> str:
    """The structured, controlled evidence shown to reviewers and judges alike."""
    lines = [f'Required: "{c.key}" | {c.meaning}' for c in topic.concepts]
    lines.append(f'Prohibited: "{topic.claim.key}" | {topic.claim.meaning}')
    lines.append(RULE_LINE)
    lines.append("Sources: " + ", ".join(topic.evidence))
    return "\n".join(lines)


def _norm(text: str) -> str:
    text = text.lower().replace("\u2019", "'")
    return " " + " ".join(re.sub(r"[^a-z0-9]+", " ", text).split()) + " "


def _has(text: str, phrase: str) -> bool:
    return _norm(phrase) in _norm(text)


_CLAIM_SENTENCES = (  # each sentence of a claim and whether it holds the claim's key phrase
    ("verbatim", True),
    ("negated", True),
    ("negated_after", True),
    ("paraphrase", False),
    ("abbreviated", False),
)


def check_topic(topic: Topic) -> list[str]:
    """Authoring checks beyond :func:`~workbench.demo._content.load_content`'s: each sentence
    contains (or avoids) the key phrase it is meant to."""
    problems: list[str] = []
    for concept in topic.concepts:
        if not _has(concept.canonical, concept.key):
            problems.append(f"{topic.slug}: canonical sentence lacks {concept.key!r}")
        if concept.alternative is not None and _has(concept.alternative, concept.key):
            problems.append(f"{topic.slug}: alternative sentence still contains {concept.key!r}")
        if (concept.alternative is None) != (concept.alt_term is None):
            problems.append(f"{topic.slug}: {concept.key!r} needs both alternative and alt_term")
    claim = topic.claim
    for name, states in _CLAIM_SENTENCES:
        sentence = getattr(claim, name)
        if sentence is not None and _has(sentence, claim.key) != states:
            how = "lacks" if states else "contains"
            problems.append(f"{topic.slug}: claim {name} sentence {how} {claim.key!r}")
    return problems


def _compose(rng: random.Random, sentences: Sequence[str | None]) -> str:
    parts = [rng.choice(OPENERS), *sentences, rng.choice(CLOSERS)]
    return " ".join(p for p in parts if p)


def _compose_verbose(
    rng: random.Random, sentences: Sequence[str | None], topic: Topic, info: SliceInfo
) -> str:
    body = list(sentences)
    body.insert(1, topic.extra)
    body.append(info.filler)
    parts = [rng.choice(VERBOSE_OPENERS), *body, rng.choice(VERBOSE_CLOSERS)]
    return " ".join(p for p in parts if p is not None)


def _variants(topic: Topic, info: SliceInfo, rng: random.Random) -> list[Variant]:
    """The topic's responses: concise, the optional kinds drawn by their probability, the
    abbreviated claim, the hand-written specials; shuffled."""
    claim = topic.claim
    alternatives = {
        kind: [
            c
            for c in topic.concepts
            if c.alternative and (c.alt_kind == "plain-language") == (kind == "plain-language")
        ]
        for kind in ("terminology", "plain-language")
    }
    kinds = ["concise"]
    for kind, p in OPTIONAL_KINDS:
        available = {
            "terminology": bool(alternatives["terminology"]),
            "plain-language": bool(alternatives["plain-language"]),
            "post-negation": claim.negated_after is not None,
        }.get(kind, True)
        if available and rng.random() < p:
            kinds.append(kind)
    if claim.abbreviated is not None:
        kinds.append("abbreviated-prohibition")
    out = [_variant(kind, topic, info, rng, alternatives) for kind in kinds]
    out += [_special_variant(special) for special in topic.specials]
    rng.shuffle(out)
    return out


def _variant(
    kind: str,
    topic: Topic,
    info: SliceInfo,
    rng: random.Random,
    alternatives: dict[str, list[Concept]],
) -> Variant:
    concepts, claim = topic.concepts, topic.claim
    canonical = [c.canonical for c in concepts]
    used = alternatives.get(kind, [])
    fields: dict[str, Any] = {
        "all_keys": ", ".join(f"'{c.key}'" for c in concepts),
        "terms": ", ".join(f"'{c.alt_term}' for '{c.key}'" for c in used),
        "termable": alternatives["terminology"],
        "plainable": alternatives["plain-language"],
        "claim": claim,
        "target": concepts[topic.wrong_replaces],
        "wrong": topic.wrong,
    }
    claimed = {
        "prohibited-claim": claim.verbatim,
        "paraphrased-prohibition": claim.paraphrase,
        "negation": claim.negated,
        "post-negation": claim.negated_after,
        "abbreviated-prohibition": claim.abbreviated,
    }
    sentences: Sequence[str | None] = [
        c.alternative if c in used else c.canonical for c in concepts
    ]
    if kind == "omission":
        dropped = rng.randrange(len(concepts))
        sentences = [s for i, s in enumerate(canonical) if i != dropped]
        fields["missing"] = concepts[dropped]
    elif kind in claimed:
        at = rng.randint(1, len(canonical))
        sentences = [*canonical[:at], str(claimed[kind]), *canonical[at:]]
    elif kind == "polished-wrong":
        sentences = [
            topic.wrong if i == topic.wrong_replaces else s for i, s in enumerate(canonical)
        ]
    verbose = kind in ("verbose", "polished-wrong")
    response = (
        _compose_verbose(rng, sentences, topic, info) if verbose else _compose(rng, sentences)
    )
    text = VARIANTS.kinds[kind]
    tags = list(text.tags) or [str(k) for k in sorted({c.alt_kind for c in used})]
    why, dissent = text.why.format(**fields), text.dissent.format(**fields)
    return Variant(kind, response, str(text.label), tags, why, dissent)


def _special_variant(special: Special) -> Variant:
    text = VARIANTS.specials[special.kind]
    return Variant(
        special.kind, special.response, special.label, list(text.tags), special.note, text.dissent
    )


def _reviews(
    variant: Variant, pair: tuple[str, str], evidence: list[str], disagree: bool, rng: random.Random
) -> list[dict[str, Any]]:
    gold = variant.label
    borderline = variant.kind in BORDERLINE_KINDS
    if variant.kind == "ambiguous":
        splits = [
            ("pass", "review_required"),
            ("fail", "review_required"),
            ("pass", "fail"),
            ("review_required", "fail"),
        ]
        labels = rng.choice(splits) if disagree else ("review_required", "review_required")
        rationales = {
            "review_required": variant.why,
            "pass": "Reads as acceptable under the notes, though the wording is vague.",
            "fail": "Too vague to count as stating the required concept.",
        }
        return [
            {
                "reviewer": reviewer,
                "label": label,
                "confidence": "low",
                "rationale": rationales[label],
                "evidence": evidence,
                "escalate": label == "review_required",
            }
            for reviewer, label in zip(pair, labels, strict=True)
        ]
    dissenter = rng.randrange(2) if disagree else -1
    other = "fail" if gold == "pass" else "pass"
    reviews = []
    for i, reviewer in enumerate(pair):
        if dissents := i == dissenter:
            confidence = rng.choice(["low", "medium"])
        else:
            confidence = "medium" if borderline else rng.choice(["high", "high", "high", "medium"])
        reviews.append(
            {
                "reviewer": reviewer,
                "label": other if dissents else gold,
                "confidence": confidence,
                "rationale": variant.dissent if dissents else variant.why,
                "evidence": evidence[:1] if dissents else evidence,
                "escalate": False,
            }
        )
    return reviews


def _adjudication(
    variant: Variant, reviews: list[dict[str, Any]], disagree: bool, adjudicator: str
) -> dict[str, Any]:
    reason = f"Reviewers agree. {variant.why}"
    if disagree:
        split = ", ".join(f"{r['reviewer']}={r['label']}" for r in reviews)
        rule = RUBRIC_RULES.get(variant.kind)
        reason = f"Reviewers split ({split}). {variant.why}" + (f" Rubric: {rule}." if rule else "")
    return {"label": variant.label, "reason": reason, "adjudicator": adjudicator}


def _assign_partitions(rng: random.Random) -> dict[str, str]:
    """Partition of every topic slug: per slice, about 40/30/30 of groups."""
    splits = {7: (3, 2, 2), 6: (2, 2, 2), 5: (2, 2, 1)}
    out: dict[str, str] = {}
    for info in SLICES:
        slugs = [t.slug for t in TOPICS if t.slice == info.name]
        rng.shuffle(slugs)
        dev, cal, _ = splits[len(slugs)]
        for i, slug in enumerate(slugs):
            out[slug] = "development" if i < dev else "calibration" if i < dev + cal else "held_out"
    return out


def _plan_corrections(
    rows: list[dict[str, Any]],
    variants: dict[str, Variant],
    disagreements: dict[str, bool],
    rng: random.Random,
) -> list[dict[str, Any]]:
    by_id = {row["case_id"]: row for row in rows}
    used: set[str] = set()
    corrections: list[dict[str, Any]] = []
    for plan in VARIANTS.corrections:
        free = sorted(cid for cid, v in variants.items() if v.kind == plan.kind and cid not in used)
        cid = rng.choice([c for c in free if disagreements[c] == plan.disagreed] or free)
        used.add(cid)
        original = by_id[cid]
        if not plan.disagreed:
            original["reviews"] = [
                {
                    **r,
                    "label": plan.wrong_label,
                    "rationale": plan.wrong_reason,
                    "confidence": "medium",
                }
                for r in original["reviews"]
            ]
        split = "Reviewers split." if plan.disagreed else "Reviewers agree."
        original["adjudication"] |= {
            "label": plan.wrong_label,
            "reason": f"{split} {plan.wrong_reason}",
        }
        occasion = "an adjudication review" if plan.disagreed else "the agreement audit"
        correct_label = "fail" if plan.wrong_label == "pass" else "pass"
        fixed = {
            **original,
            "case_id": f"{cid}-c1",
            "supersedes": cid,
            "tags": [*original["tags"], "corrected"],
            "adjudication": {
                "label": correct_label,
                "reason": (
                    f"Correction of {cid} after {occasion} on {CORRECTION_DATE}:"
                    f" {plan.fix_reason}. {variants[cid].why} The original label {plan.wrong_label}"
                    " is superseded."
                ),
                "adjudicator": ADJUDICATORS[0],
            },
            "metadata": {**original["metadata"], "corrected_on": CORRECTION_DATE},
        }
        corrections.append(fixed)
    return corrections


def _choose_disagreements(kinds: dict[str, str], rng: random.Random) -> set[str]:
    """Case ids whose reviewers disagree: an exact share of each kind, sampled."""
    chosen: set[str] = set()
    for kind, share in DISAGREEMENT.items():
        ids = sorted(cid for cid, k in kinds.items() if k == kind)
        chosen.update(rng.sample(ids, round(share * len(ids))))
    return chosen


def generate(rng: random.Random | None = None) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """All gold records in file order, and the variant kind of every original case id."""
    rng = rng or random.Random(SEED)
    if problems := [p for topic in TOPICS for p in check_topic(topic)]:
        raise ValueError("demo content problems:\n" + "\n".join(problems))
    partitions = _assign_partitions(rng)
    infos = {info.name: info for info in SLICES}

    # Pass 1: the responses, in file order.
    drafts: list[tuple[str, Topic, str, Variant]] = []
    for info in SLICES:
        topics = [t for t in TOPICS if t.slice == info.name]
        for number, topic in enumerate(topics, start=1):
            group = f"{info.prefix}-{number:02d}-{topic.slug}"
            for v_number, variant in enumerate(_variants(topic, infos[topic.slice], rng), start=1):
                drafts.append((f"{info.prefix}-{number:02d}-{v_number:02d}", topic, group, variant))
    kinds = {case_id: variant.kind for case_id, _, _, variant in drafts}

    # Pass 2: reviews and adjudication.
    disagreeing = _choose_disagreements(kinds, rng)
    rows: list[dict[str, Any]] = []
    for index, (case_id, topic, group, variant) in enumerate(drafts):
        pair = REVIEWER_PAIRS[index % len(REVIEWER_PAIRS)]
        if rng.random() < 0.5:
            pair = (pair[1], pair[0])
        evidence = list(topic.evidence)
        disagree = case_id in disagreeing
        reviews = _reviews(variant, pair, evidence, disagree, rng)
        rows.append(
            {
                "schema_version": 1,
                "case_id": case_id,
                "partition": partitions[topic.slug],
                "group": group,
                "slice": topic.slice,
                "tags": variant.tags,
                "rubric_version": RUBRIC_VERSION,
                "input": rng.choice(topic.questions),
                "response": variant.response,
                "response_hash": sha256_text(variant.response),
                "grading_notes": grading_notes(topic),
                "evidence": evidence,
                "reviews": reviews,
                "adjudication": _adjudication(
                    variant, reviews, disagree, ADJUDICATORS[index % len(ADJUDICATORS)]
                ),
                "metadata": {
                    "source": "synthetic-demo",
                    "generator": rng.choice(GENERATORS),
                    "sampled": SAMPLED,
                    "authored_by": "workbench demo builder",
                },
            }
        )
    disagreements = {case_id: case_id in disagreeing for case_id in kinds}
    variants = {case_id: variant for case_id, _, _, variant in drafts}
    records = rows + _plan_corrections(rows, variants, disagreements, rng)
    for record in records:
        GoldCase.model_validate(record)  # fail loudly if the generator drifts from the format
    return records, kinds


def _rubric() -> dict[str, Any]:
    return {
        "schema_version": 1,
        "name": RUBRIC_NAME,
        "version": RUBRIC_VERSION,
        "criterion": (
            "Given the customer's question and the case's grading notes, a support response passes "
            "when it states every required concept and asserts none of the prohibited claims, "
            "and is routed to review_required when the notes cannot settle the verdict."
        ),
        "labels": ["pass", "fail", "review_required"],
        "pass_label": "pass",
        "fail_label": "fail",
        "abstain_labels": ["review_required"],
        "min_reviews": 2,
        "slices": {
            info.name: {"risk": info.risk, "description": info.description} for info in SLICES
        },
        "evidence_snapshot": "evidence.jsonl",
    }


def _active(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    superseded = {r["supersedes"] for r in records if r.get("supersedes")}
    return [r for r in records if r["case_id"] not in superseded]


def _card(records: list[dict[str, Any]]) -> str:
    """``card.md``: ``content/card.yaml`` and ``content/card.md`` filled in with the figures."""
    active = _active(records)
    labels = ["pass", "fail", "review_required"]
    counts = Counter((r["partition"], r["slice"], r["adjudication"]["label"]) for r in active)
    groups = Counter((r["partition"], r["slice"]) for r in {r["group"]: r for r in active}.values())
    distribution = [
        [p, info.name, info.risk, str(groups[(p, info.name)])]
        + [str(counts[(p, info.name, label)]) for label in labels]
        for p in ("development", "calibration", "held_out")
        for info in SLICES
    ]
    totals = Counter(r["adjudication"]["label"] for r in active)
    split = _split(active)
    corrections = [r for r in records if r.get("supersedes")]
    values = {
        "dataset_version": DATASET_VERSION,
        "sampled": SAMPLED,
        "rubric_name": RUBRIC_NAME,
        "rubric_version": RUBRIC_VERSION,
        "handbook": HANDBOOK,
        "seed": SEED,
        "terms": _table(["concept", "accepted alternatives"], [[a, b] for a, b in APPROVED_TERMS]),
        "active": len(active),
        "groups": len({r["group"] for r in active}),
        "records": len(records),
        "corrections": len(corrections),
        "passes": totals["pass"],
        "fails": totals["fail"],
        "reviews": totals["review_required"],
        "distribution": _table(["partition", "slice", "risk", "groups", *labels], distribution),
        "split": split,
        "share": split / len(active),
        "correction_lines": "\n".join(
            f"- `{r['case_id']}` supersedes `{r['supersedes']}` ({r['partition']}, {r['slice']}): "
            f"adjudicated {r['adjudication']['label']}."
            for r in corrections
        ),
    }
    front = _filled(yaml_loads(_content_text("card.yaml")), values)
    head = yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=100)
    return f"---\n{head}---\n\n" + _content_text("card.md").format(**values)


def _content_text(name: str) -> str:
    return files(__package__).joinpath(CONTENT, name).read_text(encoding="utf-8")


def _filled(value: Any, values: dict[str, Any]) -> Any:
    if isinstance(value, str):
        return value.format(**values)
    if isinstance(value, list):
        return [_filled(v, values) for v in value]
    return {k: _filled(v, values) for k, v in value.items()}


def _table(headers: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def build(out_dir: str | Path = DEFAULT_OUT) -> list[dict[str, Any]]:
    """(Re)write the demo dataset into ``out_dir``; returns its records."""
    out = Path(out_dir)
    records, _ = generate(random.Random(SEED))
    write_jsonl(out / "gold.jsonl", records)
    atomic_write_text(
        out / "rubric.yaml",
        yaml.safe_dump(_rubric(), sort_keys=False, allow_unicode=True, width=100),
    )
    write_jsonl(
        out / "evidence.jsonl",
        (
            {"id": eid, "text": text, "source": f"{HANDBOOK}, {section}"}
            for eid, text, section in EVIDENCE
        ),
    )
    atomic_write_text(out / "card.md", _card(records))
    return records


def _split(active: list[dict[str, Any]]) -> int:
    return sum(1 for r in active if len({rv["label"] for rv in r["reviews"]}) > 1)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m workbench.demo.build", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "out_dir", nargs="?", default=str(DEFAULT_OUT), help="output directory (default: data/demo)"
    )
    args = parser.parse_args(argv)
    records = build(args.out_dir)
    active = _active(records)
    partitions = dict(sorted(Counter(r["partition"] for r in active).items()))
    labels = dict(sorted(Counter(r["adjudication"]["label"] for r in active).items()))
    print(
        f"wrote {args.out_dir}: {len(active)} active cases ({len(records)} records,"
        f" {len(records) - len(active)} superseded), disagreement {_split(active)}/{len(active)},"
        f" partitions {partitions}, labels {labels}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
