"""What ran a certification (:class:`Provenance`, in the lock) and the advisory cap: a custom
``--notebook`` the policy does not pin (``certification.notebook_sha256``) gets the
non-waivable ``notebook_unpinned`` blocker (:func:`cap_unpinned`), after the notebook ran and
again in ``workbench verify``, so its report is never a certification."""

from __future__ import annotations

import hashlib
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from .. import __version__
from .._io import sha256_file
from ..errors import refusal
from ..outcomes import outcome_of
from ..policy import BLOCKER_CODES, Blocker, Policy
from ._blockers import CATEGORY_RANK
from ._render import Section

NOTEBOOK_NAME = "03_certify.ipynb"
UNPINNED = "notebook_unpinned"

NotebookSource = Literal["packaged", "pinned", "custom"]


class Provenance(BaseModel):
    """What ran a certification, as its lock records it (``lock.provenance``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    workbench: str
    notebook: NotebookSource
    """``packaged`` (shipped in the package), ``pinned`` (a ``--notebook`` the policy pins) or
    ``custom`` (any other: the report is advisory)."""
    notebook_sha256: str
    notebook_path: str
    package_sha256: str
    """:func:`package_sha256`."""

    @property
    def advisory(self) -> bool:
        return self.notebook == "custom"


def packaged_notebook() -> Path:
    """The certification notebook shipped in the installed package."""
    return Path(str(files("workbench") / "notebooks" / NOTEBOOK_NAME))


@cache
def package_sha256() -> str:
    """sha256 over the path and sha256 of every file of the installed package, in path order."""
    root = Path(str(files("workbench")))
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            digest.update(f"{path.relative_to(root).as_posix()}\0{sha256_file(path)}\n".encode())
    return digest.hexdigest()


def notebook_provenance(notebook: Path | None, policy: Policy) -> Provenance:
    """The provenance of a certification running ``notebook`` (None: the packaged one)."""
    path = notebook if notebook is not None else packaged_notebook()
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    packaged = sha256_file(packaged_notebook())
    if digest != packaged:
        _check_readable(path, data)
    pinned = policy.certification.notebook_sha256 if policy.certification else None
    source: NotebookSource = (
        "packaged"
        if notebook is None or digest == packaged
        else "pinned"
        if pinned is not None and digest == pinned
        else "custom"
    )
    return Provenance(
        workbench=__version__,
        notebook=source,
        notebook_sha256=digest,
        notebook_path=str(path.resolve()),
        package_sha256=package_sha256(),
    )


def _check_readable(path: Path, data: bytes) -> None:
    import nbformat

    reads: Any = nbformat.reads  # untyped
    try:
        reads(data.decode("utf-8"), as_version=4)
    except Exception as exc:  # nbformat raises many kinds for a file that is no notebook
        message = f"--notebook is not a Jupyter notebook ({type(exc).__name__})"
        fix = "drop --notebook to run the notebook shipped in the package"
        raise refusal("cannot certify", str(path), "notebook_invalid", message, fix) from None


def advisory_title(provenance: Provenance) -> str:
    """The first words of an advisory report's title."""
    return f"ADVISORY, not a certification: custom notebook {provenance.notebook_sha256[:12]}"


def advisory_section(provenance: Provenance) -> Section:
    """The notice an advisory report opens with (above the notebook's first screen)."""
    return Section(
        "facts",
        {
            "title": advisory_title(provenance),
            "rows": [
                ("notebook", f"custom: {provenance.notebook_path}"),
                ("notebook sha256", provenance.notebook_sha256),
                (
                    "why advisory",
                    "the policy does not pin this notebook (certification.notebook_sha256):"
                    " what it computed is shown, but it is never a certification",
                ),
            ],
        },
    )


def cap_unpinned(gate: dict[str, Any], provenance: Provenance | None) -> dict[str, Any]:
    """``gate`` (as in gate.json) with the ``notebook_unpinned`` blocker and the outcome taken
    again when a custom notebook ran; unchanged otherwise, or when the notebook failed."""
    codes = [b.get("code") for b in gate.get("blockers", [])]
    if provenance is None or not provenance.advisory or codes == ["certification_failed"]:
        return gate
    if UNPINNED in codes:  # already capped
        return gate
    blocker = Blocker(
        code=UNPINNED,
        category=BLOCKER_CODES[UNPINNED].category,
        message=(
            f"a custom certification notebook ran (sha256 {provenance.notebook_sha256}) and the"
            " policy does not pin it: the report is advisory, never a certification"
        ),
        evidence={"notebook_sha256": provenance.notebook_sha256},
        waivable=False,
    ).model_dump(mode="json")
    blockers = sorted(
        [*gate.get("blockers", []), blocker],
        key=lambda b: (CATEGORY_RANK[b["category"]], b.get("slice") or "", b["code"], b["message"]),
    )
    outcome = outcome_of(b["category"] for b in blockers)
    return {**gate, "blockers": blockers, "outcome": outcome}
