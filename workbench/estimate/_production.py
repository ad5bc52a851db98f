"""Reading production traffic and a certification report: :func:`estimate_production`.

Inputs:

- **results**: the certified judge's verdicts on production cases, in the judge-result contract
  (``docs/formats.md#judge-results``); no gold. The last attempt of repeat 0 counts, as in the
  alignment join.
- **slices**: which slice each production case belongs to, a file of its own (the result
  contract has no slice field): CSV with a header ``case_id,slice`` or JSON Lines of
  ``{"case_id": ..., "slice": ...}``. Every case in the results must be mapped; a mapped case
  without a result is *missing*.
- **rubric**: the rubric (``rubric.yaml`` or a dataset directory) naming the pass, fail and
  abstain labels; its version must be the certification's.
- **report**: the certification report directory ``reports/<candidate>/<version>/<n>``.
- **labelled** (optional): a small random sample of the same traffic with human labels, CSV
  ``case_id,label`` or JSON Lines ``{"case_id": ..., "label": ...}``, for PPI.

Refusals (:class:`~workbench.errors.WorkbenchError`, CLI exit 2), every problem at once:

- the report does not verify (``workbench verify``: a changed, missing or added file, a broken
  chain): ``report_unverified``;
- the report is not ``certified``: ``report_not_certified``; or not of the held-out partition:
  ``report_not_held_out``; or its gate.json has no per-slice figures: ``report_without_figures``;
- the report is stale: the installed Ragas version differs from the lock's
  (``report_stale_ragas``), or the traffic was judged by another judge fingerprint than the
  certified one (``report_stale_candidate``);
- its scope does not cover the traffic: the rubric version differs (``rubric_mismatch``), a
  traffic slice was not certified (``slice_not_certified``) or its certification has no decided
  human-pass or human-fail case (``slice_rates_unmeasured``);
- the inputs break their formats: contract violations, duplicate results, mixed judges, verdicts
  outside the rubric, unmapped cases, duplicate or unknown slices and labels.
"""

from __future__ import annotations

import csv
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from .._io import (
    MAX_LINE_BYTES_ENV,
    JSONRecordError,
    loads_json,
    max_document_bytes,
    read_bounded,
    read_json_file,
    sha256_file,
)
from .._load import first_error
from ..errors import Problem, WorkbenchError
from ..gold import Rubric, load_rubric
from ..results import scan_results
from ._estimate import (
    UNSTABLE_BELOW,
    CertificationRef,
    ProductionEstimate,
    RGInterval,
    SliceInput,
    estimate_slices,
    methods,
)

GATE_FILE = "gate.json"


def _p(location: str, code: str, message: str, fix: str, case_id: str | None = None) -> Problem:
    return Problem(location=location, code=code, message=message, fix=fix, case_id=case_id)


@dataclass(frozen=True)
class Certified:
    """A verified, certified report and its per-slice figures."""

    ref: CertificationRef
    figures: dict[str, Any]
    """Slice name -> :class:`~workbench.policy.SliceFigures` (``(all)`` excluded)."""
    ragas_version: str | None


