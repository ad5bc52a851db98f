"""Held-out noise pairs are used once, recorded in the project's one held-out ledger.

A run whose candidate pairs (or sentinel repeats, or baseline suite) include held-out pairs
appends a ``started`` entry of kind ``noise`` to the same ledger ``workbench certify`` writes
(:mod:`workbench.heldout`) before its first call, and ``finished`` (or ``aborted``) after. The
content is the member inputs the judge sees, normalized as certification's (``heldout.item_key``),
so a renamed or respaced copy of a suite is the same content.
Content an earlier use judged is refused without ``rerun_reason``, as certification refuses it;
re-running the same run directory with the same judge resumes that use.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._io import sha256_json
from ..errors import WorkbenchError, refusal
from ..heldout import (
    HeldOutLedger,
    LedgerEntry,
    check_recorded,
    item_key,
    ledger_path_for,
    open_use,
    read_marker,
    write_marker,
)
from ._pairs import MEMBERS, NoiseInput, NoisePair, NoiseSuite

HELD_OUT = "held_out"
MARKER_FILE = "held_out_use.json"
"""In a run directory: the ledger entry of its held-out use (a resume must name it)."""


@dataclass(frozen=True)
class _Seen:
    """What the judge sees of one member, read as :func:`workbench.heldout.item_key` reads a gold
    case (the metric's mode left out: the same texts under another mode are the same content)."""

    input: str
    """The question."""
    response: str
    """The member's response."""
    reference: str
    """The approved reference answer."""
    contexts: list[str]
    """The member's context texts, in rank order."""
    grading_notes: None = None
    """None: a noise pair has no grading notes."""


def held_out_keys(pairs: Sequence[NoisePair]) -> frozenset[str]:
    """The item keys of the held-out pairs' members: what the judge sees, normalized as
    certification's (a copy with zero-width characters or other spacing is the same content)."""
    return frozenset(
        _item_key(p.judge_input(m))
        for p in pairs
        if p.partition == HELD_OUT
        for m in MEMBERS
        if not p.member(m).abstained
    )


def _item_key(seen: NoiseInput) -> str:
    return item_key(_Seen(seen.user_input, seen.response, seen.reference, seen.retrieved_contexts))


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


@contextlib.contextmanager
def held_out_use(
    suite: NoiseSuite,
    judge: Any,
    scored: Sequence[tuple[NoiseSuite, Sequence[NoisePair]]],
    out_dir: Path,
    rerun_reason: str | None,
) -> Iterator[HeldOutUse]:
    """Record the held-out use of a run (nothing when neither ``scored`` nor the suites' controls,
    scored in every run, hold a held-out pair) through :func:`workbench.heldout.open_use`; the
    caller sets ``used`` and ``outcome`` of the :class:`HeldOutUse` it is given."""
    controls = {s.sha256: [p for p in s.controls() if p.partition == HELD_OUT] for s, _ in scored}
    judged = [(s, [*pairs, *controls[s.sha256]]) for s, pairs in scored]
    keys = frozenset().union(*(held_out_keys(pairs) for _, pairs in judged))
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
    run = _Run(ledger, suite, judge, held_out_manifest(judged), out_dir.resolve())
    with open_use(ledger, run.prepare(keys, rerun_reason), started=run.mark) as opened:
        use = HeldOutUse(opened.entry)
        yield use
        used = use.used or any(controls.values())  # a held-out control is judged in any case
        opened.finish(outcome=use.outcome, lock_sha256=None, held_out_used=used)


@dataclass(frozen=True)
class _Run:
    """One run directory's held-out use: what its entries record, and its marker."""

    ledger: HeldOutLedger
    suite: NoiseSuite
    judge: Any
    manifest: str
    root: Path

    @property
    def marker(self) -> Path:
        return self.root / MARKER_FILE

    def prepare(
        self, keys: frozenset[str], rerun_reason: str | None
    ) -> Callable[[list[LedgerEntry]], dict[str, Any]]:
        def prepare(entries: list[LedgerEntry]) -> dict[str, Any]:
            resumed = self.resumed(entries)
            others = [e for e in entries if e not in resumed and e.opens not in _ids(resumed)]
            try:
                prior = self.ledger.check_rerun(keys, self.manifest, rerun_reason, others)
            except WorkbenchError as exc:
                fix = (
                    'pass --rerun-reason "..." (rerun_reason=) to score the held-out pairs again;'
                    " the reason is recorded in the ledger"
                )
                problems = [p.model_copy(update={"fix": fix}) for p in exc.problems]
                raise WorkbenchError("refusing to score held-out pairs again", problems) from None
            resumes = f"resumes {resumed[0].entry_id}" if resumed else None
            return {
                "candidate": self.judge.spec.label,
                "fingerprint": self.judge.identity.fingerprint(),
                "dataset_sha256": self.suite.sha256,
                "manifest_sha256": self.manifest,
                "report_id": self.report_id,
                "reports_root": str(self.root),
                "gold": self.suite.source,
                "rerun_reason": rerun_reason or resumes,
                "kind": "noise",
                "held_out_keys": keys,
                "prior": prior,
            }

        return prepare

    @property
    def report_id(self) -> str:
        return f"noise/{self.suite.label}/{self.judge.spec.label}"

    def resumed(self, entries: list[LedgerEntry]) -> list[LedgerEntry]:
        """The earlier uses this run resumes: those of this directory, judge and content, when
        the directory still names the last of them and none is open (a live run is no resume;
        a deleted directory is none either: its records are gone)."""
        marked = self._marked()
        if marked is None:
            return []
        check_recorded(self.ledger, entries, [(f"noise run {self.root}", marked)])
        fingerprint = self.judge.identity.fingerprint()
        same = [
            e
            for e in entries
            if e.event == "started"
            and (e.report_id, e.reports_root) == (self.report_id, str(self.root))
            and (e.candidate_fingerprint, e.held_out_manifest_sha256)
            == (fingerprint, self.manifest)
        ]
        running = _ids(self.ledger.open_entries(entries))
        if marked not in _ids(same) or _ids(same) & running:
            return []
        return same

    def _marked(self) -> str | None:
        """The entry id the run directory's marker names in this ledger (None: no marker)."""
        data = read_marker(self.marker)
        if data is None or data["ledger_path"] != str(self.ledger.path):
            return None
        return str(data["entry_id"])

    def mark(self, entry: LedgerEntry) -> None:
        """Name the started entry in the run directory (what a resume is checked against)."""
        self.root.mkdir(parents=True, exist_ok=True)
        write_marker(self.marker, "workbench.noise_held_out_use", entry, self.ledger.path)


def _ids(entries: Sequence[LedgerEntry]) -> set[str]:
    return {e.entry_id for e in entries}
