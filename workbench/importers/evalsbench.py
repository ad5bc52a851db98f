"""EvalsBench (explodinggradients/EvalsBench): the data behind the Ragas judge-alignment quickstart.

``benchmark_df.csv`` holds 160 rows (``topic, question, grading_notes, target, response,
notes``): 80 questions, each with a passing answer and one derived by dropping required points.
Labels are by construction (reviewer and adjudicator ``dataset-construction``); ``notes`` gives
the label away, so it lives only in the adjudication reason. The card
(``templates/evalsbench.md.j2``) records every decision.
"""

from __future__ import annotations

import csv
import hashlib
from collections import Counter, defaultdict
from pathlib import Path
from typing import Literal

from .._io import sha256_text
from ..gold import Adjudication, GoldCase, Review, Rubric, SliceSpec
from ._public import (
    Findings,
    partition_for,
    prepare_out,
    read_source,
    stable_id,
    write_pinned,
)
from ._registry import ImportSummary, refuse, register_importer
from ._table_reader import _csv_records

KIND = "evalsbench"
UPSTREAM = "explodinggradients/EvalsBench@26b3b947"
REFERENCE_SHA256 = "84886f7340df190b90d60777f22c7eedf1d3d29b9d18232e59d055d3e40d0c76"

COLUMNS: tuple[str, ...] = ("topic", "question", "grading_notes", "target", "response", "notes")
LABELS: tuple[str, str] = ("pass", "fail")
CONSTRUCTION = "dataset-construction"
RUBRIC_VERSION = "1"
OTHER_THEME = "other"

SliceBy = Literal["theme", "topic"]

THEME_DESCRIPTIONS: dict[str, str] = {
    "valuation": "Startup valuation methods, valuation drivers and bubbles.",
    "funding-and-deal-terms": "Funding rounds, instruments, investors and term-sheet mechanics.",
    "metrics-and-financials": "Unit economics, KPIs, financial models and forecasts.",
    "exits-and-m-and-a": "IPOs, SPACs, acquisitions and exit strategy.",
    "regulation-and-risk": "Regulation, compliance, security and risk assessment.",
    "strategy-and-markets": "Competitive strategy, market dynamics, teams and operations.",
    OTHER_THEME: (
        "Topics not in the reviewed theme table (a copy of the source that differs from upstream)."
    ),
}

