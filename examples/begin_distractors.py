"""Build a noise-sensitivity pair suite from BEGIN (WoW dev split) with other rows' knowledge as distractors.

Usage (from the repository root)::

    .venv/bin/python examples/begin_distractors.py [TSV] --out /tmp/begin-distractors@1.yaml \
        [--seed 20261129] [--limit 60] [--controls 2] [--mode irrelevant] [--max-score 0.25] [--max-cost-usd 1.0]

``TSV`` defaults to ``../shared/datasets/begin/begin_dev_wow.tsv`` relative to the repository
root. Nothing is written into the repository's ``data/`` directory: the output path is yours.

For each sampled row A (``knowledge``, ``message``, ``response``):

- **candidate pair** ``begin-NNN`` (slice = the row's ``model_name``): the clean member has
  A's knowledge as its only context; the noisy member adds ANOTHER row B's knowledge as the
  labelled distractor (``mode: irrelevant``, ``change: add``) or merges it into the one
  context (``mode: relevant``, ``change: replace``). Both members keep A's response: BEGIN
  responses were generated from the clean knowledge only, so these pairs test whether the
  *evaluator* attributes claims to a distractor the generator never saw
  (``provenance.origin: constructed``, ``provenance.detail`` says why). ``expected_relation``
  is ``noisy_not_worse``.
- **control pairs** ``begin-ctl-<mode>-NNN`` (both modes, from "Fully attributable" rows): the
  negative control's response is row B's own response (grounded in B's knowledge), so it
  adopts the distractor's claims; it must score worse than A's grounded response.

The reference is A's knowledge passage (BEGIN has no reference answers): a proxy, recorded as
``reference_version`` ``begin-dev-wow@6e65f0d5``. Distractor rows are drawn with
``random.Random(seed)``, so the same seed gives the same file.

Suite format 2 needs more than the four scored fields, and the script fills it honestly:
``partition`` by source family (rows sharing a knowledge passage or a message are one
family, placed by a hash of the family: about 60% development, 20% calibration, 20%
held_out), a noise ``policy`` (``--max-cost-usd``, a case limit of four scorings per pair,
only the ``control`` role required: BEGIN has no adversarial or reference-defect cases, add
them before gating), an evidence ``manifest``, and a control ``sign_off`` derived from
BEGIN's human attribution labels (the reviewer field says so: re-sign before gating).

Attribution (CC BY 4.0): the header of the generated file carries the NOTICE of the data.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import random
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TSV = ROOT.parent / "shared" / "datasets" / "begin" / "begin_dev_wow.tsv"
REFERENCE_VERSION = "begin-dev-wow@6e65f0d5"
SOURCE = "google/BEGIN-dataset @ 6e65f0d5, begin_dev_wow.tsv (Wizard of Wikipedia dev split)"
LICENSE = "CC BY 4.0"
FALLBACK_NOTICE = (
    "This product includes data (specifically, conversation histories and knowledge snippets used as model inputs) "
    "developed at Facebook, Inc. by Emily Dinan, Stephen Roller, Kurt Shuster, Angela Fan, Michael Auli, and Jason Weston. "
    "Copyright (c) 2021 Facebook, Inc and its affiliates. Under the CC-BY-4.0 license."
)
FULLY = "Fully attributable"


def read_rows(path: Path) -> list[dict[str, str]]:
    """The TSV rows with a 1-based ``row`` number (data rows, header excluded)."""
    with open(path, encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    needed = {"model_name", "knowledge", "message", "response", "begin_label"}
    if rows and not needed <= rows[0].keys():
        raise SystemExit(f"{path}: missing columns {sorted(needed - rows[0].keys())}")
    return [{**r, "row": str(i)} for i, r in enumerate(rows, start=1) if all(r.get(k, "").strip() for k in needed)]


def notice_text(tsv: Path) -> str:
    """The attribution paragraph of the NOTICE next to the TSV (its text up to the first rule line)."""
    notice = tsv.parent / "NOTICE_wow"
    if not notice.is_file():
        return FALLBACK_NOTICE
    head = notice.read_text(encoding="utf-8").split("-----", 1)[0]
    return " ".join(head.split())


def pick_distractor(rng: random.Random, rows: list[dict[str, str]], row: dict[str, str], *, label: str | None = None) -> dict[str, str]:
    """Another row with different knowledge (and, if given, the given BEGIN label)."""
    pool = [r for r in rows if r["knowledge"].strip() != row["knowledge"].strip() and (label is None or r["begin_label"] == label)]
    return rng.choice(pool)


def families(rows: list[dict[str, str]]) -> dict[str, str]:
    """Row -> source family: rows sharing a knowledge passage or a message are one family (union-find)."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for r in rows:
        keys = [f"k:{' '.join(r['knowledge'].lower().split())}", f"m:{' '.join(r['message'].lower().split())}"]
        for key in keys:
            parent[find(key)] = find(f"row:{r['row']}")
    out = {}
    for r in rows:
        root = find(f"row:{r['row']}")
        out[r["row"]] = "begin-fam-" + hashlib.sha256(root.encode()).hexdigest()[:10]
    return out


