"""Joining judge results to gold cases, refusing anything that would make the comparison a lie
(every problem at once). A gold case without a result is *missing* (never a fail), unless a
declared sampling plan left it out."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from ..errors import Problem, WorkbenchError, problem
from ..gold import GoldDataset, Partition, partition_name
from ..results import GoldCheckFixes, JudgeIdentity, ResultLine, check_against_gold

if TYPE_CHECKING:
    from ..gold import GoldCase
    from ..results import JudgeResult
    from ._lineage import Lineage

Outcome = Literal["verdict", "error", "missing"]
ErrorClass = Literal["aligned", "false_pass", "false_fail", "disagreement", "error", "missing"]


_ALIGN_FIXES = GoldCheckFixes(
    unknown_case=(
        "check that --gold is the dataset the judge ran on; remove results for other datasets"
    ),
    superseded_case=(
        "re-run the judge on the current dataset so results refer to the latest records"
    ),
    response_hash_mismatch=(
        "re-run the judge on the exact reviewed response; never compare verdicts on different text"
    ),
    partition_mismatch=(
        "re-run the judge on the current dataset; partitions must not change after a run"
    ),
)
"""What ``align`` tells the user to do about a result that does not belong to the gold."""


@dataclass(frozen=True, slots=True)
class JoinedCase:
    """One gold case in scope, with the judge's final attempt (if any)."""

    case_id: str
    slice: str
    partition: str
    tags: tuple[str, ...]
    human_label: str
    outcome: Outcome
    judge_label: str | None
    error_class: ErrorClass
    error_kind: str | None
    reason: str | None
    attempts: int
    """How many attempts the judge made for this case and repeat."""
    result_line: int | None
    """Line of the counted attempt in the results file."""
    evidence_truncated: int | None = None
    """Judge-visible fields the counted attempt saw only part of (None: not measured)."""


@dataclass(frozen=True)
class Join:
    """The result of :func:`join_results`."""

    dataset: GoldDataset
    partition: str | None
    repeat: int
    judge: JudgeIdentity | None
    judge_fingerprint: str | None
    cases: tuple[JoinedCase, ...]
    excluded_other_partition: int
    other_repeats: int
    superseded_attempts: int
    """Earlier attempts replaced by a later retry of the same case."""
    results_read: int
    lineage: Lineage | None = None
    """The lineage check; None when the join was built without one (comparisons refuse it)."""
    sampled_out: tuple[str, ...] = ()
    """Cases a declared sampling plan left out (without a result): out of scope, in no count."""
    sampling_plan_sha256: str | None = None
    sampling_rejected: str | None = None
    """Why the run manifest's sampling plan was not accepted (its cases then count as missing)."""
    usage: Mapping[str, tuple[int, float, int, int, int]] = field(default_factory=dict)
    """Per case in scope: (calls, cost USD, tokens in, tokens out, cached attempts), retries
    included."""


PassFail = Literal["pass", "fail"] | None
"""A label's pass/fail view (:meth:`~workbench.gold.Rubric.pass_fail`): pass, fail or neither."""


def classify(human: str, judge: str, *, view: Callable[[str], PassFail]) -> ErrorClass:
    """Error class of one verdict against the adjudicated label. ``view`` maps a label to its
    pass/fail side: a false pass is a fail-side human label judged pass-side; any other mismatch
    is a ``disagreement``."""
    if human == judge:
        return "aligned"
    side = (view(human), view(judge))
    if side == ("fail", "pass"):
        return "false_pass"
    if side == ("pass", "fail"):
        return "false_fail"
    return "disagreement"


@dataclass(frozen=True, slots=True)
class _Attempt:
    """The few fields of a counted attempt the join keeps (not the whole record)."""

    attempt: int
    line: int
    value: str | None
    reason: str | None
    error_kind: str | None
    error_message: str | None
    evidence_truncated: int | None


