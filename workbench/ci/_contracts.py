"""``workbench ci contracts``: every file of the project and the lineage between them, with no
model call.

One :class:`~workbench.ci.CheckResult` per gold dataset (validation, frozen release, sentinels),
candidate, policy, control suite, ranking and noise file, noise retrieval assertion, and
deterministic candidate run over each control suite that covers its labels. Exit code
(:data:`EXIT_CODES`): 2 contract problems, else 3 incomplete, else 1 a check failed without a
reviewed expected failure, else 0."""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from .._io import atomic_write_json
from .._load import Problems
from .._record import LooseRecord
from ..approval import load_approvers
from ..errors import Problem, WorkbenchError, problem
from ..judges import kinds_where
from ..outcomes import exit_codes
from ._expected import apply_expected_failures
from ._junit import CheckResult
from ._project import CONFIG_FILE, Inventory, discover

CONTRACTS_SCHEMA_VERSION = 1
REPORT_FILE = "contracts.json"
LABEL_KINDS: tuple[str, ...] = kinds_where(output="label")
"""Kinds that return one label per gold case (rubric labels, controls, sentinels)."""
DETERMINISTIC_KINDS: tuple[str, ...] = kinds_where(output="label", deterministic=True)
"""Kinds the contracts lane runs over the control suites (no model, no cost)."""
PLACEHOLDER_KEY = "ci-contracts-placeholder-not-a-key"
PLACEHOLDER_URL = "http://ci-contracts-placeholder.invalid/v1"
"""What a spec's ``base_url_env`` reads while its judge is built offline (``.invalid`` never
resolves; the lane calls no model)."""

Outcome = Literal["passed", "contract_problems", "incomplete", "failed", "review_required"]
EXIT_CODES: dict[str, int] = exit_codes(
    "passed", "failed", "contract_problems", "incomplete", "review_required"
)
"""Exit code of each lane outcome."""


class ContractsReport(LooseRecord):
    """What ``workbench ci contracts`` found (``--json``; ``contracts.json`` in its run
    directory)."""

    schema_version: int = CONTRACTS_SCHEMA_VERSION
    """Report format version."""
    kind: Literal["workbench.ci.contracts"] = "workbench.ci.contracts"
    """Report kind."""
    project: str
    """The project root checked."""
    config: str | None
    """The ``workbench.yaml`` read, or None (conventions only)."""
    evaluated_at: datetime
    """When (UTC)."""
    run_dir: str
    """Where the control runs' records and this report were written: a new directory under
    ``--out`` (default ``runs/ci/contracts``) per invocation."""
    checks: list[CheckResult]
    """Every check, in order: config, gold, candidates, policies, controls, ranking, noise,
    control runs."""
    outcome: Outcome
    """``passed``, ``failed`` (exit 1), ``contract_problems`` (exit 2) or ``incomplete`` (exit
    3)."""
    exit_code: int
    """The process exit code."""


def format_contracts(report: ContractsReport, junit_path: str | None = None) -> str:
    """Every check (details of the failed ones), the counts and the outcome, for the terminal."""
    lines = []
    for c in report.checks:
        lines.append(
            f"{c.status.upper():16} {c.check_id}" + (f": {c.message}" if c.message else "")
        )
        if c.status in ("failed", "error"):
            lines += [f"    {line}" for line in c.details[:20]]
    counts = {
        s: sum(c.status == s for c in report.checks)
        for s in ("passed", "failed", "error", "expected_failure")
    }
    lines.append(
        f"contracts: {counts['passed']} of {len(report.checks)} checks passed;"
        f" {counts['failed']} failed, {counts['error']} incomplete,"
        f" {counts['expected_failure']} failed as expected"
    )
    lines.append(
        f"outcome: {report.outcome.upper()} (exit {report.exit_code}); records in"
        f" {report.run_dir}" + (f"; JUnit {junit_path}" if junit_path else "")
    )
    return "\n".join(lines)


def invocation_dir(parent: Path) -> Path:
    """A new directory of its own under ``parent``: a lane never mixes with an earlier one."""
    path = parent / f"{datetime.now(UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}"
    path.mkdir(parents=True)
    return path


def lane_outcome(checks: list[CheckResult]) -> Outcome:
    """contract > incomplete > failure > review > passed (see the module doc)."""
    live = {c.category for c in checks if c.status in ("failed", "error")}
    for category, outcome in (
        ("contract", "contract_problems"),
        ("incomplete", "incomplete"),
        ("failure", "failed"),
        ("review", "review_required"),
    ):
        if category in live:
            return outcome  # type: ignore[return-value]
    return "passed"


