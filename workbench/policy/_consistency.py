"""A policy checked against its rubric before any held-out data is used: ``workbench certify``
refuses (exit 2) on any problem :func:`policy_rubric_problems` finds (the gate's consistency
codes, which on development results are only ``review`` blockers)."""

from __future__ import annotations

from pathlib import Path

from .._load import Problems
from ..align import has_pass_fail_view, split_cell
from ..errors import Problem, WorkbenchError, problem
from ..gold import Rubric
from ._policy import Policy


def policy_rubric_problems(
    policy: Policy, rubric: Rubric, *, policy_path: str | Path, partition: str = "held_out"
) -> list[Problem]:
    """Every way ``policy`` does not fit ``rubric`` and ``partition``: header first, then slices."""
    loc = str(policy_path)
    out = Problems()
    if policy.rubric_version is not None and policy.rubric_version != rubric.version:
        message = (
            f"the policy was written for rubric {policy.rubric_version!r} but the dataset uses"
            f" {rubric.version!r}"
        )
        fix = "write a new policy version reviewed for the dataset's rubric"
        out.add(f"{loc}: rubric_version", "policy_rubric_mismatch", message, fix)
    if policy.partition is not None and policy.partition != partition:
        message = f"the policy certifies on partition {policy.partition!r}, not {partition!r}"
        fix = f"use a policy written for {partition!r} (set `partition: {partition}`)"
        out.add(f"{loc}: partition", "partition_mismatch", message, fix)
    if not has_pass_fail_view(rubric):
        out.append(_no_pass_fail_view(rubric, loc))
    _slice_problems(policy, rubric, loc, out)
    _cell_problems(policy, rubric, loc, out)
    return out


def _cell_problems(policy: Policy, rubric: Rubric, loc: str, out: Problems) -> None:
    """Each crossed cell names a rubric slice, reviewed at the rubric's risk."""
    for name, spec in policy.cells.items():
        slice_name = split_cell(name).get("slice")
        if slice_name not in rubric.slices:
            message = f"cell {name!r} names no slice of the rubric ({slice_name!r})"
            fix = f"start the cell with one of the rubric's slices: {', '.join(rubric.slices)}"
            out.add(f"{loc}: cells.{name}", "policy_unknown_slice", message, fix)
        elif spec.risk.value != rubric.risk_of(slice_name):
            message = (
                f"the policy reviewed cell {name!r} as {spec.risk.value} risk but the rubric says"
                f" {rubric.risk_of(slice_name)} for {slice_name!r}"
            )
            fix = "review the cell's limits at its slice's risk and write a new policy version"
            out.add(f"{loc}: cells.{name}.risk", "policy_risk_mismatch", message, fix)


def _no_pass_fail_view(rubric: Rubric, loc: str) -> Problem:
    if rubric.ordered:
        what = f"the {rubric.scale.value} rubric declares no pass_labels"
        fix = (
            "declare pass_labels (an unbroken run at one end of the scale, e.g. the top labels) in"
            " a new rubric version"
        )
    else:
        what = "the rubric declares no pass_label and fail_label"
        fix = "declare pass_label and fail_label in a new rubric version"
    message = (
        f"no label counts as pass or fail ({what}): false passes and false fails cannot be"
        " counted, so the policy's limits can never be shown"
    )
    return problem(f"{loc}: rubric {rubric.version}", "no_pass_fail_view", message, fix)


def _slice_problems(policy: Policy, rubric: Rubric, loc: str, out: Problems) -> None:
    """The policy limits exactly the rubric's slices, each reviewed at the rubric's risk."""
    for name in policy.slices:
        if name not in rubric.slices:
            message = (
                f"the policy sets limits for slice {name!r}, which the rubric does not declare"
            )
            fix = (
                "remove the slice or correct its name; the rubric's slices are"
                f" {', '.join(rubric.slices)}"
            )
            out.add(f"{loc}: slices.{name}", "policy_unknown_slice", message, fix)
    for name in rubric.slices:
        spec = policy.slices.get(name)
        risk = rubric.risk_of(name)
        if spec is None:
            message = f"rubric slice {name!r} ({risk} risk) has no limits in the policy"
            fix = (
                f"add reviewed limits for {name!r} in a new policy version; a slice without limits"
                " can never be certified"
            )
            out.add(f"{loc}: slices", "slice_not_in_policy", message, fix)
        elif risk is not None and spec.risk.value != risk:
            message = (
                f"the policy reviewed slice {name!r} as {spec.risk.value} risk but the rubric says"
                f" {risk}"
            )
            fix = "review the slice's limits for its current risk and write a new policy version"
            out.add(f"{loc}: slices.{name}.risk", "policy_risk_mismatch", message, fix)


def check_policy_against_rubric(
    policy: Policy, rubric: Rubric, *, policy_path: str | Path, partition: str = "held_out"
) -> None:
    """Raise :class:`WorkbenchError` listing every problem :func:`policy_rubric_problems` finds."""
    problems = policy_rubric_problems(policy, rubric, policy_path=policy_path, partition=partition)
    if problems:
        raise WorkbenchError(
            f"{policy_path}: the policy does not fit the dataset's rubric: {len(problems)}"
            " problem(s); the held-out partition was not used",
            problems,
        )
