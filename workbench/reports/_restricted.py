"""Case-level held-out detail, kept apart from the shared report.

Held-out disagreements appear in the shared HTML only as counts. The independent review
process gets this directory instead: every case with its human and judge labels, the judge's
reason and the text, as JSON Lines and as an HTML table in which all text is escaped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._io import atomic_write_json, atomic_write_text, read_jsonl_records, write_jsonl
from ..align import Join
from ..gold import GoldDataset
from ._present import esc

NOTICE = (
    "RESTRICTED: case-level held-out evidence. Share only with the independent review process;\n"
    "do not show it to prompt authors (it would turn held-out data into development data).\n"
)


def write_restricted(directory: Path, dataset: GoldDataset, join: Join, results_path: Path, gate: Any) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    rows = []
    for c in join.cases:
        case = dataset.cases[c.case_id]
        rows.append(
            {
                "case_id": c.case_id,
                "slice": c.slice,
                "risk": dataset.rubric.risk_of(c.slice),
                "human_label": c.human_label,
                "judge_label": c.judge_label,
                "error_class": c.error_class,
                "error_kind": c.error_kind,
                "judge_reason": c.reason,
                "attempts": c.attempts,
                "input": case.input,
                "response": case.response,
            }
        )
    atomic_write_text(directory / "README.txt", NOTICE)
    write_jsonl(directory / "held_out_cases.jsonl", rows)
    atomic_write_json(directory / "gate_with_cases.json", gate.model_dump(mode="json"))
    atomic_write_text(directory / "held_out_cases.html", _html(rows))


def _html(rows: list[dict[str, Any]]) -> str:
    columns = ["case_id", "slice", "risk", "error_class", "human_label", "judge_label", "error_kind", "judge_reason", "input", "response"]
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{esc(row.get(c))}</td>" for c in columns) + "</tr>" for row in rows if row["error_class"] != "aligned")
    aligned = sum(1 for row in rows if row["error_class"] == "aligned")
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        "<title>RESTRICTED held-out cases</title>"
        "<style>body{font-family:sans-serif;margin:16px}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px;vertical-align:top;white-space:pre-wrap;max-width:40em}</style>"
        f"</head><body><p class='restricted'><b>{esc(NOTICE)}</b></p>"
        f"<p>{len(rows) - aligned} non-aligned case(s) shown; {aligned} aligned case(s) omitted.</p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></body></html>\n"
    )


def read_restricted(directory: Path) -> list[dict[str, Any]]:
    return read_jsonl_records(directory / "held_out_cases.jsonl")
