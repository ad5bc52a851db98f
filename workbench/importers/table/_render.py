"""The files ``workbench import table`` writes (rubric draft, card, adjudication list): pure
functions of the import."""

from __future__ import annotations

import csv
import io
import json
import re
from collections import Counter
from typing import TYPE_CHECKING, Any

import yaml

from ..._csv import spreadsheet_safe
from ...gold import CONTRACT_FIELDS, PARTITIONS, GoldCase
from .._registry import render_text
from .._table_reader import _listed
from ._build import Pending
from ._mapping import RULE_TEXT, TableMapping

if TYPE_CHECKING:
    from pathlib import Path

    from . import TableImport

CARD_MARKER = (
    "<!-- workbench import table: everything below this line is recomputed by every import; edit"
    " above it -->"
)

PENDING_FILE = "adjudication_needed.csv"

_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")
_YAML_WORDS = {"true", "false", "yes", "no", "on", "off", "null", "y", "n", "~"}


def scalar(value: Any) -> str:
    """A YAML scalar: bare when unambiguous, else a JSON string."""
    if value is None or isinstance(value, bool | int | float):
        return json.dumps(value)
    text = str(value)
    if _PLAIN.match(text) and text.lower() not in _YAML_WORDS:
        return text
    return json.dumps(text, ensure_ascii=False)


def flow_list(values: list[Any]) -> str:
    return "[" + ", ".join(scalar(v) for v in values) + "]"


def rubric_yaml(
    rubric: dict[str, Any], *, source_label: str, mapping_label: str, slice_counts: dict[str, int]
) -> str:
    return render_text(
        "table_rubric.yaml.j2",
        rubric=rubric,
        unset=sum(1 for spec in rubric["slices"].values() if spec["risk"] == "unset"),
        source_label=source_label,
        mapping_label=mapping_label,
        slice_counts=slice_counts,
        contract=_contract_yaml(rubric),
        scalar=scalar,
        flow_list=flow_list,
        json=json.dumps,
    )


def _contract_yaml(rubric: dict[str, Any]) -> str:
    """The judgment contract's fields the rubric holds (kept from the previous file), as YAML."""
    kept = {name: rubric[name] for name in CONTRACT_FIELDS if name in rubric}
    return yaml.safe_dump(kept, sort_keys=False, allow_unicode=True, width=100) if kept else ""


def adjudication_text(mapping: TableMapping) -> str:
    adj, parts = mapping.adjudication, []
    if adj.column is not None:
        filled = " where it is filled." if adj.rule else "."
        parts.append(f"The adjudicated label is read from source column `{adj.column}`{filled}")
    if adj.rule is not None:
        prefix = "Elsewhere, rule" if adj.column is not None else "Rule"
        parts.append(f"{prefix} `{adj.rule}` decides: {RULE_TEXT[adj.rule]}.")
    parts.append(
        f"Cases nothing settles are written without adjudication and listed in {PENDING_FILE} for"
        " an adjudicator."
    )
    return " ".join(parts)


def card_text(previous: str | None, mapping: TableMapping, computed: str) -> str:
    """``card.md``: the human part (kept from ``previous``), then the computed part."""
    if previous is None:
        adjudication = json.dumps(adjudication_text(mapping), ensure_ascii=False)
        head = render_text(
            "table_card.md.j2", name=mapping.name, adjudication=adjudication, scalar=scalar
        )
    elif CARD_MARKER in previous:
        head = previous.split(CARD_MARKER, 1)[0]
    else:
        head = previous.rstrip("\n") + "\n\n"
    return head + CARD_MARKER + "\n\n" + computed


def computed_section(result: TableImport) -> str:
    m, cases, source = result.mapping, list(result.cases), result.source
    pending, settled = result.pending, result.settled
    partitions = Counter(c.partition.value for c in cases)
    reviews = [r for c in cases for r in c.reviews]
    per_case = Counter(len(c.reviews) for c in cases)
    lines = [
        "## Computed by `workbench import table`",
        "",
        f"- Source: `{source.label}` ({source.format}, {len(source.rows)} rows), sha256"
        f" `{source.sha256}`",
        f"- Mapping: `{result.mapping_label}`, sha256 `{result.mapping_sha256}`",
        f"- Cases: {len(cases)} in {len({c.group for c in cases})} groups; "
        + ", ".join(f"{p} {partitions.get(p, 0)}" for p in PARTITIONS),
        *_method_lines(m),
        f"- Reviews: {len(reviews)} by {len({r.reviewer for r in reviews})} reviewer(s),"
        f" {_review_form(m)}; reviews per case: "
        + ", ".join(f"{k}: {v}" for k, v in sorted(per_case.items())),
        f"- Cases whose reviewers disagree: {sum(c.reviewers_disagree for c in cases)} of"
        f" {len(cases)}",
        "- Label mapping: "
        + (
            ", ".join(f"`{k}` -> {v}" for k, v in m.labels.items())
            if m.labels is not None
            else "none (source values are the labels)"
        ),
        f"- Adjudication: {adjudication_text(m)}",
        f"- Gold labels: {settled['column']} from the adjudication column, "
        + (f"{settled['rule']} by rule `{m.adjudication.rule}`, " if m.adjudication.rule else "")
        + f"{settled['pending']} waiting for an adjudicator",
        "",
        *_label_table(cases, list(result.rubric["labels"])),
    ]
    if pending:
        lines += [
            "",
            f"{len(pending)} case(s) wait for an adjudicator (listed in `{PENDING_FILE}`): "
            + _listed([f"`{p.case_id}`" for p in pending], 20)
            + ".",
        ]
    return "\n".join(lines) + "\n"


