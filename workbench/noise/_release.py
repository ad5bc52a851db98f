"""Noise pair suites and claim review panels as approved inputs of the approval kernel
(``workbench freeze``; :mod:`workbench.approval`). A suite's release holds one hash per pair and
field group (``label``, ``reference``, ``status``, ``content``) and a header hash; a panel's one
item per reviewed member (``reviews``, ``label``). Every load checks the lineage.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .._io import sha256_json
from ..approval import Change, Release, Snapshot, read_release_log
from ._pairs import NoiseSuite

if TYPE_CHECKING:
    from ._panel import ClaimPanel

SUITE_KIND = "noise_suite"
PANEL_KIND = "noise_panel"
_LABEL_FIELDS = ("role", "expected_relation", "reference_defect")


def pair_fields(pair_data: dict[str, object]) -> dict[str, str]:
    """The field-group hashes of one pair (its JSON form)."""
    data = dict(pair_data)
    status = data.pop("retired", None)
    reference = {k: data.pop(k, None) for k in ("reference", "reference_version")}
    label = {k: data.pop(k, None) for k in _LABEL_FIELDS}
    return {
        "label": sha256_json(label),
        "reference": sha256_json(reference),
        "status": sha256_json(status),
        "content": sha256_json(data),
    }


def suite_snapshot_of(suite: NoiseSuite, where: dict[str, str] | None = None) -> Snapshot:
    """A pair suite as the approval kernel sees it."""
    data = suite.model_dump(mode="json", exclude={"source", "sha256"})
    pairs = data.pop("pairs")
    items = {p["pair_id"]: pair_fields(p) for p in pairs}
    header = sha256_json(data)
    loc = suite.source or suite.label
    return Snapshot(
        kind=SUITE_KIND,
        name=suite.name,
        version=suite.version,
        sha256=sha256_json({"header": header, "items": items}),
        source=Path(loc),
        items=items,
        header=header,
        supersedes=suite.supersedes,
        changes={
            p.pair_id: Change(
                approver=p.retired.by,
                reason=p.retired.reason,
                location=(where or {}).get(p.pair_id, loc),
            )
            for p in suite.pairs
            if p.retired is not None
        },
        additions_need_change=False,
        where=where or {},
        extra={"sentinels": list(suite.sentinels), "manifest": data["manifest"]},
        file_sha256=suite.sha256,
        change_fix=(
            "keep the frozen pair unchanged: retire it with a reason (retired: {reason, by, on})"
            " and add the fixed case as a new pair with supersedes: {item}, in a new suite"
            " version that says `supersedes:`"
        ),
    )


def release_of(suite: NoiseSuite) -> Release | None:
    """The release that froze this exact suite, or None when it is not frozen."""
    if not suite.source:
        return None
    return _release_of(suite_snapshot_of(suite))


def _release_of(snapshot: Snapshot) -> Release | None:
    return read_release_log(snapshot.folder).release_of(snapshot)


def suite_snapshot(path: Path) -> Snapshot:
    """The checked snapshot of the pair suite at ``path`` (the approval registry's loader)."""
    from ._pairs import load_pairs

    return suite_snapshot_of(load_pairs(path))


def panel_snapshot_of(panel: ClaimPanel) -> Snapshot:
    """A claim review panel as the approval kernel sees it: one item per reviewed member."""
    items: dict[str, dict[str, str]] = {}
    for pair_id, member in panel.members():
        reviews = sorted(
            (r.model_dump(mode="json") for r in panel.reviews_of(pair_id, member)),
            key=lambda r: str(r["reviewer"]),
        )
        adjudication = panel.adjudication_of(pair_id, member)
        items[f"{pair_id}:{member}"] = {
            "reviews": sha256_json(reviews),
            "label": sha256_json(adjudication.model_dump(mode="json") if adjudication else None),
        }
    loc = panel.source or f"{panel.suite}.panel.yaml"
    return Snapshot(
        kind=PANEL_KIND,
        name=panel.suite,
        version=None,
        sha256=sha256_json(items),
        source=Path(loc),
        items=items,
        change_fix=(
            "restore the frozen reviews and adjudication; a corrected review of a member is a"
            " panel for a new suite version"
        ),
    )


def panel_release_of(panel: ClaimPanel) -> Release | None:
    """The release that froze this exact panel, or None (unfrozen)."""
    return _release_of(panel_snapshot_of(panel)) if panel.source else None


def panel_snapshot(path: Path) -> Snapshot:
    """The checked snapshot of the panel at ``path``, read against the suite it names (the file
    ``name@version.yaml`` beside it)."""
    from .._load import peek_yaml
    from ._pairs import load_pairs
    from ._panel import load_panel

    raw = peek_yaml(path)
    label = raw.get("suite") if isinstance(raw, dict) else None
    suite = path.with_name(f"{label}.yaml" if isinstance(label, str) else "(no suite named)")
    return panel_snapshot_of(load_panel(path, load_pairs(suite)))