# Hand-assigned from the titles (keyword rules misfile several); unknown topics go to "other".
TOPIC_THEMES: dict[str, str] = {
    # valuation
    "Blockchain and crypto startup valuation methods": "valuation",
    "Identifying financial bubbles in tech": "valuation",
    "Identifying tech bubble warning signs": "valuation",
    "Impact of currency fluctuations on global startup evaluations": "valuation",
    "Impact of macroeconomic trends on startup valuations": "valuation",
    "Importance of intellectual property in tech valuations": "valuation",
    "Indicators of overvaluation in tech startups": "valuation",
    "Post-money valuation metrics": "valuation",
    "Pre-money valuation techniques": "valuation",
    "Real options analysis in startup investments": "valuation",
    "Seed round valuation impacts on series progression": "valuation",
    "Valuation challenges for biotech startups": "valuation",
    "Valuation discrepancies in private vs public markets": "valuation",
    "Valuation implications of tech stack choices": "valuation",
    "Valuation strategies for AI companies": "valuation",
    "Valuing intangible assets in tech startups": "valuation",
    # funding-and-deal-terms
    "Convertible notes vs SAFE in seed funding": "funding-and-deal-terms",
    "Differences between venture debt and equity funding": "funding-and-deal-terms",
    "Due diligence checklists for early-stage investments": "funding-and-deal-terms",
    "Impact of interest rates on VC funding": "funding-and-deal-terms",
    "Raising capital through crowdfunding platforms": "funding-and-deal-terms",
    "Role of angel investors in seed stage": "funding-and-deal-terms",
    "Role of incubators and accelerators in tech ecosystems": "funding-and-deal-terms",
    "Series A vs Series B funding terms": "funding-and-deal-terms",
    "Strategies for negotiating term sheets": "funding-and-deal-terms",
    "Syndication dynamics in venture capital": "funding-and-deal-terms",
    "Understanding equity dilution in funding rounds": "funding-and-deal-terms",
    "Understanding liquidation preferences in VC deals": "funding-and-deal-terms",
    "Venture capital portfolio diversification strategies": "funding-and-deal-terms",
    # metrics-and-financials
    "Analyzing churn rate in subscription-based models": "metrics-and-financials",
    "Assessing market traction using KPIs": "metrics-and-financials",
    "Burn rate analysis for early-stage startups": "metrics-and-financials",
    "Capital efficiency metrics for startups": "metrics-and-financials",
    "Customer acquisition cost optimization": "metrics-and-financials",
    "Financial modeling for consumer tech startups": "metrics-and-financials",
    "Financial projections for hardware startups": "metrics-and-financials",
    "Key success metrics for D2C tech startups": "metrics-and-financials",
    "Lifetime value calculation methods for startups": "metrics-and-financials",
    "Measuring unit economics in SaaS businesses": "metrics-and-financials",
    "Pricing strategies for tech startups": "metrics-and-financials",
    "Revenue forecasting methods for startups": "metrics-and-financials",
    # exits-and-m-and-a
    "Analyzing exit trends in the tech industry": "exits-and-m-and-a",
    "Exit strategies for SaaS companies": "exits-and-m-and-a",
    "IPO readiness assessment parameters": "exits-and-m-and-a",
    "IPO valuation debacles in recent history": "exits-and-m-and-a",
    "Impact of public market trends on startup exits": "exits-and-m-and-a",
    "M&A strategies in the tech sector": "exits-and-m-and-a",
    "Navigating antitrust issues in tech mergers": "exits-and-m-and-a",
    "Understanding exit multiples in tech IPOs": "exits-and-m-and-a",
    "Use of special purpose acquisition companies (SPACs) in tech": "exits-and-m-and-a",
    # regulation-and-risk
    "Data privacy compliance for health tech": "regulation-and-risk",
    "Impact of ESG criteria on startup evaluations": "regulation-and-risk",
    "Impact of cybersecurity incidents on valuations": "regulation-and-risk",
    "Importance of network security compliance": "regulation-and-risk",
    "Investment risk assessment in tech startups": "regulation-and-risk",
    "Market saturation risks in mature tech markets": "regulation-and-risk",
    "Navigating regulatory challenges for fintech startups": "regulation-and-risk",
    "Platform dependency risks in SaaS businesses": "regulation-and-risk",
    "Regulatory impacts on AI and machine learning companies": "regulation-and-risk",
    "Tech sector sensitivity to regulatory changes": "regulation-and-risk",
    # strategy-and-markets
    "Assessing competitive advantage in deep tech": "strategy-and-markets",
    "Assessing disruption potential in mature industries": "strategy-and-markets",
    "Assessing scale potential in platform businesses": "strategy-and-markets",
    "Competitive dynamics in tech sectors": "strategy-and-markets",
    "Convergence trends in telecom and tech": "strategy-and-markets",
    "Economies of scale in tech business models": "strategy-and-markets",
    "Effect of globalization on tech startup growth": "strategy-and-markets",
    "Effect of remote work trends on startup operations": "strategy-and-markets",
    "Effective board management in startups": "strategy-and-markets",
    "Evaluating founder potential and team dynamics": "strategy-and-markets",
    "Evaluating pivot strategies in startups": "strategy-and-markets",
    "Evaluating product-market fit in early-stage companies": "strategy-and-markets",
    "Forecasting market entry for tech innovations": "strategy-and-markets",
    "Impact of network effects on startup growth": "strategy-and-markets",
    "Importance of founder-market fit": "strategy-and-markets",
    "Market timing for tech startups entering competitive spaces": "strategy-and-markets",
    "Pattern recognition in tech market cycles": "strategy-and-markets",
    "Strategic partnership evaluations in tech": "strategy-and-markets",
    "Strategies for startup business model pivots": "strategy-and-markets",
    "Understanding customer segmentation in tech startups": "strategy-and-markets",
}

CRITERION = (
    "pass when the response covers every point in the grading notes; fail when it omits "
    "any required point (upstream prompt: 'Check if the response contains points mentioned "
    "from the grading notes and return pass or fail')."
)

_FIX_COLUMNS = "use benchmark_df.csv from " + UPSTREAM + " (columns: " + ", ".join(COLUMNS) + ")"


