"""One status vocabulary: the slice chart, the slice table and the gate say the same thing about
every slice (issue 29, point 4).

Found by a user: the slice chart coloured ``refund_policy`` "bound too wide" (review) where
``workbench gate`` said ``false_passes_exceeded`` (a quality failure): the chart compared the
figures with the limits on its own, and knew nothing of the false-pass count limit. Each surface
now reads a slice's status from the gate's blockers for that slice (and, before a gate is
applied, from the gate's own per-slice checks).

The synthetic development gold has one slice per outcome:

* ``refund_policy``: 2 false passes of 10 human fails, above its count limit of 1, the observed
  rate 20% within its 30% rate limit but its upper 95% bound (51%) above it: the user's case,
  a quality failure (``false_passes_exceeded``);
* ``billing``: no error, within every limit: ``pass``;
* ``tone``: no false pass of 5 human fails, whose upper bound (43%) is above its 10% limit:
  ``review`` (``false_pass_rate_unproven``);
* ``shipping``: one case without a result: ``incomplete`` (``missing_results``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from conftest import RUBRIC, make_case, make_result, result_lines, write_results
from lineage_support import stamped

from workbench.align import alignment_report, join_results
from workbench.cli.gate import gate as gate_cmd
from workbench.gold import load_dataset
from workbench.policy import Policy, evaluate_gate
from workbench.reports import slice_error_chart, slice_table
from workbench.reports._charts import STATUS_COLORS, slice_error_data

SLICES = {
    "refund_policy": [("fail", "pass")] * 2 + [("fail", "fail")] * 8 + [("pass", "pass")] * 5,
    "billing": [("fail", "fail")] * 6 + [("pass", "pass")] * 4,
    "tone": [("fail", "fail")] * 5 + [("pass", "pass")] * 5,
    "shipping": [("fail", "fail")] * 5 + [("pass", "pass")] * 3 + [("pass", None)],
}
EXPECTED = {"refund_policy": "fail", "billing": "pass", "tone": "review", "shipping": "incomplete"}
CATEGORY = {"quality": "fail", "incomplete": "incomplete", "review": "review"}
POLICY: dict[str, Any] = {
    "schema_version": 1,
    "name": "status-vocabulary",
    "version": "1",
    "owner": "QA lead",
    "rationale": "One limit of each kind, written before results.",
    "rubric_version": RUBRIC["version"],
    "min_n_per_slice": 5,
    "slices": {
        "refund_policy": {
            "risk": "medium",
            "max_false_passes": 1,
            "max_false_pass_rate": 0.3,
            "false_pass_rate_basis": "upper_95",
        },
        "billing": {"risk": "low", "max_false_pass_rate": 0.5, "false_pass_rate_basis": "point"},
        "tone": {"risk": "low", "max_false_pass_rate": 0.1, "false_pass_rate_basis": "upper_95"},
        "shipping": {"risk": "low", "max_false_pass_rate": 0.5, "false_pass_rate_basis": "point"},
    },
}


@pytest.fixture
def world(make_dataset, tmp_path: Path) -> dict[str, Any]:
    """The gold, the results file, the policy file, the alignment and the gate."""
    rubric = {
        **RUBRIC,
        "slices": {name: {"risk": spec["risk"]} for name, spec in POLICY["slices"].items()},
    }
    cases, rows = [], []
    for name, items in SLICES.items():
        for i, (human, judge) in enumerate(items):
            case = make_case(f"{name[:4]}-{i:02d}", human, slice=name)
            cases.append(case)
            if judge is not None:
                rows.append(make_result(case, judge))
    gold = make_dataset(cases, rubric=rubric)
    dataset = load_dataset(gold)
    join = join_results(dataset, result_lines(rows), partition="development")
    report = alignment_report(join)
    policy = Policy.model_validate(POLICY)
    policy_path = tmp_path / "status-vocabulary@1.yaml"
    policy_path.write_text(yaml.safe_dump(POLICY, sort_keys=False), encoding="utf-8")
    return {
        "gold": gold,
        "results": write_results(tmp_path / "results.jsonl", stamped(rows, gold)),
        "policy_path": policy_path,
        "policy": policy,
        "report": report,
        "gate": evaluate_gate(report, policy, rubric=dataset.rubric, join=join),
    }


def _gate_statuses(gate: Any) -> dict[str, str]:
    """Each slice's worst blocker category, read from the gate's blockers (by slice, or named in
    a whole-evaluation blocker's ``missing_by_slice``)."""
    out = {}
    for name in SLICES:
        categories = {
            b.category
            for b in gate.blockers
            if b.slice == name or name in (b.evidence.get("missing_by_slice") or {})
        }
        out[name] = next((CATEGORY[c] for c in CATEGORY if c in categories), "pass")
    return out


def _chart_statuses(data: Any) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for label, status in zip(data["slice"], data["status"], strict=True):
        out.setdefault(str(label).split(" (")[0], set()).add(str(status))
    return out


def test_the_gate_fails_the_users_slice_for_false_passes_and_says_each_other_outcome(
    world: dict[str, Any],
) -> None:
    gate = world["gate"]
    assert gate.outcome == "evaluation_incomplete"  # shipping's missing result comes first
    refund = {b.code: b.category for b in gate.blockers if b.slice == "refund_policy"}
    assert refund["false_passes_exceeded"] == "quality"
    assert refund["false_pass_rate_unproven"] == "review"  # the "bound too wide" part
    tone = {b.code for b in gate.blockers if b.slice == "tone"}
    assert tone == {"false_pass_rate_unproven"}
    assert _gate_statuses(gate) == EXPECTED
    result = CliRunner().invoke(
        gate_cmd,
        [
            "--gold",
            str(world["gold"]),
            "--results",
            str(world["results"]),
            "--policy",
            str(world["policy_path"]),
            "--partition",
            "development",
            "--json",
        ],
    )
    assert result.exit_code == 3, result.output  # evaluation_incomplete
    cli = json.loads(result.output)
    assert cli["outcome"] == "evaluation_incomplete"
    assert {(b["slice"], b["code"]) for b in cli["blockers"]} >= {
        ("refund_policy", "false_passes_exceeded"),
        ("tone", "false_pass_rate_unproven"),
        (None, "missing_results"),
    }


@pytest.mark.parametrize("gated", [False, True], ids=["preview", "gated"])
def test_the_slice_chart_shows_each_slice_with_the_gates_status(
    world: dict[str, Any], gated: bool
) -> None:
    gate = world["gate"] if gated else None
    data = slice_error_data(world["report"], world["policy"], gate)
    statuses = _chart_statuses(data)
    assert statuses == {name: {status} for name, status in EXPECTED.items()}, statuses
    assert statuses == {name: {s} for name, s in _gate_statuses(world["gate"]).items()}
    spec = slice_error_chart(world["report"], world["policy"], gate).to_dict()
    text = json.dumps(spec)
    assert "bound too wide" not in text and "over limit" not in text
    for panel in spec["hconcat"]:
        rows = spec["datasets"][panel["data"]["name"]]
        assert _chart_statuses(
            {"slice": [r["slice"] for r in rows], "status": [r["status"] for r in rows]}
        ) == {name: {status} for name, status in EXPECTED.items()}
        scale = panel["layer"][0]["encoding"]["color"]["scale"]
        colours = dict(zip(scale["domain"], scale["range"], strict=True))
        assert colours["fail"] == STATUS_COLORS["fail"] == "#cf222e"  # refund_policy drawn red
        assert set(colours) == set(EXPECTED.values())


@pytest.mark.parametrize("gated", [False, True], ids=["preview", "gated"])
def test_the_slice_table_says_the_same_as_the_gate_and_the_chart(
    world: dict[str, Any], gated: bool
) -> None:
    gate = world["gate"] if gated else None
    frame = slice_table(world["report"], world["policy"], gate).data
    assert dict(zip(frame["slice"], frame["result"], strict=True)) == EXPECTED
