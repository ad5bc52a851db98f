"""Dataset cards: the documented part (YAML front matter in ``card.md``) and the computed part."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .._docs import add_field_docs
from .._io import read_bounded
from .._load import parse_yaml, validation_problems
from ..errors import Problem, WorkbenchError, problem

if TYPE_CHECKING:
    from ._dataset import GoldDataset

CARD_FIELDS: tuple[str, ...] = (
    ("intended_use", "sampling_window")
    + ("reviewer_qualifications", "adjudication_procedure")
    + ("known_gaps", "excluded_domains", "privacy_handling", "source_authority")
)
"""Front-matter fields a card must document (the dataset card of seed 001; the label
distribution is computed)."""


class DatasetCard(BaseModel):
    """The human-written part of a dataset card, from the YAML front matter of ``card.md``."""

    model_config = ConfigDict(frozen=True, extra="allow", json_schema_extra=add_field_docs)

    name: str | None = None
    """Dataset name."""
    version: str | None = None
    """Dataset release version."""
    intended_use: str | None = None
    """What decisions the dataset may support, and which it may not."""
    sampling_window: str | None = None
    """When and how the responses were sampled."""
    reviewer_qualifications: str | None = None
    """Who reviewed, with what training and rubric version."""
    adjudication_procedure: str | None = None
    """How conflicts and low-confidence reviews were resolved."""
    known_gaps: list[str] | str | None = None
    """Risks and populations the dataset does not cover."""
    excluded_domains: list[str] | str | None = None
    """Domains deliberately out of scope."""
    privacy_handling: str | None = None
    """How personal data was handled."""
    source_authority: str | None = None
    """Where the grading evidence comes from and who owns it."""
    body: str = Field(default="", exclude=True)
    """The markdown below the front matter."""


def read_card(path: Path) -> tuple[DatasetCard | None, list[Problem]]:
    """Read ``card.md``; missing documentation is a warning, not a blocker."""
    location = str(path)
    if not path.exists():
        fix = "write card.md with YAML front matter: " + ", ".join(CARD_FIELDS)
        return None, [_warning(location, "card_missing", "the dataset has no card", fix)]
    try:
        data = read_bounded(path, fix="point at the dataset's card.md, a small markdown file")
    except WorkbenchError as exc:  # present but unreadable, not a file or too large: an error
        return None, list(exc.problems)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        message = f"the card is not valid UTF-8 (byte {exc.start})"
        return None, [_warning(location, "card_encoding", message, "save card.md as UTF-8")]
    front: dict[str, Any] = {}
    body = text
    if text.startswith("---"):
        end = text.find("\n---", 3)
        if end != -1:
            try:
                loaded = parse_yaml(
                    text[3:end],
                    location,
                    prefix="card",
                    fix="correct the YAML between the --- lines",
                    severity="warning",
                )
            except WorkbenchError as exc:
                return None, list(exc.problems)
            front = loaded if isinstance(loaded, dict) else {}
            body = text[end + 4 :].lstrip("\n")
    try:
        card = DatasetCard.model_validate({**front, "body": body})
    except ValidationError as exc:
        return None, validation_problems(
            exc,
            at=location,
            code="card_invalid",
            root="card",
            message=lambda err, field: f"card field {field}: {err['msg']}",
            fix=(
                "correct this front-matter field; documented fields are text (known_gaps and"
                " excluded_domains may be lists of text)"
            ),
            severity="warning",
        )
    problems = [
        _warning(
            location,
            "card_field_missing",
            f"the card does not document {name}",
            f"add '{name}:' to the card's front matter",
        )
        for name in CARD_FIELDS
        if not getattr(card, name)
    ]
    return card, problems


def _warning(location: str, code: str, message: str, fix: str) -> Problem:
    return problem(location, code, message, fix, severity="warning")


DISAGREEMENT_BASIS = (
    "cases with two or more reviews (the cases Krippendorff's alpha is computed over)"
)
"""Which cases the card's (and the agreement report's) disagreement rate is computed over."""


def card_statistics(dataset: GoldDataset, *, min_shared: int | None = None) -> dict[str, Any]:
    """The computed part of a card: counts of adjudicated labels of active cases by partition x
    slice x label, reviewers (pairs sharing at least ``min_shared`` cases listed), disagreement."""
    from ..stats import DEFAULT_MIN_SHARED

    if min_shared is None:
        min_shared = DEFAULT_MIN_SHARED
    if min_shared < 1:
        raise ValueError(f"min_shared must be at least 1, got {min_shared}")
    cases = list(dataset.cases.values())
    counts: dict[str, dict[str, dict[str, int]]] = {}
    for case in cases:
        label = case.gold_label or "(none)"
        by_slice = counts.setdefault(case.partition.value, {}).setdefault(case.slice, {})
        by_slice[label] = by_slice.get(label, 0) + 1
    reviewers = Counter(review.reviewer for case in cases for review in case.reviews)
    pairable = [case for case in cases if len(case.reviews) >= 2]
    disagreements = sum(1 for case in pairable if case.reviewers_disagree)
    overturned = sum(
        1
        for case in cases
        if case.adjudication
        and not case.reviewers_disagree
        and case.reviews
        and case.reviews[0].label != case.adjudication.label
    )
    label_totals = Counter(case.gold_label or "(none)" for case in cases)
    return {
        "cases": len(cases),
        "records": len(dataset.records),
        "superseded_records": len(dataset.records) - len(cases),
        "groups": len({case.group for case in cases}),
        "by_partition": {
            p: sum(sum(v.values()) for v in s.values()) for p, s in sorted(counts.items())
        },
        "by_partition_slice_label": {
            p: {s: dict(sorted(v.items())) for s, v in sorted(sl.items())}
            for p, sl in sorted(counts.items())
        },
        "by_label": dict(sorted(label_totals.items())),
        "reviewers": dict(sorted(reviewers.items())),
        "reviewer_summary": _reviewer_summary(reviewers),
        "reviewer_pairs": _reviewer_pairs(cases, min_shared),
        "reviews_per_case": dict(sorted(Counter(str(len(c.reviews)) for c in cases).items())),
        "disagreement": {
            "cases": disagreements,
            "n": len(pairable),
            "rate": disagreements / len(pairable) if pairable else None,
        },
        "disagreement_basis": DISAGREEMENT_BASIS,
        "adjudication_overrode_unanimous": overturned,
    }


def _reviewer_summary(reviews_by_reviewer: dict[str, int]) -> dict[str, Any]:
    import statistics

    counts = sorted(reviews_by_reviewer.values())
    return {
        "count": len(counts),
        "reviews_min": counts[0] if counts else None,
        "reviews_median": statistics.median(counts) if counts else None,
        "reviews_max": counts[-1] if counts else None,
    }


def _reviewer_pairs(cases: list[Any], min_shared: int) -> dict[str, Any]:
    """Reviewer pairs sharing at least ``min_shared`` cases, and how many were left out."""
    from ..stats import shared_pairs

    pairs = shared_pairs([{r.reviewer: r.label for r in case.reviews} for case in cases])
    listed: list[dict[str, Any]] = [
        {
            "reviewer_a": a,
            "reviewer_b": b,
            "shared": len(shared),
            "same_label": sum(1 for x, y in shared if x == y),
        }
        for (a, b), shared in pairs.items()
        if len(shared) >= min_shared
    ]
    listed.sort(key=lambda row: (-row["shared"], row["reviewer_a"], row["reviewer_b"]))
    return {
        "min_shared": min_shared,
        "total": len(pairs),
        "listed": len(listed),
        "left_out": len(pairs) - len(listed),
        "pairs": listed,
    }


def counts_frame(dataset: GoldDataset) -> Any:
    """Active cases by partition x slice (rows) and adjudicated label (columns), with risk."""
    import pandas as pd

    rows = [
        {
            "partition": c.partition.value,
            "slice": c.slice,
            "risk": dataset.rubric.risk_of(c.slice),
            "label": c.gold_label or "(none)",
        }
        for c in dataset.cases.values()
    ]
    frame = pd.DataFrame(rows, columns=["partition", "slice", "risk", "label"])
    table = frame.pivot_table(
        index=["partition", "slice", "risk"], columns="label", aggfunc="size", fill_value=0
    )
    table["total"] = table.sum(axis=1)
    return table


NAMES_SHOWN = 20
"""A card lists reviewers (and reviewer pairs) one by one up to this many; beyond it, the most
active and a count."""


def card_document(dataset: GoldDataset, stats: dict[str, Any]) -> dict[str, Any]:
    """The card as one JSON document: documented and computed parts, dataset sha256, rubric."""
    return {
        "documented": _documented(dataset),
        "computed": stats,
        "dataset_sha256": dataset.sha256,
        "rubric_version": dataset.rubric.version,
    }


def _documented(dataset: GoldDataset) -> dict[str, Any]:
    return dataset.card.model_dump(exclude_none=True) if dataset.card else {}


def format_card(dataset: GoldDataset, stats: dict[str, Any]) -> str:
    """The card as text: the documented front matter (and the fields it leaves undocumented),
    then the computed part (``stats``): counts, reviewers, reviews per case, disagreement."""
    import yaml

    documented = _documented(dataset)
    lines = ["# Dataset card"]
    if documented:
        lines.append(yaml.safe_dump(documented, sort_keys=False, allow_unicode=True).rstrip())
    missing = [f for f in CARD_FIELDS if not documented.get(f)]
    if missing:
        lines.append(f"(undocumented: {', '.join(missing)})")
    lines += [
        "",
        f"# Computed (dataset sha256 {dataset.sha256[:12]}, rubric {dataset.rubric.version})",
        f"cases: {stats['cases']} active, {stats['superseded_records']} superseded record(s),"
        f" {stats['groups']} groups",
        *_count_lines(dataset, stats["by_partition_slice_label"]),
        "by label: " + ", ".join(f"{k} {v}" for k, v in stats["by_label"].items()),
        *_reviewer_lines(stats),
        "reviews per case: " + ", ".join(f"{k}: {v}" for k, v in stats["reviews_per_case"].items()),
    ]
    d = stats["disagreement"]
    rate = f"{d['rate']:.1%}" if d["rate"] is not None else "n/a"
    lines.append(
        f"reviewer disagreement: {d['cases']}/{d['n']} cases ({rate}), among"
        f" {stats['disagreement_basis']}"
    )
    return "\n".join(lines)


def _count_lines(dataset: GoldDataset, counts: dict[str, dict[str, dict[str, int]]]) -> list[str]:
    """The partition x slice x label table, with each slice's risk and total."""
    labels = list(dataset.rubric.labels)
    width = max([len("slice"), *(len(s) for slices in counts.values() for s in slices)]) + 2
    cols = [max(len(label), 5) + 2 for label in labels]

    def row(part: str, name: str, risk: str, cells: list[Any], total: Any) -> str:
        numbers = "".join(f"{c:>{w}}" for c, w in zip(cells, cols, strict=True))
        return f"{part:<13}{name:<{width}}{risk:<10}{numbers}{total:>8}"

    return [row("partition", "slice", "risk", labels, "total")] + [
        row(
            part,
            name,
            dataset.rubric.risk_of(name) or "?",
            [by.get(x, 0) for x in labels],
            sum(by.values()),
        )
        for part, slices in counts.items()
        for name, by in slices.items()
    ]


