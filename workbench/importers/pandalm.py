"""PandaLM (WeOpenML/PandaLM): 999 pairwise comparisons, each labelled by three human annotators.

``testset-v1.json`` is a list of ``{idx, motivation_app, cmp_key, instruction, input,
response1, response2, annotator1, annotator2, annotator3}``. Labels: ``1`` (response 1 is
better), ``2`` (response 2 is better), ``0`` (tie).

Decisions, also written into the card:

- One gold case per item, three reviews (``annotator1``-``annotator3``), labels as strings
  ``"0"``, ``"1"``, ``"2"``. The rubric has no pass/fail label and asks for three reviews.
- Adjudication is the majority label (``majority-vote``). With three reviewers and three
  labels, all three can differ. The importer then adds the abstain label ``no_majority``
  to the rubric and adjudicates the case as ``no_majority``. The upstream file has no such
  item, so the imported rubric has only the three labels.
- ``response`` is a single string, so it holds both candidates, each under a marker line:
  ``[Response 1]``, the first answer, a blank line, ``[Response 2]``, the second answer.
  The markers match how the labels are defined, so a judge sees exactly what the
  annotators compared. ``response_hash`` is the sha256 of this rendering. The hash of each
  answer on its own is in ``metadata``.
- ``input`` is the instruction. When the item has a non-empty ``input``, it follows the
  instruction under an ``[Input]`` marker.
- The 999 items hold only 170 distinct prompts: each prompt is compared across up to ten
  model pairs. The group is therefore the prompt (instruction and input), not ``idx``.
  Splitting by ``idx`` would put the same prompt in several partitions.
- slice = ``cmp_key`` (the model pair, risk medium); ``motivation_app`` is a tag.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

from ..gold import Adjudication, GoldCase, Review, Rubric, SliceSpec
from ._registry import (
    Findings,
    ImportSummary,
    partition_for,
    prepare_out,
    read_source,
    register_importer,
    stable_id,
    write_dataset,
)

KIND = "pandalm"
UPSTREAM = "WeOpenML/PandaLM@3871806e"
LICENCE = "Apache-2.0"
REFERENCE_SHA256 = "cc154f9067c7382d7ea86f8f246511a5e1ac87e1fddd845c5938d789505b07a4"
"""sha256 of ``data/testset-v1.json`` as released at :data:`UPSTREAM`."""

ANNOTATORS: tuple[str, ...] = ("annotator1", "annotator2", "annotator3")
KEYS: tuple[str, ...] = (
    "idx",
    "motivation_app",
    "cmp_key",
    "instruction",
    "input",
    "response1",
    "response2",
    *ANNOTATORS,
)
LABELS: tuple[str, ...] = ("0", "1", "2")
NO_MAJORITY = "no_majority"
ADJUDICATOR = "majority-vote"
RUBRIC_VERSION = "1"

RESPONSE_1_MARKER = "[Response 1]"
RESPONSE_2_MARKER = "[Response 2]"
INPUT_MARKER = "[Input]"

GRADING_NOTES = (
    "Pairwise preference. Compare [Response 1] and [Response 2] as answers to the instruction "
    "(and its [Input], if any). Answer 1 if Response 1 is better, 2 if Response 2 is better, "
    "0 if they are equally good or equally bad (tie)."
)
"""The same for every case: the label definitions the annotators applied, which a judge needs."""

_FIX_SHAPE = (
    f"use data/testset-v1.json from {UPSTREAM}: a JSON list of objects with keys " + ", ".join(KEYS)
)


def render_input(instruction: str, extra_input: str) -> str:
    """The judge-visible prompt: the instruction, then the item's input under ``[Input]`` when
    present."""
    if not extra_input.strip():
        return instruction
    if not instruction.strip():
        return f"{INPUT_MARKER}\n{extra_input}"
    return f"{instruction}\n\n{INPUT_MARKER}\n{extra_input}"


def response_text(value: Any) -> str:
    """A candidate response as text.

    The upstream file stores a few responses as JSON ``true`` rather than text: the model's
    answer "True" was coerced to a boolean somewhere upstream. Python's rendering ("True")
    is used because that is most likely what the annotators saw, since PandaLM's pipeline is
    Python. Numbers get the same treatment, and null becomes the empty response.
    """
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return str(value)


def render_pair(response1: str, response2: str) -> str:
    """Both candidates in one string, in the order the annotators' labels refer to."""
    return f"{RESPONSE_1_MARKER}\n{response1}\n\n{RESPONSE_2_MARKER}\n{response2}"


def majority(labels: list[str]) -> tuple[str, str]:
    """The adjudicated label and the reason: a strict majority, or ``no_majority``."""
    label, count = Counter(labels).most_common(1)[0]
    if count * 2 > len(labels):
        how = "unanimous" if count == len(labels) else f"{count} of {len(labels)} annotators"
        return label, f"Majority vote: {label} ({how})."
    return (
        NO_MAJORITY,
        (
            "No majority: every annotator chose a different label; recorded as the abstain label"
            " no_majority."
        ),
    )


