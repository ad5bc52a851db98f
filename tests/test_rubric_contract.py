"""The rubric as a full judgment contract (issue 30): unit of judgment, allowed evidence, label
boundaries, precedence, ambiguity rule, error costs per slice and use boundary are rubric fields;
`validate --strict` refuses a rubric without any of them, every gap at once; the reviewer's
`annotate next` view and the certification report show them (escaped)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from conftest import RUBRIC, make_case
from test_annotation import _reviewers

from workbench.annotation import Annotations
from workbench.cli import main
from workbench.errors import WorkbenchError
from workbench.gold import (
    CONTRACT_FIELDS,
    EVIDENCE_FIELDS,
    REVIEWER_ONLY_EVIDENCE,
    load_rubric,
    validate_dataset,
)
from workbench.judges import JUDGE_VISIBLE_FIELDS
from workbench.reports import rubric_contract_html

ROOT = Path(__file__).resolve().parents[1]

CONTRACT: dict[str, Any] = {
    "unit": "one response to one customer question",
    "allowed_evidence": ["input", "response", "grading_notes"],
    "boundaries": {
        "pass": "states every concept the grading notes require, no prohibited claim",
        "fail": "omits a required concept or makes a prohibited claim",
        "review_required": "the grading notes are silent on what the response claims",
    },
    "precedence": ["fail", "review_required", "pass"],
    "ambiguity": {
        "when": "the notes neither require nor prohibit the claim",
        "action": "label",
        "label": "review_required",
    },
    "error_costs": {
        "billing": {"false_pass": 10, "false_fail": 1, "abstention": 0.5, "why": "money"},
        "general": {"false_pass": 2, "false_fail": 1},
        "empty": {"false_pass": 3, "false_fail": 1},
    },
    "use_boundary": "never the only check before a refund is promised",
}
COMPLETE = {**RUBRIC, **CONTRACT}


def _reviewed(case_id: str) -> dict[str, Any]:
    """A case whose reviews give confidence, rationale and a cited span (strict-complete)."""
    span = {"field": "response", "start": 0, "end": 8, "text": "response"}
    reviews = [
        {"reviewer": who, "label": "pass", "confidence": "high", "rationale": "ok", "spans": [span]}
        for who in ("rev-a", "rev-b")
    ]
    return make_case(case_id, reviews=reviews)


def _rubric_problems(root: Path) -> dict[str, list[str]]:
    """``validate --strict``'s rubric problems: code -> messages."""
    out: dict[str, list[str]] = {}
    for p in validate_dataset(root, strict=True).problems:
        if p.code.startswith("rubric_"):
            out.setdefault(p.code, []).append(p.message)
    return out


def test_a_complete_contract_passes_strict_and_the_same_gold_without_it_is_refused(
    make_dataset,
) -> None:
    _reviewers("rev-a", "rev-b", "adj-1")
    run = CliRunner().invoke
    complete = make_dataset([_reviewed("a")], rubric=COMPLETE)
    passed = run(main, ["validate", "--strict", str(complete)])
    assert passed.exit_code == 0, passed.output
    bare = make_dataset([_reviewed("a")], rubric={**RUBRIC, "criterion": ""})
    assert run(main, ["validate", str(bare)]).exit_code == 0  # existing rubrics keep loading
    refused = run(main, ["validate", "--strict", str(bare)])
    assert refused.exit_code == 2
    # every gap at once, each naming its field, where (the rubric file) and how to fix
    for field in ("criterion", *CONTRACT_FIELDS):
        assert f"{field}: " in refused.output, field
    assert refused.output.count("[rubric_contract_incomplete]") == len(CONTRACT_FIELDS)
    assert "[rubric_no_criterion]" in refused.output
    assert (
        str(bare / "rubric.yaml") in refused.output and "docs/formats.md#rubric" in refused.output
    )
    assert "Traceback" not in refused.output


@pytest.mark.parametrize("field", CONTRACT_FIELDS)
def test_each_missing_field_is_named_alone(make_dataset, field: str) -> None:
    root = make_dataset([_reviewed("a")], rubric={k: v for k, v in COMPLETE.items() if k != field})
    problems = _rubric_problems(root)
    assert list(problems) == ["rubric_contract_incomplete"]
    assert len(problems["rubric_contract_incomplete"]) == 1
    assert problems["rubric_contract_incomplete"][0].startswith(f"{field}: ")


