"""PandaLM (WeOpenML/PandaLM): 999 pairwise comparisons, each labelled by three human annotators.

One gold case per item of ``testset-v1.json``: three reviews (labels ``"0"`` tie, ``"1"``,
``"2"``) adjudicated by majority, or ``no_majority`` (an abstain label) when all differ; both
responses rendered as one (:func:`._public.render_pair`); grouped by prompt, sliced by
``cmp_key``. The card (``templates/pandalm.md.j2``) says the rest.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path
from typing import Any

from .._io import sha256_text
from ..gold import Adjudication, GoldCase, Review, Rubric, SliceSpec
from ._public import (
    Findings,
    Rule,
    check_items,
    has_marker,
    marker_clash_note,
    partition_for,
    prepare_out,
    read_json_list,
    read_source,
    render_pair,
    stable_id,
    write_pinned,
)
from ._registry import ImportSummary, register_importer

KIND = "pandalm"
UPSTREAM = "WeOpenML/PandaLM@3871806e"
REFERENCE_SHA256 = "cc154f9067c7382d7ea86f8f246511a5e1ac87e1fddd845c5938d789505b07a4"

ANNOTATORS: tuple[str, ...] = ("annotator1", "annotator2", "annotator3")
RESPONSES: tuple[str, str] = ("response1", "response2")
KEYS: tuple[str, ...] = (
    "idx",
    "motivation_app",
    "cmp_key",
    "instruction",
    "input",
    *RESPONSES,
    *ANNOTATORS,
)
LABELS: tuple[str, ...] = ("0", "1", "2")
NO_MAJORITY = "no_majority"
ADJUDICATOR = "majority-vote"
RUBRIC_VERSION = "1"
INPUT_MARKER = "[Input]"

GRADING_NOTES = (
    "Pairwise preference. Compare [Response 1] and [Response 2] as answers to the instruction "
    "(and its [Input], if any). Answer 1 if Response 1 is better, 2 if Response 2 is better, "
    "0 if they are equally good or equally bad (tie)."
)

_FIX_SHAPE = (
    f"use data/testset-v1.json from {UPSTREAM}: a JSON list of objects with keys " + ", ".join(KEYS)
)


def render_input(instruction: str, extra_input: str) -> str:
    """The instruction, then the item's input under ``[Input]`` when present."""
    if not extra_input.strip():
        return instruction
    if not instruction.strip():
        return f"{INPUT_MARKER}\n{extra_input}"
    return f"{instruction}\n\n{INPUT_MARKER}\n{extra_input}"


def response_text(value: Any) -> str:
    """A candidate response as text: a few upstream responses are JSON ``true`` (rendered as
    Python does, "True", what the annotators most likely saw); null is empty."""
    return "" if value is None else str(value)


def majority(labels: list[str]) -> tuple[str, str]:
    """The adjudicated label and the reason: a strict majority, or ``no_majority``."""
    label, count = Counter(labels).most_common(1)[0]
    if count * 2 > len(labels):
        how = "unanimous" if count == len(labels) else f"{count} of {len(labels)} annotators"
        return label, f"Majority vote: {label} ({how})."
    why = "every annotator chose a different label; recorded as the abstain label no_majority"
    return NO_MAJORITY, f"No majority: {why}."


@register_importer(KIND)
def import_pandalm(source: Path, out: Path, *, force: bool = False) -> ImportSummary:
    """Import PandaLM ``testset-v1.json`` into ``out`` (``force``: replace a dataset there).
    Raises :class:`WorkbenchError` listing every problem in the source."""
    source, out = Path(source), Path(out)
    data = read_source(source, "PandaLM test set", f"point at data/testset-v1.json from {UPSTREAM}")
    replaced = prepare_out(out, force=force)
    source_sha256 = hashlib.sha256(data).hexdigest()
    items = _read_items(source, data)
    cases = [_case(source, position, item) for position, item in enumerate(items)]
    no_majority = sum(1 for case in cases if case.gold_label == NO_MAJORITY)
    unanimous = sum(1 for case in cases if not case.reviewers_disagree)
    notes = [
        *replaced,
        f"{unanimous} of {len(cases)} items unanimous; {no_majority} without a majority",
    ]
    if no_majority:
        notes.append(
            f"added abstain label {NO_MAJORITY!r} for {no_majority} item(s) where all annotators"
            " differ"
        )
    quirks = _quirks(items)
    notes += quirks
    rubric = _rubric(no_majority, {item["cmp_key"] for item in items})
    return write_pinned(
        KIND, UPSTREAM, REFERENCE_SHA256, source, source_sha256, out, cases, rubric, notes, {},
        {"cases": len(cases), "unanimous": unanimous, "no_majority": no_majority, "quirks": quirks},
    )  # fmt: skip


