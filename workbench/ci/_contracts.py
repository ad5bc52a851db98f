"""``workbench ci contracts``: every file of the project and the lineage between them, and the
deterministic candidates over the control suites that cover their labels; no model call. Exit
code (:data:`EXIT_CODES`): 2 contract problems, else 3 incomplete, else 1 a check failed without
a reviewed expected failure, else 0."""

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
from ..errors import Problem, WorkbenchError, errors_only, problem
from ..judges import kinds_where
from ..outcomes import exit_codes
from ._expected import apply_expected_failures
from ._junit import Category, CheckResult, passed_check, problem_check
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
NOT_FROZEN = "not frozen (workbench freeze FILE --approver NAME)"

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
    """This invocation's new directory under ``--out`` (default ``runs/ci/contracts``)."""
    checks: list[CheckResult]
    """Every check: config, gold, candidates, policies, controls, ranking, noise, control runs."""
    outcome: Outcome
    """``passed``, ``failed`` (1), ``contract_problems`` (2) or ``incomplete`` (3)."""
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
    n = {s: sum(c.status == s for c in report.checks) for s in ("failed", "error", "passed")}
    expected = sum(c.status == "expected_failure" for c in report.checks)
    lines.append(
        f"contracts: {n['passed']} of {len(report.checks)} checks passed; {n['failed']} failed,"
        f" {n['error']} incomplete, {expected} failed as expected"
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


_OUTCOMES: dict[str, Outcome] = {
    "contract": "contract_problems",
    "incomplete": "incomplete",
    "failure": "failed",
    "review": "review_required",
}
"""The outcome of each failing check category, worst first."""


def lane_outcome(checks: list[CheckResult]) -> Outcome:
    """contract > incomplete > failure > review > passed (see the module doc)."""
    live = {c.category for c in checks if c.status in ("failed", "error")}
    return next((o for category, o in _OUTCOMES.items() if category in live), "passed")


def _from_problems(
    group: str, name: str, problems: list[Problem], seconds: float, *extra: str
) -> CheckResult:
    """Failed on the first error, else passed with every problem (and ``extra``) as details."""
    errors, details = errors_only(problems), [p.format() for p in problems]
    if not errors:
        return passed_check(group, name, *details, *extra, seconds=seconds)
    message = f"{len(errors)} problem(s): {errors[0].message}"
    return problem_check(group, name, "contract", errors[0].code, message, details, seconds=seconds)


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
        self.t0, self.problems = time.perf_counter(), Problems()

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
            first = str(exc).splitlines()[0][:200] if str(exc) else ""
            fix = "this is likely a bug in the file or in the workbench; run the matching workbench"
            self.problems.add(
                "-", "check_crashed", f"{type(exc).__name__}: {first}", f"{fix} command for details"
            )
        return None

    def result(self, group: str, name: str, *extra: str) -> CheckResult:
        return _from_problems(group, name, self.problems, self.seconds, *extra)


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
    _check_policies(inv, golds, _check_ranking(inv, checks), checks)
    noise_suites = _check_noise(inv, checks)
    _run_controls(candidates, suites, run_dir / "controls", concurrency, checks)
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
        message = (
            "no gold dataset, candidate, policy, control suite, ranking or noise file found"
            f" under {root}"
        )
        detail = (
            f"{root}: nothing matched the discovery rule (data/*/gold.jsonl,"
            " data/candidates/*.yaml, ...; docs/formats.md#ci-configuration)"
        )
        checks.append(
            problem_check("config", "discovery", "contract", "nothing_to_check", message, [detail])
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
        return group == "noise-retrieval" and name in noise_suites

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
        name, c = inv.rel(directory), _Check()
        report = validate_dataset(directory)
        checks.append(_from_problems("gold", name, list(report.problems), c.seconds))
        dataset = report.dataset
        if dataset is None:
            continue
        golds[directory], c = dataset, _Check()
        if dataset.release is None:
            latest = dataset.releases[-1].release_id if dataset.releases else None
            c.problems.add(
                str(directory),
                "gold_not_frozen",
                f"the dataset's current state (sha256 {dataset.sha256[:12]}) is not a frozen"
                " release"
                + (f"; the latest release is {latest}" if latest else "; it was never frozen"),
                f"freeze it: `workbench freeze {name}` (and commit releases.jsonl), so runs and"
                " certifications name the release they used",
            )
            checks.append(c.result("gold", f"{name} release"))
        else:
            chain = f"(release {len(dataset.releases)} of the chain)"
            frozen = f"frozen as {dataset.release.release_id} {chain}"
            checks.append(passed_check("gold", f"{name} release", frozen, seconds=c.seconds))
        sentinels, log = sentinels_path_for(dataset), drift_log_path_for(dataset)
        if sentinels.exists() or log.exists():
            c = _Check()
            if sentinels.exists():
                c.attempt(load_sentinels, sentinels, dataset)
            if log.exists():
                c.attempt(read_drift_log, log)
            checks.append(c.result("gold", f"{name} sentinels"))
    return golds


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
            checks.append(c.result("candidates", inv.rel(path)))
            continue
        with placeholder_environment(loaded[0].endpoint):
            specs[path] = (loaded[0], c.attempt(build_judge, loaded[0], path), c)
    labels = {spec.label for spec, _, _ in specs.values()}
    rubrics = [d.rubric for d in golds.values()]
    for path, (spec, judge, c) in specs.items():
        if spec.parent is not None and spec.parent not in labels:
            c.problems.add(
                f"{path}: parent",
                "candidate_parent_missing",
                f"the parent {spec.parent} is not a candidate of this project",
                "restore the parent's spec (versions are immutable and kept), or correct parent",
            )
        if spec.kind in LABEL_KINDS and not rubrics:
            c.problems.add(
                f"{path}: labels",
                "candidate_no_rubric",
                "no valid gold dataset in the project to check the judge's labels against",
                "add (or repair) the gold dataset the judge is for",
            )
        elif spec.kind in LABEL_KINDS and not any(
            set(spec.labels) <= set(r.labels) for r in rubrics
        ):
            c.problems.add(
                f"{path}: labels",
                "candidate_labels_unknown",
                f"labels {spec.labels} are not all labels of any rubric in the project"
                f" ({'; '.join(f'{r.version}: {r.labels}' for r in rubrics)})",
                "use the rubric's label vocabulary (a label the gold cannot hold can never agree"
                " with it)",
            )
        checks.append(c.result("candidates", inv.rel(path)))
        if judge is not None and not errors_only(c.problems):
            found[path] = {"label": spec.label, "kind": spec.kind, "spec": spec, "judge": judge}
    return found


def _suite_problems(suite: Any, golds: dict[Path, Any], loc: str) -> list[Problem]:
    from ..heldout import exposure_problems, held_out_content

    rubric = next(
        (d.rubric for d in golds.values() if d.rubric.version == suite.rubric_version), None
    )
    out = Problems()
    if rubric is None:
        out.add(
            f"{loc}: rubric_version",
            "controls_rubric_unknown",
            f"no gold dataset of the project uses rubric {suite.rubric_version!r}",
            "write the suite for a rubric the project has (a new suite version), or add that gold",
        )
        return out
    extra = [label for label in suite.labels if label not in rubric.labels]
    if extra:
        message = f"labels {extra} are not labels of rubric {rubric.version}"
        out.add(f"{loc}: labels", "controls_labels_unknown", message, "use the rubric's labels")
    for control in suite.controls:
        if control.slice is not None and control.slice not in rubric.slices:
            out.add(
                loc,
                "controls_slice_unknown",
                f"slice {control.slice!r} is not a slice of rubric {rubric.version}",
                f"use one of {', '.join(rubric.slices)}",
                case_id=control.control_id,
            )
    # a control with held-out content would be judged, and shown, outside a certification
    held_out = held_out_content(golds.values())
    return out + exposure_problems(suite.controls, held_out, loc, what="control")


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
        checks.append(c.result("controls", inv.rel(path)))
        if suite is not None and not c.problems:
            suites[path] = suite
    return suites


def _check_ranking(inv: Inventory, checks: list[CheckResult]) -> list[Any]:
    from ..ranking import load_agreement_examples, load_fixtures

    sets: list[Any] = []
    for path in inv.ranking:
        c = _Check()
        fixture_set = c.attempt(load_fixtures, path)
        if fixture_set is None:
            checks.append(c.result("ranking", inv.rel(path)))
            continue
        sets.append(fixture_set)
        frozen = "frozen" if fixture_set.release is not None else NOT_FROZEN
        count = f"{fixture_set.label}: {len(fixture_set.fixtures)} fixture(s), {frozen}"
        checks.append(c.result("ranking", inv.rel(path), count))
    for path in inv.agreement_examples:
        c = _Check()
        c.attempt(load_agreement_examples, path)
        checks.append(c.result("ranking", inv.rel(path)))
    return sets


def _check_policies(
    inv: Inventory, golds: dict[Path, Any], fixture_sets: list[Any], checks: list[CheckResult]
) -> None:
    from ..controls import load_suite
    from ..policy import load_policy, policy_rubric_problems
    from ..ranking import is_ranking_policy_file, load_ranking_policy

    for path in inv.policies:
        c, loc = _Check(), str(path)
        if is_ranking_policy_file(path):
            policy = c.attempt(load_ranking_policy, path)
            if policy is not None and policy.fixtures is not None:
                c.problems += _fixture_problems(policy, fixture_sets, loc)
        elif (policy := c.attempt(load_policy, path)) is not None:
            fits = [d for d in golds.values() if policy.rubric_version in (None, d.rubric.version)]
            if not fits:
                c.problems.add(
                    f"{loc}: rubric_version",
                    "policy_rubric_unknown",
                    f"no valid gold dataset of the project uses rubric {policy.rubric_version!r}",
                    "write the policy for a rubric the project has (a new version), or add that"
                    " gold",
                )
            for dataset in fits:
                c.problems += policy_rubric_problems(
                    policy,
                    dataset.rubric,
                    policy_path=path,
                    partition=policy.partition or "held_out",
                )
            if policy.controls is not None:
                suite_path = (path.parent / policy.controls.suite).resolve()
                found = suite_path.is_file()
                suite = c.attempt(load_suite, suite_path) if found else None
                c.problems += _policy_suite_problems(policy, found, suite, loc)
        checks.append(c.result("policies", inv.rel(path)))


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


def _policy_suite_problems(policy: Any, found: bool, suite: Any, loc: str) -> list[Problem]:
    """A scalar policy's control suite exists, fits its rubric and covers every blocking role."""
    out, at = Problems(), f"{loc}: controls.suite"
    if not found:
        message = f"the control suite {policy.controls.suite!r} does not exist"
        out.add(at, "controls_missing", message, "restore the suite or correct controls.suite")
    if suite is None:
        return out
    if policy.rubric_version is not None and suite.rubric_version != policy.rubric_version:
        message = (
            f"the control suite {suite.label} follows rubric {suite.rubric_version}, the policy"
            f" rubric {policy.rubric_version}"
        )
        out.add(
            at, "controls_rubric_mismatch", message, "name a suite written for the policy's rubric"
        )
    missing = [r for r in policy.controls.blocking_roles if r not in suite.roles()]
    if missing:
        out.add(
            f"{loc}: controls.blocking_roles",
            "controls_role_missing",
            f"blocking roles {missing} have no control in {suite.label}: certification would stop"
            " there as incomplete",
            "add controls of those roles to a new suite version, or review the blocking roles",
        )
    return out


def _check_noise(inv: Inventory, checks: list[CheckResult]) -> dict[str, Any]:
    from ..noise import load_pairs, load_panel, release_of

    suites: dict[str, Any] = {}
    for path in inv.noise:
        c = _Check()
        suite = c.attempt(load_pairs, path)  # the lineage check runs at every load
        if suite is None:
            checks.append(c.result("noise", inv.rel(path)))
            continue
        release = c.attempt(release_of, suite)
        frozen = f"frozen as {release.release_id}" if release is not None else NOT_FROZEN
        found = _from_problems("noise", inv.rel(path), c.problems, c.seconds)
        checks.append(
            found.model_copy(update={"details": [*found.details, f"{suite.label}: {frozen}"]})
        )
        if not c.problems:
            suites[suite.label] = suite
            checks.append(_retrieval_check(suite))
    for path in inv.noise_panels:
        c, label = _Check(), path.name[: -len(".panel.yaml")]
        if label in suites:
            c.attempt(load_panel, path, suites[label])
        else:
            c.problems.add(
                str(path),
                "panel_suite_missing",
                f"the claim panel belongs to {label}, which is not a valid pair suite of the"
                " project",
                "restore the suite, or name the panel <suite name@version>.panel.yaml",
            )
        checks.append(c.result("noise", inv.rel(path)))
    return suites


def _retrieval_check(suite: Any) -> CheckResult:
    """A pair suite's retrieval assertions as one check."""
    from ..noise import check_retrieval, retrieval_blockers

    t0 = time.perf_counter()
    rows = check_retrieval([*suite.controls(), *suite.candidates()])
    blockers = retrieval_blockers(suite, rows)
    seconds, name = round(time.perf_counter() - t0, 3), suite.label
    if not blockers:
        found = f"{len(rows)} retrieval assertion(s) passed"
        return passed_check("noise-retrieval", name, found, seconds=seconds)
    bad = [r for r in rows if r.status != "passed"]
    failing = sorted({f"{r.pair_id}:{r.member}" for r in bad})
    details = [f"{r.pair_id}:{r.member} {r.check}: {r.code}: {r.detail}" for r in bad]
    incomplete = [b.code for b in blockers if b.category == "incomplete"]
    category: Category
    if incomplete:
        category, code = "incomplete", incomplete[0]
        message = "retrieval evidence is missing: the assertions cannot be decided"
    else:
        category, code = "failure", blockers[0].code
        message = (
            f"{len(failing)} retrieval assertion(s) failed before any model call:"
            f" {', '.join(failing)}"
        )
    return problem_check(
        "noise-retrieval", name, category, code, message, details, failing=failing, seconds=seconds
    )


def _run_controls(
    candidates: dict[Path, dict[str, Any]],
    suites: dict[Path, Any],
    out: Path,
    concurrency: int,
    checks: list[CheckResult],
) -> None:
    from ..controls import run_controls_sync

    for info in (i for i in candidates.values() if i["kind"] in DETERMINISTIC_KINDS):
        for suite in (s for s in suites.values() if set(info["spec"].labels) <= set(s.labels)):
            name, c = f"{info['label']} on {suite.label}", _Check()
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
                checks.append(c.result("control-runs", name))
            else:
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
    total = len(report.controls)
    category: Category = "incomplete"
    if incomplete:
        message = (
            f"{len(incomplete)} of {total} controls have no verdict (evaluator errors or a stopped"
            " run): unproven, never passed"
        )
        failing, code = [r.control_id for r in failed], "control_incomplete"
    elif failed:
        roles = ", ".join(sorted({r.role for r in failed}))
        message = f"{len(failed)} of {total} controls failed (roles {roles})"
        failing, category, code = sorted(r.control_id for r in failed), "failure", "control_failed"
    else:
        return passed_check("control-runs", name, f"{total} controls passed", seconds=seconds)
    return problem_check(
        "control-runs", name, category, code, message, details, failing=failing, seconds=seconds
    )
