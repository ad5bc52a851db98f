"""Authority only from trusted evidence: the gold's ledger, the project's keys and approvers.

A report must be ``finished`` in the gold's held-out ledger with its lock hash; ``route`` and
``block`` need a lock signed by a key of the project's ``trusted_keys:`` (``--trust`` may only
narrow them); the approver must be listed and not the certifier.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .._load import read_config
from .._signing import check_signature, load_trust
from ..approval import load_approvers, project_config
from ..errors import Problem, WorkbenchError, problem
from ._grant import level_rank

if TYPE_CHECKING:
    from ._certified import ReportFacts

TRUSTED_KEYS_KEY = "trusted_keys"
"""The ``workbench.yaml`` key naming the project's trusted public key files."""
SIGNED_LEVEL = "route"
"""The lowest level that needs a lock signed by a trusted key."""


@dataclass(frozen=True)
class Trust:
    """The keys a route or block authority may rest on (:func:`project_trust`)."""

    keys: dict[bytes, str] | None
    """Raw Ed25519 public key -> its name; None when there is no usable declaration."""
    source: str
    """Where they were declared (for messages)."""
    problems: tuple[Problem, ...] = ()
    """Why there are none (a missing or unreadable declaration)."""


def _declared_files(gold: str | Path) -> tuple[Path | None, list[Path], list[Problem]]:
    """The project's ``workbench.yaml`` and the key files its ``trusted_keys:`` names."""
    config = project_config(gold)
    if config is None:
        return None, [], []
    raw, unreadable = read_config(config)
    if unreadable is not None:
        return config, [], [unreadable]
    value = raw.get(TRUSTED_KEYS_KEY) if isinstance(raw, dict) else None
    if value is None:
        return config, [], []
    listed = [value] if isinstance(value, str) else value
    if (
        not isinstance(listed, list)
        or not listed
        or not all(isinstance(v, str) and v.strip() for v in listed)
    ):
        message = f"`{TRUSTED_KEYS_KEY}:` must be a path or a list of paths to public key files"
        fix = f"write `{TRUSTED_KEYS_KEY}: keys/release.pub` (OpenSSH public keys, one per line)"
        return config, [], [problem(str(config), "trusted_keys_invalid", message, fix)]
    return config, [config.parent / v.strip() for v in listed], []


def project_trust(gold: str | Path, trust: str | Path | None = None) -> Trust:
    """The keys route and block may rest on for ``gold``'s project, narrowed by ``trust``; never
    raises for bad content."""
    config, files, problems = _declared_files(gold)
    keys: dict[bytes, str] = {}
    for path in files:
        try:
            keys.update(load_trust(path))
        except WorkbenchError as exc:
            problems += [
                p.model_copy(update={"code": "trusted_keys_invalid"}) for p in exc.problems
            ]
    source = f"{config}: {TRUSTED_KEYS_KEY}" if config is not None else "workbench.yaml"
    if not problems and not keys:
        message = (
            f"the project declares no trusted keys ({source} is not set): route and block rest"
            " only on a lock signed by a key the project trusts"
        )
        fix = (
            f"declare the certifying team's public keys in the project's workbench.yaml:"
            f" `{TRUSTED_KEYS_KEY}: keys/release.pub`, and certify with `--sign KEY`"
        )
        problems.append(problem(source, "trusted_keys_missing", message, fix))
    if problems:
        return Trust(None, source, tuple(problems))
    if trust is not None:
        try:
            given = load_trust(trust)
        except WorkbenchError as exc:
            return Trust(None, str(trust), tuple(exc.problems))
        keys = {raw: name for raw, name in keys.items() if raw in given}
        source = f"{source} narrowed by --trust {trust}"
    return Trust(keys, source)


def signature_problems(facts: ReportFacts, level: str, trust: Trust, where: str) -> list[Problem]:
    """Why ``facts``' lock cannot carry ``level`` (none below ``route``)."""
    if level_rank(level) < level_rank(SIGNED_LEVEL):
        return []
    if trust.keys is None:
        return [
            p.model_copy(update={"message": f"{level} needs a trusted signature: {p.message}"})
            for p in trust.problems
        ]
    fix = (
        "certify with `--sign KEY`, a private key whose public key the project lists in"
        f" `{TRUSTED_KEYS_KEY}:`; below route, grant advisory only"
    )
    if facts.signature is None:
        message = f"{level} rests only on a signed lock: report {facts.report_id} is unsigned"
        return [problem(where, "authority_unsigned", message, fix)]
    status, detail = check_signature(facts.signature, facts.lock_sha256, trust.keys or {})
    if status == "trusted":
        return []
    code = "signature_invalid" if status == "invalid" else "authority_key_untrusted"
    message = f"{level} needs a lock signed by a key of {trust.source}: {detail}"
    return [problem(where, code, message, fix)]


def ledger_problems(gold: str | Path, facts: ReportFacts, where: str) -> list[Problem]:
    """Why ``gold``'s own held-out ledger does not vouch for the report: it must hold a
    ``finished`` entry for it with its lock hash and outcome (``report_not_in_ledger``)."""
    from ..heldout import HeldOutLedger, ledger_path_for

    try:
        path = ledger_path_for(gold)
    except WorkbenchError as exc:
        return list(exc.problems)
    fix = (
        "grant only a report certified on this gold (`workbench certify --gold GOLD`), whose"
        " certification the gold's held-out ledger records"
    )
    read = HeldOutLedger(path).read()
    if read.problems:
        return list(read.problems)
    finished = [
        e
        for e in read.entries
        if e.event == "finished"
        and e.report_id == facts.report_id
        and e.lock_sha256 == facts.lock_sha256
        and e.outcome == facts.outcome
    ]
    if finished:
        return []
    message = (
        f"the held-out ledger of this gold ({path}) records no finished certification"
        f" {facts.report_id} with lock {facts.lock_sha256[:12]}: the report was not certified on"
        " this gold (a copy of it, or a gold not on this machine)"
    )
    return [problem(where, "report_not_in_ledger", message, fix)]


def approver_problems(
    gold: str | Path, approver: str | None, certifier: str | None, *, where: str = "--approver"
) -> list[Problem]:
    """Why ``approver`` may not approve an authority entry (``certifier``: who certified it)."""
    who = (approver or "").strip()
    try:
        found = load_approvers(gold).problems(who, where, "the approver")
    except WorkbenchError as exc:
        found = list(exc.problems)
    if certifier is not None and who and who == certifier.strip():
        message = (
            f"the approver {who!r} certified the report: nobody approves authority on their own"
            " certification"
        )
        fix = "have another person on the project's approver list approve it"
        found.append(problem(where, "approver_is_certifier", message, fix))
    return found
