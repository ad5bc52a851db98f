"""Evidence fidelity: the provider's raw answer is kept beside the parsed verdict, and every
result records what the judge actually saw of each judge-visible field (characters in the case,
characters sent, truncation). Networked judges run against the scripted local server only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import make_case
from test_llm_runs import KEY_ENV, SECRET, rows, run, write_spec

from workbench.align import align
from workbench.cli.main import main
from workbench.errors import WorkbenchError
from workbench.gold import load_dataset
from workbench.heldout import describe_leaks, prompt_leaks
from workbench.judges import (
    JudgeInput,
    LLMJudge,
    evidence_seen,
    load_candidate,
    load_spec,
    model_family,
)
from workbench.results import read_columnar, read_results
from workbench.runs import RunOptions, run_candidate_sync
from workbench.testing import FakeLLM, Reply


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)


PROSE = (
    "Sure! Here is my assessment.\n```json\n"
    + json.dumps({"reason": "the notes' concept is present", "value": "pass"})
    + "\n```\nLet me know if you need anything else."
)


def test_raw_answer_with_prose_around_the_json_is_stored_verbatim(
    make_dataset, tmp_path: Path
) -> None:
    gold = make_dataset([make_case("p1", "pass"), make_case("p2", "fail")])
    with FakeLLM(default=Reply(content=PROSE), require_api_key=SECRET) as server:
        spec = write_spec(tmp_path, server.base_url, endpoint={"json_mode": "md_json"})
        summary = run(spec, gold, tmp_path / "out")
    assert summary.verdicts == 2
    for record in rows(tmp_path / "out"):
        assert record["value"] == "pass"
        assert record["reason"] == "the notes' concept is present"
        assert record["raw_response"] == PROSE  # byte for byte, prose and fence included
        assert record["raw_response_source"] == "provider"
        assert SECRET not in json.dumps(record)


def test_an_unparseable_answer_keeps_its_raw_text_and_a_failed_call_records_none(
    make_dataset, tmp_path: Path
) -> None:
    gold = make_dataset([make_case("p1", "pass")])
    prose = "I think it passes, because the response names the manual review step."
    with FakeLLM(default=Reply(content=prose)) as server:
        run(write_spec(tmp_path / "a", server.base_url), gold, tmp_path / "a" / "out")
    with FakeLLM(default=Reply(fault="http_400")) as server:
        run(write_spec(tmp_path / "b", server.base_url), gold, tmp_path / "b" / "out")
    unparsed = rows(tmp_path / "a" / "out")
    assert unparsed and all(r["error"]["kind"] == "unparseable" for r in unparsed)
    assert {(r["raw_response"], r["raw_response_source"]) for r in unparsed} == {
        (prose, "provider")
    }
    (failed,) = rows(tmp_path / "b" / "out")
    assert (failed["raw_response"], failed["raw_response_source"]) == (None, "no_answer")


class CuttingJudge(LLMJudge):
    """A prompt builder that cuts the response to its first 12 characters (as an excerpting
    layer would): the records must show the cut, measured on the request that went out."""

    def _arguments(self, judge_input: JudgeInput) -> dict[str, str]:
        args = super()._arguments(judge_input)
        args["response"] = args["response"][:12]
        return args


LONG = "Refunds after the 30-day window need a manual exception review first."


def _cut_run(make_dataset, tmp_path: Path, server: FakeLLM) -> tuple[Path, Path]:
    gold = make_dataset(
        [
            make_case("long", "pass", response=LONG),
            make_case("short", "pass", response="Refund ok."),
        ]
    )
    spec_path = write_spec(tmp_path, server.base_url)
    spec, where = load_spec(spec_path)
    options = RunOptions(progress=False)
    run_candidate_sync(
        CuttingJudge(spec, where), load_dataset(gold), "development", tmp_path / "out", options
    )
    return gold, tmp_path / "out"


def test_results_record_what_the_judge_saw_of_each_field_and_align_counts_the_cut(
    make_dataset, tmp_path: Path
) -> None:
    with FakeLLM(default=Reply(value="pass", reason="fine")) as server:
        gold, out = _cut_run(make_dataset, tmp_path, server)
    by_case = {r["case_id"]: r for r in rows(out)}
    seen = {f["field"]: f for f in by_case["long"]["evidence_seen"]}
    assert seen["response"] == {
        "field": "response",
        "chars_in_case": len(LONG),
        "chars_sent": 12,
        "status": "truncated",
    }
    notes = "The policy allows late refunds only after manual review."
    assert seen["grading_notes"] == {
        "field": "grading_notes",
        "chars_in_case": len(notes),
        "chars_sent": len(notes),
        "status": "full",
    }
    assert seen["user_input"]["status"] == "full"
    assert seen["reference"]["status"] == seen["retrieved_contexts"]["status"] == "absent"
    short = {f["field"]: f["status"] for f in by_case["short"]["evidence_seen"]}
    assert short["response"] == "full"  # 10 characters: nothing was cut
    # both readers agree: the typed strict reader and the columnar one
    (strict_long,) = [
        x.result for x in read_results(out / "results.jsonl") if x.result.case_id == "long"
    ]
    assert strict_long.evidence_truncated == ["response"]
    table = read_columnar(out / "results.jsonl").table
    assert dict(
        zip(table["case_id"].to_pylist(), table["evidence_truncated"].to_pylist(), strict=True)
    ) == {
        "long": 1,
        "short": 0,
    }
    report = align(gold, out / "results.jsonl", partition="development")
    assert report.evidence_truncated_case_ids == ["long"]
    shown = CliRunner().invoke(main, ["align", "--gold", str(gold), "--results", str(out)])
    assert shown.exit_code == 0, shown.output
    assert "1 case(s) had evidence truncated (long)" in shown.output


def test_an_omitted_field_is_recorded_as_omitted(make_dataset, tmp_path: Path) -> None:
    gold = make_dataset([make_case("c1", "pass")])
    with FakeLLM(default=Reply(value="pass", reason="fine")) as server:
        spec = write_spec(
            tmp_path,
            server.base_url,
            prompt="Q: {user_input}\nA: {response}",
            omitted_fields=["grading_notes"],
        )
        run(spec, gold, tmp_path / "out")
    (record,) = rows(tmp_path / "out")
    seen = {f["field"]: (f["chars_sent"], f["status"]) for f in record["evidence_seen"]}
    assert seen["grading_notes"] == (0, "omitted")
    assert record["raw_response_source"] == "provider"


def test_measurement_finds_the_longest_sent_start_of_each_passage() -> None:
    judge_input = JudgeInput(
        user_input="q", response="abcdefghij", retrieved_contexts=["first passage", "second one"]
    )
    sent = {"messages": [{"content": "q | abcdef | [1] first passage [2] second"}]}
    seen = {
        s.field: (s.chars_in_case, s.chars_sent, s.status) for s in evidence_seen(judge_input, sent)
    }
    assert seen["response"] == (10, 6, "truncated")
    assert seen["retrieved_contexts"] == (23, 13 + 6, "truncated")
    assert seen["user_input"] == (1, 1, "full")
    assert seen["grading_notes"] == (0, 0, "absent")


def test_run_refuses_a_prompt_that_omits_evidence_the_cases_carry(
    make_dataset, tmp_path: Path
) -> None:
    """Old main ran a prompt without {grading_notes} on cases that carry them, with no word."""
    gold = make_dataset([make_case("c1", "pass"), make_case("c2", "fail", reference="Ref.")])
    with FakeLLM(default=Reply(value="pass", reason="fine")) as server:
        spec = write_spec(tmp_path, server.base_url, prompt="Judge {response}.")
        args = ["run", "--candidate", str(spec), "--gold", str(gold), "--partition", "development"]
        refused = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "out")])
        assert server.call_count == 0
    assert refused.exit_code == 2, refused.output
    assert "Traceback" not in refused.output
    for name, count in (("grading_notes", 2), ("reference", 1)):
        assert (
            f"the prompt of llm@1 never shows {{{name}}}, which {count} of the 2 cases"
            in refused.output
        )
        assert f"omitted_fields: [{name}]" in refused.output
    assert not (tmp_path / "out" / "results.jsonl").exists()
    with FakeLLM(default=Reply(value="pass", reason="fine")) as server:
        declared = write_spec(
            tmp_path / "ok",
            server.base_url,
            prompt="Judge {response} against {reference}.",
            omitted_fields=["grading_notes"],
        )
        args[2] = str(declared)
        ran = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "ok" / "out")])
    assert ran.exit_code == 0, ran.output


def test_omitted_fields_must_name_fields_the_prompt_leaves_out(tmp_path: Path) -> None:
    spec = write_spec(
        tmp_path,
        "http://127.0.0.1:9/v1",
        prompt="{response} {grading_notes}",
        omitted_fields=["grading_notes", "adjudication"],
    )
    with pytest.raises(WorkbenchError) as caught:
        load_candidate(spec)
    codes = {p.code for p in caught.value.problems}
    assert codes == {"omitted_fields_unknown", "omitted_fields_shown"}


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("openai/gpt-4o-mini", "gpt-4o", True),
        ("gpt-4o-2024-08-06", "gpt-4o-mini", True),
        ("Qwen/Qwen2.5-7B-Instruct", "qwen2.5-72b", True),
        ("llama3.1:8b", "meta/llama3.1-70b-instruct", True),
        ("support-bot-v3.1", "support-bot", True),
        ("gpt-4o", "gpt-4", False),
        ("qwen2.5-7b", "qwen2-7b", False),
        ("claude-3-5-sonnet-20241022", "gpt-4o", False),
    ],
)
def test_model_family_strips_provider_size_date_and_tuning(a: str, b: str, same: bool) -> None:
    assert (model_family(a) == model_family(b)) is same


def test_run_warns_of_self_preference_and_of_held_out_text_in_the_prompt(
    make_dataset, tmp_path: Path
) -> None:
    """Old main ran both without a word."""
    secret_answer = "Refunds after thirty days go through the manual exception review desk."
    cases = [
        make_case("d1", "pass", metadata={"generator": "openai/gpt-4o-2024-08-06"}),
        make_case("d2", "pass", metadata={"generator": "claude-3-5-sonnet"}),
        make_case("h1", "pass", partition="held_out", response=secret_answer),
    ]
    gold = make_dataset(cases)
    prompt = (
        "Example of a good answer:\n" + secret_answer.replace(" ", "\n  ") + "\n\n"
        "Notes: {grading_notes}\nQuestion: {user_input}\nResponse: {response}"
    )
    with FakeLLM(default=Reply(value="pass", reason="fine")) as server:
        spec = write_spec(tmp_path, server.base_url, model="gpt-4o-mini", prompt=prompt)
        args = ["run", "--candidate", str(spec), "--gold", str(gold), "--partition", "development"]
        ran = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "out")])
    assert ran.exit_code == 0, ran.output
    assert (
        "warning: self-preference: the judge model gpt-4o-mini is of the family 'gpt-4o', like"
        " the model that generated 1 of the 2 responses judged" in ran.output
    )
    assert "openai/gpt-4o-2024-08-06 (1)" in ran.output
    assert "warning: prompt leakage: the prompt template holds text of 1 held-out case(s)" in (
        ran.output
    )
    assert "h1: response" in ran.output
    assert secret_answer not in ran.output  # the warning names the case, never its text


def test_leak_detection_finds_whole_held_out_texts_only() -> None:
    class Case:
        def __init__(self, case_id: str, response: str, reference: str | None = None) -> None:
            self.case_id, self.input, self.response, self.reference = (
                case_id,
                "an unrelated question",
                response,
                reference,
            )

    whole = "The manual exception review applies to every late refund request."  # 67
    part = "x" * 30 + "Account recovery needs the backup code and a verified email" + "y" * 30
    run = "Account recovery needs the backup code and a verified email"  # a fragment of part
    short = "Refund in five days."  # under 40 characters: never a leak
    reference = "A refund after thirty days needs a manual exception review."
    prompt = f"Rules.\n{whole}\nAlso: {run}. And {short}\n{reference}"
    cases = [
        Case("a", whole),
        Case("b", part),  # shares 59 characters, not the whole text: boilerplate, not a leak
        Case("c", short),
        Case("d", "nothing shared " * 5, reference=reference),
    ]
    leaks = prompt_leaks(prompt.replace(" ", " \u200b\n "), cases)  # spacing, format chars
    assert [(k.case_id, k.fields) for k in leaks] == [("a", ("response",)), ("d", ("reference",))]
    assert describe_leaks(leaks) == "2 held-out case(s) (a: response; d: reference)"


@pytest.mark.notebook
def test_certification_routes_a_leaking_prompt_to_review_and_warns_of_self_preference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A held-out response pasted into the prompt as an example: old main certified it without a
    word. Now the lineage records it, the one gate routes it to review (``prompt_holds_held_out``,
    recomputed by verify), and a judge model of the generator's family is a warning row."""
    import shutil

    import yaml

    from workbench.demo.fake_llm import respond
    from workbench.reports import certify, verify_report

    root = Path(__file__).resolve().parents[1]
    gold = tmp_path / "gold"
    shutil.copytree(root / "data" / "demo", gold)
    leaked = load_dataset(gold).partition("held_out")[0]
    prompt = (root / "data" / "candidates" / "prompts" / "support-llm-judge@1.md").read_text()
    monkeypatch.setenv("DEMO_LLM_API_KEY", "sk-cert-leak-test-key")
    with FakeLLM(responder=respond) as server:
        spec = yaml.safe_load(
            (root / "data" / "candidates" / "support-llm-judge@1.yaml").read_text()
        )
        spec["endpoint"]["base_url"] = server.base_url
        spec["model"] = "support-bot-v5"  # the demo responses' generators are support-bot-v3/v4
        candidates = tmp_path / "candidates"
        (candidates / "prompts").mkdir(parents=True)
        (candidates / "prompts" / "support-llm-judge@1.md").write_text(
            prompt + "\n\nAn example of a good answer:\n" + leaked.response + "\n"
        )
        (candidates / "support-llm-judge@1.yaml").write_text(yaml.safe_dump(spec))
        result = certify(
            candidates / "support-llm-judge@1.yaml",
            root / "data" / "policies" / "support-release@1.yaml",
            gold,
            reports_root=tmp_path / "reports",
        )
    lineage = json.loads((result.report_dir / "lineage.json").read_text())
    leak = next(r for r in lineage if r.get("code") == "prompt_holds_held_out")
    assert (leak["ok"], leak["actual"]) == (False, "1 held-out cases (response 1)")
    assert leaked.case_id not in json.dumps(lineage)  # the lineage is shared: counts only
    preference = next(r for r in lineage if r.get("warning"))
    assert not preference["ok"] and "support-bot" in preference["actual"]
    gate = json.loads((result.report_dir / "gate.json").read_text())
    codes = {b["code"]: b for b in gate["blockers"]}
    assert codes["prompt_holds_held_out"]["category"] == "review"
    assert codes["prompt_holds_held_out"]["waivable"] is True
    assert "lineage_failed" not in codes  # a review finding, not a broken lineage
    assert result.outcome in {"review_required", "quality_failed"}
    assert verify_report(result.report_dir) == []
    html = (result.report_dir / "report.html").read_text()
    assert "judge prompt holds no held-out case text" in html and "WARNING" in html