def join_results(
    dataset: GoldDataset,
    results: Iterable[ResultLine | Problem],
    *,
    partition: str | Partition | None = None,
    repeat: int = 0,
    location: str = "results",
    sampled_out: Collection[str] = (),
) -> Join:
    """Join results to the dataset's active cases, refusing duplicates, late attempts, foreign
    or superseded cases, mixed judges and labels outside the vocabulary together with the
    :class:`~workbench.errors.Problem` items ``results`` may interleave."""
    scope = partition_name(partition) if partition is not None else None
    fold = _Fold(dataset, scope, repeat, location)
    add = fold.add
    for item in results:
        add(item)
    problems = [*fold.problems, *fold.attempts_after_verdicts(), *fold.mixed_judges()]
    if problems:
        raise WorkbenchError(f"{location}: refusing to align: {len(problems)} problem(s)", problems)
    joined, left_out = fold.joined(sampled_out)
    fp = next(iter(fold.fingerprints), None)
    return Join(
        dataset=dataset,
        partition=scope,
        repeat=repeat,
        judge=fold.identity_of.get(fp) if fp else None,
        judge_fingerprint=fp,
        cases=tuple(joined),
        excluded_other_partition=fold.excluded,
        other_repeats=fold.other_repeats,
        superseded_attempts=fold.superseded,
        results_read=fold.read,
        sampled_out=tuple(left_out),
        usage={
            k: (int(v[0]), float(v[1]), int(v[2]), int(v[3]), int(v[4]))
            for k, v in fold.usage.items()
        },
    )


