"""Deterministic retrieval assertions, run on the recorded contexts before any model call.

:func:`check_retrieval` gives one :class:`RetrievalRow` per (pair, member, check); a failing pair
is never sent to the evaluator, and its failures are blockers of their own
(:func:`retrieval_blockers`, ``evidence.check == "retrieval"``; codes in ``docs/formats.md``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal, Protocol, TypeVar

from .._record import Record as _Model
from ..policy import Blocker, blocker
from ._evidence import RetrievedContext
from ._pairs import NoisePair, NoiseSuite

Check = Literal["expected_documents", "forbidden_sources", "tenant", "max_rank"]
Status = Literal["passed", "failed", "no_evidence"]
_FAILED_CODE: dict[str, str] = {
    "expected_documents": "retrieval_expected_missing",
    "forbidden_sources": "retrieval_forbidden_source",
    "tenant": "retrieval_cross_tenant",
    "max_rank": "retrieval_rank_violated",
}


class RetrievalRow(_Model):
    """One retrieval assertion on one member of one pair."""

    pair_id: str
    """The pair."""
    role: str
    """The pair's role."""
    slice: str
    """The pair's slice."""
    member: Literal["clean", "noisy"]
    """The member whose contexts were checked."""
    check: Check
    """``expected_documents``, ``forbidden_sources``, ``tenant`` or ``max_rank``."""
    status: Status
    """``no_evidence`` when the contexts do not record what the check needs."""
    code: str | None
    """The blocker code when not passed."""
    detail: str
    """One sentence for a reviewer."""
    documents: list[str]
    """The document (or corpus) ids the detail is about."""


_Found = tuple[Status, str, list[str]]
"""A check's status, its sentence and the documents it is about."""


def _check_member(
    pair: NoisePair, member: Literal["clean", "noisy"], contexts: list[RetrievedContext]
) -> list[RetrievalRow]:
    a = pair.retrieval_assertions
    assert a is not None
    found: list[tuple[Check, _Found]] = []
    if a.expected_documents:
        found.append(("expected_documents", _expected(a.expected_documents, contexts)))
    if a.forbidden_sources:
        found.append(("forbidden_sources", _forbidden(a.forbidden_sources, contexts)))
    if a.tenant is not None:
        found.append(("tenant", _tenant(a.tenant, contexts)))
    found += [("max_rank", _rank(doc, limit, contexts)) for doc, limit in a.max_rank.items()]
    return [
        RetrievalRow(
            pair_id=pair.pair_id,
            role=pair.role,
            slice=pair.slice,
            member=member,
            check=check,
            status=status,
            code={"passed": None, "no_evidence": "retrieval_evidence_missing"}.get(
                status, _FAILED_CODE[check]
            ),
            detail=detail,
            documents=sorted(set(documents)),
        )
        for check, (status, detail, documents) in found
    ]


def _unrecorded(contexts: list[RetrievedContext]) -> list[int]:
    return [i for i, c in enumerate(contexts) if c.document_id is None]


def _expected(expected: list[str], contexts: list[RetrievedContext]) -> _Found:
    docs = {c.document_id for c in contexts if c.document_id is not None}
    missing = [d for d in expected if d not in docs]
    plain = _unrecorded(contexts)
    if not missing:
        return "passed", f"every expected document is present ({', '.join(expected)})", expected
    if plain:
        message = (
            f"expected {', '.join(missing)} cannot be checked: context(s) {plain} record no"
            " document_id"
        )
        return "no_evidence", message, missing
    message = (
        f"expected document(s) {', '.join(missing)} not among the retrieved documents"
        f" ({', '.join(sorted(docs))})"
    )
    return "failed", message, missing


def _forbidden(sources: list[str], contexts: list[RetrievedContext]) -> _Found:
    forbidden = set(sources)
    hits = [
        f"{c.document_id or '-'} (corpus {c.corpus_id or '-'}, position {i})"
        for i, c in enumerate(contexts)
        if c.document_id in forbidden or c.corpus_id in forbidden
    ]
    ids = [x for c in contexts for x in (c.document_id, c.corpus_id) if x in forbidden]
    unknown = [i for i, c in enumerate(contexts) if c.document_id is None and c.corpus_id is None]
    if hits:
        return "failed", f"context(s) from a forbidden source: {'; '.join(hits)}", ids
    if unknown:
        message = (
            f"context(s) {unknown} record neither document_id nor corpus_id: their source cannot"
            " be checked"
        )
        return "no_evidence", message, []
    return "passed", f"no context from {', '.join(sources)}", []


