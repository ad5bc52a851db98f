"""Where the held-out ledger of a gold dataset lives: it belongs to the data, not to a report
folder.

The ledger records every use of a dataset's held-out partition. It must be the same ledger
whichever ``--reports`` directory a certification writes to, so it is found from the gold
dataset alone:

1. the *project root* is the first directory, walking up from the gold dataset directory,
   that holds ``workbench.yaml`` or ``.git``;
2. if that root holds ``workbench.yaml`` with a ``held_out_ledger`` key, the ledger is that
   path (relative to the root, or absolute): one ledger for every dataset of the project;
3. otherwise the ledger is ``<gold dataset directory>/held_out_ledger.jsonl``.

Nothing else can choose the ledger: ``workbench certify`` has no ledger option and the
certification notebook resolves it again itself and refuses any other.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .._load import read_config
from ..errors import WorkbenchError, refusal

LEDGER_FILE = "held_out_ledger.jsonl"
PROJECT_CONFIG = "workbench.yaml"
LEDGER_KEY = "held_out_ledger"


def gold_directory(gold: str | Path) -> Path:
    """The dataset directory of ``gold`` (a directory, or a ``gold.jsonl`` inside one), absolute."""
    path = Path(gold)
    directory = path if path.is_dir() else path.parent
    return directory.resolve()


def project_root(start: str | Path) -> Path | None:
    """The first directory from ``start`` upwards holding ``workbench.yaml`` or ``.git``."""
    here = Path(start).resolve()
    for directory in (here, *here.parents):
        if (directory / PROJECT_CONFIG).is_file() or (directory / ".git").exists():
            return directory
    return None


def _config_problem(path: Path, message: str, fix: str) -> WorkbenchError:
    return refusal(
        "invalid project configuration", str(path), "project_config_invalid", message, fix
    )


def configured_path(root: Path, key: str, filename: str) -> Path | None:
    """The file ``key`` declares in ``<root>/workbench.yaml`` (resolved; relative to ``root``),
    or None when the file or the key is absent. Shared by the held-out ledger and the
    authority record: a bad declaration is one ``project_config_invalid`` problem."""
    config = root / PROJECT_CONFIG
    raw, unreadable = read_config(config)  # bounded; duplicate keys refused
    if unreadable is not None:
        raise _config_problem(
            config,
            f"the project configuration cannot be read ({unreadable.message[:120]})",
            "write workbench.yaml as a small UTF-8 YAML mapping",
        )
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise _config_problem(
            config,
            "the project configuration must be a YAML mapping",
            f"write `{key}: path/to/{filename}` or leave the file empty",
        )
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise _config_problem(
            config,
            f"{key} must be a path (text)",
            f"write `{key}: path/to/{filename}` (relative to the project root)",
        )
    path = Path(value)
    path = path if path.is_absolute() else root / path
    if path.is_dir():
        raise _config_problem(
            config,
            f"{key} names a directory ({path})",
            f"name a file, e.g. {Path(value) / filename}",
        )
    return path.resolve()


def declared_path_for(
    gold: str | Path, key: str, filename: str, conflict: Callable[[Path, Path], WorkbenchError]
) -> Path:
    """The one file ``key`` names for ``gold``: the project's declaration, else ``filename``
    beside the dataset (see the module doc). A declaration that would leave entries already
    recorded beside the data behind raises ``conflict(default, declared)``."""
    directory = gold_directory(gold)
    root = project_root(directory)
    declared = configured_path(root, key, filename) if root is not None else None
    default = directory / filename
    if declared is None:
        return default
    if declared != default and default.is_file() and default.stat().st_size > 0:
        raise conflict(default, declared)
    return declared


def ledger_path_for(gold: str | Path) -> Path:
    """The one ledger ``gold``'s held-out partition is recorded in (see the module doc)."""

    def conflict(default: Path, declared: Path) -> WorkbenchError:
        return refusal(
            "two held-out ledgers",
            str(default),
            "ledger_conflict",
            f"the project declares the ledger {declared} but this dataset already has a ledger with"
            " entries beside it",
            f"keep one ledger: move {default} to {declared} while that one does not exist yet (the"
            f" chain stays intact), or remove {LEDGER_KEY} from {PROJECT_CONFIG}",
        )

    return declared_path_for(gold, LEDGER_KEY, LEDGER_FILE, conflict)
