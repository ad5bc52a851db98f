"""Synthetic gold datasets and judge results for benchmarks (deterministic, seeded)."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import yaml

from workbench.results import JudgeIdentity

SLICES = {
    "refunds": "critical",
    "security": "critical",
    "shipping": "medium",
    "billing": "high",
    "privacy": "high",
    "general": "low",
}
PARTS = ("development", "calibration", "held_out")


def write_synthetic(
    out: Path, n_cases: int, seed: int = 7, error_rate: float = 0.03, missing_rate: float = 0.01
) -> tuple[Path, Path]:
    """Write ``out/gold/{gold.jsonl,rubric.yaml}`` and ``out/results.jsonl``; return their paths."""
    rng = random.Random(seed)
    gold_dir = out / "gold"
    gold_dir.mkdir(parents=True, exist_ok=True)
    rubric = {
        "schema_version": 1,
        "name": "synthetic",
        "version": "synthetic-v1",
        "labels": ["pass", "fail", "review_required"],
        "pass_label": "pass",
        "fail_label": "fail",
        "abstain_labels": ["review_required"],
        "min_reviews": 2,
        "slices": {name: {"risk": risk} for name, risk in SLICES.items()},
    }
    (gold_dir / "rubric.yaml").write_text(yaml.safe_dump(rubric), encoding="utf-8")
    identity = JudgeIdentity(name="synthetic-judge", version="1", kind="imported", params={})
    fingerprint = identity.fingerprint()
    judge = identity.model_dump(mode="json")
    slices = list(SLICES)
    results: list[dict] = []
    with open(gold_dir / "gold.jsonl", "w", encoding="utf-8") as gold:
        for i in range(n_cases):
            group = i // 4
            partition = PARTS[group % 3]
            label = (
                "pass"
                if rng.random() < 0.6
                else ("fail" if rng.random() < 0.95 else "review_required")
            )
            other = label if rng.random() < 0.9 else ("fail" if label == "pass" else "pass")
            response = f"Synthetic response {i}: " + "lorem ipsum " * rng.randint(5, 40)
            rhash = hashlib.sha256(response.encode("utf-8")).hexdigest()
            case = {
                "case_id": f"case-{i:06d}",
                "partition": partition,
                "group": f"group-{group:06d}",
                "slice": slices[group % len(slices)],
                "tags": ["synthetic"],
                "metadata": {"language": ("en", "de", "fr")[i % 3]},
                "rubric_version": "synthetic-v1",
                "input": f"Question {group}?",
                "response": response,
                "response_hash": rhash,
                "grading_notes": "Required: a. Prohibited: b.",
                "reviews": [
                    {
                        "reviewer": "reviewer-a",
                        "label": label,
                        "confidence": "high",
                        "rationale": "ok",
                        "evidence": [],
                    },
                    {
                        "reviewer": "reviewer-b",
                        "label": other,
                        "confidence": "medium",
                        "rationale": "ok",
                        "evidence": [],
                    },
                ],
                "adjudication": {"label": label, "reason": "adjudicated", "adjudicator": "lead"},
            }
            gold.write(json.dumps(case) + "\n")
            roll = rng.random()
            if roll < missing_rate:
                continue
            if roll < missing_rate + error_rate:
                value, error = None, {"kind": "timeout", "message": "synthetic timeout"}
            else:
                value = label if rng.random() < 0.85 else rng.choice(["pass", "fail"])
                error = None
            request = {"messages": [{"role": "user", "content": f"judge case {i}"}]}
            result = {
                "schema_version": (
                    2
                ),  # the judge-result contract's current version (every field present)
                "case_id": case["case_id"],
                "response_hash": rhash,
                "value": value,
                "reason": "synthetic reason" if value else None,
                "judge": judge,
                "judge_fingerprint": fingerprint,
                "run_id": "bench",
                "partition": partition,
                "started_at": "2026-11-29T00:00:00Z",
                "latency_s": 0.2,
                "tokens_in": 100,
                "tokens_out": 20,
                "cost_usd": 0.0001,
                "error": error,
                "attempt": 1,
                "repeat": 0,
                "rendered_request_sha256": (
                    hashlib.sha256(
                        json.dumps(request, sort_keys=True, separators=(",", ":")).encode()
                    ).hexdigest()
                ),
                "rendered_request": request,
            }
            results.append(result)
    # Lineage, as the run engine records it: the dataset hash (sha256 over canonical JSON of
    # the file hashes) and the rubric version.
    files = {
        "gold": _sha(gold_dir / "gold.jsonl"),
        "rubric": _sha(gold_dir / "rubric.yaml"),
        "evidence": None,
    }
    lineage = {
        "dataset_sha256": (
            hashlib.sha256(
                json.dumps(files, sort_keys=True, separators=(",", ":")).encode()
            ).hexdigest()
        ),
        "rubric_version": rubric["version"],
    }
    with open(out / "results.jsonl", "w", encoding="utf-8") as res:
        for result in results:
            res.write(json.dumps({**result, **lineage}) + "\n")
    return gold_dir, out / "results.jsonl"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


V1_FILLED = ("schema_version", "partition", "attempt", "repeat")
"""What a schema-version-1 line may leave out (version 1 defaulted them)."""


def write_v1(results: Path, out: Path) -> Path:
    """``results`` as schema version 1 wrote them, to ``out``: without :data:`V1_FILLED`, and
    without ``reason`` where the judge gave none (so each line's migration fills other keys)."""
    with open(results, encoding="utf-8") as fh, open(out, "w", encoding="utf-8") as dst:
        for line in fh:
            row = json.loads(line)
            for name in (*V1_FILLED, *(("reason",) if row["reason"] is None else ())):
                row.pop(name, None)
            dst.write(json.dumps(row) + "\n")
    return out


def synthetic_files(where: Path, n_cases: int) -> tuple[Path, Path]:
    """The gold directory and results file in ``where``, written there unless both exist."""
    gold, results = where / "gold", where / "results.jsonl"
    if not (gold / "gold.jsonl").is_file() or not results.is_file():
        gold, results = write_synthetic(where, n_cases)
    return gold, results
