"""Claim review without candidate identity: the material reviewers see names no system.

:func:`review_pack` gives each member to review a neutral label (``R01``, ``R02`` ... in a
seeded shuffle, so a pair's two members are not side by side) and keeps only what a claim
judgment needs: the question, the approved reference, the contexts (text, by 0-based index) and
the response. Pair ids, roles, members, distractor labels, generator and trace fields, slices
and every score stay out; the :class:`BlindKey` that maps labels back is written apart, for the
coordinator. :func:`unblind` turns the reviewers' labelled judgments into the panel format
(:mod:`._panel`).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from .._io import sha256_json
from .._load import Problems, validation_problems
from .._record import Record as _Model
from ..errors import WorkbenchError
from ._pairs import MEMBERS, NoisePair, NoiseSuite
from ._panel import PANEL_SCHEMA_VERSION, ClaimJudgment

INSTRUCTIONS = (
    "For each item, bound every claim of the response, mark whether it is incorrect against the"
    " reference, and cite the 0-based contexts that support or contradict it. Judge each item on"
    " its own: nothing here says which system wrote a response or how it was scored."
)


class ReviewItem(_Model):
    """One response to review, under a neutral label."""

    label: str
    """Neutral label (``R01`` ...): says nothing about the pair, member or system."""
    user_input: str
    """The question."""
    reference: str
    """The approved reference answer."""
    contexts: list[str]
    """The context texts the response was generated from, by 0-based index."""
    response: str
    """The response whose claims are reviewed."""


class ReviewPack(_Model):
    """The material claim reviewers see."""

    suite: str
    """``name@version`` of the suite reviewed."""
    instructions: str
    """What reviewers do."""
    items: list[ReviewItem]
    """The members to review, shuffled."""


class BlindKey(_Model):
    """Which member each neutral label stands for: kept by the coordinator, never shown."""

    suite: str
    """``name@version`` of the suite."""
    pack_sha256: str
    """sha256 of the review pack's canonical JSON (the key fits one pack)."""
    items: dict[str, str] = Field(min_length=1)
    """Label -> ``<pair_id>:<member>``."""


def review_pack(
    suite: NoiseSuite, *, seed: int = 0, pairs: Iterable[NoisePair] | None = None
) -> tuple[ReviewPack, BlindKey]:
    """The blinded material for ``pairs`` (default: the active calibration pairs), and its key."""
    chosen = [p for p in suite.active() if p.partition == "calibration"] if pairs is None else pairs
    members = [(p, m) for p in chosen for m in MEMBERS if not p.member(m).abstained]
    random.Random(seed).shuffle(members)
    width = max(2, len(str(len(members))))
    items, key = [], {}
    for n, (pair, member) in enumerate(members, start=1):
        label = f"R{n:0{width}d}"
        m = pair.member(member)
        items.append(
            ReviewItem(
                label=label,
                user_input=pair.user_input,
                reference=pair.reference,
                contexts=m.texts(),
                response=m.response,
            )
        )
        key[label] = pair.item_id(member)
    pack = ReviewPack(suite=suite.label, instructions=INSTRUCTIONS, items=items)
    digest = sha256_json(pack.model_dump(mode="json"))
    return pack, BlindKey(suite=suite.label, pack_sha256=digest, items=key)


class _Blinded(_Model):
    item: str
    reviewer: str | None = None
    adjudicator: str | None = None
    claims: list[ClaimJudgment] = Field(min_length=1)


def unblind(key: BlindKey, blinded: Mapping[str, Any], *, location: str) -> dict[str, Any]:
    """The panel mapping (``schema_version``, ``suite``, ``reviews``, ``adjudications``) of the
    reviewers' judgments by label; every unknown label or malformed entry at once."""
    problems = Problems()
    out: dict[str, list[dict[str, Any]]] = {"reviews": [], "adjudications": []}
    for section, who in (("reviews", "reviewer"), ("adjudications", "adjudicator")):
        for i, raw in enumerate(blinded.get(section) or []):
            where = f"{location} ({section}[{i}])"
            try:
                entry = _Blinded.model_validate(raw)
            except ValidationError as exc:
                problems += validation_problems(
                    exc, at=where, code="panel_invalid", fix="write {item, " + who + ", claims}"
                )
                continue
            target, name = key.items.get(entry.item), getattr(entry, who)
            if target is None:
                message = f"label {entry.item!r} is not in the key of {key.suite}"
                problems.add(where, "panel_item_unknown", message, "use a label of the pack")
                continue
            if not name:
                problems.add(where, "panel_invalid", f"no {who}", f"name the {who}")
                continue
            pair_id, member = target.rsplit(":", 1)
            claims = [c.model_dump(mode="json", exclude_defaults=True) for c in entry.claims]
            out[section].append({"pair_id": pair_id, "member": member, who: name, "claims": claims})
    problems.raise_if_any(f"{location}: cannot unblind: {len(problems)} problem(s)")
    return {"schema_version": PANEL_SCHEMA_VERSION, "suite": key.suite, **out}


def unblind_files(key_path: str | Path, reviews_path: str | Path) -> dict[str, Any]:
    """:func:`unblind` of a ``blind_key.json`` and a YAML file of labelled reviews."""
    from .._io import read_json_file
    from ._panel import read_panel_yaml

    fix = (
        "write reviews: [{item, reviewer, claims}] (and adjudications: [{item, adjudicator,"
        " claims}])"
    )
    raw = read_panel_yaml(Path(reviews_path), "blinded reviews", fix)
    try:
        key = BlindKey.model_validate(read_json_file(Path(key_path)))
    except ValidationError as exc:
        fix = "give the blind_key.json `noise panel-pack` wrote"
        problems = validation_problems(exc, at=str(key_path), code="key_invalid", fix=fix)
        raise WorkbenchError("invalid blind key", problems) from None
    return unblind(key, raw, location=str(reviews_path))