@register_importer(KIND)
def import_pandalm(source: Path, out: Path, *, force: bool = False) -> ImportSummary:
    """Import PandaLM ``testset-v1.json`` into a gold dataset directory ``out``.

    ``force`` replaces a dataset already in ``out``. Raises :class:`WorkbenchError`
    listing every problem in the source.
    """
    source, out = Path(source), Path(out)
    data = read_source(source, "PandaLM test set", f"point at data/testset-v1.json from {UPSTREAM}")
    replaced = prepare_out(out, force=force)
    source_sha256 = hashlib.sha256(data).hexdigest()
    items = _read_items(source, data)

    cases: list[GoldCase] = []
    pairs: set[str] = set()
    marker_clash: list[str] = []
    coerced_items: list[str] = []
    empty_responses = 0
    blank_instructions = 0
    for position, item in items:
        labels = [_label(item[a]) for a in ANNOTATORS]
        decided, reason = majority(labels)
        idx = idx_text(item)
        instruction, extra = item["instruction"], item["input"] or ""
        r1, r2 = response_text(item["response1"]), response_text(item["response2"])
        coerced = {
            f"{key}_source_type": type(item[key]).__name__
            for key in ("response1", "response2")
            if not isinstance(item[key], str)
        }
        if coerced:
            coerced_items.append(idx)
        if not instruction.strip():
            blank_instructions += 1
        response = render_pair(r1, r2)
        group = stable_id("prompt", instruction, extra)
        pairs.add(item["cmp_key"])
        if any(
            marker in text for text in (r1, r2) for marker in (RESPONSE_1_MARKER, RESPONSE_2_MARKER)
        ):
            marker_clash.append(idx)
        empty_responses += sum(1 for text in (r1, r2) if not text.strip())
        cases.append(
            GoldCase(
                case_id=f"{KIND}-{idx}",
                partition=partition_for(KIND, group),
                group=group,
                slice=item["cmp_key"],
                tags=[f"motivation_app:{item['motivation_app']}"],
                rubric_version=RUBRIC_VERSION,
                input=render_input(instruction, extra),
                response=response,
                response_hash=hashlib.sha256(response.encode("utf-8")).hexdigest(),
                grading_notes=GRADING_NOTES,
                reviews=[
                    Review(reviewer=a, label=lab) for a, lab in zip(ANNOTATORS, labels, strict=True)
                ],
                adjudication=Adjudication(label=decided, adjudicator=ADJUDICATOR, reason=reason),
                metadata={
                    "source": f"{source.name}[{position}]",
                    "upstream": UPSTREAM,
                    "idx": item["idx"],
                    "cmp_key": item["cmp_key"],
                    "motivation_app": item["motivation_app"],
                    "response1_sha256": hashlib.sha256(r1.encode("utf-8")).hexdigest(),
                    "response2_sha256": hashlib.sha256(r2.encode("utf-8")).hexdigest(),
                    **coerced,
                },
            )
        )

    no_majority = sum(1 for case in cases if case.gold_label == NO_MAJORITY)
    unanimous = sum(1 for case in cases if not case.reviewers_disagree)
    notes = list(replaced)
    notes.append(f"{unanimous} of {len(cases)} items unanimous; {no_majority} without a majority")
    if no_majority:
        notes.append(
            f"added abstain label {NO_MAJORITY!r} for {no_majority} item(s) where all annotators"
            " differ"
        )
    quirks: list[str] = []
    if marker_clash:
        quirks.append(
            f"{len(marker_clash)} item(s) have a response containing a [Response N] marker, which"
            f" makes the rendering ambiguous to a reader (idx {', '.join(marker_clash[:5])})"
        )
    if coerced_items:
        quirks.append(
            f"{len(coerced_items)} item(s) store a response as a JSON scalar, not text (idx"
            f" {', '.join(coerced_items[:6])}); rendered as Python text, e.g. true -> 'True', and"
            " marked in metadata"
        )
    if blank_instructions:
        quirks.append(
            f"{blank_instructions} item(s) have a blank instruction; their input is the [Input]"
            " block alone"
        )
    if empty_responses:
        quirks.append(
            f"{empty_responses} candidate response(s) are empty in the source and kept as empty"
            " text"
        )
    notes += quirks
    if source_sha256 != REFERENCE_SHA256:
        notes.append(
            f"the source differs from the reference copy at {UPSTREAM}; the card records its sha256"
        )

    labels = list(LABELS) + ([NO_MAJORITY] if no_majority else [])
    rubric = Rubric(
        name="pandalm-pairwise-preference",
        version=RUBRIC_VERSION,
        criterion=(
            "Which of two responses better answers the instruction: 1 (Response 1), 2 (Response 2)"
            " or 0 (tie)."
        ),
        labels=labels,
        pass_label=None,
        fail_label=None,
        abstain_labels=[NO_MAJORITY] if no_majority else [],
        min_reviews=len(ANNOTATORS),
        slices={
            pair: SliceSpec(risk="medium", description=f"Responses from the model pair {pair}.")
            for pair in sorted(pairs)
        },
    )
    return write_dataset(
        kind=KIND,
        source=source,
        source_sha256=source_sha256,
        out=out,
        cases=cases,
        rubric=rubric,
        card_front=_card_front(source, source_sha256, no_majority, quirks),
        card_body=_card_body(len(cases), unanimous, no_majority),
        results=None,
        notes=notes,
    )