def partition_of(family: str) -> str:
    """About 60% development, 20% calibration, 20% held_out, fixed by the family's hash."""
    bucket = int(hashlib.sha256(family.encode()).hexdigest()[:8], 16) % 10
    return "development" if bucket < 6 else "calibration" if bucket < 8 else "held_out"


def _pair(pid: str, row: dict[str, str], other: dict[str, str], *, mode: str, role: str, noisy_response: str, family: str) -> dict[str, Any]:
    clean_ctx = [row["knowledge"]]
    if mode == "irrelevant":
        noisy_ctx = [row["knowledge"], other["knowledge"]]
        distractor = {"index": 1, "label": "other-row-knowledge", "change": "add"}
    else:
        noisy_ctx = [f"{row['knowledge']} {other['knowledge']}"]
        distractor = {"index": 0, "label": "merged-other-row-knowledge", "change": "replace"}
    detail = (
        "constructed control: the negative response is the distractor row's own response"
        if role == "control"
        else "replayed: the BEGIN response was generated from the clean knowledge only"
    )
    pair: dict[str, Any] = {
        "pair_id": pid,
        "slice": row["model_name"],
        "mode": mode,
        "role": role,
        "partition": partition_of(family),
        "source_family": family,
        "reference_version": REFERENCE_VERSION,
        "user_input": row["message"],
        "reference": row["knowledge"],
        "generator": {"model": row["model_name"], "data_source": row.get("data_source", "wow"), "origin": "BEGIN benchmark outputs"},
        "clean": {"response": row["response"], "retrieved_contexts": clean_ctx},
        "noisy": {"response": noisy_response, "retrieved_contexts": noisy_ctx, "distractor": distractor},
        "provenance": {
            "origin": "constructed",
            "detail": detail,
            "source": SOURCE,
            "license": LICENSE,
            "row": int(row["row"]),
            "distractor_row": int(other["row"]),
            "begin_label": row["begin_label"],
            "reference_is": "the row's knowledge passage (BEGIN has no reference answers)",
        },
    }
    if role == "control":
        pair["sign_off"] = {
            "reviewer": "BEGIN annotators (derived from the label 'Fully attributable'; re-sign before gating)",
            "reference_sufficient": True,
            "context_classes": {"clean": ["relevant"], "noisy": ["relevant", "irrelevant"] if mode == "irrelevant" else ["relevant"]},
            "negative_adopts_false_claim": True,
            "notes": "the negative response is attributable to the distractor row's knowledge, per BEGIN's human label",
        }
    return pair


def build_suite(rows: list[dict[str, str]], *, seed: int, limit: int, controls: int, mode: str, max_score: float, max_cost_usd: float = 1.0) -> dict[str, Any]:
    """The suite mapping (see workbench/noise/_pairs.py)."""
    rng = random.Random(seed)
    family = families(rows)
    fully = [r for r in rows if r["begin_label"] == FULLY]
    control_rows = rng.sample(fully, min(len(fully), 2 * controls))
    pairs: list[dict[str, Any]] = []
    for k, row in enumerate(control_rows):
        m = "irrelevant" if k % 2 == 0 else "relevant"
        other = pick_distractor(rng, fully, row, label=FULLY)
        pairs.append(_pair(f"begin-ctl-{m}-{int(row['row']):03d}", row, other, mode=m, role="control", noisy_response=other["response"], family=family[row["row"]]))
    used = {r["row"] for r in control_rows}
    rest = [r for r in rows if r["row"] not in used]
    chosen = sorted(rng.sample(rest, min(limit, len(rest))) if limit else rest, key=lambda r: int(r["row"]))
    for row in chosen:
        other = pick_distractor(rng, rows, row)
        pairs.append(_pair(f"begin-{int(row['row']):03d}", row, other, mode=mode, role="candidate", noisy_response=row["response"], family=family[row["row"]]))
    slices = sorted({p["slice"] for p in pairs})
    return {
        "schema_version": 2,
        "name": "begin-distractors",
        "version": "1",
        "description": f"BEGIN (WoW dev) rows with another row's knowledge as a labelled distractor; seed {seed}.",
        "owner": "whoever runs examples/begin_distractors.py",
        "rationale": "Example limits written by the script, not reviewed: replace max_score with a value derived from adjudicated baseline behaviour before gating anything.",
        "approved_reference_versions": [REFERENCE_VERSION],
        "policy": {
            "max_cases": 4 * len(pairs),
            "max_cost_usd": max_cost_usd,
            "required_control_roles": ["control"],
            "rationale": "Example policy written by the script: four scorings per pair (a baseline or repeats need more), and only the control role, since BEGIN has no adversarial or reference-defect cases.",
        },
        "manifest": {
            "window": "BEGIN dev split (WoW), dataset revision 6e65f0d5",
            "source_owners": ["Google Research (BEGIN)", "Facebook AI Research (Wizard of Wikipedia)"],
            "licences": [LICENSE],
            "redaction": "none: public research data, used as published",
            "known_gaps": ["references are knowledge passages, not answers", "responses replayed, not generated from the noisy contexts", "no adversarial or reference-defect controls"],
            "reviewers": ["BEGIN annotators (attribution labels)"],
            "sampling": f"uniform random sample of rows, seed {seed}; controls from 'Fully attributable' rows",
            "review_schedule": "fixed public snapshot: re-check on a new dataset revision",
        },
        "slices": {s: {"max_score": max_score, "direction": "lower_is_better", "rationale": "example limit (examples/begin_distractors.py)"} for s in slices},
        "pairs": pairs,
    }