def _from_problems(
    group: str, name: str, problems: list[Problem], seconds: float, *, summary: str | None = None
) -> CheckResult:
    errors = [p for p in problems if p.severity == "error"]
    details = [p.format() for p in problems]
    if not errors:
        return CheckResult(
            group=group, name=name, status="passed", details=details, seconds=seconds
        )
    return CheckResult(
        group=group,
        name=name,
        status="failed",
        category="contract",
        code=errors[0].code,
        message=summary or f"{len(errors)} problem(s): {errors[0].message}",
        details=details,
        seconds=seconds,
    )


@contextlib.contextmanager
def placeholder_environment(endpoint: Any) -> Iterator[None]:
    """Set the endpoint's unset key and URL variables to placeholders while a judge is built
    offline (no call is made), then restore: the lane checks the spec, not the deployment."""
    values = {endpoint.api_key_env: PLACEHOLDER_KEY, endpoint.base_url_env: PLACEHOLDER_URL}
    added = {n: v for n, v in values.items() if n and not os.environ.get(n)}
    os.environ.update(added)
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


class _Check:
    """Times one check and turns a WorkbenchError (or a crash) into its problems."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()
        self.problems = Problems()

    @property
    def seconds(self) -> float:
        return round(time.perf_counter() - self.t0, 3)

    def attempt(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except WorkbenchError as exc:
            self.problems += exc.problems or [
                problem("-", "invalid", exc.summary, "see the message")
            ]
        except Exception as exc:  # a check must report, never crash the lane
            self.problems.append(
                problem(
                    "-",
                    "check_crashed",
                    f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}",
                    "this is likely a bug in the file or in the workbench; run the matching"
                    " workbench command for details",
                )
            )
        return None


def run_contracts(
    project: str | Path = ".",
    *,
    out: str | Path | None = None,
    concurrency: int = 8,
    today: Any = None,
) -> ContractsReport:
    """Run every contract check of the project (module doc). Never calls a model."""
    root = Path(project)
    inv = discover(root)
    run_dir = invocation_dir(Path(out) if out is not None else root / "runs" / "ci" / "contracts")
    config_path = root / CONFIG_FILE
    checks = _config_checks(root, inv, config_path)
    golds = _check_golds(inv, checks)
    candidates = _check_candidates(inv, golds, checks)
    suites = _check_control_suites(inv, golds, checks)
    fixture_sets = _check_ranking(inv, checks)
    _check_policies(inv, golds, fixture_sets, checks)
    noise_suites = _check_noise(inv, checks)
    _run_controls(inv, candidates, suites, run_dir / "controls", concurrency, checks)

    known, ran_here = _lane_scope(candidates, suites, noise_suites)
    entries = [e for e in inv.config.expected_failures if ran_here(e.check) or not known(e.check)]
    approvers = load_approvers(root)
    checks = apply_expected_failures(checks, entries, approvers=approvers, today=today, known=known)
    outcome = lane_outcome(checks)
    report = ContractsReport(
        project=str(root),
        config=str(config_path) if config_path.is_file() else None,
        evaluated_at=datetime.now(UTC),
        run_dir=str(run_dir),
        checks=checks,
        outcome=outcome,
        exit_code=EXIT_CODES[outcome],
    )
    run_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(run_dir / REPORT_FILE, report.model_dump(mode="json"))
    return report


def _config_checks(root: Path, inv: Inventory, config_path: Path) -> list[CheckResult]:
    """The configuration's own check, and a failed discovery when the project holds nothing."""
    name = CONFIG_FILE if config_path.is_file() else f"{CONFIG_FILE} (absent: conventions)"
    checks = [_from_problems("config", name, inv.problems, 0.0)]
    if inv.empty:
        checks.append(
            CheckResult(
                group="config",
                name="discovery",
                status="failed",
                category="contract",
                code="nothing_to_check",
                message=(
                    "no gold dataset, candidate, policy, control suite, ranking or noise file"
                    f" found under {root}"
                ),
                details=[
                    f"{root}: nothing matched the discovery rule (data/*/gold.jsonl,"
                    " data/candidates/*.yaml, ...; docs/formats.md#ci-configuration)"
                ],
            )
        )
    return checks