def _case(source: Path, position: int, item: dict[str, Any]) -> GoldCase:
    labels = [str(item[a]).strip() for a in ANNOTATORS]
    decided, reason = majority(labels)
    instruction, extra = item["instruction"], item["input"] or ""
    r1, r2 = (response_text(item[key]) for key in RESPONSES)
    response = render_pair(r1, r2)
    group = stable_id("prompt", instruction, extra)
    coerced = {
        f"{key}_source_type": type(item[key]).__name__
        for key in RESPONSES
        if not isinstance(item[key], str)
    }
    return GoldCase(
        case_id=f"{KIND}-{idx_text(item)}",
        partition=partition_for(KIND, group),
        group=group,
        slice=item["cmp_key"],
        tags=[f"motivation_app:{item['motivation_app']}"],
        rubric_version=RUBRIC_VERSION,
        input=render_input(instruction, extra),
        response=response,
        response_hash=sha256_text(response),
        grading_notes=GRADING_NOTES,
        reviews=[Review(reviewer=a, label=lab) for a, lab in zip(ANNOTATORS, labels, strict=True)],
        adjudication=Adjudication(label=decided, adjudicator=ADJUDICATOR, reason=reason),
        metadata={
            "source": f"{source.name}[{position}]",
            "upstream": UPSTREAM,
            "idx": item["idx"],
            "cmp_key": item["cmp_key"],
            "motivation_app": item["motivation_app"],
            "response1_sha256": sha256_text(r1),
            "response2_sha256": sha256_text(r2),
            **coerced,
        },
    )


def _quirks(items: list[dict[str, Any]]) -> list[str]:
    pairs = [(idx_text(item), *(response_text(item[key]) for key in RESPONSES)) for item in items]
    coerced = [
        idx_text(item) for item in items if not all(isinstance(item[k], str) for k in RESPONSES)
    ]
    blank = sum(1 for item in items if not item["instruction"].strip())
    empty = sum(1 for _, *texts in pairs for text in texts if not text.strip())
    quirks = marker_clash_note(
        [idx for idx, *texts in pairs if has_marker(*texts)], "a response", "idx"
    )
    if coerced:
        quirks.append(
            f"{len(coerced)} item(s) store a response as a JSON scalar, not text (idx"
            f" {', '.join(coerced[:6])}); rendered as Python text, e.g. true -> 'True', and"
            " marked in metadata"
        )
    if blank:
        quirks.append(
            f"{blank} item(s) have a blank instruction; their input is the [Input] block alone"
        )
    if empty:
        quirks.append(
            f"{empty} candidate response(s) are empty in the source and kept as empty text"
        )
    return quirks


def _rubric(no_majority: int, pairs: set[str]) -> Rubric:
    return Rubric(
        name="pandalm-pairwise-preference",
        version=RUBRIC_VERSION,
        criterion=(
            "Which of two responses better answers the instruction: 1 (Response 1), 2 (Response 2)"
            " or 0 (tie)."
        ),
        labels=[*LABELS, *([NO_MAJORITY] if no_majority else [])],
        pass_label=None,
        fail_label=None,
        abstain_labels=[NO_MAJORITY] if no_majority else [],
        min_reviews=len(ANNOTATORS),
        slices={
            pair: SliceSpec(risk="medium", description=f"Responses from the model pair {pair}.")
            for pair in sorted(pairs)
        },
    )


def idx_text(item: dict[str, Any]) -> str:
    """The item's idx as text (the upstream file mixes integers and strings)."""
    return str(item["idx"]).strip()


def _filled(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _valid_idx(value: Any, _item: Any = None) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | str) and bool(str(value).strip())


_RULES: list[Rule] = [
    (
        ("instruction",),
        lambda v, _: isinstance(v, str),
        "bad_type",
        "'instruction' is not a string",
        "make 'instruction' a string",
    ),
    (
        RESPONSES,
        lambda v, _: not isinstance(v, dict | list),
        "bad_type",
        "'{key}' is a JSON {type}, not text",
        "make '{key}' the response text",
    ),
    (
        ("input",),
        lambda v, _: v is None or isinstance(v, str),
        "bad_type",
        "'input' is not a string",
        "make 'input' a string (empty when the instruction has no input)",
    ),
    (
        ("cmp_key", "motivation_app"),
        lambda v, _: _filled(v),
        "bad_type",
        "'{key}' is not a non-empty string",
        "set '{key}' to the upstream value",
    ),
    (
        ("instruction",),
        lambda v, item: not isinstance(v, str) or _filled(v) or _filled(item.get("input")),
        "empty_prompt",
        "both 'instruction' and 'input' are empty",
        "restore the prompt or remove the item",
    ),
    (
        ANNOTATORS,
        lambda v, _: _valid_idx(v) and str(v).strip() in LABELS,
        "unknown_label",
        "'{key}' is {value!r}, not one of 0, 1, 2",
        "set '{key}' to 0 (tie), 1 or 2",
    ),
    (
        ("idx",),
        _valid_idx,
        "bad_type",
        "'idx' is {value!r}, not an integer or string id",
        "give every item a unique idx",
    ),
]


def _read_items(source: Path, data: bytes) -> list[dict[str, Any]]:
    findings = Findings(source)
    loaded = read_json_list(
        findings, data, "PandaLM test set", _FIX_SHAPE, not_what="not a PandaLM test set"
    )
    check_items(findings, loaded, KEYS, _RULES, _FIX_SHAPE)
    first: dict[str, int] = {}
    for position, item in enumerate(loaded):
        if not isinstance(item, dict) or not _valid_idx(item.get("idx")):
            continue
        if idx_text(item) in first:
            findings.add(
                "duplicate_idx",
                f"item {position}",
                f"idx {item['idx']!r} already used by item {first[idx_text(item)]}",
                "give every item a unique idx",
            )
        first.setdefault(idx_text(item), position)
    findings.raise_if_any("invalid PandaLM items")
    return loaded
