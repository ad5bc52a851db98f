"""One check of a judge result against the gold it claims (case, latest record, response,
partition), shared by ``align`` and ``import results`` with their own fixes
(:class:`GoldCheckFixes`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ..errors import Problem, problem
from ._contract import JudgeResult

if TYPE_CHECKING:
    from ..gold import Partition


class GoldRecord(Protocol):
    """What the check reads of a gold record (a :class:`~workbench.gold.GoldCase`, or the same
    fields taken from a gold index)."""

    @property
    def response_hash(self) -> str: ...
    @property
    def partition(self) -> Partition: ...


class Corrections(Protocol):
    """What the check reads of a gold's corrections (a :class:`~workbench.gold.GoldDataset`)."""

    @property
    def superseded_by(self) -> Mapping[str, str]: ...
    def latest_id(self, case_id: str) -> str: ...


@dataclass(frozen=True)
class GoldCheckFixes:
    """The fix each command gives for each mismatch (the problem's ``fix``)."""

    unknown_case: str
    superseded_case: str
    response_hash_mismatch: str
    partition_mismatch: str


def check_against_gold(
    r: JudgeResult,
    gold_case: GoldRecord | None,
    dataset: Corrections,
    where: str,
    fixes: GoldCheckFixes,
) -> Problem | None:
    """The first mismatch between ``r`` and ``gold_case`` (its record in ``dataset``, None when
    the dataset has no such case), or None when the result belongs to this gold."""
    code: str
    message: str
    if gold_case is None:
        code, message = "unknown_case", "result for a case the gold dataset does not have"
    elif r.case_id in dataset.superseded_by:
        code = "superseded_case"
        message = f"result for a superseded record (corrected by {dataset.latest_id(r.case_id)!r})"
    elif r.response_hash != gold_case.response_hash:
        code = "response_hash_mismatch"
        message = "the judge saw a different response than the reviewers (response_hash differs)"
    elif r.partition is not None and r.partition != gold_case.partition.value:
        code = "partition_mismatch"
        message = f"result says partition {r.partition!r}, gold says {gold_case.partition.value!r}"
    else:
        return None
    return problem(where, code, message, getattr(fixes, code), r.case_id)
