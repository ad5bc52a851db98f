"""The release policy a phase notebook draws its limits from, and a notice saying why when none
fits the gold's rubric (then every limit and result shows ``–``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import Problem, WorkbenchError
from ..gold import Rubric
from ..policy import Policy, load_policy, policy_rubric_problems

NOT_SHOWN = {"partition_mismatch"}  # expected in a preview: the policy certifies on held-out data
_NO_MATCH = {"policy_rubric_mismatch", "no_pass_fail_view"}  # no limit of the policy shown


@dataclass(frozen=True)
class PolicyNotice:
    """Why the policy's limits are not shown, or only in part, for the session's gold."""

    title: str
    problems: tuple[Problem, ...]

    def __str__(self) -> str:
        lines = [f"NOTICE: {self.title}"]
        lines += [f"- {p.code}: {p.message}\n  fix: {p.fix}" for p in self.problems]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        from .._html import fragment

        return str(
            fragment("calibration.html.j2", "policy_notice", self.title, list(self.problems))
        )


def _no_policy(rubric: Rubric) -> PolicyNotice:
    fix = (
        "name the policy written for this rubric: `policy: data/policies/<name>@<version>.yaml`"
        " in workbench.yaml, or the notebook's policy parameter"
    )
    message = f"no policy is named for rubric {rubric.name} {rubric.version}"
    return PolicyNotice(
        "no release policy: every limit and result shows –",
        (Problem(location="policy", code="policy_missing", message=message, fix=fix),),
    )


def phase_policy(
    path: str | Path | None, rubric: Rubric, *, partition: str, required: bool = False
) -> tuple[Policy | None, PolicyNotice | None]:
    """The policy at ``path`` and the notice to show above everything else (None when the
    policy fits ``rubric``). ``required``: a missing policy or one that does not load raises
    instead of becoming the notice."""
    if path is None:
        notice = _no_policy(rubric)
        if required:
            raise WorkbenchError("a policy is needed to gate candidates", list(notice.problems))
        return None, notice
    try:
        policy = load_policy(path)
    except WorkbenchError as exc:
        if required:
            raise
        title = f"policy {Path(path).name} does not load: every limit and result shows –"
        return None, PolicyNotice(title, tuple(exc.problems))
    problems = [
        p
        for p in policy_rubric_problems(policy, rubric, policy_path=path, partition=partition)
        if p.code not in NOT_SHOWN
    ]
    if not problems:
        return policy, None
    common = set(policy.slices) & set(rubric.slices)
    whole = not common or any(p.code in _NO_MATCH for p in problems)
    title = f"policy {policy.label} does not match rubric {rubric.name} {rubric.version}: " + (
        "no limit applies, results show –" if whole else "some slices show no limit"
    )
    return policy, PolicyNotice(title, tuple(problems))
