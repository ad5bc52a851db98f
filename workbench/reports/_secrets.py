"""No secret in a locked report: before sealing, every file is searched for every secret of the
environment in every encoded form :func:`~workbench._redact.find_encoded` knows; a report holding
one is not locked (``secret_in_report``, exit 2; the value is never shown)."""

from __future__ import annotations

from pathlib import Path

from .._redact import environment_secrets, secrets_in_files
from ..errors import Problem, WorkbenchError
from ..judges import Judge


def secret_problems(report_dir: Path, judge: Judge) -> list[Problem]:
    """One ``secret_in_report`` problem per file of ``report_dir`` and secret found in it."""
    secrets = environment_secrets([judge.spec.endpoint.api_key_env])
    return [
        Problem(
            location=str(report_dir / rel),
            code="secret_in_report",
            message=f"{rel} holds the value of ${name} ({', '.join(forms)} form) after"
            " redaction: the report is not locked",
            fix=f"rotate ${name}'s credential; find what wrote it into the report (a judge's"
            " reason or error, the gold data, the notebook's output) and remove it at its source;"
            " delete the unlocked report (the ledger keeps the held-out use) and certify again",
        )
        for rel, name, forms in secrets_in_files(report_dir, secrets)
    ]


def refuse_secrets(report_dir: Path, judge: Judge) -> None:
    """Raise :class:`WorkbenchError` when :func:`secret_problems` finds any."""
    problems = secret_problems(report_dir, judge)
    if problems:
        raise WorkbenchError(
            f"refusing to lock {report_dir}: it holds a secret of the environment", problems
        )