def test_deterministic_and_imported_kinds_record_that_there_is_no_raw_answer(
    make_dataset, tmp_path: Path
) -> None:
    """Nothing is invented: a function judge made no model call, an import carries no text."""
    import yaml
    from conftest import make_result, write_results
    from lineage_support import stamped

    cases = [make_case("a", "pass", response="A refund is possible."), make_case("b", "fail")]
    gold = make_dataset(cases)
    source = write_results(
        tmp_path / "external.jsonl", stamped([make_result(c, "pass") for c in cases], gold)
    )
    base = {"version": "1", "labels": ["pass", "fail"]}
    specs = {
        "no_model_call": {"name": "kw", "kind": "ragas-function"}
        | {"function": "judge_fixtures:keyword_judge"},
        "imported": {"name": "ext", "kind": "imported", "results": source.name},
    }
    for source_kind, fields in specs.items():
        spec = tmp_path / f"{fields['name']}@1.yaml"
        spec.write_text(yaml.safe_dump(base | fields))
        out = tmp_path / source_kind
        run_candidate_sync(
            load_candidate(spec), load_dataset(gold), "development", out, RunOptions(progress=False)
        )
        records = rows(out)
        assert len(records) == 2
        assert {(r["raw_response"], r["raw_response_source"]) for r in records} == {
            (None, source_kind)
        }
    function_seen = {
        f["field"]: f["status"] for f in rows(tmp_path / "no_model_call")[0]["evidence_seen"]
    }
    assert function_seen["response"] == function_seen["grading_notes"] == "full"
    assert function_seen["reference"] == "absent"


