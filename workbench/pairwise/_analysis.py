"""Pairwise analysis: accuracy in both presentation orders, position consistency and position bias.

Repeat 0 is the original order, repeat 1 the swapped one; the figures reproduce LLMBar's
``statistics.json`` exactly; :data:`DENOMINATORS` states each figure's k and n.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .._io import bulk_load, sha256_file
from .._record import LooseRecord as _Model
from ..align import JoinedCase, join_results
from ..errors import Problem, WorkbenchError, problem
from ..gold import GoldDataset, Partition, load_dataset
from ..results import JudgeIdentity, JudgeResult, ResultLine, scan_results
from ..stats import Rate, wilson_rate

PAIRWISE_SCHEMA_VERSION = 2
"""Version of :class:`PairwiseReport`'s JSON form (2: ties, decided-gold accuracy)."""

ORIGINAL_REPEAT = 0
"""Repeat index of the original presentation order (``swap`` false)."""
SWAPPED_REPEAT = 1
"""Repeat index of the swapped presentation order (``swap`` true)."""

DENOMINATORS: dict[str, str] = {
    "accuracy": (
        "Per order. k = verdicts equal to the gold label in that order; n = every case in scope. "
        "An evaluator error or a missing result in that order is not correct and stays in n "
        "(upstream LLMBar counts a null winner the same way: correct_False / correct_True)."
    ),
    "accuracy_among_verdicts": (
        "Per order. k as accuracy; n = cases with a verdict in that order (errors and missing"
        " results excluded, and reported)."
    ),
    "average_accuracy": (
        "k = correct verdicts of both orders together; n = 2 x cases in scope; equals the mean of"
        " the two accuracies (upstream correct_average)."
    ),
    "correct_both": (
        "k = cases correct in both orders; n = every case in scope. An error or missing result in"
        " either order makes the case not correct (upstream correct_both)."
    ),
    "position_consistency": (
        "k = cases with the same verdict in both orders, plus cases with an evaluator error in both"
        " orders; n = every case in scope. Upstream LLMBar compares the two winners with ==, so two"
        " null winners count as equal; this figure does the same so it reproduces 'equal', and"
        " errors_in_both_orders says how many cases are consistent only that way. An error in one"
        " order only, or a missing result, is inconsistent."
    ),
    "consistent_verdicts": (
        "k = cases with the same verdict in both orders; n = cases with a verdict in both orders"
        " (cases with an error or missing result in either order excluded)."
    ),
    "first_shown_wins": (
        "k = verdicts choosing the candidate shown first; n = decided verdicts, i.e. verdicts"
        " naming one of the candidates (tie verdicts, errors and missing results have no winner and"
        " are excluded). Over both orders each candidate of a case is shown first once, so a judge"
        " that is position-consistent on every case scores exactly 0.5, however many ties it gives;"
        " above 0.5 means it favours the first position."
    ),
    "ties": (
        "Verdicts naming no winner: a declared tie label (tie_labels), or a label that is not one"
        " of the candidates in presentation.presented_order. Counted per order and over both"
        " (tie_verdicts: k = ties, n = verdicts); they stay in accuracy (a tie verdict is correct"
        " when the gold label is the same tie) and leave first_shown_wins."
    ),
    "accuracy_decided_gold": (
        "Per order. k = verdicts equal to the gold label on cases whose gold label names a winner;"
        " n = those cases (gold ties and abstentions excluded, and counted in gold_ties). Errors"
        " and missing results stay in n, as in accuracy."
    ),
    "errors": (
        "Evaluator errors (e.g. missing_verdict, unparseable): counted per order and by kind,"
        " listed in evaluator_errors. They are in n (and never in k) of accuracy and correct_both,"
        " in k of position_consistency only when both orders errored, and excluded from"
        " accuracy_among_verdicts, consistent_verdicts and first_shown_wins."
    ),
}
"""How each figure's numerator and denominator are built, and how errors enter it."""


