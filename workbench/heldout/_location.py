"""Where the held-out ledger lives: one per project, declared as ``held_out_ledger:`` in the
pinned project root's ``workbench.yaml``. No project or no declaration is refused; nothing in a
data directory can choose another ledger, and an old ledger beside a dataset is refused."""

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


def _config_problem(path: Path, message: str, fix: str) -> WorkbenchError:
    return refusal(
        "invalid project configuration", str(path), "project_config_invalid", message, fix
    )


def configured_path(root: Path, key: str, filename: str) -> Path | None:
    """The file ``key`` declares in ``<root>/workbench.yaml``, or None; a bad declaration is one
    ``project_config_invalid`` problem."""
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
    """The file ``key`` names for ``gold``: the project's declaration, else ``filename`` beside
    the dataset; raises ``conflict(default, declared)`` if that would leave entries behind."""
    from ..project import find_project_root

    directory = gold_directory(gold)
    root = find_project_root()  # pinned: a marker inside the data directory chooses nothing
    declared = configured_path(root, key, filename) if root is not None else None
    default = directory / filename
    if declared is None:
        return default
    if declared != default and default.is_file() and default.stat().st_size > 0:
        raise conflict(default, declared)
    return declared


def _project_ledger() -> tuple[Path, Path]:
    """``(project root, declared ledger)`` of the pinned project; refused when undeclared."""
    from ..project import project_root as pinned_root

    root = pinned_root()
    config = root / PROJECT_CONFIG
    declared = configured_path(root, LEDGER_KEY, LEDGER_FILE)
    if declared is None:
        raise refusal(
            "no held-out ledger declared",
            str(config),
            "held_out_ledger_undeclared",
            f"the project {root} declares no held-out ledger"
            + ("" if config.is_file() else f" (it has no {PROJECT_CONFIG})"),
            f"add `{LEDGER_KEY}: evidence/{LEDGER_FILE}` to {config} (`workbench init` writes it);"
            " the project keeps one ledger for every dataset and copy of one",
        )
    return root, declared


def ledger_path_for(gold: str | Path) -> Path:
    """The one ledger ``gold``'s held-out partition is recorded in: the project's (module doc)."""
    root, declared = _project_ledger()
    legacy = gold_directory(gold) / LEDGER_FILE
    if legacy != declared and legacy.is_file() and legacy.stat().st_size > 0:
        raise refusal(
            "two held-out ledgers",
            str(legacy),
            "ledger_conflict",
            f"this dataset has a held-out ledger with entries beside it, but the project {root}"
            f" keeps one ledger for every dataset: {declared}",
            f"move {legacy} (and {legacy.name}.items/ if present) to {declared} while that does"
            " not exist yet (the chain stays intact); if the project ledger already has entries,"
            " keep the old ledger outside the data directory as a record and certify with"
            " --rerun-reason",
        )
    return declared