def _lane_scope(
    candidates: dict[Path, dict[str, Any]], suites: dict[Path, Any], noise_suites: dict[str, Any]
) -> tuple[Callable[[str], bool], Callable[[str], bool]]:
    """``known`` and ``ran_here``: the check ids an expected-failure entry may name."""
    candidate_labels = {c["label"] for c in candidates.values()}
    suite_labels = {s.label for s in suites.values()}
    deterministic = {c["label"] for c in candidates.values() if c["kind"] in DETERMINISTIC_KINDS}

    def known(check_id: str) -> bool:
        group, _, name = check_id.partition("/")
        if group == "control-runs":
            cand, _, suite = name.partition(" on ")
            return cand in candidate_labels and suite in suite_labels
        if group == "noise-retrieval":
            return name in noise_suites
        return False

    def ran_here(check_id: str) -> bool:
        group, _, name = check_id.partition("/")
        return group == "noise-retrieval" or (
            group == "control-runs" and name.partition(" on ")[0] in deterministic
        )

    return known, ran_here


def _check_golds(inv: Inventory, checks: list[CheckResult]) -> dict[Path, Any]:
    from ..gold import validate_dataset
    from ..repeatability import (
        drift_log_path_for,
        load_sentinels,
        read_drift_log,
        sentinels_path_for,
    )

    golds: dict[Path, Any] = {}
    for directory in inv.gold:
        name = inv.rel(directory)
        c = _Check()
        report = validate_dataset(directory)
        checks.append(_from_problems("gold", name, list(report.problems), c.seconds))
        dataset = report.dataset
        if dataset is None:
            continue
        golds[directory] = dataset
        c = _Check()
        if dataset.release is None:
            latest = dataset.releases[-1].release_id if dataset.releases else None
            c.problems.append(
                problem(
                    str(directory),
                    "gold_not_frozen",
                    (
                        f"the dataset's current state (sha256 {dataset.sha256[:12]}) is not a"
                        " frozen release"
                    )
                    + (f"; the latest release is {latest}" if latest else "; it was never frozen"),
                    f"freeze it: `workbench freeze {name}` (and commit releases.jsonl), so runs"
                    " and certifications name the release they used",
                )
            )
            checks.append(_from_problems("gold", f"{name} release", c.problems, c.seconds))
        else:
            checks.append(
                CheckResult(
                    group="gold",
                    name=f"{name} release",
                    status="passed",
                    details=[
                        f"frozen as {dataset.release.release_id} (release {len(dataset.releases)}"
                        " of the chain)"
                    ],
                    seconds=c.seconds,
                )
            )
        sentinels = sentinels_path_for(dataset)
        log = drift_log_path_for(dataset)
        if sentinels.exists() or log.exists():
            c = _Check()
            if sentinels.exists():
                c.attempt(load_sentinels, sentinels, dataset)
            if log.exists():
                c.attempt(read_drift_log, log)
            checks.append(_from_problems("gold", f"{name} sentinels", c.problems, c.seconds))
    return golds


def _rubrics(golds: dict[Path, Any]) -> list[Any]:
    return [d.rubric for d in golds.values()]


def _check_candidates(
    inv: Inventory, golds: dict[Path, Any], checks: list[CheckResult]
) -> dict[Path, dict[str, Any]]:
    from ..judges import build_judge, load_spec

    found: dict[Path, dict[str, Any]] = {}
    specs: dict[Path, Any] = {}
    for path in inv.candidates:
        c = _Check()
        loaded = c.attempt(load_spec, path)
        if loaded is None:
            checks.append(_from_problems("candidates", inv.rel(path), c.problems, c.seconds))
            continue
        spec, _ = loaded
        with placeholder_environment(spec.endpoint):
            judge = c.attempt(build_judge, spec, path)
        specs[path] = (spec, judge, c)
    labels = {spec.label for spec, _, _ in specs.values()}
    for path, (spec, judge, c) in specs.items():
        loc = str(path)
        if spec.parent is not None and spec.parent not in labels:
            c.problems.append(
                problem(
                    f"{loc}: parent",
                    "candidate_parent_missing",
                    f"the parent {spec.parent} is not a candidate of this project",
                    "restore the parent's spec (versions are immutable and kept), or correct"
                    " parent",
                )
            )
        if spec.kind in LABEL_KINDS:
            rubrics = _rubrics(golds)
            if not rubrics:
                c.problems.append(
                    problem(
                        f"{loc}: labels",
                        "candidate_no_rubric",
                        "no valid gold dataset in the project to check the judge's labels against",
                        "add (or repair) the gold dataset the judge is for",
                    )
                )
            elif not any(set(spec.labels) <= set(r.labels) for r in rubrics):
                c.problems.append(
                    problem(
                        f"{loc}: labels",
                        "candidate_labels_unknown",
                        f"labels {spec.labels} are not all labels of any rubric in the project"
                        f" ({'; '.join(f'{r.version}: {r.labels}' for r in rubrics)})",
                        "use the rubric's label vocabulary (a label the gold cannot hold can"
                        " never agree with it)",
                    )
                )
        checks.append(_from_problems("candidates", inv.rel(path), c.problems, c.seconds))
        if judge is not None and not [p for p in c.problems if p.severity == "error"]:
            found[path] = {"label": spec.label, "kind": spec.kind, "spec": spec, "judge": judge}
    return found