def idx_text(item: dict[str, Any]) -> str:
    """The item's idx as text (the upstream file mixes integers and strings)."""
    return str(item["idx"]).strip()


def _label(value: Any) -> str:
    return str(value).strip()


def _valid_label(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return str(value) in LABELS
    return isinstance(value, str) and value.strip() in LABELS


def _read_items(source: Path, data: bytes) -> list[tuple[int, dict[str, Any]]]:
    """Parse and check the JSON; returns ``(position, item)`` pairs or raises with every problem."""
    findings = Findings(source)
    try:
        loaded = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        findings.add(
            "source_encoding",
            "",
            f"the file is not UTF-8 (byte {exc.start})",
            "save the file as UTF-8",
        )
        findings.fail("unreadable PandaLM test set")
    except json.JSONDecodeError as exc:
        findings.add(
            "malformed_json",
            str(exc.lineno),
            f"malformed JSON ({exc.msg} at column {exc.colno})",
            "repair the JSON at this position; " + _FIX_SHAPE,
        )
        findings.fail("unreadable PandaLM test set")
    if not isinstance(loaded, list):
        findings.add(
            "source_shape",
            "",
            f"the file holds a JSON {type(loaded).__name__}, not a list of items",
            _FIX_SHAPE,
        )
        findings.fail("not a PandaLM test set")
    if not loaded:
        findings.add("source_empty", "", "the list of items is empty", _FIX_SHAPE)

    items: list[tuple[int, dict[str, Any]]] = []
    first_of_idx: dict[str, int] = {}
    for position, item in enumerate(loaded):
        where = f"item {position}"
        if not isinstance(item, dict):
            findings.add(
                "item_shape",
                where,
                f"an item is a JSON {type(item).__name__}, not an object",
                _FIX_SHAPE,
            )
            continue
        ok = True
        for key in KEYS:
            if key not in item:
                findings.add(
                    "missing_key",
                    where,
                    f"an item has no '{key}' key",
                    f"add '{key}' to every item; {_FIX_SHAPE}",
                )
                ok = False
        if "instruction" in item and not isinstance(item["instruction"], str):
            findings.add(
                "bad_type", where, "'instruction' is not a string", "make 'instruction' a string"
            )
            ok = False
        for key in ("response1", "response2"):
            if key in item and isinstance(item[key], dict | list):
                findings.add(
                    "bad_type",
                    where,
                    f"'{key}' is a JSON {type(item[key]).__name__}, not text",
                    f"make '{key}' the response text",
                )
                ok = False
        if "input" in item and item["input"] is not None and not isinstance(item["input"], str):
            findings.add(
                "bad_type",
                where,
                "'input' is not a string",
                "make 'input' a string (empty when the instruction has no input)",
            )
            ok = False
        for key in ("cmp_key", "motivation_app"):
            if key in item and (not isinstance(item[key], str) or not item[key].strip()):
                findings.add(
                    "bad_type",
                    where,
                    f"'{key}' is not a non-empty string",
                    f"set '{key}' to the upstream value",
                )
                ok = False
        instruction, extra = item.get("instruction"), item.get("input")
        if (
            isinstance(instruction, str)
            and not instruction.strip()
            and not (isinstance(extra, str) and extra.strip())
        ):
            findings.add(
                "empty_prompt",
                where,
                "both 'instruction' and 'input' are empty",
                "restore the prompt or remove the item",
            )
            ok = False
        for key in ANNOTATORS:
            if key in item and not _valid_label(item[key]):
                findings.add(
                    "unknown_label",
                    where,
                    f"'{key}' is {item[key]!r}, not one of 0, 1, 2",
                    f"set '{key}' to 0 (tie), 1 or 2",
                )
                ok = False
        if "idx" in item:
            idx = item["idx"]
            if isinstance(idx, bool) or not isinstance(idx, int | str) or str(idx).strip() == "":
                findings.add(
                    "bad_type",
                    where,
                    f"'idx' is {idx!r}, not an integer or string id",
                    "give every item a unique idx",
                )
                ok = False
            elif str(idx).strip() in first_of_idx:
                findings.add(
                    "duplicate_idx",
                    where,
                    f"idx {idx!r} already used by item {first_of_idx[str(idx).strip()]}",
                    "give every item a unique idx",
                )
                ok = False
            else:
                first_of_idx[str(idx).strip()] = position
        if ok:
            items.append((position, item))
    findings.raise_if_any("invalid PandaLM items")
    return items


def _card_front(
    source: Path, source_sha256: str, no_majority: int, quirks: list[str]
) -> dict[str, object]:
    matches = source_sha256 == REFERENCE_SHA256
    return {
        "name": "pandalm-testset",
        "version": UPSTREAM.split("@")[1] if matches else f"sha256-{source_sha256[:12]}",
        "intended_use": (
            "Measuring how well a pairwise judge reproduces human preferences between two"
            " instruction-following responses from 7B-class open models (labels 1, 2, or 0 for a"
            " tie), and as a human-human agreement baseline. It does not support pass/fail gating,"
            " claims about frontier-model outputs, or claims about domains outside the listed"
            " applications."
        ),
        "sampling_window": (
            "Responses from the model pairs in cmp_key (bloom-7b, cerebras-gpt-6.7B, llama-7b,"
            " opt-7b, pythia-6.9b) to 170 prompts inspired by real applications (motivation_app),"
            f" as released in {UPSTREAM} data/testset-v1.json."
        ),
        "reviewer_qualifications": (
            "Three human annotators per item (annotator1-3), as described by the PandaLM authors. "
            "Their training and guidelines are documented upstream, not here."
        ),
        "adjudication_procedure": (
            "Majority vote of the three annotators (adjudicator 'majority-vote'). When all three"
            " differ there is no majority; the case is adjudicated as the abstain label"
            f" '{NO_MAJORITY}', which the rubric then declares. This copy has {no_majority} such"
            " item(s)."
        ),
        "known_gaps": [
            (
                "The authors removed high-disagreement items, so human agreement here is inflated"
                " relative to fresh annotation."
            ),
            (
                "Responses come from 2023-era 7B models. Frontier-model outputs and long-form"
                " answers are not covered."
            ),
            (
                "No reference answers. The judge sees the prompt, both responses, and the label"
                " definitions in grading_notes."
            ),
            (
                "cmp_key names the model pair alphabetically. The file does not say which model"
                " wrote response1, so that is not asserted."
            ),
            (
                "Every slice (model pair) is medium risk; motivation_app (50 values) is a tag, not"
                " a slice."
            ),
            *(f"Source quirk: {quirk}." for quirk in quirks),
        ],
        "excluded_domains": [
            "safety-critical or policy-compliance judgments",
            "multi-turn dialogue",
        ],
        "privacy_handling": (
            "Public research data; prompts are synthetic tasks modelled on public applications. No"
            " personal data is expected."
        ),
        "source_authority": (
            "The PandaLM authors' human annotations are the grading evidence; no external"
            " reference."
        ),
        "licence": f"{LICENCE} (upstream LICENSE file beside the source)",
        "provenance": {
            "upstream": UPSTREAM,
            "file": source.name,
            "source_sha256": source_sha256,
            "matches_upstream_copy": matches,
            "importer": "workbench.importers.pandalm",
        },
    }


def _card_body(cases: int, unanimous: int, no_majority: int) -> str:
    return f"""
# PandaLM test set (imported)

{cases} pairwise comparisons, each labelled by three human annotators: `1` means response 1 is \
better,
`2` means response 2 is better, and `0` is a tie. {unanimous} of {cases} items are unanimous, and
{no_majority} have no majority.

- **Judge-visible fields:** `input` (the instruction, with the item's input under \
`{INPUT_MARKER}` when
  present), `response` (both candidates, rendered as `{RESPONSE_1_MARKER}` / `{RESPONSE_2_MARKER}`
  blocks in the order the labels refer to) and `grading_notes` (the label definitions, the same for
  every case). `response_hash` is the sha256 of that rendering. `metadata` holds the hash of each
  response on its own.
- **Groups:** one per distinct prompt (instruction and input). There are 170 prompts, each compared
  across up to ten model pairs, and a prompt's comparisons always share a partition (about
  40/30/30 development/calibration/held_out, placed by a hash of the group id).
- **Slices:** the model pair (`cmp_key`). `motivation_app` is kept as a tag.
- **Reference figures** (computed independently from the source): Fleiss kappa 0.8642; Cohen kappa
  1-2 0.8520, 1-3 0.8789, 2-3 0.8617; raw pairwise agreement 0.913 / 0.929 / 0.918; 879 of 999
  unanimous. `workbench agreement` on this dataset reproduces them.
"""