class OrderStats(_Model):
    """One presentation order over one slice (or over all cases)."""

    repeat: int
    """Repeat index of this order: 0 original, 1 swapped."""
    swap: bool
    """False for the original order, True for the swapped order."""
    n: int
    """Cases in scope: the denominator of ``accuracy``."""
    verdicts: int
    """Cases with a verdict in this order."""
    errors: int
    """Cases whose final attempt in this order is an evaluator error."""
    missing: int
    """Cases with no result in this order."""
    correct: int
    """Verdicts equal to the gold label."""
    ties: int = 0
    """Verdicts naming no winner (see ``tie_labels``)."""
    accuracy: Rate
    """correct / n; errors and missing results are not correct (upstream correct_False/True)."""
    accuracy_among_verdicts: Rate
    """correct / verdicts."""
    accuracy_decided_gold: Rate | None = None
    """Correct verdicts on cases whose gold label names a winner / those cases."""
    first_shown_wins: Rate
    """Verdicts choosing the candidate shown first / decided verdicts in this order."""
    errors_by_kind: dict[str, int]
    """Evaluator errors by kind."""


class PairwiseSlice(_Model):
    """Both orders over one slice (or over all cases, for ``overall``)."""

    slice: str
    """Slice name, or ``(all)``."""
    risk: str | None
    """Risk level from the rubric (None for ``(all)``)."""
    n: int
    """Cases in scope."""
    complete: bool
    """True when every case has a result in both orders (errors count as results)."""
    original: OrderStats
    """Repeat 0, ``swap`` false (upstream ``swap = False``)."""
    swapped: OrderStats
    """Repeat 1, ``swap`` true (upstream ``swap = True``)."""
    average_accuracy: Rate
    """(original.correct + swapped.correct) / (2 n) (upstream correct_average)."""
    correct_both: Rate
    """Cases correct in both orders / n (upstream correct_both)."""
    position_consistency: Rate
    """Cases with the same outcome in both orders (two errors too) / n (upstream equal)."""
    consistent_verdicts: Rate
    """Cases with the same verdict in both orders / cases with a verdict in both orders."""
    errors_in_both_orders: int
    """Cases with an evaluator error in both orders (counted as consistent)."""
    cases_with_error: int
    """Cases with an evaluator error in at least one order."""
    first_shown_wins: Rate
    """Verdicts choosing the candidate shown first / decided verdicts of both orders."""
    tie_verdicts: Rate | None = None
    """Tie verdicts / all verdicts of both orders."""
    gold_ties: int = 0
    """Cases whose gold label names no winner (a tie or an abstention)."""
    average_accuracy_decided_gold: Rate | None = None
    """Correct verdicts of both orders on decided-gold cases / (2 x decided-gold cases)."""
    errors: int
    """Evaluator errors over both orders."""
    missing: int
    """Missing results over both orders."""


class MissingResult(_Model):
    """A case and order without any result."""

    case_id: str
    """The gold case."""
    slice: str
    """Its slice."""
    repeat: int
    """0 original order, 1 swapped."""
    swap: bool
    """True in the swapped order."""


class PairwiseError(MissingResult):
    """One evaluator error, with the order it happened in."""

    kind: str | None
    """Evaluator-error kind, e.g. ``missing_verdict`` or ``unparseable``."""
    message: str | None
    """What happened."""


