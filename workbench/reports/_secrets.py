"""No secret in a locked report: the last check before :func:`workbench._lock.seal`.

Everything recorded from a provider is redacted (:mod:`workbench._redact`), but redaction only
knows the candidate's own key, and only the text that passes through it. Before a report is
locked, every file in it is searched for every secret of the environment (the candidate's
``api_key_env`` and every credential-named variable, :func:`~workbench._redact.environment_secrets`)
in every form :func:`~workbench._redact.find_encoded` knows (literal, base64, reversed, hex,
URL-encoded, split by whitespace or invisible characters). A report holding one is not locked:
``secret_in_report`` (exit 2), one problem per file and variable, never the value.
"""

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
    """Raise :class:`WorkbenchError` (``secret_in_report``) when :func:`secret_problems` finds
    any: the caller has not locked the report."""
    problems = secret_problems(report_dir, judge)
    if problems:
        raise WorkbenchError(
            f"refusing to lock {report_dir}: it holds a secret of the environment", problems
        )
