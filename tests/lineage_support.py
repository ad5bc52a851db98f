"""Stamp test results with the gold lineage the run engine records (dataset hash, rubric version).

The hash is recomputed here from the documented rule (sha256 over canonical JSON of the
sha256 of gold.jsonl, rubric.yaml and the evidence snapshot), not with the workbench's helpers.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import yaml
from conftest import canonical_sha256


def _file_sha(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def lineage_of(gold: str | Path) -> dict[str, str]:
    """``{dataset_sha256, rubric_version}`` of a dataset directory (or its gold.jsonl)."""
    root = Path(gold)
    root = root if root.is_dir() else root.parent
    rubric = yaml.safe_load((root / "rubric.yaml").read_text(encoding="utf-8"))
    evidence = rubric.get("evidence_snapshot")
    digest = canonical_sha256(
        {
            "gold": _file_sha(root / "gold.jsonl"),
            "rubric": _file_sha(root / "rubric.yaml"),
            "evidence": _file_sha(root / evidence) if evidence else None,
        }
    )
    return {"dataset_sha256": digest, "rubric_version": rubric["version"]}


def stamped(rows: list[dict[str, Any]], gold: str | Path) -> list[dict[str, Any]]:
    """``rows`` (result dicts) carrying the lineage of ``gold``."""
    lineage = lineage_of(gold)
    return [{**row, **lineage} for row in rows]