class PairwiseReport(_Model):
    """Everything ``workbench pairwise`` reports (stable, versioned JSON)."""

    schema_version: int = PAIRWISE_SCHEMA_VERSION
    """Report format version."""
    kind: Literal["workbench.pairwise"] = "workbench.pairwise"
    """Report type marker."""
    dataset_sha256: str
    """Hash of the gold dataset analysed."""
    rubric_version: str
    """Version of the dataset's rubric."""
    gold_path: str | None
    """Gold path given, or None when a loaded dataset was passed."""
    results_path: str | None
    """Results file given, or None when records were passed."""
    results_sha256: str | None
    """sha256 of the results file."""
    judge: JudgeIdentity | None
    """The one judge whose results were analysed (mixed judges are refused)."""
    judge_fingerprint: str | None
    """sha256 of ``judge``."""
    partition: str | None
    """Partition analysed, or None for all."""
    labels: list[str]
    """The rubric's label vocabulary."""
    tie_labels: list[str] = []
    """Labels declared to name no winner (``--tie-label``)."""
    status: Literal["complete", "incomplete"]
    """``incomplete`` when any case lacks a result in either order. Never a pass."""
    results_read: int
    """Result records read (every repeat and attempt)."""
    superseded_attempts: int
    """Earlier attempts replaced by a later retry of the same case and order."""
    missing: list[MissingResult]
    """Every case and order without a result."""
    evaluator_errors: list[PairwiseError]
    """Every evaluator error, with its order."""
    denominators: dict[str, str]
    """How each figure's k and n are built (:data:`DENOMINATORS`)."""
    overall: PairwiseSlice
    """All cases in scope."""
    slices: list[PairwiseSlice]
    """Every rubric slice, including slices with no cases in scope (n = 0)."""

    def slice_frame(self) -> Any:
        """The per-slice table as a pandas DataFrame (one row per slice plus ``(all)``)."""
        import pandas as pd

        return pd.DataFrame([_row(s) for s in [*self.slices, self.overall]]).set_index("slice")


def _first_shown(first_shown_of: Mapping[int, str | None], case: JoinedCase) -> str | None:
    line = case.result_line
    return None if line is None else first_shown_of.get(line)


@dataclass(frozen=True, slots=True)
class _Pair:
    """One case, both orders."""

    slice: str
    gold: str
    first: JoinedCase
    second: JoinedCase
    first_shown: tuple[str | None, str | None]
    candidates: frozenset[str] | None = None
    """Candidate labels shown (from presented_order of either order), when recorded."""


ResultsInput = str | Path | Iterable[JudgeResult | ResultLine]


def _items(results: ResultsInput) -> tuple[str | None, list[ResultLine | Problem]]:
    if isinstance(results, str | Path):
        return str(results), list(scan_results(results))
    return None, [
        r if isinstance(r, ResultLine) else ResultLine(i, r) for i, r in enumerate(results, 1)
    ]


def _join_orders(
    dataset: GoldDataset,
    items: list[ResultLine | Problem],
    partition: Any,
    location: str,
    ties: list[str],
) -> tuple[Any, Any, dict[int, str | None], dict[int, frozenset[str] | None]]:
    """Both orders joined with the gold, refused with every problem at once."""
    problems, first_shown_of, candidates_of = _check_presentations(
        items, dataset.rubric.labels, location, ties
    )
    try:
        original = join_results(
            dataset, items, partition=partition, repeat=ORIGINAL_REPEAT, location=location
        )
    except WorkbenchError as exc:
        problems += exc.problems
        original = None
    if problems or original is None:
        raise WorkbenchError(
            f"{location}: refusing the pairwise analysis: {len(problems)} problem(s)", problems
        )
    swapped = join_results(
        dataset, items, partition=partition, repeat=SWAPPED_REPEAT, location=location
    )
    return original, swapped, first_shown_of, candidates_of


def _pair_up(
    original: Any,
    swapped: Any,
    first_shown_of: Mapping[int, str | None],
    candidates_of: Mapping[int, frozenset[str] | None],
) -> list[_Pair]:
    pairs: list[_Pair] = []
    for a, b in zip(original.cases, swapped.cases, strict=True):
        assert a.case_id == b.case_id
        shown = [
            labels
            for line in (a.result_line, b.result_line)
            if line is not None and (labels := candidates_of.get(line))
        ]
        candidates = frozenset[str]().union(*shown) if shown else None
        firsts = (_first_shown(first_shown_of, a), _first_shown(first_shown_of, b))
        pairs.append(_Pair(a.slice, a.human_label, a, b, firsts, candidates))
    return pairs


