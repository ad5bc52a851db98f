"""One table of outcomes and exit codes (issue 14 §3): the table, the README and the commands agree.

Before, the outcome -> exit code mapping was written out in the gate, ``workbench certify``,
the ranking and noise gates, the CI lanes and fifteen ``EXIT_*`` constants of the CLI, and
certification decided the outcome of a control failure with its own copy of the gate's rule
(``_gate_without_held_out``). Now :mod:`workbench.outcomes` is the one table; these tests
hold the README's exit-code table, every derived mapping and the commands' real exit codes
to it.
"""

from __future__ import annotations

import json
import re
import typing
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from conftest import make_case

from workbench.cli import main
from workbench.outcomes import (
    ADVISORY_CLEAR,
    CATEGORY_OUTCOMES,
    GATE_OUTCOMES,
    OUTCOMES,
    ExitCode,
    exit_code,
    outcome_of,
    style,
)
from workbench.policy import Blocker, NotEvaluated, evaluate_gate

ROOT = Path(__file__).resolve().parents[1]


def readme_exit_table() -> dict[int, set[str]]:
    """``{exit code: outcomes}`` parsed from the README's "Exit codes" table."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("### Exit codes", 1)[1].split("\n#", 1)[0]
    rows: dict[int, set[str]] = {}
    for line in section.splitlines():
        m = re.match(r"\|\s*(\d+)\s*\|([^|]*)\|", line)
        if m:
            code = int(m.group(1))
            assert code not in rows, f"exit code {code} listed twice in the README"
            rows[code] = set(re.findall(r"`([a-z_]+)`", m.group(2)))
    return rows


def test_readme_exit_code_table_is_the_table() -> None:
    documented = readme_exit_table()
    table: dict[int, set[str]] = {}
    for o in OUTCOMES.values():
        table.setdefault(int(o.exit_code), set()).add(o.name)
    assert documented == table
    assert set(documented) == {int(c) for c in ExitCode}, "every exit code is documented"


def test_the_shared_convention() -> None:
    # The convention every helper and the docs rely on; changing it is a breaking change.
    assert {name: exit_code(name) for name in GATE_OUTCOMES} == {
        "certified": 0,
        "quality_failed": 1,
        "evaluation_incomplete": 3,
        "review_required": 4,
    }
    assert (
        exit_code("invalid_input"),
        exit_code("incomplete"),
        exit_code("evaluator_errors"),
        exit_code("complete"),
    ) == (2, 3, 5, 0)


def test_every_mapping_is_read_from_the_table() -> None:
    from workbench.ci import EXIT_CODES as LANE_EXIT
    from workbench.ci import OUTCOME_EXIT
    from workbench.ci._contracts import Outcome as LaneOutcome
    from workbench.ci._release import ReleaseSummary
    from workbench.noise._analysis import NoiseOutcome
    from workbench.policy import EXIT_CODES as GATE_EXIT
    from workbench.policy import CheckOutcome, GateOutcome
    from workbench.ranking._gate import Outcome as RankingOutcome

    # the release gate's outcomes, and its advisory clear outcome off held-out results
    assert tuple(typing.get_args(GateOutcome)) == (*GATE_OUTCOMES, ADVISORY_CLEAR)
    # the ranking and noise gates end in the one decision step: its outcomes, its exit codes
    assert RankingOutcome is CheckOutcome and NoiseOutcome is CheckOutcome
    for literal, mapping in ((GateOutcome, GATE_EXIT), (LaneOutcome, LANE_EXIT)):
        names = set(typing.get_args(literal))
        assert set(mapping) == names
        assert mapping == {n: exit_code(n) for n in names}
    release = set(typing.get_args(ReleaseSummary.model_fields["outcome"].annotation))
    assert {n: exit_code(n) for n in release} == OUTCOME_EXIT


def test_category_precedence_is_the_gate_rule() -> None:
    assert list(CATEGORY_OUTCOMES) == ["incomplete", "quality", "review"]
    assert outcome_of([]) == "certified" and outcome_of([], clear="passed") == "passed"
    assert outcome_of(["review", "quality"]) == "quality_failed"
    assert outcome_of(["review", "incomplete", "quality"]) == "evaluation_incomplete"
    assert outcome_of(["review"]) == "review_required"


def test_report_style_is_keyed_by_the_table() -> None:
    for name in GATE_OUTCOMES:
        assert OUTCOMES[name].style is style(name)
    assert style("certified").css == "pass" and style("quality_failed").title == "QUALITY FAILED"
    assert style("something_else").css == "notrun"


def test_no_literal_exit_code_in_the_cli() -> None:
    literal = re.compile(r"(sys\.exit|SystemExit)\((\d+|[^)]* else \d+)\)|^EXIT_[A-Z_]+ *=", re.M)
    found = [
        f"{p.name}: {m.group(0)}"
        for p in sorted((ROOT / "workbench" / "cli").glob("*.py"))
        for m in literal.finditer(p.read_text(encoding="utf-8"))
    ]
    assert found == []


# -- the gate without held-out evidence (was reports._certify._gate_without_held_out) --------


def _blocker(code: str, category: str, message: str = "m") -> Blocker:
    return Blocker(code=code, category=category, message=message, waivable=False)  # type: ignore[arg-type]


def _rubric():
    from conftest import RUBRIC

    from workbench.gold import Rubric

    return Rubric.model_validate(RUBRIC)


@pytest.mark.parametrize(
    ("categories", "outcome"),
    [
        (["quality"], "quality_failed"),
        (["quality", "incomplete"], "evaluation_incomplete"),
        (["review"], "review_required"),
        (["review", "quality"], "quality_failed"),
    ],
)
def test_gate_without_evidence_decides_by_the_same_rule(
    categories: list[str], outcome: str
) -> None:
    blockers = [_blocker(f"control_failed_{i}", c) for i, c in enumerate(categories)]
    not_used = NotEvaluated(
        reason="blocking controls failed, so the held-out partition was not used",
        judge="kw@1",
        dataset_sha256="d" * 64,
        partition="held_out",
    )
    gate = evaluate_gate(
        not_used, None, rubric=_rubric(), extra_blockers=blockers, fingerprint="f" * 64
    )
    assert gate.outcome == outcome == outcome_of(categories)
    assert gate.exit_code == exit_code(outcome)
    assert (
        gate.summary
        == f"{outcome.upper()}: blocking controls failed, so the held-out partition was not used"
        f" ({len(blockers)} blocker(s))"
    )
    assert [b.category for b in gate.blockers] == sorted(
        categories, key=["incomplete", "quality", "review"].index
    )
    assert (
        gate.partition,
        gate.judge,
        gate.rubric_version,
        gate.figures,
        gate.waived,
        gate.evaluated_at,
    ) == ("held_out", "kw@1", _rubric().version, [], [], None)


def test_gate_without_evidence_and_without_blockers_fails_closed() -> None:
    # Nothing measured and nothing blocking is never a pass.
    gate = evaluate_gate(
        NotEvaluated(reason="nothing was run", judge="kw@1", dataset_sha256="d" * 64),
        None,
        rubric=_rubric(),
    )
    assert gate.outcome == "evaluation_incomplete" and [b.code for b in gate.blockers] == [
        "missing_results"
    ]
    assert not gate.blockers[0].waivable


# -- each command's exit code is the table's code of the outcome it reports ------------------

SPEC = {
    "name": "kw",
    "version": "1",
    "kind": "ragas-function",
    "labels": ["pass", "fail"],
    "function": "judge_fixtures:keyword_judge",
}
LAX = {"risk": "low", "min_n": 0, "max_false_pass_rate": 1.0, "false_pass_rate_basis": "point"}


def _policy(tmp_path: Path, general: dict, name: str) -> Path:
    path = tmp_path / f"{name}@1.yaml"
    body = {
        "schema_version": 1,
        "name": name,
        "version": "1",
        "owner": "QA lead",
        "rationale": "test limits",
        "slices": {"general": general},
    }
    path.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    return path


def test_commands_exit_with_the_code_of_their_outcome(make_dataset, tmp_path: Path) -> None:
    cases = [
        make_case("d1", "pass", response="A refund is possible after review."),
        make_case("d2", "fail", response="No money back, ever."),
        make_case(
            "d3", "fail", response="Refund everything automatically."
        ),  # the keyword judge's false pass
    ]
    from conftest import RUBRIC

    gold = make_dataset(cases, rubric={**RUBRIC, "slices": {"general": {"risk": "low"}}})
    spec = tmp_path / "kw@1.yaml"
    spec.write_text(yaml.safe_dump(SPEC), encoding="utf-8")
    runner = CliRunner()
    full, partial = tmp_path / "full", tmp_path / "partial"
    ran = runner.invoke(
        main,
        [
            "run",
            "--candidate",
            str(spec),
            "--gold",
            str(gold),
            "--partition",
            "development",
            "--out",
            str(full),
            "--no-cache",
            "--no-progress",
        ],
    )
    assert ran.exit_code == exit_code("complete"), ran.output
    stopped = runner.invoke(
        main,
        [
            "run",
            "--candidate",
            str(spec),
            "--gold",
            str(gold),
            "--partition",
            "development",
            "--out",
            str(partial),
            "--no-cache",
            "--no-progress",
            "--max-cases",
            "1",
        ],
    )
    assert stopped.exit_code == exit_code("incomplete"), stopped.output

    seen: dict[str, int] = {}
    for run_dir, general in (
        (full, LAX),  # would_certify: development results never certify
        (full, {**LAX, "max_false_passes": 0}),  # quality_failed: d3
        (full, {**LAX, "min_n": 100}),  # review_required: too few cases
        (partial, LAX),  # evaluation_incomplete: the run stopped at --max-cases
    ):
        policy = _policy(tmp_path, general, f"p{len(seen)}-{run_dir.name}")
        gate = runner.invoke(
            main,
            [
                "gate",
                "--gold",
                str(gold),
                "--results",
                str(run_dir / "results.jsonl"),
                "--run",
                str(run_dir),
                "--policy",
                str(policy),
                "--partition",
                "development",
                "--json",
            ],
        )
        outcome = json.loads(gate.output)["outcome"]
        assert gate.exit_code == exit_code(outcome), (outcome, gate.output)
        seen[outcome] = gate.exit_code
    assert set(seen) == {*GATE_OUTCOMES, ADVISORY_CLEAR} - {"certified"}
    assert seen[ADVISORY_CLEAR] == 6
    bad = runner.invoke(
        main,
        [
            "gate",
            "--gold",
            str(tmp_path / "nowhere"),
            "--results",
            str(full / "results.jsonl"),
            "--policy",
            str(policy),
        ],
    )
    assert bad.exit_code == exit_code("invalid_input") and "Traceback" not in bad.output