def _suite_problems(suite: Any, golds: dict[Path, Any], loc: str) -> list[Problem]:
    rubrics = [r for r in _rubrics(golds) if r.version == suite.rubric_version]
    if not rubrics:
        return [
            problem(
                f"{loc}: rubric_version",
                "controls_rubric_unknown",
                f"no gold dataset of the project uses rubric {suite.rubric_version!r}",
                "write the suite for a rubric the project has (a new suite version), or add"
                " that gold",
            )
        ]
    out: list[Problem] = []
    rubric = rubrics[0]
    extra = [label for label in suite.labels if label not in rubric.labels]
    if extra:
        out.append(
            problem(
                f"{loc}: labels",
                "controls_labels_unknown",
                f"labels {extra} are not labels of rubric {rubric.version}",
                "use the rubric's labels",
            )
        )
    for control in suite.controls:
        if control.slice is not None and control.slice not in rubric.slices:
            out.append(
                problem(
                    loc,
                    "controls_slice_unknown",
                    f"slice {control.slice!r} is not a slice of rubric {rubric.version}",
                    f"use one of {', '.join(rubric.slices)}",
                    control.control_id,
                )
            )
    from ..heldout import exposure_problems, held_out_content

    # a control with held-out content would be judged, and shown, outside a certification
    return out + exposure_problems(
        suite.controls, held_out_content(golds.values()), loc, what="control"
    )


def _check_control_suites(
    inv: Inventory, golds: dict[Path, Any], checks: list[CheckResult]
) -> dict[Path, Any]:
    from ..controls import load_suite

    suites: dict[Path, Any] = {}
    for path in inv.controls:
        c = _Check()
        suite = c.attempt(load_suite, path)
        if suite is not None:
            c.problems += _suite_problems(suite, golds, str(path))
        checks.append(_from_problems("controls", inv.rel(path), c.problems, c.seconds))
        if suite is not None and not c.problems:
            suites[path] = suite
    return suites


def _check_ranking(inv: Inventory, checks: list[CheckResult]) -> list[Any]:
    from ..ranking import load_agreement_examples, load_fixtures

    sets: list[Any] = []
    for path in inv.ranking:
        c = _Check()
        fixture_set = c.attempt(load_fixtures, path)
        problems = list(c.problems)
        detail: list[str] = []
        if fixture_set is not None:
            sets.append(fixture_set)
            detail.append(
                f"{fixture_set.label}: {len(fixture_set.fixtures)} fixture(s), "
                + (
                    "frozen"
                    if fixture_set.release is not None
                    else "not frozen (workbench freeze FILE --approver NAME)"
                )
            )
        result = _from_problems("ranking", inv.rel(path), problems, c.seconds)
        checks.append(
            result.model_copy(update={"details": result.details + detail})
            if result.status == "passed"
            else result
        )
    for path in inv.agreement_examples:
        c = _Check()
        c.attempt(load_agreement_examples, path)
        checks.append(_from_problems("ranking", inv.rel(path), c.problems, c.seconds))
    return sets