def read_certification(report_dir: str | Path) -> tuple[Certified | None, list[Problem]]:
    """Verify the report and read its figures; problems for anything that makes it unusable."""
    from ..policy import SliceFigures
    from ..reports import LOCK_FILE, read_lock, verify_report

    root = Path(report_dir)
    loc = str(root)
    if not (root / LOCK_FILE).is_file():
        return None, [
            _p(
                loc,
                "report_missing",
                "no certification report here (no lock.json)",
                "point --report at reports/<candidate>/<version>/<n> written by `workbench"
                " certify`",
            )
        ]
    problems = [
        _p(
            p.location,
            "report_unverified",
            f"the report does not verify: {p.message} [{p.code}]",
            "restore the report as certified (`workbench verify` names every change); an altered"
            " report is no evidence",
        )
        for p in verify_report(root)
        if p.severity == "error"
    ]
    try:
        lock = read_lock(root)
        gate = read_json_file(root / GATE_FILE)
        if not isinstance(gate, dict):
            raise ValueError("gate.json is not a JSON object")
    except (OSError, ValueError) as exc:
        return None, problems + [
            _p(
                loc,
                "report_unreadable",
                f"lock.json or gate.json cannot be read ({str(exc)[:120]})",
                "point --report at an intact certification report",
            )
        ]
    outcomes = {lock.outcome, gate.get("outcome")}
    if outcomes != {"certified"}:
        problems.append(
            _p(
                loc,
                "report_not_certified",
                f"the report's outcome is {lock.outcome!r}, not 'certified': its judge may not be"
                " used on production traffic",
                "certify the judge first; only a certified report's error rates can correct"
                " production estimates",
            )
        )
    if gate.get("partition") != "held_out":
        problems.append(
            _p(
                loc,
                "report_not_held_out",
                f"the report was evaluated on {gate.get('partition')!r}, not held_out",
                "use a report written by `workbench certify` (held-out data)",
            )
        )
    figures: dict[str, Any] = {}
    raw_figures = gate.get("figures") or []
    if not raw_figures:
        problems.append(
            _p(
                loc,
                "report_without_figures",
                "gate.json has no per-slice figures: the judge's error rates are unknown",
                "re-certify with a workbench that writes gate figures (gate schema 2)",
            )
        )
    for item in raw_figures:
        try:
            fig = SliceFigures.model_validate(item)
        except ValidationError as exc:
            problems.append(
                _p(
                    f"{loc}/{GATE_FILE}",
                    "report_figures_unreadable",
                    f"a figures entry cannot be read ({first_error(exc)[:120]})",
                    "restore gate.json as certified",
                )
            )
            continue
        if fig.slice != "(all)":
            figures[fig.slice] = fig
    policy = gate.get("policy") or {}
    ref = CertificationRef(
        report_id=lock.report_id,
        report_dir=loc,
        candidate=lock.candidate,
        candidate_fingerprint=lock.candidate_fingerprint,
        lock_sha256=lock.lock_sha256,
        outcome=lock.outcome,
        policy=f"{policy['name']}@{policy['version']}" if policy.get("name") else None,
        rubric_version=gate.get("rubric_version"),
        ragas_version=lock.versions.get("ragas"),
    )
    return Certified(ref=ref, figures=figures, ragas_version=lock.versions.get("ragas")), problems


def _read_table(
    path: Path, columns: tuple[str, str], what: str
) -> tuple[list[tuple[str, dict[str, str]]], list[Problem]]:
    """Rows of a CSV (header) or JSON Lines file as ``(location, {column: value})``."""
    loc = str(path)
    if not path.is_file():
        return [], [
            _p(
                loc,
                f"{what}_missing",
                f"the {what} file does not exist",
                f"give a CSV with a header {','.join(columns)} or JSON Lines with those keys",
            )
        ]
    rows: list[tuple[str, dict[str, object]]] = []  # as read: any JSON value, or None when absent
    problems: list[Problem] = []
    try:
        # Bounded (a pipe or /dev/zero is refused): the document limit, 256 MiB by default.
        text = read_bounded(path, limit=max_document_bytes(), setting=MAX_LINE_BYTES_ENV).decode(
            "utf-8"
        )
    except WorkbenchError as exc:
        return [], list(exc.problems)
    except UnicodeDecodeError:
        return [], [_p(loc, f"{what}_encoding", "the file is not UTF-8", "save it as UTF-8")]
    if path.suffix.lower() in (".jsonl", ".ndjson", ".json"):
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                obj = loads_json(line)  # strict: duplicate keys, NaN/Infinity, too deep refused
            except JSONRecordError as exc:
                problems.append(
                    _p(
                        f"{loc}:{number}",
                        f"{what}_malformed",
                        exc.msg,
                        "write one JSON object per line",
                    )
                )
                continue
            if not isinstance(obj, dict):
                problems.append(
                    _p(
                        f"{loc}:{number}",
                        f"{what}_malformed",
                        "a line is not a JSON object",
                        "write one JSON object per line",
                    )
                )
                continue
            rows.append((f"{loc}:{number}", {k: obj.get(k) for k in columns}))
    elif path.suffix.lower() in (".csv", ".tsv"):
        reader = csv.DictReader(
            text.splitlines(), delimiter="\t" if path.suffix.lower() == ".tsv" else ","
        )
        absent = [c for c in columns if c not in (reader.fieldnames or [])]
        if absent:
            return [], [
                _p(
                    loc,
                    f"{what}_columns",
                    f"the header lacks {', '.join(absent)}",
                    f"start the file with the header {','.join(columns)}",
                )
            ]
        for number, row in enumerate(reader, start=2):
            rows.append((f"{loc}:{number}", {k: row.get(k) for k in columns}))
    else:
        return [], [
            _p(
                loc,
                f"{what}_format",
                f"unknown file type {path.suffix!r}",
                "use .csv (header case_id,...) or .jsonl",
            )
        ]
    out: list[tuple[str, dict[str, str]]] = []
    for where, row in rows:
        bad = [k for k, v in row.items() if not isinstance(v, str) or not v.strip()]
        if bad:
            problems.append(
                _p(
                    where,
                    f"{what}_incomplete",
                    f"{' and '.join(bad)} missing or not text",
                    f"give every row a {' and a '.join(columns)}",
                )
            )
            continue
        out.append((where, {k: v.strip() for k, v in row.items() if isinstance(v, str)}))
    return out, problems