def _reviewer_lines(stats: dict[str, Any]) -> list[str]:
    summary = stats["reviewer_summary"]
    if not summary["count"]:
        return ["reviewers: 0"]
    lines = [
        f"reviewers: {summary['count']} (reviews per reviewer: min {summary['reviews_min']}, median"
        f" {summary['reviews_median']:g}, max {summary['reviews_max']})"
    ]
    by_reviews = sorted(stats["reviewers"].items(), key=lambda kv: (-kv[1], kv[0]))
    if len(by_reviews) <= NAMES_SHOWN:
        lines.append("  " + ", ".join(f"{k} ({v} reviews)" for k, v in by_reviews))
    else:
        shown = by_reviews[:10]
        lines.append(
            "  most reviews: "
            + ", ".join(f"{k} ({v})" for k, v in shown)
            + f", ... and {len(by_reviews) - len(shown)} more (--json lists all)"
        )
    return lines + _pair_lines(stats["reviewer_pairs"])


def _pair_lines(pairs: dict[str, Any]) -> list[str]:
    lines = [
        f"reviewer pairs sharing >= {pairs['min_shared']} case(s): {pairs['listed']} of"
        f" {pairs['total']} listed"
        + (
            f"; {pairs['left_out']} sharing fewer left out (--min-shared changes this)"
            if pairs["left_out"]
            else ""
        )
    ]
    lines += [
        f"  {p['reviewer_a']} & {p['reviewer_b']}: {p['shared']} shared cases, {p['same_label']}"
        " with the same label"
        for p in pairs["pairs"][:NAMES_SHOWN]
    ]
    if pairs["listed"] > NAMES_SHOWN:
        lines.append(
            f"  ... and {pairs['listed'] - NAMES_SHOWN} more pairs with the most shared cases above"
            " (--json lists all; workbench agreement gives their kappas)"
        )
    return lines