def _check_policies(
    inv: Inventory, golds: dict[Path, Any], fixture_sets: list[Any], checks: list[CheckResult]
) -> None:
    from ..controls import load_suite
    from ..policy import load_policy, policy_rubric_problems
    from ..ranking import is_ranking_policy_file, load_ranking_policy

    for path in inv.policies:
        c = _Check()
        loc = str(path)
        if is_ranking_policy_file(path):
            policy = c.attempt(load_ranking_policy, path)
            if policy is not None and policy.fixtures is not None:
                c.problems += _fixture_problems(policy, fixture_sets, loc)
        elif (policy := c.attempt(load_policy, path)) is not None:
            matching = [
                d for d in golds.values() if policy.rubric_version in (None, d.rubric.version)
            ]
            c.problems += [] if matching else [_policy_rubric_unknown(policy, loc)]
            for dataset in matching:
                partition = policy.partition or "held_out"
                c.problems += policy_rubric_problems(
                    policy, dataset.rubric, policy_path=path, partition=partition
                )
            if policy.controls is not None:
                suite_path = (path.parent / policy.controls.suite).resolve()
                found = suite_path.is_file()
                suite = c.attempt(load_suite, suite_path) if found else None
                c.problems += _policy_suite_problems(policy, found, suite, loc)
        checks.append(_from_problems("policies", inv.rel(path), c.problems, c.seconds))


def _fixture_problems(policy: Any, fixture_sets: list[Any], loc: str) -> list[Problem]:
    """A ranking policy's fixture set is the project's, frozen when the policy says so."""
    named = [s for s in fixture_sets if s.name == policy.fixtures]
    if not named:
        message = f"no valid ranking fixture file named {policy.fixtures!r} in the project"
        fix = "restore the fixture file, or correct fixtures"
        return [problem(f"{loc}: fixtures", "policy_fixtures_missing", message, fix)]
    if not policy.require_frozen_fixtures:
        return []
    superseded = {s.supersedes for s in named if s.supersedes is not None}
    return [
        problem(
            f"{loc}: fixtures",
            "policy_fixtures_not_frozen",
            f"the policy requires frozen fixtures and {s.label} (the current version) is not"
            " frozen",
            f"freeze it: `workbench freeze {s.source} --approver NAME`",
        )
        for s in named
        if s.version not in superseded and s.release is None
    ]


def _policy_rubric_unknown(policy: Any, loc: str) -> Problem:
    return problem(
        f"{loc}: rubric_version",
        "policy_rubric_unknown",
        f"no valid gold dataset of the project uses rubric {policy.rubric_version!r}",
        "write the policy for a rubric the project has (a new version), or add that gold",
    )


def _policy_suite_problems(policy: Any, found: bool, suite: Any, loc: str) -> list[Problem]:
    """A scalar policy's control suite exists, fits its rubric and covers every blocking role."""
    at = f"{loc}: controls.suite"
    if not found:
        message = f"the control suite {policy.controls.suite!r} does not exist"
        return [
            problem(at, "controls_missing", message, "restore the suite or correct controls.suite")
        ]
    if suite is None:
        return []
    out: list[Problem] = []
    if policy.rubric_version is not None and suite.rubric_version != policy.rubric_version:
        message = (
            f"the control suite {suite.label} follows rubric {suite.rubric_version}, the policy"
            f" rubric {policy.rubric_version}"
        )
        fix = "name a suite written for the policy's rubric"
        out.append(problem(at, "controls_rubric_mismatch", message, fix))
    missing = [r for r in policy.controls.blocking_roles if r not in suite.roles()]
    if missing:
        message = (
            f"blocking roles {missing} have no control in {suite.label}: certification would stop"
            " there as incomplete"
        )
        fix = "add controls of those roles to a new suite version, or review the blocking roles"
        out.append(
            problem(f"{loc}: controls.blocking_roles", "controls_role_missing", message, fix)
        )
    return out


def _check_noise(inv: Inventory, checks: list[CheckResult]) -> dict[str, Any]:
    from ..noise import check_retrieval, load_pairs, load_panel, release_of, retrieval_blockers

    suites: dict[str, Any] = {}
    for path in inv.noise:
        c = _Check()
        suite = c.attempt(load_pairs, path)  # the lineage check runs at every load
        extra: list[str] = []
        if suite is not None:
            release = c.attempt(release_of, suite)
            extra.append(
                f"{suite.label}: "
                + (
                    f"frozen as {release.release_id}"
                    if release is not None
                    else "not frozen (workbench freeze FILE --approver NAME)"
                )
            )
        result = _from_problems("noise", inv.rel(path), c.problems, c.seconds)
        checks.append(result.model_copy(update={"details": result.details + extra}))
        if suite is None or c.problems:
            continue
        suites[suite.label] = suite
        t0 = time.perf_counter()
        rows = check_retrieval([*suite.controls(), *suite.candidates()])
        blockers = retrieval_blockers(suite, rows)
        seconds = round(time.perf_counter() - t0, 3)
        checks.append(_retrieval_check(suite.label, rows, blockers, seconds))
    for path in inv.noise_panels:
        c = _Check()
        label = path.name[: -len(".panel.yaml")]
        suite = suites.get(label)
        if suite is None:
            c.problems.append(
                problem(
                    str(path),
                    "panel_suite_missing",
                    f"the claim panel belongs to {label}, which is not a valid pair suite of"
                    " the project",
                    "restore the suite, or name the panel <suite name@version>.panel.yaml",
                )
            )
        else:
            c.attempt(load_panel, path, suite)
        checks.append(_from_problems("noise", inv.rel(path), c.problems, c.seconds))
    return suites