class _Fold:
    """Results folded one at a time into what the join needs: the final attempt of each case
    in scope, the counts, and every refusal."""

    def __init__(self, dataset: GoldDataset, scope: str | None, repeat: int, location: str):
        self.dataset = dataset
        self.scope = scope
        self.repeat = repeat
        self.location = location
        self.vocab = set(dataset.rubric.labels)
        self.records_by_id = {r.case_id: r for r in dataset.records}
        self.problems: list[Problem] = []
        self.final: dict[str, _Attempt] = {}
        self.attempts: Counter[str] = Counter()
        self.seen_attempt: dict[tuple[str, int, int], int] = {}
        # (case_id, repeat) -> (attempt, line) of the earliest verdict and of the latest attempt
        self.first_verdict: dict[tuple[str, int], tuple[int, int]] = {}
        self.last_attempt: dict[tuple[str, int], tuple[int, int]] = {}
        self.fingerprints: Counter[str] = Counter()
        self.identity_of: dict[str, JudgeIdentity] = {}
        self.first_line_of_fp: dict[str, int] = {}
        self.excluded = self.other_repeats = self.superseded = self.read = 0
        self.usage: dict[str, list[float]] = {}

    def add(self, item: ResultLine | Problem) -> None:
        """One result (or a bad line's problem): refused, out of scope, or counted."""
        if isinstance(item, Problem):
            self.problems.append(item)
            return
        self.read += 1
        r = item.result
        fp = r.judge_fingerprint
        self.fingerprints[fp] += 1
        if fp not in self.identity_of:
            self.identity_of[fp] = r.judge
            self.first_line_of_fp[fp] = item.line
        gold = self.records_by_id.get(r.case_id)
        refused = self._refusal(item, gold)
        if refused is not None:
            self.problems.append(refused)
            return
        assert gold is not None  # an unknown case is always refused
        self._track_attempts(r, item.line)
        if self.scope is not None and gold.partition.value != self.scope:
            self.excluded += 1
        elif r.repeat != self.repeat:
            self.other_repeats += 1
        else:
            self._count(r, item.line)

    def _refusal(self, item: ResultLine, gold: GoldCase | None) -> Problem | None:
        r = item.result
        where = f"{item.source or self.location}:{item.line}"
        mismatch = check_against_gold(r, gold, self.dataset, where, _ALIGN_FIXES)
        if mismatch is not None:
            return mismatch
        if r.value is None and r.error is None:
            message = "a score without a verdict cannot be compared with adjudicated labels"
            fix = (
                "align label verdicts only; analyse score metrics (e.g. noise sensitivity) with"
                " their own report"
            )
            return problem(where, "score_only_result", message, fix, r.case_id)
        if r.value is not None and r.value not in self.vocab:
            message = f"verdict {r.value!r} is not in the rubric's vocabulary"
            fix = (
                f"map the judge's labels to {', '.join(self.dataset.rubric.labels)} with a"
                " reviewed mapping, or record the attempt as an invalid_label error"
            )
            return problem(where, "unknown_judge_label", message, fix, r.case_id)
        # Duplicates are checked before the partition and repeat filters: a concatenated or
        # re-imported file is refused whichever slice of it is being analysed.
        key = (r.case_id, r.repeat, r.attempt)
        if key in self.seen_attempt:
            message = (
                f"second result for repeat {r.repeat}, attempt {r.attempt} (first on line"
                f" {self.seen_attempt[key]})"
            )
            fix = (
                "results files must not be concatenated or re-imported; keep one result per case,"
                " repeat and attempt"
            )
            return problem(where, "duplicate_result", message, fix, r.case_id)
        self.seen_attempt[key] = item.line
        return None

    def _track_attempts(self, r: JudgeResult, line: int) -> None:
        """The earliest verdict and the latest attempt of the case and repeat."""
        unit = (r.case_id, r.repeat)
        verdict = self.first_verdict.get(unit)
        if r.value is not None and (verdict is None or r.attempt < verdict[0]):
            self.first_verdict[unit] = (r.attempt, line)
        latest = self.last_attempt.get(unit)
        if latest is None or r.attempt > latest[0]:
            self.last_attempt[unit] = (r.attempt, line)

    def _count(self, r: JudgeResult, line: int) -> None:
        """A result in scope: its usage, and whether it is the case's latest attempt so far."""
        self.attempts[r.case_id] += 1
        spent = self.usage.setdefault(r.case_id, [0, 0.0, 0, 0, 0])
        if r.cached_from_run_id:
            spent[4] += 1
        else:
            spent[0] += 1
            spent[1] += float(r.cost_usd or 0.0)
            spent[2] += int(r.tokens_in or 0)
            spent[3] += int(r.tokens_out or 0)
        current = self.final.get(r.case_id)
        if current is not None:
            self.superseded += 1
            if r.attempt <= current.attempt:
                return
        err = r.error
        self.final[r.case_id] = _Attempt(
            r.attempt,
            line,
            r.value,
            r.reason,
            err.kind if err else None,
            err.message if err else None,
            None if r.evidence_seen is None else len(r.evidence_truncated),
        )

    def attempts_after_verdicts(self) -> list[Problem]:
        """An attempt after a verdict for the same case and repeat: a verdict is final."""
        out: list[Problem] = []
        fix = (
            "results must not be edited, merged or re-run into one file; keep the attempts of one"
            " run, or re-run the judge into a fresh --out"
        )
        for unit, (verdict_attempt, verdict_line) in self.first_verdict.items():
            later_attempt, later_line = self.last_attempt[unit]
            if later_attempt > verdict_attempt:
                message = (
                    f"attempt {later_attempt} of repeat {unit[1]} comes after the verdict of"
                    f" attempt {verdict_attempt} (line {verdict_line}); a verdict is final and is"
                    " never replaced"
                )
                at = f"{self.location}:{later_line}"
                out.append(problem(at, "attempt_after_verdict", message, fix, unit[0]))
        return out

    def mixed_judges(self) -> list[Problem]:
        """Results from more than one judge fingerprint."""
        if len(self.fingerprints) <= 1:
            return []
        listing = "; ".join(
            f"{fp[:12]} ({self.identity_of[fp].name}@{self.identity_of[fp].version}, {count}"
            f" results, first on line {self.first_line_of_fp[fp]})"
            for fp, count in self.fingerprints.most_common()
        )
        message = f"results from {len(self.fingerprints)} judge fingerprints: {listing}"
        fix = "align one judge at a time; split the file by judge_fingerprint"
        return [problem(self.location, "mixed_judges", message, fix)]

    def joined(self, sampled_out: Collection[str]) -> tuple[list[JoinedCase], list[str]]:
        """Every active case of the scope with its final attempt (missing when it has none),
        and the cases a declared plan left out without a result."""
        joined: list[JoinedCase] = []
        left_out: list[str] = []
        view = self.dataset.rubric.pass_fail
        for case in self.dataset.partition(self.scope):
            human = case.gold_label
            assert human is not None  # validated datasets always carry an adjudication
            a = self.final.get(case.case_id)
            if a is None and case.case_id in sampled_out:
                left_out.append(case.case_id)
                continue
            head = (case.case_id, case.slice, case.partition.value, tuple(case.tags), human)
            if a is None:
                joined.append(JoinedCase(*head, "missing", None, "missing", None, None, 0, None))
                continue
            n = self.attempts[case.case_id]
            if a.error_kind is not None:
                kind, message = a.error_kind, a.error_message
                joined.append(
                    JoinedCase(
                        *head,
                        "error",
                        None,
                        "error",
                        kind,
                        message,
                        n,
                        a.line,
                        a.evidence_truncated,
                    )
                )
                continue
            assert a.value is not None
            error_class = classify(human, a.value, view=view)
            joined.append(
                JoinedCase(
                    *head,
                    "verdict",
                    a.value,
                    error_class,
                    None,
                    a.reason,
                    n,
                    a.line,
                    a.evidence_truncated,
                )
            )
        return joined, left_out
