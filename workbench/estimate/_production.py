"""Reading production traffic (results, a ``case_id,slice`` map, optionally a labelled sample)
and a verified certification report for :func:`estimate_production`; every problem is refused at
once (docs/formats.md lists the codes)."""

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
    iter_jsonl_lines,
    loads_json,
    max_document_bytes,
    read_bounded,
    sha256_file,
)
from .._load import first_error
from ..errors import Problem, WorkbenchError, problem
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


@dataclass(frozen=True)
class Certified:
    """A verified, certified report and its per-slice figures."""

    ref: CertificationRef
    figures: dict[str, Any]  # slice -> SliceFigures, without (all)
    ragas_version: str | None


def read_certification(report_dir: str | Path) -> tuple[Certified | None, list[Problem]]:
    """Verify the report and read its figures, with every problem that makes it unusable."""
    from ..authority import open_report
    from ..policy import SliceFigures

    root, lock, gate, problems = open_report(report_dir, point="point --report")
    loc = str(root)
    if lock is None or gate is None:
        return None, problems
    if {lock.outcome, gate.get("outcome")} != {"certified"}:
        message = (
            f"the report's outcome is {lock.outcome!r}, not 'certified': its judge may not be used"
            " on production traffic"
        )
        fix = (
            "certify the judge first; only a certified report's error rates can correct production"
            " estimates"
        )
        problems.append(problem(loc, "report_not_certified", message, fix))
    if gate.get("partition") != "held_out":
        message = f"the report was evaluated on {gate.get('partition')!r}, not held_out"
        fix = "use a report written by `workbench certify` (held-out data)"
        problems.append(problem(loc, "report_not_held_out", message, fix))
    raw_figures = gate.get("figures") or []
    if not raw_figures:
        message = "gate.json has no per-slice figures: the judge's error rates are unknown"
        fix = "re-certify with a workbench that writes gate figures (gate schema 2)"
        problems.append(problem(loc, "report_without_figures", message, fix))
    figures: dict[str, Any] = {}
    for item in raw_figures:
        try:
            fig = SliceFigures.model_validate(item)
        except ValidationError as exc:
            message = f"a figures entry cannot be read ({first_error(exc)[:120]})"
            fix = "restore gate.json as certified"
            problems.append(
                problem(f"{loc}/{GATE_FILE}", "report_figures_unreadable", message, fix)
            )
            continue
        if fig.slice != "(all)":
            figures[fig.slice] = fig
    policy = gate.get("policy") or {}
    ragas = lock.versions.get("ragas")
    ref = CertificationRef(
        report_id=lock.report_id,
        report_dir=loc,
        candidate=lock.candidate,
        candidate_fingerprint=lock.candidate_fingerprint,
        lock_sha256=lock.lock_sha256,
        outcome=lock.outcome,
        policy=f"{policy['name']}@{policy['version']}" if policy.get("name") else None,
        rubric_version=gate.get("rubric_version"),
        ragas_version=ragas,
    )
    return Certified(ref=ref, figures=figures, ragas_version=ragas), problems