def _tenant(tenant: str, contexts: list[RetrievedContext]) -> _Found:
    others = [c for c in contexts if c.tenant is not None and c.tenant != tenant]
    unknown = [i for i, c in enumerate(contexts) if c.tenant is None]
    if others:
        named = "; ".join(f"{c.document_id or c.context_id()} (tenant {c.tenant})" for c in others)
        message = f"context(s) of another tenant than {tenant!r}: {named}"
        fix = [c.document_id for c in others if c.document_id]
        return "failed", message, fix
    if unknown:
        message = f"context(s) {unknown} record no tenant: absent access-control evidence"
        return "no_evidence", message, []
    return "passed", f"every context belongs to tenant {tenant!r}", []


def _rank(doc: str, limit: int, contexts: list[RetrievedContext]) -> _Found:
    found = [c for c in contexts if c.document_id == doc]
    ranks = [c.rank for c in found if c.rank is not None]
    plain = _unrecorded(contexts)
    if not found and plain:
        message = f"{doc} cannot be ranked: context(s) {plain} record no document_id"
        return "no_evidence", message, [doc]
    if not found:
        return "failed", f"{doc} is not retrieved at all (max rank {limit})", [doc]
    if not ranks:
        return "no_evidence", f"{doc} is retrieved but no rank is recorded", [doc]
    if min(ranks) > limit:
        return "failed", f"{doc} is at rank {min(ranks)}, worse than its max rank {limit}", [doc]
    return "passed", f"{doc} at rank {min(ranks)} (max {limit})", [doc]


def check_retrieval(pairs: Iterable[NoisePair]) -> list[RetrievalRow]:
    """Every declared retrieval assertion of ``pairs`` on every listed member. No model call."""
    rows: list[RetrievalRow] = []
    for pair in pairs:
        if pair.retrieval_assertions is None:
            continue
        for member in dict.fromkeys(pair.retrieval_assertions.members):
            rows += _check_member(pair, member, pair.member(member).contexts())
    return rows


def failed_pairs(rows: Iterable[RetrievalRow]) -> set[str]:
    """Pair ids with at least one assertion not passed (they are not scored)."""
    return {r.pair_id for r in rows if r.status != "passed"}


def retrieval_blockers(suite: NoiseSuite, rows: Iterable[RetrievalRow]) -> list[Blocker]:
    """One blocker per (code, slice), naming the pairs; absent evidence and cross-tenant are never
    waivable."""
    out: list[Blocker] = []
    for (code, name), mine in by_code_and_slice(rows):
        details = "; ".join(f"{r.pair_id}:{r.member}: {r.detail}" for r in mine[:5]) + (
            f"; +{len(mine) - 5} more" if len(mine) > 5 else ""
        )
        message = (
            f"retrieval assertion failed before any model call ({len(mine)} check(s)): {details};"
            " these pairs were not scored"
        )
        members = sorted({f"{r.pair_id}:{r.member}" for r in mine})
        documents = sorted({d for r in mine for d in r.documents})
        ids = sorted({r.pair_id for r in mine})
        evidence = {"failures": len(mine), "members": members, "documents": documents}
        out.append(sliced_blocker(suite, code, message, name, ids, check="retrieval", **evidence))
    return out


class _Coded(Protocol):
    @property
    def code(self) -> str | None: ...
    @property
    def slice(self) -> str: ...


_R = TypeVar("_R", bound=_Coded)


def by_code_and_slice(rows: Iterable[_R]) -> list[tuple[tuple[str, str], list[_R]]]:
    """The rows that carry a blocker code, grouped by (code, slice), sorted."""
    groups: dict[tuple[str, str], list[_R]] = {}
    for r in rows:
        if r.code is not None:
            groups.setdefault((r.code, r.slice), []).append(r)
    return sorted(groups.items())


def sliced_blocker(
    suite: NoiseSuite, code: str, message: str, name: str, ids: Sequence[str], **evidence: Any
) -> Blocker:
    """A blocker of slice ``name`` (with its risk) naming the pairs ``ids``."""
    risk = suite.slices[name].risk if name in suite.slices else None
    return blocker(code, message, slice=name, risk=risk, case_ids=ids, evidence=evidence)