def theme_of(topic: str) -> str:
    return TOPIC_THEMES.get(topic.strip(), OTHER_THEME)


@register_importer(KIND)
def import_evalsbench(
    source: Path,
    out: Path,
    *,
    slice_by: SliceBy = "theme",
    force: bool = False,
) -> ImportSummary:
    """Import EvalsBench ``benchmark_df.csv`` into ``out``, sliced by ``theme`` (six hand-assigned
    themes) or ``topic`` (80, two cases each); ``force`` replaces a dataset there. Raises
    :class:`WorkbenchError` listing every problem in the source."""
    source, out = Path(source), Path(out)
    if slice_by not in ("theme", "topic"):
        message = f"slice_by must be 'theme' or 'topic', not {slice_by!r}"
        refuse(
            "bad option",
            "--slice-by",
            "bad_option",
            message,
            "use --slice-by theme or --slice-by topic",
        )
    data = read_source(source, "EvalsBench CSV", "point at benchmark_df.csv from " + UPSTREAM)
    replaced = prepare_out(out, force=force)
    source_sha256 = hashlib.sha256(data).hexdigest()
    rows = _read_rows(source, data)
    cases = [_case(source, line, row, slice_by) for line, row in rows]
    notes = [*replaced, *_composition_notes(rows)]
    notes += _annotation_notes(source, {row["question"].strip() for _, row in rows})
    others = sorted({row["topic"].strip() for _, row in rows} - set(TOPIC_THEMES))
    if others and slice_by == "theme":
        notes.append(
            f"{len(others)} topic(s) are not in the theme table and went to slice 'other': "
            + "; ".join(others[:5])
        )
    rubric = _rubric(slice_by, sorted({case.slice for case in cases}))
    return write_pinned(
        KIND, UPSTREAM, REFERENCE_SHA256, source, source_sha256, out, cases, rubric, notes,
        {"slice_by": slice_by}, {"slice_by": slice_by},
    )  # fmt: skip


def _case(source: Path, line: int, row: dict[str, str], slice_by: SliceBy) -> GoldCase:
    question, topic, target = row["question"], row["topic"].strip(), row["target"].strip().lower()
    group = stable_id("q", question.strip())
    return GoldCase(
        case_id=stable_id(KIND, question.strip(), row["response"]),
        partition=partition_for(KIND, group),
        group=group,
        slice=theme_of(topic) if slice_by == "theme" else topic,
        tags=[f"topic:{topic}"],
        rubric_version=RUBRIC_VERSION,
        input=question,
        response=row["response"],
        response_hash=sha256_text(row["response"]),
        grading_notes=row["grading_notes"],
        reviews=[
            Review(
                reviewer=CONSTRUCTION,
                label=target,
                rationale=(
                    "label assigned by how the response was built, not by an independent review"
                ),
            )
        ],
        adjudication=Adjudication(
            label=target,
            adjudicator=CONSTRUCTION,
            reason=_construction_reason(target, row["notes"]),
        ),
        metadata={"source": f"{source.name}:{line}", "upstream": UPSTREAM, "topic": topic},
    )


def _read_rows(source: Path, data: bytes) -> list[tuple[int, dict[str, str]]]:
    findings = Findings(source)
    header, records = _parse(findings, data)
    for name in (name for name in COLUMNS if name not in header):
        message = f"the header has no '{name}' column"
        findings.add("missing_column", "1", message, f"add the '{name}' column; {_FIX_COLUMNS}")
    for name, count in Counter(header).items():
        if count > 1 and name in COLUMNS:
            message = f"the header names '{name}' more than once"
            findings.add("duplicate_column", "1", message, "keep one column of each name")
    findings.raise_if_any("not an EvalsBench benchmark CSV")
    index = {name: header.index(name) for name in COLUMNS}
    rows: list[tuple[int, dict[str, str]]] = []
    seen: dict[tuple[str, str], int] = {}
    for line, raw in records:
        if len(raw) != len(header):
            message = f"a row has {len(raw)} field(s) but the header has {len(header)}"
            fix = (
                "quote fields that contain commas or newlines; every row needs one value per column"
            )
            findings.add("row_width", str(line), message, fix)
            continue
        row = {name: raw[i] for name, i in index.items()}
        first = seen.setdefault((row["question"].strip(), row["response"]), line)
        _check_row(findings, str(line), row, first)
        rows.append((line, row))
    if not records:
        findings.add("source_empty", "", "the file has a header but no rows", _FIX_COLUMNS)
    findings.raise_if_any("invalid EvalsBench rows")
    return rows


