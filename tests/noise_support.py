"""Shared helpers of the noise tests: a small valid suite (format 2), candidate specs, results."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from workbench.noise import load_pairs
from workbench.results import JudgeIdentity, JudgeResult

ROOT = Path(__file__).resolve().parents[1]
KEY_ENV = "WB_TEST_NOISE_KEY"
PRICING = {"input_per_million_usd": 1000.0, "output_per_million_usd": 2000.0}


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-noise-never-written")


def write_spec(directory: Path, base_url: str, **changes: Any) -> Path:
    spec: dict[str, Any] = {
        "name": "noise",
        "version": "1",
        "kind": "ragas-noise",
        "labels": ["pass", "fail"],
        "model": "fake-judge",
        "endpoint": {
            "base_url": base_url,
            "api_key_env": KEY_ENV,
            "timeout_s": 5,
            "max_retries": 1,
        },
        "params": {"temperature": 0, "max_tokens": 200},
        "pricing": PRICING,
    }
    spec.update(changes)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{spec['name']}@{spec['version']}.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return path


# -- a small valid suite -------------------------------------------------------------------------

GEN = {"model": "answerer-1", "prompt_sha256": "0" * 64, "retriever": "bm25"}
REF_POLICY = "Refunds are possible within 30 days of delivery."
CTX_POLICY = "Refund window. Refunds are possible within 30 days of delivery."


def pair(
    pid: str,
    *,
    role: str = "candidate",
    mode: str = "irrelevant",
    slice: str = "refunds",
    clean_response: str = REF_POLICY,
    noisy_response: str | None = None,
    distractor: str = "Archived draft. Refunds are possible within 90 days.",
    partition: str = "development",
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "pair_id": pid,
        "slice": slice,
        "mode": mode,
        "role": role,
        "partition": partition,
        "source_family": f"fam-{pid}",
        "reference_version": "v1",
        "user_input": "How long do I have for a refund?",
        "reference": REF_POLICY,
        "generator": dict(GEN),
        "clean": {"response": clean_response, "retrieved_contexts": [CTX_POLICY]},
        "noisy": {
            "response": (
                noisy_response
                if noisy_response is not None
                else (
                    "Refunds are possible within 90 days."
                    if role in ("control", "adversarial")
                    else clean_response
                )
            ),
            "retrieved_contexts": [CTX_POLICY, distractor],
            "distractor": {"index": 1, "label": "archived-draft", "change": "add"},
        },
        "provenance": {"origin": "constructed"},
    }
    if role in ("control", "adversarial", "reference_defect"):
        data["sign_off"] = {
            "reviewer": "rev",
            "reference_sufficient": role != "reference_defect",
            "context_classes": {
                "clean": ["relevant"],
                "noisy": ["relevant", mode if role != "reference_defect" else "irrelevant"],
            },
            "negative_adopts_false_claim": role != "reference_defect",
        }
    if role == "adversarial":
        data["noisy"]["distractor"]["attack"] = "instruction"
    if role == "reference_defect":
        data["reference_defect"] = "the reference omits a supported detail"
    return data


POLICY = {"max_cases": 500, "max_cost_usd": 100.0, "required_control_roles": ["control"]}
MANIFEST = {
    "window": "2026-01..2026-02",
    "source_owners": ["o"],
    "licences": ["internal"],
    "redaction": "none: synthetic",
    "known_gaps": ["none known"],
    "reviewers": ["rev"],
    "sampling": "constructed",
    "review_schedule": "on source change",
}


def suite_dict(pairs: list[dict[str, Any]], **slices: dict[str, Any]) -> dict[str, Any]:
    return {
        "schema_version": 2,
        "name": "t-noise",
        "version": "1",
        "approved_reference_versions": ["v1"],
        "policy": dict(POLICY),
        "manifest": dict(MANIFEST),
        "slices": slices or {"refunds": {"max_score": 0.0, "direction": "lower_is_better"}},
        "pairs": pairs,
    }


def write_suite(
    directory: Path, data: dict[str, Any], name: str = "t-noise@1.yaml", *, freeze: bool = False
) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    if freeze:
        from conftest import approve

        from workbench.approval import freeze as freeze_input
        from workbench.noise import suite_snapshot_of

        approve(directory, "test")
        freeze_input(suite_snapshot_of(load_pairs(path)), approver="test")
    return path


IDENTITY = JudgeIdentity(
    name="noise", version="1", kind="ragas-noise", model="m", ragas_version="0.4.3"
)


def result(
    suite: Any, case_id: str, score: float | None = None, error: str | None = None, **extra: Any
) -> JudgeResult:
    pid, member = case_id.split(":")
    return JudgeResult(
        case_id=case_id,
        response_hash=suite.pair(pid).judge_input(member).digest(),
        value=None,
        score=score,
        error={"kind": error, "message": error} if error else None,
        judge=extra.pop("judge", IDENTITY),
        judge_fingerprint=extra.pop("fingerprint", IDENTITY.fingerprint()),
        run_id="r",
        reason=extra.pop("reason", None),
        partition=extra.pop("partition", "candidates"),
        attempt=extra.pop("attempt", 1),
        repeat=extra.pop("repeat", 0),
        **extra,
    )


def ctx(
    text: str,
    doc: str,
    chunk: str,
    rank: int,
    *,
    tenant: str | None = "acme",
    corpus: str = "kb-1",
    version: str = "1",
) -> dict[str, Any]:
    """A structured context."""
    out: dict[str, Any] = {
        "text": text,
        "document_id": doc,
        "version": version,
        "chunk_id": chunk,
        "rank": rank,
        "retrieval_score": 0.5,
        "corpus_id": corpus,
        "retriever_config_sha256": "c" * 64,
    }
    if tenant is not None:
        out["tenant"] = tenant
    return out


def structured(
    pid: str,
    *,
    distractor_text: str = "Archived draft. Refunds are possible within 90 days.",
    distractor_doc: str = "old-faq",
    corpus: str = "kb-1",
    tenant: str | None = "acme",
    assertions: dict[str, Any] | None = None,
    noisy_response: str | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """A candidate pair with structured retrieval evidence (policy doc at rank 1, the distractor at
    rank 2).
    """
    data = pair(pid, noisy_response=noisy_response, **kwargs)
    clean = [ctx(CTX_POLICY, "refund-policy", "refund-policy#1", 1)]
    data["clean"]["retrieved_contexts"] = clean
    data["noisy"]["retrieved_contexts"] = [
        *clean,
        ctx(
            distractor_text, distractor_doc, f"{distractor_doc}#1", 2, tenant=tenant, corpus=corpus
        ),
    ]
    if assertions is not None:
        data["retrieval_assertions"] = assertions
    return data


def free_suite(pairs: list[dict[str, Any]], **changes: Any) -> dict[str, Any]:
    """``suite_dict`` with header changes (policy, sentinels, slices ...)."""
    data = suite_dict(pairs)
    for key, value in changes.items():
        if key == "policy":
            data["policy"] = {**data["policy"], **value}
        else:
            data[key] = value
    return data