def _json_rows(
    text: str, loc: str, what: str, columns: tuple[str, str], problems: list[Problem]
) -> list[tuple[str, dict[str, object]]]:
    rows: list[tuple[str, dict[str, object]]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = loads_json(line)  # strict: duplicate keys, NaN/Infinity, too deep refused
        except JSONRecordError as exc:
            why = exc.msg
        else:
            if isinstance(obj, dict):
                rows.append((f"{loc}:{number}", {k: obj.get(k) for k in columns}))
                continue
            why = "a line is not a JSON object"
        fix = "write one JSON object per line"
        problems.append(problem(f"{loc}:{number}", f"{what}_malformed", why, fix))
    return rows


def _read_table(
    path: Path, columns: tuple[str, str], what: str
) -> tuple[list[tuple[str, dict[str, str]]], list[Problem]]:
    """Rows of a CSV (header) or JSON Lines file as ``(location, {column: value})``."""
    loc, suffix = str(path), path.suffix.lower()
    header = ",".join(columns)
    if not path.is_file():
        message = f"the {what} file does not exist"
        fix = f"give a CSV with a header {header} or JSON Lines with those keys"
        return [], [problem(loc, f"{what}_missing", message, fix)]
    if suffix not in (".jsonl", ".ndjson", ".json", ".csv", ".tsv"):
        message = f"unknown file type {path.suffix!r}"
        fix = "use .csv (header case_id,...) or .jsonl"
        return [], [problem(loc, f"{what}_format", message, fix)]
    try:
        # Bounded (a pipe or /dev/zero is refused): the document limit, 256 MiB by default.
        data = read_bounded(path, limit=max_document_bytes(), setting=MAX_LINE_BYTES_ENV)
        text = data.decode("utf-8")
    except WorkbenchError as exc:
        return [], list(exc.problems)
    except UnicodeDecodeError:
        return [], [problem(loc, f"{what}_encoding", "the file is not UTF-8", "save it as UTF-8")]
    problems: list[Problem] = []
    if suffix in (".jsonl", ".ndjson", ".json"):
        rows = _json_rows(text, loc, what, columns, problems)
    else:
        reader = csv.DictReader(text.splitlines(), delimiter="\t" if suffix == ".tsv" else ",")
        absent = [c for c in columns if c not in (reader.fieldnames or [])]
        if absent:
            message = f"the header lacks {', '.join(absent)}"
            fix = f"start the file with the header {header}"
            return [], [problem(loc, f"{what}_columns", message, fix)]
        rows = [(f"{loc}:{n}", {k: row.get(k) for k in columns}) for n, row in enumerate(reader, 2)]
    out: list[tuple[str, dict[str, str]]] = []
    for where, row in rows:
        bad = [k for k, v in row.items() if not isinstance(v, str) or not v.strip()]
        if bad:
            message = f"{' and '.join(bad)} missing or not text"
            fix = f"give every row a {' and a '.join(columns)}"
            problems.append(problem(where, f"{what}_incomplete", message, fix))
        else:
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
            message = f"case mapped twice (first at {first[cid]})"
            fix = "map each production case to exactly one slice"
            problems.append(problem(where, "slices_duplicate", message, fix, cid))
        elif name not in rubric.slices:
            message = f"slice {name!r} is not in the rubric"
            fix = "use one of " + ", ".join(rubric.slices)
            problems.append(problem(where, "slices_unknown_slice", message, fix, cid))
        else:
            mapping[cid], first[cid] = name, where
    return mapping, problems


@dataclass(frozen=True)
class Traffic:
    """Production cases with the judge's final outcome and, when labelled, the human label."""

    slice_of: dict[str, str]
    outcome: dict[str, str]  # pass, fail, abstain, error or missing
    judge_fingerprint: str | None
    human: dict[str, str]
    other_repeats: int


HELD_OUT_RECORDS = "restricted/gold/held_out.jsonl"


def held_out_of_report(report_dir: str | Path) -> frozenset[str]:
    """Case ids and response hashes of the held-out records ``report_dir`` was certified on."""
    path = Path(report_dir) / HELD_OUT_RECORDS
    if not path.is_file():
        return frozenset()
    found: set[str] = set()
    for _number, line in iter_jsonl_lines(path):
        row = loads_json(line)
        if isinstance(row, dict):
            found.update(str(row[k]) for k in ("case_id", "response_hash") if row.get(k))
    return frozenset(found)


def _held_out_problem(r: Any, held: frozenset[str]) -> tuple[str, str, str] | None:
    if r.partition != "held_out" and r.case_id not in held and r.response_hash not in held:
        return None
    return (
        "held_out_content_exposed",
        "the result judges a held-out case the report was certified on (its partition, case id"
        " or response hash): held-out cases are judged only by a certification",
        "estimate production traffic only; leave held-out cases out of --results and --labelled",
    )


def _result_problem(
    r: Any,
    line: int,
    vocab: set[str],
    seen: dict[tuple[str, int, int], int],
    slice_of: Any,
    held: frozenset[str] = frozenset(),
) -> tuple[str, str, str] | None:
    if (exposed := _held_out_problem(r, held)) is not None:
        return exposed
    if r.value is None and r.error is None:
        return (
            "score_only_result",
            "a score without a verdict is not a pass or a fail",
            "estimate label verdicts only",
        )
    if r.value is not None and r.value not in vocab:
        return (
            "unknown_judge_label",
            f"verdict {r.value!r} is not in the rubric's vocabulary",
            "record out-of-vocabulary output as an invalid_label error",
        )
    key = (r.case_id, r.repeat, r.attempt)
    if key in seen:
        return (
            "duplicate_result",
            f"second result for repeat {r.repeat}, attempt {r.attempt} (first on line {seen[key]})",
            "keep one result per case, repeat and attempt",
        )
    seen[key] = line
    if r.case_id not in slice_of:
        return (
            "unmapped_case",
            "the case has no slice in the slices file",
            "add the case to the slices file (case_id,slice); every estimated case needs a slice",
        )
    return None


def _verdicts(
    results: str | Path,
    slice_of: dict[str, str],
    rubric: Rubric,
    problems: list[Problem],
    held: frozenset[str] = frozenset(),
) -> tuple[dict[str, str], Counter[str], int]:
    loc, vocab = str(results), set(rubric.labels)
    final: dict[str, tuple[int, str]] = {}
    seen: dict[tuple[str, int, int], int] = {}
    fingerprints: Counter[str] = Counter()
    other_repeats = 0
    for item in scan_results(results):
        if isinstance(item, Problem):
            problems.append(item)
            continue
        r = item.result
        fingerprints[r.judge_fingerprint] += 1
        found = _result_problem(r, item.line, vocab, seen, slice_of, held)
        if found is not None:
            problems.append(problem(f"{loc}:{item.line}", *found, r.case_id))
            continue
        if r.repeat != 0:
            other_repeats += 1
        elif r.case_id not in final or r.attempt > final[r.case_id][0]:
            views = {rubric.pass_label: "pass", rubric.fail_label: "fail"}
            verdict = "error" if r.error is not None else views.get(r.value, "abstain")
            final[r.case_id] = (r.attempt, verdict)
    if len(fingerprints) > 1:
        message = f"results from {len(fingerprints)} judge fingerprints"
        fix = "estimate one judge at a time; split the file by judge_fingerprint"
        problems.append(problem(loc, "mixed_judges", message, fix))
    outcome = {cid: final[cid][1] if cid in final else "missing" for cid in slice_of}
    return outcome, fingerprints, other_repeats


def _labels(
    labelled: str | Path,
    slice_of: dict[str, str],
    rubric: Rubric,
    problems: list[Problem],
    held: frozenset[str] = frozenset(),
) -> dict[str, str]:
    rows, more = _read_table(Path(labelled), ("case_id", "label"), "labelled")
    problems += more
    human: dict[str, str] = {}
    for where, row in rows:
        cid, label = row["case_id"], row["label"]
        if cid in human:
            found = (
                "labelled_duplicate",
                "case labelled twice",
                "give each sampled case one adjudicated label",
            )
        elif cid in held:
            found = (
                "held_out_content_exposed",
                "the labelled case is a held-out case the report was certified on",
                "label a sample of production traffic; held-out cases stay with certification",
            )
        elif cid not in slice_of:
            found = (
                "labelled_unknown_case",
                "the labelled case is not in the traffic",
                "label cases sampled from the same traffic the judge ran on",
            )
        elif label not in rubric.labels:
            found = (
                "labelled_unknown_label",
                f"label {label!r} is not in the rubric's vocabulary",
                "use " + ", ".join(rubric.labels),
            )
        else:
            human[cid] = label
            continue
        problems.append(problem(where, *found, cid))
    return human


def read_traffic(
    results: str | Path,
    slices: str | Path,
    rubric: Rubric,
    labelled: str | Path | None = None,
    held: frozenset[str] = frozenset(),
) -> tuple[Traffic, list[Problem]]:
    """Read the traffic files with every problem; ``held`` cases are refused."""
    slice_of, problems = read_slice_map(slices, rubric)
    outcome, fingerprints, other_repeats = _verdicts(results, slice_of, rubric, problems, held)
    human = _labels(labelled, slice_of, rubric, problems, held) if labelled is not None else {}
    fp = next(iter(fingerprints), None) if len(fingerprints) == 1 else None
    return Traffic(slice_of, outcome, fp, human, other_repeats), problems


def _scope_problems(
    certified: Certified, traffic: Traffic, rub: Rubric, report: Any, results: Any, rubric: Any
) -> list[Problem]:
    from ..judges import ragas_version

    ref, out = certified.ref, []
    installed = ragas_version()
    if certified.ragas_version != installed:
        message = (
            f"the report was certified with Ragas {certified.ragas_version}, the installed Ragas"
            f" is {installed}: the judge may behave differently"
        )
        fix = "certify the judge again with the installed Ragas, or install the certified version"
        out.append(problem(str(report), "report_stale_ragas", message, fix))
    fp = traffic.judge_fingerprint
    if fp is not None and fp != ref.candidate_fingerprint:
        message = (
            f"the traffic was judged by fingerprint {fp[:12]}, the report certified"
            f" {ref.candidate} with {ref.candidate_fingerprint[:12]}"
        )
        fix = "run the certified candidate on the traffic, or certify the judge that ran"
        out.append(problem(str(results), "report_stale_candidate", message, fix))
    if ref.rubric_version is not None and ref.rubric_version != rub.version:
        message = f"rubric version {rub.version!r}, the certification used {ref.rubric_version!r}"
        fix = "give the rubric the judge was certified under"
        out.append(problem(str(rubric), "rubric_mismatch", message, fix))
    for name in sorted(set(traffic.slice_of.values())):
        fig = certified.figures.get(name)
        if certified.figures and fig is None:
            message = f"the traffic has slice {name!r}, which the certification did not measure"
            fix = (
                "certify the judge on a held-out set covering the slice, or leave those cases out"
                " of the estimate"
            )
            out.append(problem(str(report), "slice_not_certified", message, fix))
        elif fig is not None and (fig.false_pass_rate.n == 0 or fig.false_fail_rate.n == 0):
            message = (
                f"slice {name!r}: the certification has {fig.false_fail_rate.n} decided human-pass"
                f" and {fig.false_pass_rate.n} decided human-fail case(s); both are needed for"
                " sensitivity and specificity"
            )
            fix = "grow the held-out slice and certify again"
            out.append(problem(str(report), "slice_rates_unmeasured", message, fix))
    return out


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
    """Naive, Rogan-Gladen-corrected and (with ``labelled``) PPI pass rates of production data."""
    rub = load_rubric(Path(rubric) / "rubric.yaml" if Path(rubric).is_dir() else rubric)
    certified, problems = read_certification(report)
    if rub.pass_label is None or rub.fail_label is None:
        message = "the rubric declares no pass_label and fail_label: a pass rate is undefined"
        fix = "give the rubric the certification used (it names its pass and fail labels)"
        problems.append(problem(str(rubric), "rubric_without_pass_fail", message, fix))
    traffic, more = read_traffic(results, slices, rub, labelled, held_out_of_report(report))
    problems += more
    if certified is not None:
        problems += _scope_problems(certified, traffic, rub, report, results, rubric)
    if traffic.judge_fingerprint is None and not any(
        p.code in ("mixed_judges", "results_missing") for p in problems
    ):
        message = "the results file holds no result: nothing shows which judge ran"
        fix = "point --results at the judge's results on the traffic"
        problems.append(problem(str(results), "no_results", message, fix))
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
    values = {rubric.pass_label: 1.0, rubric.fail_label: 0.0}
    return values.get(label, float("nan")) if label is not None else float("nan")
