"""Where the append-only logs kept beside the gold (repeatability studies, drift) live."""

from __future__ import annotations

from pathlib import Path

from ..gold import GoldDataset


def beside_gold(gold: GoldDataset | str | Path, name: str) -> Path:
    """``<gold dataset directory>/<name>`` (``gold``: a dataset, its directory or file)."""
    if isinstance(gold, GoldDataset):
        return gold.root / name
    path = Path(gold)
    return (path if path.is_dir() else path.parent) / name