def pairwise_report(
    dataset: GoldDataset | str | Path,
    results: ResultsInput,
    *,
    partition: str | Partition | None = None,
    tie_labels: Sequence[str] | None = None,
) -> PairwiseReport:
    """Analyse a pairwise judge's results (repeats 0 and 1, each with a matching
    ``presentation.swap``) against the gold; ``tie_labels`` name no winner. Raises
    :class:`~workbench.errors.WorkbenchError` listing every problem."""
    ties = list(dict.fromkeys(tie_labels or []))
    with bulk_load():
        gold_path = None if isinstance(dataset, GoldDataset) else str(dataset)
        dataset = dataset if isinstance(dataset, GoldDataset) else load_dataset(dataset)
        results_path, items = _items(results)
        location = results_path or "results"
        original, swapped, firsts, candidates = _join_orders(
            dataset, items, partition, location, ties
        )
    pairs = _pair_up(original, swapped, firsts, candidates)
    rubric = dataset.rubric
    no_winner = _NoWinner(frozenset(ties), frozenset(rubric.abstain_labels))
    by_slice: dict[str, list[_Pair]] = {name: [] for name in rubric.slices}
    for p in pairs:
        by_slice.setdefault(p.slice, []).append(p)
    orders = ((ORIGINAL_REPEAT, original), (SWAPPED_REPEAT, swapped))
    errors = [
        PairwiseError(**_where(c, repeat), kind=c.error_kind, message=c.reason)
        for repeat, join in orders
        for c in join.cases
        if c.outcome == "error"
    ]
    missing = [
        MissingResult(**_where(c, r))
        for r, join in orders
        for c in join.cases
        if c.outcome == "missing"
    ]
    return PairwiseReport(
        dataset_sha256=dataset.sha256,
        rubric_version=rubric.version,
        gold_path=gold_path,
        results_path=results_path,
        results_sha256=(
            sha256_file(results_path) if results_path and Path(results_path).is_file() else None
        ),
        judge=original.judge,
        judge_fingerprint=original.judge_fingerprint,
        partition=original.partition,
        labels=list(rubric.labels),
        tie_labels=ties,
        status="incomplete" if missing else "complete",
        results_read=original.results_read,
        superseded_attempts=original.superseded_attempts + swapped.superseded_attempts,
        missing=missing,
        evaluator_errors=errors,
        denominators=dict(DENOMINATORS),
        overall=_slice("(all)", None, pairs, no_winner),
        slices=[_slice(name, rubric.risk_of(name), ps, no_winner) for name, ps in by_slice.items()],
    )


def _where(c: JoinedCase, repeat: int) -> dict[str, Any]:
    return {
        "case_id": c.case_id,
        "slice": c.slice,
        "repeat": repeat,
        "swap": repeat == SWAPPED_REPEAT,
    }


_FIX = (
    "pairwise results need presentation = {swap, presented_order, first_shown}: swap false on"
    " repeat 0 (original order), true on repeat 1 (swapped)"
)
Shown = tuple[str | None, frozenset[str] | None]


def _presentation(r: JudgeResult, vocab: set[str], ties: Sequence[str]) -> Shown | Problem:
    """The candidate shown first and the candidates shown, or what is wrong (no location)."""

    def wrong(code: str, message: str, fix: str = _FIX) -> Problem:
        return problem("", code, message, fix, r.case_id)

    if r.repeat not in (ORIGINAL_REPEAT, SWAPPED_REPEAT):
        return wrong(
            "unexpected_repeat",
            f"repeat {r.repeat}: a pairwise analysis has two orders, repeat 0 (original) and"
            " repeat 1 (swapped)",
        )
    p = r.presentation
    if not isinstance(p, dict) or not isinstance(p.get("swap"), bool):
        return wrong(
            "presentation_missing",
            "the result does not say in which order the candidates were shown (presentation.swap)",
        )
    if p["swap"] != (r.repeat == SWAPPED_REPEAT):
        return wrong(
            "presentation_mismatch", f"presentation.swap is {p['swap']} on repeat {r.repeat}"
        )
    order, first = p.get("presented_order"), p.get("first_shown")
    if order is not None and (
        not isinstance(order, list)
        or len(order) < 2
        or len(set(map(str, order))) != len(order)
        or not set(map(str, order)) <= vocab
    ):
        return wrong(
            "presentation_invalid",
            f"presentation.presented_order {order!r} is not a list of distinct rubric labels",
        )
    if first is not None and order and first != order[0]:
        return wrong(
            "presentation_mismatch",
            f"presentation.first_shown {first!r} is not the first of presented_order {order!r}",
        )
    first = order[0] if first is None and order else first
    if first is not None and first not in vocab:
        return wrong(
            "presentation_invalid", f"presentation.first_shown {first!r} is not a rubric label"
        )
    if ties and (clash := [label for label in ([*order] if order else [first]) if label in ties]):
        return wrong(
            "tie_label_presented",
            f"tie label(s) {clash} are shown as candidates in this result's presentation",
            "a tie label names no candidate: drop it from --tie-label, or fix the presentation",
        )
    if first is None and r.value is not None:
        return wrong(
            "presentation_missing",
            "a verdict without presentation.first_shown (or presented_order): position bias"
            " cannot be measured",
        )
    return first, frozenset(map(str, order)) if order else None


