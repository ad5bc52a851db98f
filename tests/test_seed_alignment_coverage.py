"""docs/coverage: every test and command the coverage tables name exists, and the counts at the
top of each table are the table's own (issue 30: "the count of requirements shown working, by
the same strict rule"). Also the small checks the alignment audit found without a test."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from conftest import CARD
from test_seed_coverage_docs import _resolve, _tests

from workbench.gold import validate_dataset

ROOT = Path(__file__).resolve().parents[1]
COVERAGE = ROOT / "docs" / "coverage"
STATUSES = ("done", "partial", "missing", "in progress (issue 30)", "desc.")


def _rows(text: str) -> list[list[str]]:
    """The cells of every table row whose last cell is a status (the command table is skipped)."""
    rows = []
    for line in text.splitlines():
        if not line.startswith("| "):
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if cells and cells[-1].startswith(STATUSES):
            rows.append(cells)
    return rows


def _status(cell: str) -> str:
    return next(s for s in STATUSES if cell.startswith(s))


def _stated_counts(line: str) -> dict[str, int]:
    found = dict(
        (name, int(n))
        for n, name in re.findall(r"(\d+) (done|partial|missing|in progress \(issue 30\))", line)
    )
    total = re.search(r"of (\d+) requirements", line)
    assert total, f"no 'of N requirements' in {line!r}"
    return {**found, "N": int(total.group(1))}


def _counts(rows: list[list[str]]) -> dict[str, int]:
    tally = Counter(_status(r[-1]) for r in rows)
    counted = {s: tally[s] for s in STATUSES[:4]}
    return {**counted, "N": sum(counted.values())}


def test_the_alignment_counts_are_the_table() -> None:
    text = (COVERAGE / "alignment.md").read_text(encoding="utf-8")
    header = next(line for line in text.splitlines() if line.startswith("**Counts:"))
    rows = _rows(text)
    assert len(rows) > 150  # every sentence of the process sections, not a summary
    assert _stated_counts(header) == _counts(rows)
    assert f"{Counter(_status(r[-1]) for r in rows)['desc.']} rows are **desc.**" in text


def test_the_readme_counts_are_its_tables() -> None:
    text = (COVERAGE / "README.md").read_text(encoding="utf-8")
    sections = re.split(r"^## ", text, flags=re.M)[1:]
    stated = {
        s.split("\n", 1)[0]: _stated_counts(next(x for x in s.splitlines() if "requirements" in x))
        for s in sections
        if "requirements" in s and _rows(s)
    }
    assert len(stated) == 2  # ranking and noise; alignment's table is alignment.md
    for name, counts in stated.items():
        section = next(s for s in sections if s.startswith(name))
        assert counts == _counts(_rows(section)), name
    summary = next(line for line in text.splitlines() if line.startswith("| alignment "))
    a = _counts(_rows((COVERAGE / "alignment.md").read_text(encoding="utf-8")))
    assert [int(n) for n in re.findall(r"\| (\d+)", summary)][:5] == [
        a["done"],
        a["partial"],
        a["missing"],
        a[STATUSES[3]],
        a["N"],
    ]


@pytest.mark.parametrize("doc", ["alignment.md", "README.md"])
def test_every_done_row_names_a_test_or_a_run(doc: str) -> None:
    """The strict rule: a row is done only when a test or a command run shows it."""
    unshown = [
        r[0]
        for r in _rows((COVERAGE / doc).read_text(encoding="utf-8"))
        if _status(r[-1]) == "done" and not re.search(r"test_\w+|\bR\d+\b|ran: ", " ".join(r))
    ]
    assert unshown == []


@pytest.mark.parametrize("doc", ["alignment.md", "README.md"])
def test_every_named_test_exists(doc: str) -> None:
    text = (COVERAGE / doc).read_text(encoding="utf-8")
    qualified = set(re.findall(r"(test_\w+\.py)::(test_\w+)", text))
    assert qualified
    missing = [
        f"{file}::{name}"
        for file, name in sorted(qualified)
        if not (ROOT / "tests" / file).exists()
        or not re.search(
            rf"^(?:async )?def {name}\b", (ROOT / "tests" / file).read_text("utf-8"), re.M
        )
    ]
    assert missing == []
    assert _tests(text)  # the shared checker reads the same names


def test_every_named_command_exists() -> None:
    text = (COVERAGE / "alignment.md").read_text(encoding="utf-8")
    commands = sorted(set(re.findall(r"`(workbench [^`]*)`", text)))
    assert len(commands) > 10
    assert {c: err for c in commands if (err := _resolve(c))} == {}


def test_the_row_checks_catch_a_wrong_row() -> None:
    rows = _rows("| a | b | tests/x.py::test_y | done |\n| c | d | | desc. |\n| e | f | | done |\n")
    assert [_status(r[-1]) for r in rows] == ["done", "desc.", "done"]
    assert _counts(rows) == {"done": 2, "partial": 0, "missing": 0, STATUSES[3]: 0, "N": 2}
    line = "**Counts: 2 done, 0 partial, 0 missing, 0 in progress (issue 30) of 2 requirements**"
    assert _stated_counts(line) == _counts(rows)
    assert _stated_counts(line.replace("2 done", "3 done")) != _counts(rows)


@pytest.mark.parametrize(
    "field",
    ["known_gaps", "excluded_domains", "privacy_handling", "source_authority"],
)
def test_a_card_without_a_documented_field_is_warned_by_name(make_dataset, field: str) -> None:
    """Seed 001: "publish a dataset card with intended use, sampling window, label distribution,
    reviewer qualifications, adjudication procedure, known gaps, excluded domains, privacy
    handling, and source authority". A card that leaves one out is named in a warning (the
    dataset still loads). Excluded domains, privacy handling and source authority were optional
    and passed silently before this change."""
    from conftest import make_case

    card = re.sub(rf"^{field}: .*\n", "", CARD, flags=re.M)
    assert card != CARD
    report = validate_dataset(make_dataset([make_case("c1")], card=card))
    assert report.ok
    assert [(p.code, p.severity) for p in report.problems] == [("card_field_missing", "warning")]
    assert field in report.problems[0].message
    assert f"{field}:" in (report.problems[0].fix or "")


def test_a_judge_that_fails_everything_is_stopped_by_its_positive_controls() -> None:
    """Seed 001: the positive control "verifies that the judge can recognize sufficient evidence
    and is not configured to fail all outputs". A judge failing every control passes the negative
    and adversarial ones and is still blocked, as a quality failure no waiver covers."""
    from test_controls import IDENTITY, _control, _suite

    from workbench.controls import ControlOutcome, ControlSuite, evaluate_controls

    roles = {"pos-1": "positive", "pos-2": "positive", "neg-1": "negative", "adv-1": "adversarial"}
    controls = [
        _control(cid, role=role, expected="pass" if role == "positive" else "fail")
        for cid, role in roles.items()
    ]
    suite = ControlSuite.model_validate(_suite(controls))
    always_fail = {c.control_id: ControlOutcome("fail", "fails") for c in suite.controls}
    report = evaluate_controls(suite, always_fail, judge=IDENTITY)
    assert report.failed_roles == ["positive"] and report.status == "failed"
    blockers = {b.code: b for b in report.blockers(["positive", "negative", "adversarial"])}
    assert set(blockers) == {"control_failed_positive"}
    positive = blockers["control_failed_positive"]
    assert (positive.category, positive.case_ids, positive.waivable) == (
        "quality",
        ["pos-1", "pos-2"],
        False,
    )