def _method_lines(m: TableMapping) -> list[str]:
    if (a := m.partition.assign) is not None:
        partition = (
            f"assigned by group hash (sha256 of seed and group), seed {a.seed}; declared shares"
            f" development {a.development:g}, calibration {a.calibration:g}, held_out"
            f" {a.held_out:g}"
        )
    else:
        values = m.partition.values
        mapped = ", ".join(f"`{k}` -> {v.value}" for k, v in (values or {}).items())
        partition = f"from source column `{m.partition.column}`" + (
            f" mapped {mapped}" if values is not None else ""
        )
    return [
        "- Case ids: "
        + (
            f"source column `{m.case_id.column}`"
            if m.case_id
            else "generated: `case-` + sha256 of the input and the response (16 hex digits)"
        ),
        "- Groups: "
        + (
            f"source column `{m.group.column}`"
            if m.group.column
            else "hash of the input (same text up to case and whitespace)"
        ),
        f"- Partitions: {partition}",
    ]


def _review_form(m: TableMapping) -> str:
    r = m.reviews
    fields = f"reviewer `{r.reviewer}`, label `{r.label}`"
    if r.form == "long":
        return f"long form (one row per review): {fields}"
    if r.form == "nested":
        rationale = f", rationale `{r.rationale}`" if r.rationale else ""
        return f"nested form (a list of reviews per row): {fields}{rationale}"
    if r.columns is not None:
        return "wide form, one label column per reviewer: " + ", ".join(
            f"{name} `{c.label}`" for name, c in r.columns.items()
        )
    return "wide form, reviewer/label column pairs: " + ", ".join(
        f"`{p.reviewer}`/`{p.label}`" for p in r.pairs or []
    )


def _label_table(cases: list[GoldCase], labels: list[str]) -> list[str]:
    counts: dict[tuple[str, str], Counter[str]] = {}
    for c in cases:
        counts.setdefault((c.partition.value, c.slice), Counter())[c.gold_label or "(none)"] += 1
    order = {p: i for i, p in enumerate(PARTITIONS)}
    lines = [
        "| partition | slice | " + " | ".join(labels) + " | (none) | total |",
        "|---|---|" + "---|" * (len(labels) + 2),
    ]
    for (part, name), n in sorted(counts.items(), key=lambda kv: (order[kv[0][0]], kv[0][1])):
        lines.append(
            f"| {part} | {name} | "
            + " | ".join(str(n.get(label, 0)) for label in labels)
            + f" | {n.get('(none)', 0)} | {sum(n.values())} |"
        )
    return lines


def pending_csv(pending: list[Pending]) -> str:
    """``adjudication_needed.csv``: one row per case waiting for an adjudicator."""
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer, lineterminator="\n", quoting=csv.QUOTE_NONNUMERIC)
    writer.writerow(["case_id", "partition", "slice", "reviews", "source_rows", "why"])
    for p in pending:
        reviews = "; ".join(f"{who}={label}" for who, label in p.reviews)
        cells = [p.case_id, p.partition, p.slice, reviews, p.rows, p.why]
        writer.writerow([spreadsheet_safe(cell) for cell in cells])
    return buffer.getvalue()


def format_pending(pending: list[Pending], out: Path) -> str:
    """The cases waiting for an adjudicator in ``out`` and what to do, for the terminal."""
    lines = [f"{len(pending)} case(s) need an adjudicator (also in {out / PENDING_FILE}):"]
    for p in pending:
        reviews = ", ".join(f"{who}={label}" for who, label in p.reviews)
        lines.append(
            f"  {p.case_id} ({p.partition}, slice {p.slice}; {p.rows}): {reviews} - {p.why}"
        )
    lines.append(
        "Fix: have an adjudicator decide each one and record the label in the source's"
        " adjudication column, then re-run this import."
    )
    return "\n".join(lines)