def _parse(findings: Findings, data: bytes) -> tuple[list[str], list[tuple[int, list[str]]]]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        message = f"the file is not UTF-8 (byte {exc.start})"
        findings.add("source_encoding", "", message, "save the CSV as UTF-8")
        findings.fail("unreadable EvalsBench CSV")
    records, error = _csv_records(text, "")  # the non-blank records
    if error is not None:
        fix = "fix the quoting on this line; fields with commas, quotes or newlines must be quoted"
        findings.add("source_malformed", error.location.lstrip(":"), error.message, fix)
        findings.fail("unreadable EvalsBench CSV")
    header = [name.strip() for name in records[0][1]] if records else []
    if not any(header):
        findings.add("source_empty", "", "the file has no header row", _FIX_COLUMNS)
        findings.fail("unreadable EvalsBench CSV")
    return header, records[1:]


def _check_row(findings: Findings, where: str, row: dict[str, str], first_line: int) -> None:
    for name in (
        n for n in ("topic", "question", "grading_notes", "response") if not row[n].strip()
    ):
        findings.add(
            "empty_field", where, f"'{name}' is empty", f"fill in '{name}' or remove the row"
        )
    if row["target"].strip().lower() not in LABELS:
        message = f"target {row['target']!r} is not pass or fail"
        findings.add("unknown_target", where, message, "set target to pass or fail")
    if str(first_line) != where:
        message = f"the same question and response already appear on line {first_line}"
        findings.add("duplicate_row", where, message, "remove the duplicate row")


def _construction_reason(target: str, note: str) -> str:
    reason = (
        "Constructed pass: the upstream generator wrote this answer to cover every point of the"
        " grading notes."
        if target == "pass"
        else "Constructed fail: the upstream generator derived this answer from a passing one by"
        " dropping required points."
    )
    if note.strip():  # it names the dropped points: never in a judge-visible field
        reason += " Upstream construction note: " + note.strip()
    return reason


def _composition_notes(rows: list[tuple[int, dict[str, str]]]) -> list[str]:
    by_question: dict[str, Counter[str]] = defaultdict(Counter)
    for _, row in rows:
        by_question[row["question"].strip()][row["target"].strip().lower()] += 1
    odd = sum(1 for counts in by_question.values() if counts != Counter({"pass": 1, "fail": 1}))
    if odd:
        return [
            f"{odd} question(s) do not have exactly one pass and one fail answer, unlike the"
            " upstream release"
        ]
    return []


def _annotation_notes(source: Path, questions: set[str]) -> list[str]:
    sibling = source.parent / "annotation_df.csv"
    if not sibling.is_file() or sibling == source:
        return []
    note = (
        "annotation_df.csv beside the source was not imported: it holds the upstream few-shot"
        " examples, not judge output for these cases"
    )
    try:
        with open(sibling, encoding="utf-8-sig", newline="") as fh:
            overlap = sum(
                1 for row in csv.DictReader(fh) if (row.get("question") or "").strip() in questions
            )
    except (OSError, UnicodeDecodeError, csv.Error):
        return [note]
    if overlap:
        note += (
            f"; WARNING: {overlap} of its rows share a question with the benchmark, so few-shot"
            " judges built from it have seen those questions"
        )
    return [note]


def _rubric(slice_by: SliceBy, slice_names: list[str]) -> Rubric:
    topic = "Upstream EvalsBench topic (one question, two cases)."
    slices = {
        name: SliceSpec(
            risk="medium", description=THEME_DESCRIPTIONS[name] if slice_by == "theme" else topic
        )
        for name in slice_names
    }
    return Rubric(
        name="evalsbench-grading-notes-coverage",
        version=RUBRIC_VERSION,
        criterion=CRITERION,
        labels=list(LABELS),
        pass_label="pass",
        fail_label="fail",
        min_reviews=1,
        slices=slices,
    )
