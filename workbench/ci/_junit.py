"""JUnit XML for the CI lanes (the Ant/Surefire shape GitHub and GitLab read): one ``<testcase>``
per checked item; ``<failure>`` when it found a problem, ``<error>`` when it could not be
completed, ``<skipped type="expected_failure">`` when it failed exactly as a reviewed expected
failure says."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from .._docs import add_field_docs
from .._io import atomic_write_text

CheckStatus = Literal["passed", "failed", "error", "expected_failure"]
Category = Literal["contract", "failure", "incomplete", "review"]


class CheckResult(BaseModel):
    """One checked item of a CI lane: a JUnit ``<testcase>``."""

    model_config = ConfigDict(frozen=True, json_schema_extra=add_field_docs)

    group: str
    """What kind of item (``gold``, ``candidates``, ``control-runs`` ...): the ``testsuite``."""
    name: str
    """The item, e.g. a path or ``rubric-judge@2 on support-controls@1``: the ``testcase``."""
    status: CheckStatus
    """``passed``, ``failed`` (a problem), ``error`` (not completed) or ``expected_failure``."""
    category: Literal["ok", "contract", "failure", "incomplete", "review"] = "ok"
    """``contract`` (exit 2), ``failure`` (1), ``incomplete`` (3), ``review`` (4), else ``ok``."""
    code: str | None = None
    """Machine-readable reason of a non-passing check (the first problem code)."""
    message: str = ""
    """One line: what was found."""
    details: list[str] = []
    """Every problem or failing item, one per line."""
    failing: list[str] = []
    """Ids of what failed (control ids, pair ids), for matching expected failures."""
    seconds: float = 0.0
    """Time the check took."""

    @property
    def check_id(self) -> str:
        """``group/name``: how the expected-failure list names the check."""
        return f"{self.group}/{self.name}"


def problem_check(
    group: str,
    name: str,
    category: Category,
    code: str,
    message: str,
    details: Iterable[str] = (),
    *,
    failing: Iterable[str] = (),
    seconds: float = 0.0,
) -> CheckResult:
    """A check that did not pass: ``error`` when ``incomplete``, else ``failed``."""
    status: CheckStatus = "error" if category == "incomplete" else "failed"
    return CheckResult(
        group=group,
        name=name,
        status=status,
        category=category,
        code=code,
        message=message,
        details=list(details),
        failing=list(failing),
        seconds=seconds,
    )


def passed_check(group: str, name: str, *details: str, seconds: float = 0.0) -> CheckResult:
    """A check that passed, with what it found."""
    return CheckResult(
        group=group, name=name, status="passed", details=list(details), seconds=seconds
    )


_TAGS = {"failed": "failure", "error": "error", "expected_failure": "skipped"}
"""The JUnit element of each non-passing status."""


def _counts(checks: Sequence[CheckResult]) -> dict[str, str]:
    return {
        "tests": str(len(checks)),
        "failures": str(sum(c.status == "failed" for c in checks)),
        "errors": str(sum(c.status == "error" for c in checks)),
        "skipped": str(sum(c.status == "expected_failure" for c in checks)),
        "time": f"{sum(c.seconds for c in checks):.3f}",
    }


def junit_xml(
    lane: str, checks: Iterable[CheckResult], *, timestamp: datetime | None = None
) -> str:
    """The JUnit XML document of a lane's checks (see the module doc)."""
    checks = list(checks)
    when = (timestamp or datetime.now(UTC)).replace(microsecond=0).isoformat()
    root = ET.Element("testsuites", {"name": f"workbench ci {lane}", **_counts(checks)})
    groups: dict[str, list[CheckResult]] = {}
    for check in checks:
        groups.setdefault(check.group, []).append(check)
    for group, members in groups.items():
        suite = ET.SubElement(
            root, "testsuite", {"name": group, **_counts(members), "timestamp": when}
        )
        for check in members:
            case = ET.SubElement(
                suite,
                "testcase",
                {
                    "classname": f"ci.{lane}.{group}",
                    "name": check.name,
                    "time": f"{check.seconds:.3f}",
                },
            )
            body = "\n".join(check.details) or check.message
            tag = _TAGS.get(check.status)
            if tag is not None:
                kind = "expected_failure" if tag == "skipped" else check.code or check.category
                element = ET.SubElement(case, tag, {"type": kind, "message": check.message})
                element.text = body
            elif check.details:
                ET.SubElement(case, "system-out").text = body
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(path: str | Path, lane: str, checks: Iterable[CheckResult]) -> Path:
    """Write :func:`junit_xml` atomically to ``path`` (parents created)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, junit_xml(lane, checks))
    return target
