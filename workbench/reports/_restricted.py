"""Case-level held-out detail, kept apart from the shared report (which shows only counts):
every case as JSON Lines and an escaped HTML page for the independent review process, and
(:func:`write_code_copy`) the code a ``ragas-function`` candidate runs, as certified."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from .._html import render
from .._io import atomic_write_bytes, atomic_write_json, atomic_write_text, write_jsonl
from ..align import Join
from ..gold import GoldDataset
from ._render import CSP, stylesheet

NOTICE = (
    "RESTRICTED: case-level held-out evidence. Share only with the independent review process;\n"
    "do not show it to prompt authors (it would turn held-out data into development data).\n"
)
ORDER = {
    "false_pass": 0,
    "false_fail": 1,
    "disagreement": 2,
    "error": 3,
    "missing": 4,
    "aligned": 5,
}


def write_restricted(
    directory: Path, dataset: GoldDataset, join: Join, gate: Any, *, report_id: str | None = None
) -> None:
    """Every held-out case as JSON Lines and an escaped HTML page, the gate with its case ids."""
    directory.mkdir(parents=True, exist_ok=True)
    rows = []
    for c in join.cases:
        case = dataset.cases[c.case_id]
        adjudication = case.adjudication
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
                "grading_notes": case.grading_notes,
                "reviews": [
                    {"reviewer": r.reviewer, "label": r.label, "rationale": r.rationale}
                    for r in case.reviews
                ],
                "adjudication_reason": adjudication.reason if adjudication else None,
                "adjudicator": adjudication.adjudicator if adjudication else None,
            }
        )
    atomic_write_text(directory / "README.txt", NOTICE)
    write_jsonl(directory / "held_out_cases.jsonl", rows)
    atomic_write_json(directory / "gate_with_cases.json", gate.model_dump(mode="json"))
    atomic_write_text(directory / "held_out_cases.html", restricted_html(rows, report_id=report_id))


CODE_DIR = "code"
CODE_MANIFEST = "coverage.json"


def write_code_copy(directory: Path, judge: Any) -> bool:
    """Copy the code ``judge`` runs into ``directory`` (``files/<path>`` as fingerprinted, and
    ``coverage.json``); False (nothing written) for a judge that runs no code of its own."""
    code = getattr(judge, "code", None)
    if code is None:
        return False
    for rel, data in code.files.items():
        parts = Path(rel).parts
        inside = not Path(rel).is_absolute() and ".." not in parts
        target = directory / "files" / (rel if inside else f"_outside/{'_'.join(parts)}")
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(target, data)
    manifest = {
        "candidate": judge.spec.label,
        "candidate_fingerprint": judge.identity.fingerprint(),
        "function": judge.spec.function,
        "root": str(code.root),
        "code_sha256": code.manifest,
        "dependencies": code.dependencies,
    }
    atomic_write_json(directory / CODE_MANIFEST, manifest)
    return True


def restricted_html(rows: list[dict[str, Any]], *, report_id: str | None = None) -> str:
    """The restricted page: non-aligned cases, worst first (critical false passes first)."""
    shown = [r for r in rows if r.get("error_class") != "aligned"]
    shown.sort(
        key=lambda r: (
            ORDER.get(str(r.get("error_class")), 9),
            r.get("risk") != "critical",
            str(r.get("slice")),
            str(r.get("case_id")),
        )
    )
    counts = Counter(str(r.get("error_class")) for r in shown)
    return render(
        "restricted.html.j2",
        csp=CSP,
        css=stylesheet(),
        notice=NOTICE,
        report_id=report_id,
        rows=[{**r, "reviews": r.get("reviews") or []} for r in shown],
        shown=len(shown),
        aligned=len(rows) - len(shown),
        counts=sorted(counts.items(), key=lambda kv: ORDER.get(kv[0], 9)),
    )