def read_slice_map(path: str | Path, rubric: Rubric) -> tuple[dict[str, str], list[Problem]]:
    """case_id -> slice; problems for duplicates and slices the rubric does not declare."""
    rows, problems = _read_table(Path(path), ("case_id", "slice"), "slices")
    mapping: dict[str, str] = {}
    first: dict[str, str] = {}
    for where, row in rows:
        cid, name = row["case_id"], row["slice"]
        if cid in mapping:
            problems.append(
                _p(
                    where,
                    "slices_duplicate",
                    f"case mapped twice (first at {first[cid]})",
                    "map each production case to exactly one slice",
                    cid,
                )
            )
            continue
        if name not in rubric.slices:
            problems.append(
                _p(
                    where,
                    "slices_unknown_slice",
                    f"slice {name!r} is not in the rubric",
                    "use one of " + ", ".join(rubric.slices),
                    cid,
                )
            )
            continue
        mapping[cid] = name
        first[cid] = where
    return mapping, problems


@dataclass(frozen=True)
class Traffic:
    """Production cases with the judge's final outcome and, when labelled, the human label."""

    slice_of: dict[str, str]
    outcome: dict[str, str]
    """case_id -> ``pass``, ``fail``, ``abstain``, ``error`` or ``missing``."""
    judge_fingerprint: str | None
    human: dict[str, str]
    """case_id -> human label, for the labelled sample."""
    other_repeats: int


def read_traffic(
    results: str | Path, slices: str | Path, rubric: Rubric, labelled: str | Path | None = None
) -> tuple[Traffic, list[Problem]]:
    """Read the traffic files; every problem is returned (the caller raises)."""
    slice_of, problems = read_slice_map(slices, rubric)
    loc = str(results)
    vocab = set(rubric.labels)
    final: dict[str, tuple[int, str]] = {}
    seen: dict[tuple[str, int, int], int] = {}
    fingerprints: Counter[str] = Counter()
    other_repeats = 0
    for item in scan_results(results):
        if isinstance(item, Problem):
            problems.append(item)
            continue
        r, where = item.result, f"{loc}:{item.line}"
        fingerprints[r.judge_fingerprint] += 1
        if r.value is None and r.error is None:
            problems.append(
                _p(
                    where,
                    "score_only_result",
                    "a score without a verdict is not a pass or a fail",
                    "estimate label verdicts only",
                    r.case_id,
                )
            )
            continue
        if r.value is not None and r.value not in vocab:
            problems.append(
                _p(
                    where,
                    "unknown_judge_label",
                    f"verdict {r.value!r} is not in the rubric's vocabulary",
                    "record out-of-vocabulary output as an invalid_label error",
                    r.case_id,
                )
            )
            continue
        key = (r.case_id, r.repeat, r.attempt)
        if key in seen:
            problems.append(
                _p(
                    where,
                    "duplicate_result",
                    f"second result for repeat {r.repeat}, attempt {r.attempt} (first on line"
                    f" {seen[key]})",
                    "keep one result per case, repeat and attempt",
                    r.case_id,
                )
            )
            continue
        seen[key] = item.line
        if r.case_id not in slice_of:
            problems.append(
                _p(
                    where,
                    "unmapped_case",
                    "the case has no slice in the slices file",
                    "add the case to the slices file (case_id,slice); every estimated case needs a"
                    " slice",
                    r.case_id,
                )
            )
            continue
        if r.repeat != 0:
            other_repeats += 1
            continue
        if r.case_id not in final or r.attempt > final[r.case_id][0]:
            if r.error is not None:
                verdict = "error"
            elif r.value == rubric.pass_label:
                verdict = "pass"
            elif r.value == rubric.fail_label:
                verdict = "fail"
            else:
                verdict = "abstain"
            final[r.case_id] = (r.attempt, verdict)
    if len(fingerprints) > 1:
        problems.append(
            _p(
                loc,
                "mixed_judges",
                f"results from {len(fingerprints)} judge fingerprints",
                "estimate one judge at a time; split the file by judge_fingerprint",
            )
        )
    outcome = {cid: final[cid][1] if cid in final else "missing" for cid in slice_of}
    human: dict[str, str] = {}
    if labelled is not None:
        rows, more = _read_table(Path(labelled), ("case_id", "label"), "labelled")
        problems += more
        allowed = set(rubric.labels)
        for where, row in rows:
            cid, label = row["case_id"], row["label"]
            if cid in human:
                problems.append(
                    _p(
                        where,
                        "labelled_duplicate",
                        "case labelled twice",
                        "give each sampled case one adjudicated label",
                        cid,
                    )
                )
            elif cid not in slice_of:
                problems.append(
                    _p(
                        where,
                        "labelled_unknown_case",
                        "the labelled case is not in the traffic",
                        "label cases sampled from the same traffic the judge ran on",
                        cid,
                    )
                )
            elif label not in allowed:
                problems.append(
                    _p(
                        where,
                        "labelled_unknown_label",
                        f"label {label!r} is not in the rubric's vocabulary",
                        "use " + ", ".join(rubric.labels),
                        cid,
                    )
                )
            else:
                human[cid] = label
    fp = next(iter(fingerprints), None) if len(fingerprints) == 1 else None
    return (
        Traffic(
            slice_of=slice_of,
            outcome=outcome,
            judge_fingerprint=fp,
            human=human,
            other_repeats=other_repeats,
        ),
        problems,
    )


