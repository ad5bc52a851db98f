"""Held-out noise pairs are used once, recorded in the project's one held-out ledger.

A run whose candidate pairs (or sentinel repeats, or baseline suite) include held-out pairs
appends a ``started`` entry of kind ``noise`` to the same ledger ``workbench certify`` writes
(:mod:`workbench.heldout`) before its first call, and ``finished`` (or ``aborted``) after. The
content is the member inputs the judge sees, so a renamed copy of a suite is the same content.
Content an earlier use judged is refused without ``rerun_reason``, as certification refuses it;
re-running the same run directory with the same judge resumes that use.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._io import sha256_json
from ..errors import WorkbenchError, refusal
from ..heldout import HeldOutLedger, LedgerEntry, ledger_path_for
from ._pairs import MEMBERS, NoisePair, NoiseSuite

HELD_OUT = "held_out"


def held_out_keys(pairs: Sequence[NoisePair]) -> frozenset[str]:
    """The item keys of the held-out pairs' members: the digest of what the judge sees."""
    return frozenset(
        p.judge_input(m).digest()
        for p in pairs
        if p.partition == HELD_OUT
        for m in MEMBERS
        if not p.member(m).abstained
    )


def held_out_manifest(suites: Sequence[tuple[NoiseSuite, Sequence[NoisePair]]]) -> str:
    """Hash of each suite's hash and its held-out pair ids and content hashes."""
    return sha256_json(
        [
            {
                "suite_sha256": suite.sha256,
                "partition": HELD_OUT,
                "pairs": [
                    {"pair_id": p.pair_id, "content_sha256": p.content_sha256()}
                    for p in pairs
                    if p.partition == HELD_OUT
                ],
            }
            for suite, pairs in suites
        ]
    )


@dataclass
class HeldOutUse:
    """The held-out use of one run: its ledger entry and how the run ended."""

    entry: LedgerEntry | None = None
    """The ``started`` entry (None: the run scores no held-out pair)."""
    used: bool = True
    """Whether any held-out pair was scored (False: the controls stopped the run first)."""
    outcome: str = "scored"
    """What the ``finished`` entry records."""


def _run_id(suite: NoiseSuite, judge: Any) -> str:
    return f"noise/{suite.label}/{judge.spec.label}"


@contextlib.contextmanager
def held_out_use(
    suite: NoiseSuite,
    judge: Any,
    scored: Sequence[tuple[NoiseSuite, Sequence[NoisePair]]],
    out_dir: Path,
    rerun_reason: str | None,
) -> Iterator[HeldOutUse]:
    """Record the held-out use of a run (nothing when ``scored`` holds no held-out pair); the
    caller sets ``used`` and ``outcome`` of the :class:`HeldOutUse` it is given."""
    keys = frozenset().union(*(held_out_keys(pairs) for _, pairs in scored))
    if not keys:
        yield HeldOutUse()
        return
    if not suite.source:
        raise refusal(
            "held-out refused",
            suite.label,
            "held_out_refused",
            "held-out pairs are scored only from a suite file, whose project ledger records the"
            " use",
            "load the suite with load_pairs(path), or score --partition development/calibration",
        )
    ledger = HeldOutLedger(ledger_path_for(suite.source))
    ledger.reconcile()  # an entry left open by a process that died counts as a use (aborted)
    manifest = held_out_manifest(scored)
    fingerprint = judge.identity.fingerprint()
    report_id, root = _run_id(suite, judge), str(out_dir.resolve())
    with ledger.locked():
        entries = ledger.entries()
        resumes = [
            e
            for e in entries
            if e.report_id == report_id
            and e.reports_root == root
            and e.candidate_fingerprint == fingerprint
            and e.held_out_manifest_sha256 == manifest
        ]
        others = [e for e in entries if e not in resumes and e.opens not in _ids(resumes)]
        try:
            prior = ledger.check_rerun(keys, manifest, rerun_reason, others)
        except WorkbenchError as exc:
            fix = (
                'pass --rerun-reason "..." (rerun_reason=) to score the held-out pairs again; the'
                " reason is recorded in the ledger"
            )
            problems = [p.model_copy(update={"fix": fix}) for p in exc.problems]
            raise WorkbenchError("refusing to score held-out pairs again", problems) from None
        started, _, hold = ledger.start(
            candidate=judge.spec.label,
            fingerprint=fingerprint,
            dataset_sha256=suite.sha256,
            manifest_sha256=manifest,
            report_id=report_id,
            reports_root=root,
            gold=suite.source,
            rerun_reason=rerun_reason or (f"resumes {resumes[0].entry_id}" if resumes else None),
            kind="noise",
            held_out_keys=keys,
            prior=prior,
        )
    use = HeldOutUse(started)
    try:
        yield use
        ledger.finish(started, outcome=use.outcome, lock_sha256=None, held_out_used=use.used)
    except BaseException:
        ledger.abort(started)
        raise
    finally:
        ledger.release(started.entry_id, hold)


def _ids(entries: Sequence[LedgerEntry]) -> set[str]:
    return {e.entry_id for e in entries}