def header(tsv: Path, seed: int) -> str:
    """YAML comment header: what the file is and the data's attribution."""
    lines = [
        "Noise-sensitivity pair suite generated by examples/begin_distractors.py",
        f"(seed {seed}) from {SOURCE}.",
        "",
        f"Data license: {LICENSE} (attribution required). NOTICE:",
        notice_text(tsv),
        "",
        "Modified by this script: rows re-paired into clean/noisy pairs; each noisy member adds",
        "another row's knowledge as a labelled distractor; the reference is the row's knowledge.",
        "BEGIN: Dziri et al., 'Evaluating Attribution in Dialogue Systems: The BEGIN Benchmark' (TACL 2022).",
    ]
    import textwrap

    out: list[str] = []
    for line in lines:
        out += textwrap.wrap(line, 96, break_long_words=False, break_on_hyphens=False) or [""]
    return "".join(f"# {line}".rstrip() + "\n" for line in out)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tsv", nargs="?", type=Path, default=DEFAULT_TSV, help=f"BEGIN TSV (default {DEFAULT_TSV})")
    parser.add_argument("--out", required=True, type=Path, help="output pairs YAML (outside the repository's data/)")
    parser.add_argument("--seed", type=int, default=20261129, help="seed for sampling rows and distractors")
    parser.add_argument("--limit", type=int, default=60, help="candidate pairs to sample (0 = every remaining row)")
    parser.add_argument("--controls", type=int, default=2, help="control pairs per mode")
    parser.add_argument("--mode", choices=["irrelevant", "relevant"], default="irrelevant", help="NoiseSensitivity mode of the candidate pairs")
    parser.add_argument("--max-score", type=float, default=0.25, help="example per-slice max_score (lower is better)")
    parser.add_argument("--max-cost-usd", type=float, default=1.0, help="the example policy's evaluator budget per run")
    args = parser.parse_args(argv)

    out = args.out.resolve()
    if out.is_relative_to((ROOT / "data").resolve()):
        print(f"error: refusing to write into the repository's data/ ({out}); public datasets are read from where they are, never copied in", file=sys.stderr)
        return 2
    if not args.tsv.is_file():
        print(f"error: {args.tsv} does not exist; pass the path of begin_dev_wow.tsv", file=sys.stderr)
        return 2
    if args.controls < 1:
        print("error: --controls must be at least 1: candidates are interpreted only after controls separate", file=sys.stderr)
        return 2
    rows = read_rows(args.tsv)
    suite = build_suite(rows, seed=args.seed, limit=args.limit, controls=args.controls, mode=args.mode, max_score=args.max_score, max_cost_usd=args.max_cost_usd)

    sys.path.insert(0, str(ROOT))
    from workbench.errors import errors_only
    from workbench.noise import check_pairs

    _, problems = check_pairs(suite, location=str(out))
    if errors_only(problems):
        for p in errors_only(problems):
            print(p.format(), file=sys.stderr)
        return 1
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(header(args.tsv, args.seed) + yaml.safe_dump(suite, sort_keys=False, allow_unicode=True, width=120), encoding="utf-8")
    n_controls = sum(1 for p in suite["pairs"] if p["role"] == "control")
    print(f"wrote {out}: {n_controls} control pairs and {len(suite['pairs']) - n_controls} candidate pairs over {len(suite['slices'])} slices")
    return 0


if __name__ == "__main__":
    sys.exit(main())