def _retrieval_check(
    name: str, rows: list[Any], blockers: list[Any], seconds: float
) -> CheckResult:
    """A pair suite's retrieval assertions as one check."""
    if not blockers:
        return CheckResult(
            group="noise-retrieval",
            name=name,
            status="passed",
            details=[f"{len(rows)} retrieval assertion(s) passed"],
            seconds=seconds,
        )
    failing = sorted({f"{r.pair_id}:{r.member}" for r in rows if r.status != "passed"})
    details = [
        f"{r.pair_id}:{r.member} {r.check}: {r.code}: {r.detail}"
        for r in rows
        if r.status != "passed"
    ]
    incomplete = [b.code for b in blockers if b.category == "incomplete"]
    if incomplete:
        return CheckResult(
            group="noise-retrieval",
            name=name,
            status="error",
            category="incomplete",
            code=incomplete[0],
            message="retrieval evidence is missing: the assertions cannot be decided",
            details=details,
            failing=failing,
            seconds=seconds,
        )
    return CheckResult(
        group="noise-retrieval",
        name=name,
        status="failed",
        category="failure",
        code=blockers[0].code,
        message=(
            f"{len(failing)} retrieval assertion(s) failed before any model call:"
            f" {', '.join(failing)}"
        ),
        details=details,
        failing=failing,
        seconds=seconds,
    )


def _run_controls(
    inv: Inventory,
    candidates: dict[Path, dict[str, Any]],
    suites: dict[Path, Any],
    out: Path,
    concurrency: int,
    checks: list[CheckResult],
) -> None:
    from ..controls import run_controls_sync

    for info in candidates.values():
        if info["kind"] not in DETERMINISTIC_KINDS:
            continue
        for suite in suites.values():
            if not set(info["spec"].labels) <= set(suite.labels):
                continue
            name = f"{info['label']} on {suite.label}"
            c = _Check()
            report = c.attempt(
                run_controls_sync,
                info["judge"],
                suite,
                out / info["label"] / suite.label,
                concurrency=concurrency,
                cache_dir=False,
                progress=False,
            )
            if report is None:
                checks.append(_from_problems("control-runs", name, c.problems, c.seconds))
                continue
            checks.append(control_check(name, report, c.seconds))


def control_check(name: str, report: Any, seconds: float) -> CheckResult:
    """One ``control-runs`` check from a :class:`~workbench.controls.ControlsReport`: any failed
    control fails it; a control without a verdict (and no failure) leaves it incomplete."""
    failed = [r for r in report.controls if r.status == "failed"]
    incomplete = [r for r in report.controls if r.status == "incomplete"]
    details = [
        f"{r.control_id} ({r.role}): expected {'|'.join(r.acceptable)}, got"
        f" {r.verdict if r.verdict is not None else r.error or 'nothing'}"
        for r in failed + incomplete
    ]
    if incomplete:
        return CheckResult(
            group="control-runs",
            name=name,
            status="error",
            category="incomplete",
            code="control_incomplete",
            message=(
                f"{len(incomplete)} of {len(report.controls)} controls have no verdict (evaluator"
                " errors or a stopped run): unproven, never passed"
            ),
            details=details,
            failing=[r.control_id for r in failed],
            seconds=seconds,
        )
    if failed:
        roles = sorted({r.role for r in failed})
        return CheckResult(
            group="control-runs",
            name=name,
            status="failed",
            category="failure",
            code="control_failed",
            message=(
                f"{len(failed)} of {len(report.controls)} controls failed (roles"
                f" {', '.join(roles)})"
            ),
            details=details,
            failing=sorted(r.control_id for r in failed),
            seconds=seconds,
        )
    return CheckResult(
        group="control-runs",
        name=name,
        status="passed",
        details=[f"{len(report.controls)} controls passed"],
        seconds=seconds,
    )