def _check_presentations(
    items: Sequence[ResultLine | Problem],
    labels: Sequence[str],
    location: str,
    tie_labels: Sequence[str] = (),
) -> tuple[list[Problem], dict[int, str | None], dict[int, frozenset[str] | None]]:
    """Every presentation problem; first-shown label and candidates per line."""
    vocab = set(labels)
    problems = [
        problem(
            "--tie-label",
            "unknown_tie_label",
            f"tie label {label!r} is not one of the rubric's labels {list(labels)}",
            f"name a rubric label that means 'no winner', e.g. one of {list(labels)}",
        )
        for label in tie_labels
        if label not in vocab
    ]
    first_shown: dict[int, str | None] = {}
    candidates: dict[int, frozenset[str] | None] = {}
    for item in items:
        if isinstance(item, Problem):
            continue
        found = _presentation(item.result, vocab, tie_labels)
        if isinstance(found, Problem):
            problems.append(found.model_copy(update={"location": f"{location}:{item.line}"}))
        else:
            first_shown[item.line], candidates[item.line] = found
    return problems, first_shown, candidates


@dataclass(frozen=True, slots=True)
class _NoWinner:
    """Which labels name no winner: tie labels, abstain labels (gold only), labels not shown."""

    ties: frozenset[str]
    abstain: frozenset[str]

    def verdict_is_tie(self, label: str | None, candidates: frozenset[str] | None) -> bool:
        return label is not None and (
            label in self.ties or (candidates is not None and label not in candidates)
        )

    def gold_is_decided(self, label: str, candidates: frozenset[str] | None) -> bool:
        return (
            label not in self.ties
            and label not in self.abstain
            and (candidates is None or label in candidates)
        )


def _order(
    repeat: int, pairs: Sequence[_Pair], decided_gold: Sequence[bool], no_winner: _NoWinner
) -> OrderStats:
    """One presentation order of the pairs (``decided_gold``: whose gold label names a winner)."""
    cases = [p.second if repeat == SWAPPED_REPEAT else p.first for p in pairs]
    n = len(cases)
    verdicts = [
        (c, p, d)
        for c, p, d in zip(cases, pairs, decided_gold, strict=True)
        if c.outcome == "verdict"
    ]
    correct = sum(1 for c, p, _ in verdicts if c.judge_label == p.gold)
    decided = [
        (c, p.first_shown[repeat])
        for c, p, _ in verdicts
        if not no_winner.verdict_is_tie(c.judge_label, p.candidates)
    ]
    first_wins = sum(1 for c, f in decided if c.judge_label == f)
    errors = [c for c in cases if c.outcome == "error"]
    return OrderStats(
        repeat=repeat,
        swap=repeat == SWAPPED_REPEAT,
        n=n,
        verdicts=len(verdicts),
        errors=len(errors),
        missing=sum(1 for c in cases if c.outcome == "missing"),
        correct=correct,
        ties=len(verdicts) - len(decided),
        accuracy=wilson_rate(correct, n),
        accuracy_among_verdicts=wilson_rate(correct, len(verdicts)),
        accuracy_decided_gold=wilson_rate(
            sum(1 for c, p, d in verdicts if d and c.judge_label == p.gold), sum(decided_gold)
        ),
        first_shown_wins=wilson_rate(first_wins, len(decided)),
        errors_by_kind=dict(Counter(c.error_kind or "unknown" for c in errors).most_common()),
    )