def _rubric(path: str | Path) -> Rubric:
    p = Path(path)
    return load_rubric(p / "rubric.yaml" if p.is_dir() else p)


def estimate_production(
    report: str | Path,
    results: str | Path,
    slices: str | Path,
    rubric: str | Path,
    *,
    labelled: str | Path | None = None,
    interval: RGInterval = "bootstrap",
    seed: int = 0,
    unstable_below: float = UNSTABLE_BELOW,
) -> ProductionEstimate:
    """Naive, Rogan-Gladen-corrected and (with ``labelled``) PPI pass rates of production traffic.

    Refuses (raises :class:`WorkbenchError` with every problem) an unverified, uncertified,
    stale or out-of-scope report and malformed inputs; see the module docstring.
    """
    from ..judges import ragas_version

    rub = _rubric(rubric)
    certified, problems = read_certification(report)
    if rub.pass_label is None or rub.fail_label is None:
        problems.append(
            _p(
                str(rubric),
                "rubric_without_pass_fail",
                "the rubric declares no pass_label and fail_label: a pass rate is undefined",
                "give the rubric the certification used (it names its pass and fail labels)",
            )
        )
    traffic, more = read_traffic(results, slices, rub, labelled)
    problems += more
    if certified is not None:
        ref = certified.ref
        installed = ragas_version()
        if certified.ragas_version != installed:
            problems.append(
                _p(
                    str(report),
                    "report_stale_ragas",
                    f"the report was certified with Ragas {certified.ragas_version}, the installed"
                    f" Ragas is {installed}: the judge may behave differently",
                    "certify the judge again with the installed Ragas, or install the certified"
                    " version",
                )
            )
        if (
            traffic.judge_fingerprint is not None
            and traffic.judge_fingerprint != ref.candidate_fingerprint
        ):
            problems.append(
                _p(
                    str(results),
                    "report_stale_candidate",
                    f"the traffic was judged by fingerprint {traffic.judge_fingerprint[:12]}, the"
                    f" report certified {ref.candidate} with {ref.candidate_fingerprint[:12]}",
                    "run the certified candidate on the traffic, or certify the judge that ran",
                )
            )
        if ref.rubric_version is not None and ref.rubric_version != rub.version:
            problems.append(
                _p(
                    str(rubric),
                    "rubric_mismatch",
                    f"rubric version {rub.version!r}, the certification used"
                    f" {ref.rubric_version!r}",
                    "give the rubric the judge was certified under",
                )
            )
        for name in sorted(set(traffic.slice_of.values())):
            fig = certified.figures.get(name)
            if certified.figures and fig is None:
                problems.append(
                    _p(
                        str(report),
                        "slice_not_certified",
                        f"the traffic has slice {name!r}, which the certification did not measure",
                        "certify the judge on a held-out set covering the slice, or leave those"
                        " cases out of the estimate",
                    )
                )
            elif fig is not None and (fig.false_pass_rate.n == 0 or fig.false_fail_rate.n == 0):
                problems.append(
                    _p(
                        str(report),
                        "slice_rates_unmeasured",
                        f"slice {name!r}: the certification has {fig.false_fail_rate.n} decided"
                        f" human-pass and {fig.false_pass_rate.n} decided human-fail case(s); both"
                        " are needed for sensitivity and specificity",
                        "grow the held-out slice and certify again",
                    )
                )
    if traffic.judge_fingerprint is None and not any(
        p.code in ("mixed_judges", "results_missing") for p in problems
    ):
        problems.append(
            _p(
                str(results),
                "no_results",
                "the results file holds no result: nothing shows which judge ran",
                "point --results at the judge's results on the traffic",
            )
        )
    if problems or certified is None:
        raise WorkbenchError(f"refusing to estimate: {len(problems)} problem(s)", problems)
    return _assemble(
        certified, traffic, rub, results, slices, labelled, interval, seed, unstable_below
    )


