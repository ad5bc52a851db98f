"""LLMBar importer and the pairwise analysis, checked against every upstream statistics.json.

The real-data tests read ``../shared/datasets/llmbar`` (relative to the project root, or
``$WORKBENCH_DATASETS_DIR/llmbar``) and skip only when it is absent, never under
``WORKBENCH_REQUIRE_DATASETS=1`` (CI); tests of bad input and evaluator errors use small synthetic
files and always run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from _datasets import dataset_path, missing_reason, needs_datasets
from click.testing import CliRunner

from workbench.cli.importers import import_group
from workbench.cli.pairwise import pairwise as pairwise_cmd
from workbench.errors import WorkbenchError
from workbench.gold import GoldDataset, load_dataset, validate_dataset
from workbench.importers import available_importers, import_llmbar, run_importer
from workbench.importers.llmbar import (
    AUTHORS,
    STATISTIC_KEYS,
    llmbar_judge_results,
    parse_statistic,
    read_verdict,
    subset_name,
    write_judge_results,
)
from workbench.importers.pandalm import render_pair
from workbench.pairwise import (
    DENOMINATORS,
    PairwiseReport,
    format_pairwise,
    pairwise_report,
    upstream_figures,
)
from workbench.results import read_results
from workbench.stats import wilson_rate

LLMBAR = dataset_path("llmbar")
SUBSETS = LLMBAR / "Dataset" / "LLMBar"
RUNS: list[Path] = (
    sorted(p.parent for p in LLMBAR.rglob("statistics.json")) if LLMBAR.is_dir() else []
)
_ABSENT = pytest.mark.skipif(not LLMBAR.is_dir(), reason=missing_reason(LLMBAR))


def needs_llmbar(test: Any) -> Any:
    """A test that reads LLMBar: marked ``datasets`` (counted; it may not skip in CI) and skipped
    when absent.
    """
    return needs_datasets(_ABSENT(test))


def _run_id(run: Path) -> str:
    return str(run.relative_to(SUBSETS)).replace("/evaluators/", ":")


def _subset_of(run: Path) -> Path:
    return run.parent.parent.parent


@pytest.fixture(scope="session")
def subset_gold(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Gold of each subset, imported and loaded once: ``subset_dir -> (out_dir, dataset)``."""
    cache: dict[Path, tuple[Path, GoldDataset]] = {}

    def get(subset_dir: Path) -> tuple[Path, GoldDataset]:
        if subset_dir not in cache:
            out = tmp_path_factory.mktemp("llmbar-gold")
            import_llmbar(subset_dir, out)
            cache[subset_dir] = (out, load_dataset(out))
        return cache[subset_dir]

    return get