def _slice(
    name: str, risk: str | None, pairs: Sequence[_Pair], no_winner: _NoWinner
) -> PairwiseSlice:
    decided_gold = [no_winner.gold_is_decided(p.gold, p.candidates) for p in pairs]
    original = _order(ORIGINAL_REPEAT, pairs, decided_gold, no_winner)
    swapped = _order(SWAPPED_REPEAT, pairs, decided_gold, no_winner)
    n = len(pairs)
    both_verdicts = [
        p for p in pairs if p.first.outcome == "verdict" and p.second.outcome == "verdict"
    ]
    same_verdict = sum(1 for p in both_verdicts if p.first.judge_label == p.second.judge_label)
    both_errors = sum(p.first.outcome == p.second.outcome == "error" for p in pairs)
    both_correct = sum(p.first.judge_label == p.second.judge_label == p.gold for p in both_verdicts)
    verdicts = original.verdicts + swapped.verdicts
    ties = original.ties + swapped.ties
    decided_cases = sum(decided_gold)
    assert original.accuracy_decided_gold is not None and swapped.accuracy_decided_gold is not None
    return PairwiseSlice(
        slice=name,
        risk=risk,
        n=n,
        complete=original.missing == 0 and swapped.missing == 0,
        original=original,
        swapped=swapped,
        average_accuracy=wilson_rate(original.correct + swapped.correct, 2 * n),
        correct_both=wilson_rate(both_correct, n),
        position_consistency=wilson_rate(same_verdict + both_errors, n),
        consistent_verdicts=wilson_rate(same_verdict, len(both_verdicts)),
        errors_in_both_orders=both_errors,
        cases_with_error=sum(1 for p in pairs if "error" in (p.first.outcome, p.second.outcome)),
        first_shown_wins=wilson_rate(
            original.first_shown_wins.k + swapped.first_shown_wins.k, verdicts - ties
        ),
        tie_verdicts=wilson_rate(ties, verdicts),
        gold_ties=n - decided_cases,
        average_accuracy_decided_gold=wilson_rate(
            original.accuracy_decided_gold.k + swapped.accuracy_decided_gold.k, 2 * decided_cases
        ),
        errors=original.errors + swapped.errors,
        missing=original.missing + swapped.missing,
    )


def upstream_figures(
    report: PairwiseReport, slice_name: str | None = None
) -> dict[str, tuple[int, int]]:
    """``{statistics.json key: (k, n)}`` of LLMBar's figures, over all cases or one slice."""
    block = (
        report.overall
        if slice_name is None
        else next((s for s in report.slices if s.slice == slice_name), None)
    )
    if block is None:
        raise KeyError(f"no slice {slice_name!r} in the report")
    rates = {
        "correct_False": block.original.accuracy,
        "correct_True": block.swapped.accuracy,
        "correct_both": block.correct_both,
        "equal": block.position_consistency,
    }
    return {key: (rate.k, rate.n) for key, rate in rates.items()}


def _rate_text(rate: Rate) -> str:
    if rate.rate is None:
        return f"{rate.k}/{rate.n} (-)"
    return f"{rate.k}/{rate.n} {rate.rate:.1%} [{rate.ci95_low:.1%}, {rate.ci95_high:.1%}]"


def _row(s: PairwiseSlice) -> dict[str, Any]:
    return {
        "slice": s.slice,
        "n": s.n,
        "acc original": _rate_text(s.original.accuracy),
        "acc swapped": _rate_text(s.swapped.accuracy),
        "acc average": _rate_text(s.average_accuracy),
        "correct both": _rate_text(s.correct_both),
        "consistent": _rate_text(s.position_consistency),
        "first shown wins": _rate_text(s.first_shown_wins),
        "ties orig/swap": f"{s.original.ties}/{s.swapped.ties}",
        "acc avg, decided gold": (
            _rate_text(s.average_accuracy_decided_gold) if s.average_accuracy_decided_gold else "-"
        ),
        "errors orig/swap": f"{s.original.errors}/{s.swapped.errors}",
        "missing": s.missing,
    }