def test_partial_boundaries_and_costs_name_the_labels_and_slices_left_out(make_dataset) -> None:
    rubric = {
        **COMPLETE,
        "boundaries": {"pass": "x", "fail": "  "},  # blank is not a boundary
        "error_costs": {"billing": {"false_pass": 2, "false_fail": 1}},
    }
    messages = _rubric_problems(make_dataset([_reviewed("a")], rubric=rubric))
    assert messages == {
        "rubric_contract_incomplete": [
            "boundaries: labels ['fail', 'review_required'] have no observable boundary",
            "error_costs: slices ['general', 'empty'] have no error costs",
        ]
    }


def test_unknown_evidence_fields_and_labels_are_refused_listing_valid_names(tmp_path) -> None:
    bad = {
        **COMPLETE,
        "allowed_evidence": ["input", "response", "customer_tier"],
        "precedence": ["fail", "maybe"],
        "ambiguity": {"when": "unclear", "action": "label", "label": "unsure"},
        "error_costs": {"nowhere": {"false_pass": 1, "false_fail": 1}},
        "boundaries": {"pass": "x", "great": "y"},
    }
    path = tmp_path / "rubric.yaml"
    path.write_text(yaml.safe_dump(bad, sort_keys=False))
    with pytest.raises(WorkbenchError) as refused:
        load_rubric(path)  # a normal load, not only --strict
    text = "\n".join(p.format() for p in refused.value.problems)
    assert {p.code for p in refused.value.problems} == {"rubric_invalid"}
    assert "allowed_evidence names unknown case field(s) ['customer_tier']" in text
    assert "use names among: input, response, grading_notes, reference, contexts, evidence" in text
    assert "precedence names ['maybe']" in text and "boundaries names ['great']" in text
    assert "ambiguity.label 'unsure'" in text and "error_costs names ['nowhere']" in text
    assert len(refused.value.problems) == 5


def test_a_critical_slice_cannot_cost_a_false_pass_less_than_a_false_fail(tmp_path) -> None:
    costs = {**CONTRACT["error_costs"], "billing": {"false_pass": 1, "false_fail": 4}}
    path = tmp_path / "rubric.yaml"
    path.write_text(yaml.safe_dump({**COMPLETE, "error_costs": costs}))
    with pytest.raises(WorkbenchError) as refused:
        load_rubric(path)
    [problem] = refused.value.problems
    assert "'billing' is critical" in problem.message and "cost 1 is below" in problem.message
    path.write_text(
        yaml.safe_dump(
            {**COMPLETE, "error_costs": {**costs, "billing": {"false_pass": 4, "false_fail": 4}}}
        )
    )
    assert load_rubric(path).error_costs["billing"].false_pass == 4  # equal is allowed


def test_allowed_evidence_the_judge_is_never_shown_is_refused_under_strict(make_dataset) -> None:
    rubric = {**COMPLETE, "allowed_evidence": ["input", "response", "evidence"]}
    messages = _rubric_problems(make_dataset([_reviewed("a")], rubric=rubric))
    [message] = messages["rubric_contract_incomplete"]
    assert message.startswith("allowed_evidence: names ['evidence']")
    assert "never shown" in message


def test_the_evidence_vocabulary_is_what_the_judge_request_is_built_from() -> None:
    """Every gold field a judge is shown is nameable in allowed_evidence, and the only other name
    is reviewer-only: the rubric's list and the request builder's allow-list cannot drift."""
    assert set(EVIDENCE_FIELDS) == set(JUDGE_VISIBLE_FIELDS) | REVIEWER_ONLY_EVIDENCE
    assert not REVIEWER_ONLY_EVIDENCE & set(JUDGE_VISIBLE_FIELDS)
    rubric = load_rubric(_write(COMPLETE))
    assert rubric.allowed_evidence == ["input", "response", "grading_notes"]


def _write(data: dict[str, Any]) -> Path:
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="rubric-contract-")) / "rubric.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_the_demo_rubric_still_loads_and_strict_names_its_gaps() -> None:
    """The demo's rubric is frozen into its release hash: it is left as is; it loads, and the
    strict check names what its contract lacks (criterion excepted: it has one)."""
    rubric = load_rubric(ROOT / "data" / "demo" / "rubric.yaml")
    assert sorted(field for field, _, _ in rubric.contract_gaps()) == sorted(CONTRACT_FIELDS)