@pytest.fixture(scope="session")
def imported_run(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Subset + evaluator imported once per run: ``run_dir -> (out_dir, summary)``."""
    cache: dict[Path, tuple[Path, Any]] = {}

    def get(run: Path) -> tuple[Path, Any]:
        if run not in cache:
            out = tmp_path_factory.mktemp("llmbar-run")
            cache[run] = (out, import_llmbar(_subset_of(run), out, evaluator=run))
        return cache[run]

    return get


# --- every upstream statistics.json ------------------------------------------------------


@needs_llmbar
def test_all_45_runs_are_found() -> None:
    assert len(RUNS) == 45
    assert {subset_name(_subset_of(r)) for r in RUNS} == {
        "Natural",
        "Adversarial/GPTInst",
        "Adversarial/GPTOut",
        "Adversarial/Manual",
        "Adversarial/Neighbor",
    }


@needs_datasets
@pytest.mark.parametrize(
    "run",
    RUNS or [pytest.param(None, marks=pytest.mark.skip(reason=missing_reason(LLMBAR)))],
    ids=_run_id if RUNS else None,
)
def test_report_reproduces_upstream_statistics(
    run: Path, subset_gold: Any, imported_run: Any
) -> None:
    gold_dir, dataset = subset_gold(_subset_of(run))
    out, summary = imported_run(run)
    # the gold part of an import does not depend on the evaluator: reuse the subset's gold
    assert (out / "gold.jsonl").read_bytes() == (gold_dir / "gold.jsonl").read_bytes()
    report = pairwise_report(dataset, out / "results.jsonl")
    upstream = json.loads((run / "statistics.json").read_text(encoding="utf-8"))
    rates = {
        "correct_False": report.overall.original.accuracy,
        "correct_True": report.overall.swapped.accuracy,
        "correct_both": report.overall.correct_both,
        "equal": report.overall.position_consistency,
    }
    for key in STATISTIC_KEYS:
        k, n, percent = parse_statistic(upstream[key])
        rate = rates[key]
        assert (rate.k, rate.n) == (k, n), key
        assert rate.rate is not None
        assert str(rate.rate * 100) == percent, key  # upstream prints Python's k / n * 100
        assert upstream_figures(report)[key] == (k, n)
    assert upstream["correct_average"] == f"{report.overall.average_accuracy.rate * 100}%"
    # one subset is one slice, so the slice repeats the overall figures
    (only,) = report.slices
    assert only.slice == subset_name(_subset_of(run))
    assert only.model_dump() == {
        **report.overall.model_dump(),
        "slice": only.slice,
        "risk": "medium",
    }
    assert report.status == "complete" and not report.missing
    assert summary.notes[-1].startswith(
        "the pairwise analysis of the imported files reproduces statistics.json exactly"
    )


@needs_llmbar
def test_results_for_an_existing_gold_equal_the_full_import(
    tmp_path: Path, subset_gold: Any, imported_run: Any
) -> None:
    """One subset's gold serves all its evaluators: results-only import gives the same records."""
    subset = SUBSETS / "Natural"
    gold_dir, dataset = subset_gold(subset)
    runs = [r for r in RUNS if _subset_of(r) == subset]
    assert len(runs) == 9
    for run in runs:
        out, _ = imported_run(run)
        path = tmp_path / f"{run.parent.name}-{run.name}.jsonl"
        write_judge_results(path, llmbar_judge_results(run, dataset))
        assert path.read_bytes() == (out / "results.jsonl").read_bytes()
    other = SUBSETS / "Adversarial" / "Manual" / "evaluators" / "GPT-4" / "Vanilla"
    with pytest.raises(WorkbenchError) as exc:
        llmbar_judge_results(other, gold_dir)
    assert {p.code for p in exc.value.problems} >= {"item_count_mismatch", "result_item_mismatch"}


@needs_llmbar
def test_readme_figures_natural_gpt4_vanilla(imported_run: Any) -> None:
    out, summary = imported_run(SUBSETS / "Natural" / "evaluators" / "GPT-4" / "Vanilla")
    report = pairwise_report(out, out / "results.jsonl")
    o = report.overall
    assert (o.original.accuracy.k, o.original.accuracy.n) == (95, 100)
    assert (o.swapped.accuracy.k, o.swapped.accuracy.n) == (96, 100)
    assert (o.correct_both.k, o.correct_both.n) == (93, 100)
    assert (o.position_consistency.k, o.position_consistency.n) == (95, 100)
    assert (o.consistent_verdicts.k, o.consistent_verdicts.n) == (95, 100)
    assert o.original.accuracy == wilson_rate(95, 100)
    assert o.errors == 0 and report.evaluator_errors == []
    assert report.judge is not None and (
        report.judge.name,
        report.judge.version,
        report.judge.kind,
    ) == ("GPT-4", "Vanilla", "imported")
    # first-shown wins over both orders: 200 verdicts; consistent cases contribute exactly one each
    assert o.first_shown_wins.n == 200
    assert summary.results == 200 and "results.jsonl" in summary.files


@needs_llmbar
def test_real_missing_and_unparseable_winners_are_errors_in_the_denominators(
    imported_run: Any,
) -> None:
    out, summary = imported_run(SUBSETS / "Natural" / "evaluators" / "PaLM2" / "Vanilla")
    report = pairwise_report(out, out / "results.jsonl")
    o = report.overall
    # PaLM2 returned empty completions for items 54 and 57 in both orders
    assert sorted((e.case_id, e.repeat, e.kind) for e in report.evaluator_errors) == [
        ("llmbar-natural-054", 0, "missing_verdict"),
        ("llmbar-natural-054", 1, "missing_verdict"),
        ("llmbar-natural-057", 0, "missing_verdict"),
        ("llmbar-natural-057", 1, "missing_verdict"),
    ]
    assert (o.original.verdicts, o.original.errors, o.original.accuracy.n) == (98, 2, 100)
    assert o.original.accuracy_among_verdicts.n == 98
    assert o.errors_in_both_orders == 2 and o.cases_with_error == 2
    # upstream 'equal' is 80/100: 78 same verdicts + 2 cases whose winners are both null
    assert (o.position_consistency.k, o.position_consistency.n) == (80, 100)
    assert (o.consistent_verdicts.k, o.consistent_verdicts.n) == (78, 98)
    assert o.first_shown_wins.n == 196
    assert "missing_verdict 4" in " ".join(summary.notes)
    text = format_pairwise(report)
    assert "missing_verdict=4" in text and "llmbar-natural-054" in text and "Denominators:" in text

    out, _ = imported_run(SUBSETS / "Natural" / "evaluators" / "ChatGPT" / "CoT")
    report = pairwise_report(out, out / "results.jsonl")
    (err,) = report.evaluator_errors
    assert (err.case_id, err.repeat, err.swap, err.kind) == (
        "llmbar-natural-017",
        0,
        False,
        "unparseable",
    )
    results = {
        (r.result.case_id, r.result.repeat): r.result for r in read_results(out / "results.jsonl")
    }
    bad = results[("llmbar-natural-017", 0)]
    assert bad.value is None and bad.error is not None and bad.reason and "both" in bad.reason
    assert report.overall.original.accuracy.n == 100 and report.overall.original.errors == 1


@needs_llmbar
def test_swap_strategy_imports_the_final_synthesize_step(imported_run: Any) -> None:
    run = SUBSETS / "Natural" / "evaluators" / "GPT-4" / "Swap"
    out, summary = imported_run(run)
    raw = json.loads((run / "result.json").read_text(encoding="utf-8"))
    two_step = [i for i, item in enumerate(raw) if len(item["results"]) == 2]
    assert len(two_step) == 7
    results = read_results(out / "results.jsonl", verify_requests=True)
    with_request = {
        (r.result.case_id, r.result.repeat)
        for r in results
        if r.result.rendered_request is not None
    }
    assert with_request == {(f"llmbar-natural-{i:03d}", rep) for i in two_step for rep in (0, 1)}
    for i in two_step:
        by_repeat = {
            r.result.repeat: r.result
            for r in results
            if r.result.case_id == f"llmbar-natural-{i:03d}"
        }
        assert by_repeat[0].value == raw[i]["results"][-1]["swap = False"]["winner"]
        assert by_repeat[1].value == raw[i]["results"][-1]["swap = True"]["winner"]
    assert any("synthesize" in note for note in summary.notes)


# --- gold and results shape ----------------------------------------------------------------


@needs_llmbar
def test_gold_validates_and_follows_the_decisions(subset_gold: Any) -> None:
    subset = SUBSETS / "Adversarial" / "Neighbor"
    out, dataset = subset_gold(subset)
    report = validate_dataset(out)
    assert report.ok, report.errors
    rubric = dataset.rubric
    assert rubric.labels == ["1", "2"] and rubric.pass_label is None and rubric.fail_label is None
    assert rubric.min_reviews == 1 and list(rubric.slices) == ["Adversarial/Neighbor"]
    raw = json.loads((subset / "dataset.json").read_text(encoding="utf-8"))
    cases = list(dataset.cases.values())
    assert len(cases) == len(raw) == 134
    for i, (case, item) in enumerate(zip(cases, raw, strict=True)):
        assert case.case_id == f"llmbar-adversarial-neighbor-{i:03d}"
        assert case.slice == "Adversarial/Neighbor"
        assert [r.reviewer for r in case.reviews] == [AUTHORS]
        assert case.reviews[0].label == case.gold_label == str(item["label"])
        assert case.adjudication is not None and case.adjudication.adjudicator == AUTHORS
        assert case.input == item["input"]
        assert case.response == render_pair(item["output_1"], item["output_2"])
        assert case.response.index("[Response 1]") < case.response.index("[Response 2]")
    # one group per instruction; partitions follow groups
    by_group: dict[str, set[str]] = {}
    for case in cases:
        by_group.setdefault(case.group, set()).add(case.partition.value)
    assert all(len(parts) == 1 for parts in by_group.values())
    assert len({c.group for c in cases}) == len({item["input"] for item in raw})
    card = (out / "card.md").read_text(encoding="utf-8")
    assert "dataset authors" in card and "not an independent" in card
    assert not (out / "results.jsonl").exists()


@needs_llmbar
def test_import_is_deterministic(tmp_path: Path, subset_gold: Any) -> None:
    subset = SUBSETS / "Adversarial" / "Manual"
    gold_dir, _ = subset_gold(subset)
    import_llmbar(subset / "dataset.json", tmp_path / "again")  # the file itself is accepted too
    for name in ("gold.jsonl", "rubric.yaml", "card.md"):
        assert (tmp_path / "again" / name).read_bytes() == (gold_dir / name).read_bytes()


@needs_llmbar
def test_results_follow_the_contract_and_presentation(imported_run: Any) -> None:
    run = SUBSETS / "Adversarial" / "GPTOut" / "evaluators" / "LLaMA2" / "Vanilla"
    out, _ = imported_run(run)
    lines = read_results(out / "results.jsonl")
    assert len(lines) == 2 * 47
    fingerprints = {r.result.judge_fingerprint for r in lines}
    assert len(fingerprints) == 1
    for line in lines:
        r = line.result
        assert r.attempt == 1 and r.repeat in (0, 1)
        swap = r.repeat == 1
        order = ["2", "1"] if swap else ["1", "2"]
        assert r.presentation == {"swap": swap, "presented_order": order, "first_shown": order[0]}
        assert (r.value is None) == (r.error is not None)
        assert r.value in (None, "1", "2")
        assert r.judge.kind == "imported" and (r.judge.name, r.judge.version) == (
            "LLaMA2",
            "Vanilla",
        )
        assert len(r.judge.params["results_sha256"]) == 64
    raw_lines = (out / "results.jsonl").read_text(encoding="utf-8").splitlines()
    assert all('"value":' in text for text in raw_lines)  # value is explicit, null on errors


# --- synthetic files: errors, refusals, CLI --------------------------------------------------


def _item(i: int, label: int = 1) -> dict[str, Any]:
    return {
        "input": f"Instruction {i}",
        "output_1": f"first answer {i}",
        "output_2": f"second answer {i}",
        "label": label,
    }


def _verdict(winner_false: Any, winner_true: Any, text: str = "Output (a)") -> list[dict[str, Any]]:
    return [
        {
            "swap = False": {"completion": [text, "stop"], "winner": winner_false},
            "swap = True": {"completion": [text, "stop"], "winner": winner_true},
        }
    ]


def _write_subset(
    root: Path, items: list[dict[str, Any]], evaluated: list[dict[str, Any]] | None
) -> tuple[Path, Path]:
    subset = root / "LLMBar" / "Synthetic"
    evaluator = subset / "evaluators" / "Judge-X" / "Vanilla"
    evaluator.mkdir(parents=True)
    (subset / "dataset.json").write_text(json.dumps(items), encoding="utf-8")
    if evaluated is not None:
        (evaluator / "result.json").write_text(json.dumps(evaluated), encoding="utf-8")
    return subset, evaluator


@pytest.fixture()
def synthetic(tmp_path: Path) -> tuple[Path, Path]:
    items = [_item(0, 1), _item(1, 2), _item(2, 1), _item(3, 2), _item(4, 1), _item(5, 2)]
    steps = [
        _verdict("1", "1"),  # correct, consistent
        _verdict(
            None, "2", text="Both outputs are equally good."
        ),  # unparseable in the original order
        {
            "swap = False": {"completion": ["", ""], "winner": None},
            "swap = True": {"completion": ["", ""], "winner": None},
        },  # empty: missing in both
        _verdict("", "3"),  # empty winner with text -> unparseable; "3" -> unparseable
        {
            "swap = False": {"completion": ["Output (a)", "stop"]},
            "swap = True": {"completion": ["Output (b)", "stop"], "winner": 1},
        },  # no winner; int 1
        [["auxiliary text", "stop"]],  # no verdict step at all
    ]
    evaluated = []
    for item, step in zip(items, steps, strict=True):
        evaluated.append({**item, "results": step if isinstance(step, list) else [step]})
    subset, evaluator = _write_subset(tmp_path, items, evaluated)
    (evaluator / "statistics.json").write_text(
        json.dumps(
            {
                "correct_False": "1 / 6 = 16.666666666666664%",
                "correct_True": "2 / 6 = 33.33333333333333%",
                "correct_both": "1 / 6 = 16.666666666666664%",
                "equal": "3 / 6 = 50.0%",
            }
        ),
        encoding="utf-8",
    )
    return subset, evaluator


def test_missing_and_unparseable_winners_become_counted_errors(
    synthetic: tuple[Path, Path], tmp_path: Path
) -> None:
    subset, evaluator = synthetic
    out = tmp_path / "out"
    summary = import_llmbar(subset, out, evaluator=evaluator)
    assert validate_dataset(out).ok
    results = {
        (r.result.case_id, r.result.repeat): r.result for r in read_results(out / "results.jsonl")
    }
    kinds = {key: (r.value, r.error.kind if r.error else None) for key, r in results.items()}
    assert kinds == {
        ("llmbar-synthetic-000", 0): ("1", None),
        ("llmbar-synthetic-000", 1): ("1", None),
        ("llmbar-synthetic-001", 0): (None, "unparseable"),
        ("llmbar-synthetic-001", 1): ("2", None),
        ("llmbar-synthetic-002", 0): (None, "missing_verdict"),
        ("llmbar-synthetic-002", 1): (None, "missing_verdict"),
        ("llmbar-synthetic-003", 0): (None, "unparseable"),
        ("llmbar-synthetic-003", 1): (None, "unparseable"),
        ("llmbar-synthetic-004", 0): (None, "missing_verdict"),
        ("llmbar-synthetic-004", 1): (None, "unparseable"),
        ("llmbar-synthetic-005", 0): (None, "missing_verdict"),
        ("llmbar-synthetic-005", 1): (None, "missing_verdict"),
    }
    report = pairwise_report(out, out / "results.jsonl")
    o = report.overall
    # every error stays in the denominator of accuracy and correct_both
    assert (o.original.accuracy.k, o.original.accuracy.n) == (1, 6)
    assert (o.swapped.accuracy.k, o.swapped.accuracy.n) == (2, 6)
    assert (o.correct_both.k, o.correct_both.n) == (1, 6)
    assert (o.original.errors, o.swapped.errors) == (5, 4)
    assert o.original.errors_by_kind == {"unparseable": 2, "missing_verdict": 3}
    assert (o.original.accuracy_among_verdicts.k, o.original.accuracy_among_verdicts.n) == (1, 1)
    # consistent: case 0 (same verdict) + cases 2, 3, 4, 5 (errors in both orders), as upstream's
    # None == None
    assert o.errors_in_both_orders == 4 and o.cases_with_error == 5
    assert (o.position_consistency.k, o.position_consistency.n) == (5, 6)
    assert (o.consistent_verdicts.k, o.consistent_verdicts.n) == (1, 1)
    assert (o.first_shown_wins.k, o.first_shown_wins.n) == (2, 3)
    assert len(report.evaluator_errors) == 9
    assert (
        set(report.denominators) == set(DENOMINATORS)
        and "stays in n" in report.denominators["accuracy"]
    )
    # the synthetic statistics.json says equal 3/6, so the importer says it differs
    assert "DIFFERS" in summary.notes[-1] and "equal: upstream 3/6, here 5/6" in summary.notes[-1]
    dumped = PairwiseReport.model_validate_json(report.model_dump_json())
    assert dumped == report


def test_read_verdict_never_guesses() -> None:
    assert read_verdict({"results": _verdict("2", "1")}, True).value == "1"
    for winner in (None, "", "3", "tie", 1, " 1", ["1"]):
        v = read_verdict({"results": _verdict(winner, winner)}, False)
        assert v.value is None and v.error_kind in ("missing_verdict", "unparseable")
    assert read_verdict({"results": []}, False).error_kind == "missing_verdict"
    assert read_verdict({}, False).error_kind == "missing_verdict"
    assert (
        read_verdict({"results": [{"swap = True": {"winner": "1"}}]}, False).error_kind
        == "missing_verdict"
    )


def test_missing_results_make_the_report_incomplete(
    synthetic: tuple[Path, Path], tmp_path: Path
) -> None:
    subset, evaluator = synthetic
    out = tmp_path / "out"
    import_llmbar(subset, out, evaluator=evaluator)
    lines = (out / "results.jsonl").read_text(encoding="utf-8").splitlines()
    partial = tmp_path / "partial.jsonl"
    partial.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")  # drop case 5, swapped order
    report = pairwise_report(out, partial)
    assert report.status == "incomplete"
    assert [(m.case_id, m.repeat) for m in report.missing] == [("llmbar-synthetic-005", 1)]
    assert report.overall.swapped.accuracy.n == 6 and report.overall.swapped.missing == 1
    assert report.overall.errors_in_both_orders == 3  # missing is never an error, never consistent
    runner = CliRunner()
    result = runner.invoke(
        pairwise_cmd, ["--gold", str(out), "--results", str(partial), "--fail-incomplete"]
    )
    assert result.exit_code == 3 and "INCOMPLETE" in result.output


def test_pairwise_refuses_results_without_a_meaningful_order(
    synthetic: tuple[Path, Path], tmp_path: Path
) -> None:
    subset, evaluator = synthetic
    out = tmp_path / "out"
    import_llmbar(subset, out, evaluator=evaluator)
    records = [r.result for r in read_results(out / "results.jsonl")]
    broken = [
        records[0].model_copy(update={"presentation": None}),
        records[1].model_copy(
            update={
                "presentation": {"swap": False, "presented_order": ["1", "2"], "first_shown": "1"}
            }
        ),
        records[2].model_copy(update={"repeat": 2}),
        *records[3:],
    ]
    with pytest.raises(WorkbenchError) as exc:
        pairwise_report(out, broken)
    codes = sorted(p.code for p in exc.value.problems)
    assert codes == ["presentation_mismatch", "presentation_missing", "unexpected_repeat"]


def test_bad_input_lists_every_problem(tmp_path: Path) -> None:
    items: list[Any] = [_item(0), {"input": "", "output_1": 3, "label": 7}, "not an object"]
    subset, _ = _write_subset(tmp_path, items, None)
    with pytest.raises(WorkbenchError) as exc:
        import_llmbar(subset, tmp_path / "out")
    codes = {p.code for p in exc.value.problems}
    assert {"missing_key", "bad_type", "empty_prompt", "unknown_label", "item_shape"} <= codes
    assert not (tmp_path / "out" / "gold.jsonl").exists()


def test_evaluator_of_another_subset_is_refused(tmp_path: Path) -> None:
    items = [_item(0), _item(1, 2)]
    other = [
        {**_item(0), "results": _verdict("1", "1")},
        {**_item(9, 2), "results": _verdict("2", "2")},
        {**_item(2), "results": _verdict("1", "1")},
    ]
    subset, evaluator = _write_subset(tmp_path, items, other)
    with pytest.raises(WorkbenchError) as exc:
        import_llmbar(subset, tmp_path / "out", evaluator=evaluator)
    assert {p.code for p in exc.value.problems} == {"item_count_mismatch", "result_item_mismatch"}


def test_result_file_without_verdict_steps_is_refused(tmp_path: Path) -> None:
    items = [_item(0), _item(1, 2)]
    subset, evaluator = _write_subset(
        tmp_path, items, [{**item, "results": [["text", "stop"]]} for item in items]
    )
    with pytest.raises(WorkbenchError) as exc:
        import_llmbar(subset, tmp_path / "out", evaluator=evaluator)
    assert [p.code for p in exc.value.problems] == ["no_verdicts"]


def test_helpers() -> None:
    assert parse_statistic("95 / 100 = 95.0%") == (95, 100, "95.0")
    assert parse_statistic("56 / 100 = 56.00000000000001%") == (56, 100, "56.00000000000001")
    with pytest.raises(ValueError, match="not an upstream 'k / n = p%' figure"):
        parse_statistic("95.5%")
    assert subset_name(Path("/x/Dataset/LLMBar/Adversarial/Neighbor")) == "Adversarial/Neighbor"
    assert subset_name(Path("/x/Dataset/LLMBar/Natural")) == "Natural"
    assert subset_name(Path("/copy/Adversarial/Manual")) == "Adversarial/Manual"
    assert subset_name(Path("/copy/mine")) == "mine"
    assert "llmbar" in available_importers()


def test_cli_exit_codes(synthetic: tuple[Path, Path], tmp_path: Path) -> None:
    subset, evaluator = synthetic
    runner = CliRunner()
    out = tmp_path / "cli"
    ok = runner.invoke(
        import_group, ["llmbar", str(subset), "--evaluator", str(evaluator), "--out", str(out)]
    )
    assert ok.exit_code == 0, ok.output
    assert "Imported 6 llmbar case(s)" in ok.output and "12 imported judge result(s)" in ok.output
    gold_only = runner.invoke(
        import_group, ["llmbar", str(subset), "--out", str(tmp_path / "gold-only")]
    )
    assert gold_only.exit_code == 0 and "no judge results in the source" in gold_only.output
    again = runner.invoke(import_group, ["llmbar", str(subset), "--out", str(out)])
    assert again.exit_code == 2 and "out_not_empty" in again.output

    missing = runner.invoke(
        import_group, ["llmbar", str(tmp_path / "nowhere"), "--out", str(tmp_path / "x")]
    )
    assert (
        missing.exit_code == 2
        and "source_missing" in missing.output
        and "Traceback" not in missing.output
    )
    no_eval = runner.invoke(
        import_group,
        [
            "llmbar",
            str(subset),
            "--evaluator",
            str(tmp_path / "nowhere"),
            "--out",
            str(tmp_path / "y"),
        ],
    )
    assert (
        no_eval.exit_code == 2
        and "[source_missing]" in no_eval.output
        and "result.json" in no_eval.output
        and "Traceback" not in no_eval.output
    )

    broken = tmp_path / "broken" / "LLMBar" / "Bad"
    broken.mkdir(parents=True)
    (broken / "dataset.json").write_text('[{"input": "x",', encoding="utf-8")
    bad = runner.invoke(import_group, ["llmbar", str(broken), "--out", str(tmp_path / "z")])
    assert bad.exit_code == 2 and "malformed_json" in bad.output and "Traceback" not in bad.output
    (evaluator / "result.json").write_text("{not json", encoding="utf-8")
    bad_eval = runner.invoke(
        import_group,
        ["llmbar", str(subset), "--evaluator", str(evaluator), "--out", str(tmp_path / "w")],
    )
    assert (
        bad_eval.exit_code == 2
        and "malformed_json" in bad_eval.output
        and "Traceback" not in bad_eval.output
    )

    text = runner.invoke(
        pairwise_cmd, ["--gold", str(out), "--results", str(out / "results.jsonl")]
    )
    assert text.exit_code == 0 and "acc original" in text.output and "Denominators:" in text.output
    as_json = runner.invoke(
        pairwise_cmd, ["--gold", str(out), "--results", str(out / "results.jsonl"), "--json"]
    )
    assert as_json.exit_code == 0
    payload = json.loads(as_json.output)
    assert payload["kind"] == "workbench.pairwise" and payload["schema_version"] == 2
    assert payload["overall"]["original"]["accuracy"] == {
        "k": 1,
        "n": 6,
        "rate": 1 / 6,
        "ci95_low": pytest.approx(wilson_rate(1, 6).ci95_low),
        "ci95_high": pytest.approx(wilson_rate(1, 6).ci95_high),
    }
    no_results = runner.invoke(
        pairwise_cmd, ["--gold", str(out), "--results", str(tmp_path / "none.jsonl")]
    )
    assert (
        no_results.exit_code == 2
        and "results_missing" in no_results.output
        and "Traceback" not in no_results.output
    )
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text("{nope\n", encoding="utf-8")
    bad_results = runner.invoke(pairwise_cmd, ["--gold", str(out), "--results", str(garbage)])
    assert (
        bad_results.exit_code == 2
        and "malformed_json" in bad_results.output
        and "Traceback" not in bad_results.output
    )


def test_run_importer_passes_options(synthetic: tuple[Path, Path], tmp_path: Path) -> None:
    subset, evaluator = synthetic
    summary = run_importer("llmbar", subset, tmp_path / "o", evaluator=evaluator, subset="Custom")
    assert summary.results == 12
    dataset = load_dataset(tmp_path / "o")
    assert list(dataset.rubric.slices) == ["Custom"]
    assert next(iter(dataset.cases)) == "llmbar-custom-000"


def test_per_slice_figures_with_two_slices(synthetic: tuple[Path, Path], tmp_path: Path) -> None:
    """Overall and per-slice blocks: two subsets merged into one dataset, one judge."""
    subset, evaluator = synthetic
    a, b = tmp_path / "a", tmp_path / "b"
    import_llmbar(subset, a, evaluator=evaluator, subset="A")
    import_llmbar(subset, b, evaluator=evaluator, subset="B")
    merged = tmp_path / "merged"
    merged.mkdir()
    rubric = yaml.safe_load((a / "rubric.yaml").read_text(encoding="utf-8"))
    rubric["slices"]["B"] = yaml.safe_load((b / "rubric.yaml").read_text(encoding="utf-8"))[
        "slices"
    ]["B"]
    (merged / "rubric.yaml").write_text(yaml.safe_dump(rubric), encoding="utf-8")
    (merged / "card.md").write_text((a / "card.md").read_text(encoding="utf-8"), encoding="utf-8")
    gold_b = [
        line
        for i, line in enumerate((b / "gold.jsonl").read_text(encoding="utf-8").splitlines())
        if i < 2
    ]
    (merged / "gold.jsonl").write_text(
        (a / "gold.jsonl").read_text(encoding="utf-8") + "\n".join(gold_b) + "\n", encoding="utf-8"
    )
    records_a = [r.result for r in read_results(a / "results.jsonl")]
    judge, fingerprint = records_a[0].judge, records_a[0].judge_fingerprint
    records_b = [
        r.result.model_copy(update={"judge": judge, "judge_fingerprint": fingerprint})
        for r in read_results(b / "results.jsonl")
        if r.result.case_id in ("llmbar-b-000", "llmbar-b-001")
    ]
    report = pairwise_report(merged, [*records_a, *records_b])
    by_name = {s.slice: s for s in report.slices}
    assert set(by_name) == {"A", "B"}
    assert (by_name["A"].n, by_name["B"].n, report.overall.n) == (6, 2, 8)
    assert (by_name["B"].original.accuracy.k, by_name["B"].original.accuracy.n) == (1, 2)
    assert (by_name["B"].original.errors, by_name["B"].swapped.errors) == (1, 0)
    assert (
        report.overall.original.accuracy.k
        == by_name["A"].original.accuracy.k + by_name["B"].original.accuracy.k
    )
    assert report.overall.position_consistency.k == 5 + 1
    assert {e.slice for e in report.evaluator_errors} == {"A", "B"}