def test_the_case_pane_shows_the_raw_answer_escaped_and_the_cut_evidence(
    make_dataset, tmp_path: Path
) -> None:
    from workbench.review import review_table
    from workbench.ui import case_html

    with FakeLLM(default=Reply(content=PROSE.replace("Sure!", "<b>Sure!</b>"))) as server:
        gold, out = _cut_run(make_dataset, tmp_path, server)
    table = review_table(gold, out, partition="development")
    position = table.frame.index[table.frame["case_id"] == "long"][0]
    row = table.row(int(position))
    assert (
        row["raw_response"].startswith("<b>Sure!</b>") and row["raw_response_source"] == "provider"
    )
    html = case_html(row)
    assert "raw answer (the endpoint's text, before parsing)" in html
    assert "&lt;b&gt;Sure!&lt;/b&gt;" in html and "<b>Sure!</b>" not in html  # escaped
    assert f"response 12 of {len(LONG)} characters sent" in html


def test_certify_refuses_a_prompt_without_the_notes_before_the_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    import yaml

    from workbench.heldout import ledger_path_for

    root = Path(__file__).resolve().parents[1]
    gold = tmp_path / "gold"
    shutil.copytree(root / "data" / "demo", gold)
    spec = yaml.safe_load((root / "data" / "candidates" / "support-llm-judge@1.yaml").read_text())
    spec |= {"prompt": "Question: {user_input}\nResponse: {response}", "prompt_file": None}
    spec["endpoint"]["base_url"] = "http://127.0.0.1:9/v1"
    monkeypatch.setenv(spec["endpoint"]["api_key_env"], "sk-unused-never-called")
    path = tmp_path / "support-llm-judge@1.yaml"
    path.write_text(yaml.safe_dump(spec))
    ledger = ledger_path_for(gold)
    before = ledger.read_bytes() if ledger.exists() else None
    args = ["certify", "--candidate", str(path), "--gold", str(gold)]
    policy = str(root / "data" / "policies" / "support-release@1.yaml")
    refused = CliRunner().invoke(
        main, [*args, "--policy", policy, "--reports", str(tmp_path / "r")]
    )
    assert refused.exit_code == 2, refused.output
    assert "prompt_omits_evidence" in refused.output and "{grading_notes}" in refused.output
    assert "Traceback" not in refused.output and not (tmp_path / "r").exists()
    assert (ledger.read_bytes() if ledger.exists() else None) == before