def _header(report: PairwiseReport) -> list[str]:
    judge = (
        f"{report.judge.name}@{report.judge.version} ({report.judge.kind}, fingerprint"
        f" {report.judge_fingerprint[:12]})"
        if report.judge and report.judge_fingerprint
        else "(no results)"
    )
    o = report.overall
    unrun = len(report.missing)
    return [
        f"judge:      {judge}",
        f"gold:       {report.gold_path or '-'} (dataset {report.dataset_sha256[:12]}, rubric"
        f" {report.rubric_version})",
        f"partition:  {report.partition or 'all'}    orders: repeat 0 = original (swap false),"
        " repeat 1 = swapped (swap true)",
        f"status:     {report.status.upper()}"
        + (f" - {unrun} case x order(s) have no result; this is not a pass" if unrun else ""),
        f"cases:      {o.n}; verdicts {o.original.verdicts} original + {o.swapped.verdicts}"
        f" swapped; evaluator errors {o.original.errors} original + {o.swapped.errors} swapped"
        f" ({o.errors_in_both_orders} case(s) in both orders); missing {o.missing}",
        "",
        "Per slice (k/n rate [95% Wilson interval]; errors and missing results stay in n, see"
        " below):",
    ]


def _tie_lines(report: PairwiseReport) -> list[str]:
    o = report.overall
    original, swapped = o.original.accuracy_decided_gold, o.swapped.accuracy_decided_gold
    if o.tie_verdicts is None or original is None or swapped is None:
        return []
    ties = (
        f"tie labels {', '.join(report.tie_labels)}"
        if report.tie_labels
        else "no tie label declared (--tie-label)"
    )
    return [
        f"Ties ({ties}; labels outside presented_order count too): {_rate_text(o.tie_verdicts)}"
        f" of verdicts (original {o.original.ties}, swapped {o.swapped.ties}); first-shown wins"
        f" counts decided verdicts only: {_rate_text(o.first_shown_wins)}",
        f"Accuracy over all {o.n} cases: original {_rate_text(o.original.accuracy)}, swapped"
        f" {_rate_text(o.swapped.accuracy)}; over the {o.n - o.gold_ties} decided gold cases"
        f" ({o.gold_ties} gold ties or abstentions left out): original {_rate_text(original)},"
        f" swapped {_rate_text(swapped)}",
    ]


def _error_lines(report: PairwiseReport) -> list[str]:
    lines, errors, missing = [], report.evaluator_errors, report.missing
    if errors:
        kinds = Counter(e.kind for e in errors)
        lines.append("Evaluator errors: " + ", ".join(f"{k}={v}" for k, v in kinds.most_common()))
        lines += [
            f"  {e.case_id} ({'swapped' if e.swap else 'original'}): {e.kind}: {e.message}"
            for e in errors[:10]
        ]
        if len(errors) > 10:
            lines.append(f"  ... and {len(errors) - 10} more (--json lists all)")
    if missing:
        shown = ", ".join(f"{m.case_id}#{m.repeat}" for m in missing[:10])
        more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
        lines.append(f"Missing: {shown}{more}")
    return lines


def format_pairwise(report: PairwiseReport) -> str:
    """Human-readable text: header, per-slice table, errors and how they enter each denominator."""
    import pandas as pd

    o = report.overall
    lines = _header(report)
    with pd.option_context(
        "display.width", 250, "display.max_columns", 20, "display.max_colwidth", 40
    ):
        lines += [report.slice_frame().to_string(), ""]
    lines.append(
        f"Among verdicts only: original {_rate_text(o.original.accuracy_among_verdicts)}, swapped"
        f" {_rate_text(o.swapped.accuracy_among_verdicts)}; same verdict in both orders"
        f" {_rate_text(o.consistent_verdicts)}"
    )
    lines += _tie_lines(report) + _error_lines(report) + ["", "Denominators:"]
    lines += [f"  {name}: {text}" for name, text in report.denominators.items()]
    return "\n".join(lines)
