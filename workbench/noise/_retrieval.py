"""Deterministic retrieval assertions: run on the recorded contexts before any model call.

Each pair may declare ``retrieval_assertions`` (see :class:`~workbench.noise.RetrievalAssertions`).
:func:`check_retrieval` checks every declared assertion on every listed member and returns one
:class:`RetrievalRow` per (pair, member, check). A failing pair is never sent to the evaluator
(its NoiseSensitivity score would be no evidence about a retrieval the release must not ship),
and its failures are blockers of their own kind (``evidence.check == "retrieval"``):

==========================  ==========  ==========================================================
code                        category    when
==========================  ==========  ==========================================================
retrieval_evidence_missing  incomplete  an assertion needs evidence the contexts do not record
                                        (a plain-text context, no tenant, no rank); never waivable
retrieval_cross_tenant      quality     a context of another tenant; never waivable
retrieval_forbidden_source  quality     a context from a forbidden document or corpus
retrieval_expected_missing  quality     an expected document is not among the contexts
retrieval_rank_violated     quality     a document is ranked worse than its ``max_rank``
==========================  ==========  ==========================================================
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict

from .._docs import add_field_docs
from ..policy import Blocker
from ._evidence import RetrievedContext
from ._pairs import NoisePair, NoiseSuite

Check = Literal["expected_documents", "forbidden_sources", "tenant", "max_rank"]
CODES: dict[str, str] = {
    "retrieval_evidence_missing": "incomplete",
    "retrieval_cross_tenant": "quality",
    "retrieval_forbidden_source": "quality",
    "retrieval_expected_missing": "quality",
    "retrieval_rank_violated": "quality",
}
"""Retrieval blocker code -> category."""
NEVER_WAIVABLE = frozenset({"retrieval_evidence_missing", "retrieval_cross_tenant"})
"""Retrieval codes no override may waive: absent access-control evidence and cross-tenant
retrieval."""
_FAILED_CODE: dict[str, str] = {
    "expected_documents": "retrieval_expected_missing",
    "forbidden_sources": "retrieval_forbidden_source",
    "tenant": "retrieval_cross_tenant",
    "max_rank": "retrieval_rank_violated",
}


class RetrievalRow(BaseModel):
    """One retrieval assertion on one member of one pair."""

    model_config = ConfigDict(frozen=True, extra="forbid", json_schema_extra=add_field_docs)

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
    status: Literal["passed", "failed", "no_evidence"]
    """``no_evidence`` when the contexts do not record what the check needs."""
    code: str | None
    """The blocker code when not passed."""
    detail: str
    """One sentence for a reviewer."""
    documents: list[str]
    """The document (or corpus) ids the detail is about."""


def _check_member(
    pair: NoisePair, member: Literal["clean", "noisy"], contexts: list[RetrievedContext]
) -> list[RetrievalRow]:
    a = pair.retrieval_assertions
    assert a is not None
    rows: list[RetrievalRow] = []

    def row(check: Check, status: str, detail: str, documents: Iterable[str] = ()) -> None:
        code = (
            None
            if status == "passed"
            else ("retrieval_evidence_missing" if status == "no_evidence" else _FAILED_CODE[check])
        )
        rows.append(
            RetrievalRow(
                pair_id=pair.pair_id,
                role=pair.role,
                slice=pair.slice,
                member=member,
                check=check,
                status=status,
                code=code,
                detail=detail,
                documents=sorted(set(documents)),
            )
        )

    plain = [i for i, c in enumerate(contexts) if c.document_id is None]
    docs = {c.document_id for c in contexts if c.document_id is not None}
    if a.expected_documents:
        missing = [d for d in a.expected_documents if d not in docs]
        if not missing:
            row(
                "expected_documents",
                "passed",
                f"every expected document is present ({', '.join(a.expected_documents)})",
                a.expected_documents,
            )
        elif plain:
            row(
                "expected_documents",
                "no_evidence",
                f"expected {', '.join(missing)} cannot be checked: context(s) {plain} record no"
                " document_id",
                missing,
            )
        else:
            row(
                "expected_documents",
                "failed",
                f"expected document(s) {', '.join(missing)} not among the retrieved documents"
                f" ({', '.join(sorted(docs))})",
                missing,
            )
    if a.forbidden_sources:
        forbidden = set(a.forbidden_sources)
        hits = [
            f"{c.document_id or '-'} (corpus {c.corpus_id or '-'}, position {i})"
            for i, c in enumerate(contexts)
            if c.document_id in forbidden or c.corpus_id in forbidden
        ]
        ids = [x for c in contexts for x in (c.document_id, c.corpus_id) if x in forbidden]
        unknown = [
            i for i, c in enumerate(contexts) if c.document_id is None and c.corpus_id is None
        ]
        if hits:
            row(
                "forbidden_sources",
                "failed",
                f"context(s) from a forbidden source: {'; '.join(hits)}",
                ids,
            )
        elif unknown:
            row(
                "forbidden_sources",
                "no_evidence",
                f"context(s) {unknown} record neither document_id nor corpus_id: their source"
                " cannot be checked",
                [],
            )
        else:
            row(
                "forbidden_sources",
                "passed",
                f"no context from {', '.join(a.forbidden_sources)}",
                [],
            )
    if a.tenant is not None:
        other = [
            f"{c.document_id or c.context_id()} (tenant {c.tenant})"
            for c in contexts
            if c.tenant is not None and c.tenant != a.tenant
        ]
        unknown = [i for i, c in enumerate(contexts) if c.tenant is None]
        if other:
            row(
                "tenant",
                "failed",
                f"context(s) of another tenant than {a.tenant!r}: {'; '.join(other)}",
                [
                    c.document_id
                    for c in contexts
                    if c.tenant not in (None, a.tenant) and c.document_id
                ],
            )
        elif unknown:
            row(
                "tenant",
                "no_evidence",
                f"context(s) {unknown} record no tenant: absent access-control evidence",
                [],
            )
        else:
            row("tenant", "passed", f"every context belongs to tenant {a.tenant!r}", [])
    for doc, limit in a.max_rank.items():
        found = [c for c in contexts if c.document_id == doc]
        ranks = [c.rank for c in found if c.rank is not None]
        if not found:
            if plain:
                row(
                    "max_rank",
                    "no_evidence",
                    f"{doc} cannot be ranked: context(s) {plain} record no document_id",
                    [doc],
                )
            else:
                row(
                    "max_rank", "failed", f"{doc} is not retrieved at all (max rank {limit})", [doc]
                )
        elif not ranks:
            row("max_rank", "no_evidence", f"{doc} is retrieved but no rank is recorded", [doc])
        elif min(ranks) > limit:
            row(
                "max_rank",
                "failed",
                f"{doc} is at rank {min(ranks)}, worse than its max rank {limit}",
                [doc],
            )
        else:
            row("max_rank", "passed", f"{doc} at rank {min(ranks)} (max {limit})", [doc])
    return rows


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
    groups: dict[tuple[str, str], list[RetrievalRow]] = {}
    for r in rows:
        if r.code is not None:
            groups.setdefault((r.code, r.slice), []).append(r)
    out: list[Blocker] = []
    for (code, slice_name), mine in sorted(groups.items()):
        limit = suite.slices.get(slice_name)
        details = "; ".join(f"{r.pair_id}:{r.member}: {r.detail}" for r in mine[:5]) + (
            f"; +{len(mine) - 5} more" if len(mine) > 5 else ""
        )
        out.append(
            Blocker(
                code=code,
                category=CODES[code],
                slice=slice_name,
                risk=limit.risk if limit else None,
                message=(
                    f"retrieval assertion failed before any model call ({len(mine)} check(s)):"
                    f" {details}; these pairs were not scored"
                ),
                evidence={
                    "check": "retrieval",
                    "failures": len(mine),
                    "members": sorted({f"{r.pair_id}:{r.member}" for r in mine}),
                    "documents": sorted({d for r in mine for d in r.documents}),
                },
                case_ids=sorted({r.pair_id for r in mine}),
                waivable=code not in NEVER_WAIVABLE and CODES[code] != "incomplete",
            )
        )
    return out
