"""Frozen gold releases and cross-partition duplicates (issue 8 §2).

Before: nothing stopped an adjudicated label from being edited in place after results were
produced, and the same item could sit in development and held-out under two groups.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import approve, canonical_sha256, make_case

from workbench.approval import read_release_log
from workbench.cli import main
from workbench.errors import WorkbenchError
from workbench.gold import RELEASES_FILE, freeze, validate_dataset


def _codes(path: Path) -> list[str]:
    return [p.code for p in validate_dataset(path).errors]


def _rewrite(gold: Path, change) -> None:
    rows = [
        json.loads(line) for line in (gold / "gold.jsonl").read_text().splitlines() if line.strip()
    ]
    rows = change(rows)
    (gold / "gold.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture(autouse=True)
def _approvers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    approve(tmp_path, "alice", "bob", "tester")
    monkeypatch.setenv("WORKBENCH_USER", "tester")


def test_freeze_appends_a_chained_release_and_is_idempotent(make_dataset, monkeypatch) -> None:
    monkeypatch.setenv("WORKBENCH_USER", "alice")
    gold = make_dataset([make_case("a"), make_case("b", "fail")])
    first, created = freeze(gold, note="initial review")
    assert (
        created
        and first.sequence == 1
        and first.approver == "alice"
        and first.kind == "gold"
        and first.release_id == f"rel-1-{first.dataset_sha256[:12]}"
    )
    assert set(first.items) == {"a", "b"} and set(first.fields["a"]) >= {
        "label",
        "response",
        "notes",
        "grading",
    }
    again, created_again = freeze(gold)
    assert not created_again and again == first
    assert len((gold / RELEASES_FILE).read_text().splitlines()) == 1
    # A correction (superseding record) is valid; freezing it chains to the first release.
    _rewrite(
        gold,
        lambda rows: [
            *rows,
            {
                **rows[1],
                "case_id": "b2",
                "supersedes": "b",
                "adjudication": {**rows[1]["adjudication"], "label": "pass"},
            },
        ],
    )
    assert _codes(gold) == []
    second, created = freeze(gold, approver="bob")
    assert (
        created
        and second.sequence == 2
        and second.previous_sha256 == first.sha256
        and second.approver == "bob"
    )
    line = json.loads((gold / RELEASES_FILE).read_text().splitlines()[1])
    assert line["sha256"] == canonical_sha256({k: v for k, v in line.items() if k != "sha256"})
    cli = CliRunner().invoke(main, ["freeze", str(gold), "--json"])
    assert cli.exit_code == 0 and json.loads(cli.output)["created"] is False
    assert "release rel-2-" in CliRunner().invoke(main, ["validate", str(gold)]).output


def test_validate_refuses_in_place_edits_and_deletions_of_frozen_records(make_dataset) -> None:
    gold = make_dataset([make_case("a"), make_case("b", "fail"), make_case("c")])
    freeze(gold)

    def edit(rows):
        rows[0]["adjudication"]["label"] = "fail"
        rows[1]["grading_notes"] = "Something else."
        return [rows[0], rows[1]]  # c deleted

    _rewrite(gold, edit)
    report = validate_dataset(gold)
    by_case = {p.case_id: p for p in report.errors}
    assert sorted(by_case) == ["a", "b", "c"]
    assert (
        by_case["a"].code == "frozen_case_edited"
        and "label changed" in by_case["a"].message
        and by_case["a"].location.endswith(":1")
    )
    assert "supersedes: a" in by_case["a"].fix
    assert by_case["b"].code == "frozen_case_edited" and "notes changed" in by_case["b"].message
    assert by_case["c"].code == "frozen_case_deleted"
    result = CliRunner().invoke(main, ["validate", str(gold)])
    assert (
        result.exit_code == 2
        and "[frozen_case_edited]" in result.output
        and "Traceback" not in result.output
    )
    with pytest.raises(WorkbenchError):
        freeze(gold)  # an edited frozen record cannot be frozen again


def test_reformatting_a_frozen_line_is_not_an_edit(make_dataset) -> None:
    gold = make_dataset([make_case("a"), make_case("b", "fail")])
    freeze(gold)
    rows = [json.loads(line) for line in (gold / "gold.jsonl").read_text().splitlines()]
    (gold / "gold.jsonl").write_text(
        "".join(
            json.dumps(r, indent=None, separators=(", ", ": "), sort_keys=True) + "\n" for r in rows
        )
    )
    assert _codes(gold) == []


def test_an_edited_or_deleted_release_breaks_the_chain(make_dataset) -> None:
    gold = make_dataset([make_case("a"), make_case("b", "fail")])
    freeze(gold)
    _rewrite(gold, lambda rows: [*rows, make_case("c")])
    freeze(gold)
    _rewrite(gold, lambda rows: [*rows, make_case("d")])
    freeze(gold)
    log_path = gold / RELEASES_FILE
    lines = log_path.read_text().splitlines()
    assert read_release_log(gold).problems == ()
    log_path.write_text(lines[0] + "\n" + lines[2] + "\n")  # the middle release deleted
    assert "release_chain_broken" in _codes(gold)
    edited = json.loads(lines[0])
    edited["approver"] = "mallory"
    log_path.write_text("\n".join([json.dumps(edited), *lines[1:]]) + "\n")
    assert "release_chain_broken" in _codes(gold)
    log_path.write_text("not json\n" + "\n".join(lines[1:]) + "\n")
    assert {"release_malformed", "release_chain_broken"} <= set(_codes(gold))
    with pytest.raises(WorkbenchError) as info:
        freeze(gold)
    assert "release_malformed" in {p.code for p in info.value.problems}


def test_exact_and_near_exact_duplicates_across_partitions_are_refused(make_dataset) -> None:
    base = make_case(
        "dev-1", response="A refund is possible after review.", input="Can I get my money back?"
    )
    exact = make_case(
        "held-1",
        partition="held_out",
        response="A refund is possible after review.",
        input="Can I get my money back?",
    )
    near = make_case(
        "cal-1",
        partition="calibration",
        response="a  REFUND is possible\nafter review.",
        input="ＣＡＮ I get my money back?",
    )
    same_partition = make_case(
        "dev-2", response="A refund is possible after review.", input="Can I get my money back?"
    )
    other = make_case(
        "held-2", partition="held_out", response="No refund.", input="Can I get my money back?"
    )
    gold = make_dataset([base, exact, near, same_partition, other])
    problems = [p for p in validate_dataset(gold).errors if p.code == "cross_partition_duplicate"]
    pairs = sorted(
        tuple(sorted((p.case_id, p.message.split("case '")[1].split("'")[0]))) for p in problems
    )
    # every cross-partition pair among dev-1, dev-2, held-1 and cal-1; never dev-1/dev-2, never
    # held-2
    assert pairs == sorted(
        [
            ("dev-1", "held-1"),
            ("cal-1", "dev-1"),
            ("dev-2", "held-1"),
            ("cal-1", "dev-2"),
            ("cal-1", "held-1"),
        ]
    )
    near_problem = next(p for p in problems if p.case_id == "cal-1" and "dev-1" in p.message)
    assert "after normalizing Unicode, case and whitespace" in near_problem.message
    exact_problem = next(p for p in problems if p.case_id == "held-1" and "dev-1" in p.message)
    assert "after normalizing" not in exact_problem.message
    result = CliRunner().invoke(main, ["validate", str(gold)])
    assert result.exit_code == 2 and result.output.count("[cross_partition_duplicate]") == 5


def test_same_group_across_partitions_is_group_leakage_not_a_duplicate_pair(make_dataset) -> None:
    a = make_case("a", group="g", response="same text")
    b = make_case(
        "b", group="g", partition="held_out", response="same text", input="question for a"
    )
    codes = _codes(make_dataset([a, b]))
    assert "group_leakage" in codes and "cross_partition_duplicate" not in codes