def test_init_writes_a_rubric_whose_contract_only_lacks_the_criterion(tmp_path) -> None:
    """`workbench init` fills the contract with a pass/fail starting point; the criterion stays
    blank on purpose (a person writes it; --strict refuses it until then)."""
    result = CliRunner().invoke(main, ["init", str(tmp_path / "p"), "--name", "faq"])
    assert result.exit_code == 0, result.output
    raw = yaml.safe_load((tmp_path / "p" / "data" / "faq" / "rubric.yaml").read_text())
    raw["slices"]["general"]["risk"] = "low"  # a person sets the risk (refused while unset)
    path = tmp_path / "rubric.yaml"
    path.write_text(yaml.safe_dump(raw))
    assert [field for field, _, _ in load_rubric(path).contract_gaps()] == ["criterion"]


def test_a_new_import_keeps_the_contract_for_the_labels_and_slices_it_keeps() -> None:
    from workbench.importers.table._build import merge_previous

    draft = {
        "criterion": "",
        "labels": ["pass", "fail"],
        "slices": {"billing": {"risk": "unset", "description": ""}},
    }
    merged = merge_previous(draft, COMPLETE, criterion_given=False)
    assert merged["unit"] == CONTRACT["unit"] and merged["use_boundary"] == CONTRACT["use_boundary"]
    assert merged["allowed_evidence"] == CONTRACT["allowed_evidence"]
    # review_required is not a label of the new draft: its boundary, rank and rule go
    assert set(merged["boundaries"]) == {"pass", "fail"}
    assert merged["precedence"] == ["fail", "pass"] and "ambiguity" not in merged
    # slices the draft keeps: billing (in the data) and the declared ones with a risk
    assert set(merged["error_costs"]) == set(merged["slices"]) & set(CONTRACT["error_costs"])


def test_the_reviewer_sees_the_boundaries_precedence_and_ambiguity_rule(make_dataset) -> None:
    _reviewers("ann", "bo")
    gold = make_dataset([], rubric=COMPLETE)
    case = make_case("c0")
    for key in ("reviews", "adjudication", "rubric_version", "response_hash"):
        case.pop(key)
    Annotations(gold).queue([case], ["ann", "bo"], assigned_by="lead")
    shown = CliRunner().invoke(main, ["annotate", "next", "--gold", str(gold), "--reviewer", "ann"])
    assert shown.exit_code == 0, shown.output
    for label, boundary in CONTRACT["boundaries"].items():
        assert f"  {label}: {boundary}\n" in shown.output
    assert "precedence: fail > review_required > pass" in shown.output
    assert (
        "ambiguous: when the notes neither require nor prohibit the claim: label it"
        " review_required" in shown.output
    )
    as_json = CliRunner().invoke(
        main, ["annotate", "next", "--gold", str(gold), "--reviewer", "bo", "--json"]
    )
    blinded = json.loads(as_json.output)
    assert blinded["boundaries"] == CONTRACT["boundaries"]
    assert blinded["ambiguity"].endswith("label it review_required")


def test_the_report_shows_the_contract_escaped() -> None:
    hostile = {**COMPLETE, "use_boundary": "<script>alert('x')</script> never alone"}
    html = rubric_contract_html(load_rubric(_write(hostile)))
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "one response to one customer question" in html  # unit
    assert "fail &gt; review_required &gt; pass" in html  # precedence
    assert "false pass 10, false fail 1, abstention 0.5 (money)" in html  # error costs
    assert "error costs: billing (critical)" in html
    assert "policy&#39;s per-slice limits above decide the outcome" in html
    bare = rubric_contract_html(load_rubric(ROOT / "data" / "demo" / "rubric.yaml"))
    # the demo states its criterion; unit, evidence, use boundary, precedence and ambiguity, its
    # three labels' boundaries and its seven slices' costs are not declared
    assert bare.count("(not declared: validate --strict refuses this rubric)") == 5 + 3 + 7
    # the certification notebook shows it in its lineage section
    notebook = (ROOT / "notebooks" / "03_certify.ipynb").read_text()
    assert "display(HTML(rubric_contract_html(cert.dataset.rubric)))" in notebook