def _assemble(
    certified: Certified,
    traffic: Traffic,
    rubric: Rubric,
    results: str | Path,
    slices: str | Path,
    labelled: str | Path | None,
    interval: RGInterval,
    seed: int,
    unstable_below: float,
) -> ProductionEstimate:
    order = [name for name in certified.figures if name in set(traffic.slice_of.values())]
    inputs: list[SliceInput] = []
    for name in order:
        fig = certified.figures[name]
        ids = [cid for cid, s in traffic.slice_of.items() if s == name]
        decided = [cid for cid in ids if traffic.outcome[cid] in ("pass", "fail")]
        judge = np.array([1.0 if traffic.outcome[cid] == "pass" else 0.0 for cid in decided])
        human = np.array([_human(traffic.human.get(cid), rubric) for cid in decided], dtype=float)
        excluded = np.array(
            [cid in traffic.human and np.isnan(h) for cid, h in zip(decided, human, strict=True)],
            dtype=bool,
        )
        labelled_here = [cid for cid in ids if cid in traffic.human]
        used = int((~np.isnan(human)).sum()) if human.size else 0
        counts = Counter(traffic.outcome[cid] for cid in ids)
        ff, fp = fig.false_fail_rate, fig.false_pass_rate
        inputs.append(
            SliceInput(
                slice=name,
                risk=fig.risk,
                judge_pass=judge,
                human_pass=human if human.size else np.zeros(0),
                se_x=ff.n - ff.k,
                se_n=ff.n,
                sp_x=fp.n - fp.k,
                sp_n=fp.n,
                abstentions=counts["abstain"],
                errors=counts["error"],
                missing=counts["missing"],
                labelled_excluded=len(labelled_here) - used,
                ppi_excluded=excluded,
                cases=len(ids),
            )
        )
    rows, overall = estimate_slices(
        inputs, interval=interval, seed=seed, unstable_below=unstable_below
    )
    incomplete = overall.errors + overall.missing
    warnings = []
    if incomplete:
        warnings.append(
            f"{overall.errors} evaluator error(s) and {overall.missing} case(s) without a result:"
            " the estimates cover decided cases only; errors may not be random"
        )
    if traffic.other_repeats:
        warnings.append(f"{traffic.other_repeats} result(s) of repeat indexes other than 0 ignored")
    return ProductionEstimate(
        status="incomplete" if incomplete else "complete",
        confidence=0.95,
        interval=interval,
        seed=seed if interval == "bootstrap" else None,
        unstable_below=unstable_below,
        methods=methods(bool(traffic.human), interval, seed),
        certification=certified.ref,
        inputs={
            "results_sha256": sha256_file(results),
            "slices_sha256": sha256_file(slices),
            "labelled_sha256": sha256_file(labelled) if labelled else None,
            "judge_fingerprint": traffic.judge_fingerprint,
        },
        slices=rows,
        overall=overall,
        warnings=warnings,
    )


def _human(label: str | None, rubric: Rubric) -> float:
    """1.0 for a human pass, 0.0 for a human fail, NaN otherwise (unlabelled, or an abstain
    label)."""
    if label is not None and label == rubric.pass_label:
        return 1.0
    if label is not None and label == rubric.fail_label:
        return 0.0
    return float("nan")
