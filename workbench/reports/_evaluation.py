"""The deterministic part of certification, shared by the notebook and ``workbench verify``:
everything the gate reads is a file of the report (the policy, overrides and control suite
under ``inputs/``, the control records, ``lineage.json``, the held-out gold and rubric under
``restricted/gold/``, the held-out run under ``restricted/run/``, ``figures.json``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .._io import atomic_write_text, read_json_file, read_jsonl_records, write_jsonl
from ..align import AlignmentReport
from ..gold import GoldCase, GoldDataset, Rubric
from ..policy import Blocker, GateResult

LINEAGE_FILE = "lineage.json"
FIGURES_FILE = "figures.json"
GOLD_DIR = "restricted/gold"
HELD_OUT_GOLD = "restricted/gold/held_out.jsonl"
RUBRIC_JSON = "restricted/gold/rubric.json"


def lineage_blockers(rows: list[dict[str, Any]]) -> list[Blocker]:
    """One non-waivable ``lineage_failed`` blocker per lineage check that did not hold."""
    return [
        Blocker(
            code="lineage_failed",
            category="incomplete",
            slice=None,
            message=f"lineage check failed: {row['check']}",
            evidence={"expected": str(row["expected"]), "actual": str(row["actual"])},
            case_ids=[],
            waivable=False,
        )
        for row in rows
        if not row["ok"]
    ]


HELD_OUT_NOT_USED = "blocking controls failed, so the held-out partition was not used"


def public_gate(gate: GateResult) -> dict[str, Any]:
    """The gate as shared in the report: case ids replaced by counts."""
    data = gate.model_dump(mode="json")
    for key in ("blockers", "waived"):
        for item in data.get(key, []):
            block = item.get("blocker", item)
            if block.get("case_ids"):
                block["case_count"] = len(block["case_ids"])
            block["case_ids"] = []
    return data


def figures_of(report: AlignmentReport | None) -> dict[str, Any] | None:
    """The alignment figures the gate read, per slice and overall, without case ids."""
    if report is None:
        return None
    return {
        "status": report.status,
        "overall": report.overall.model_dump(mode="json"),
        "slices": [s.model_dump(mode="json") for s in report.slices],
        "confusion": report.confusion.model_dump(mode="json"),
    }


def write_gold_evidence(report_dir: Path, dataset: GoldDataset) -> None:
    """Store the held-out gold records and the rubric."""
    write_jsonl(
        report_dir / HELD_OUT_GOLD,
        [c.model_dump(mode="json") for c in dataset.partition("held_out")],
    )
    # Not key-sorted: the order of the rubric's slices is the order of the report's rows.
    atomic_write_text(
        report_dir / RUBRIC_JSON,
        json.dumps(dataset.rubric.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n",
    )


def read_gold_evidence(report_dir: Path, dataset_sha256: str) -> GoldDataset:
    """A :class:`GoldDataset` of the stored held-out records."""
    rubric = Rubric.model_validate(read_json_file(report_dir / RUBRIC_JSON))
    cases = [GoldCase.model_validate(row) for row in read_jsonl_records(report_dir / HELD_OUT_GOLD)]
    return GoldDataset(
        root=report_dir / GOLD_DIR,
        gold_path=report_dir / HELD_OUT_GOLD,
        rubric=rubric,
        records=tuple(cases),
        cases={c.case_id: c for c in cases},
        history={},
        superseded_by={},
        card=None,
        evidence_ids=None,
        sha256=dataset_sha256,
    )
