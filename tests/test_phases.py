"""Development and calibration sessions: held-out refused, derive/save, paired comparison,
selections.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import yaml
from conftest import make_case

from workbench.errors import WorkbenchError
from workbench.phases import (
    CalibrationSession,
    DevelopSession,
    PhaseSession,
    paired_comparison,
    record_selection,
)
from workbench.testing import FakeLLM, Reply, Rule

KEY_ENV = "WB_PHASE_KEY"


def spec(directory: Path, base_url: str, version: str = "1") -> Path:
    data = {
        "name": "phase-llm",
        "version": version,
        "kind": "ragas-llm",
        "labels": ["pass", "fail"],
        "model": "fake",
        "prompt": "Notes: {grading_notes}\nResponse: {response}",
        "endpoint": {"base_url": base_url, "api_key_env": KEY_ENV},
    }
    path = directory / f"phase-llm@{version}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture
def gold(make_dataset, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(KEY_ENV, "k")
    cases = [
        make_case(f"d{i}", "pass" if i % 2 else "fail", response=f"dev response {i}")
        for i in range(6)
    ]
    cases += [
        make_case(
            f"c{i}",
            "pass" if i % 2 else "fail",
            response=f"cal response {i}",
            partition="calibration",
        )
        for i in range(6)
    ]
    cases += [make_case("h0", "pass", partition="held_out")]
    return make_dataset(cases)


def test_held_out_is_refused(gold: Path, tmp_path: Path) -> None:
    with pytest.raises(WorkbenchError) as info:
        PhaseSession(gold, partition="held_out", run_root=tmp_path)  # type: ignore[arg-type]
    assert info.value.problems[0].code == "held_out_refused"


def test_develop_iteration_derive_save_and_transitions(gold: Path, tmp_path: Path) -> None:
    # The scripted model fails everything unless the prompt says "be lenient", then passes
    # everything.
    rules = [Rule(contains="be lenient", reply=Reply(value="pass", reason="lenient"))]
    with FakeLLM(rules=rules, default=Reply(value="fail", reason="strict")) as server:
        session = DevelopSession(gold, run_root=tmp_path / "runs")
        base = session.load(spec(tmp_path, server.base_url))
        first = asyncio.run(session.run(base, progress=False))
        assert first.report.partition == "development" and first.report.overall.n == 6
        assert (first.report.overall.aligned, first.report.overall.false_fails) == (3, 3)
        tuned = session.derive(
            base,
            version="2",
            prompt=session.prompt_of(base) + "\nbe lenient",
            description="lenient",
        )
        assert tuned.identity.fingerprint() != base.identity.fingerprint()
        second = asyncio.run(session.run(tuned, progress=False))
        again = asyncio.run(session.run(tuned, progress=False))
        assert again.summary.calls == 0  # resumed, nothing called twice
    changes = session.transitions(first, second)
    # humans: d0,d2,d4 fail / d1,d3,d5 pass. Before: all fail. After: all pass.
    assert sorted(changes[changes.change == "fixed"].case_id) == ["d1", "d3", "d5"]
    assert sorted(changes[changes.change == "broken"].case_id) == ["d0", "d2", "d4"]
    saved = session.save(tuned, tmp_path / "candidates")
    assert saved.name == "phase-llm@2.yaml" and (
        tmp_path / "candidates" / "prompts" / "phase-llm@2.md"
    ).read_text().endswith("be lenient")
    assert (
        session.load(saved).identity.fingerprint() == tuned.identity.fingerprint()
    )  # same judge once saved
    with pytest.raises(WorkbenchError) as info:
        session.save(tuned, tmp_path / "candidates")
    assert info.value.problems[0].code == "version_exists"


def test_calibration_comparison_and_selection(gold: Path, tmp_path: Path) -> None:
    rules = [Rule(contains="be lenient", reply=Reply(value="pass"))]
    # a contrary judge: passes the human fails (c0, c2, c4), fails the rest: always wrong
    rules += [
        Rule(contains=f"cal response {i}\nbe contrary", reply=Reply(value="pass"))
        for i in (0, 2, 4)
    ]
    with FakeLLM(rules=rules, default=Reply(value="fail")) as server:
        session = CalibrationSession(gold, run_root=tmp_path / "runs")
        strict = session.load(spec(tmp_path, server.base_url))
        lenient = session.derive(
            strict, version="2", prompt=session.prompt_of(strict) + "\nbe lenient"
        )
        contrary = session.derive(
            strict, version="3", prompt=session.prompt_of(strict) + "\nbe contrary"
        )
        a = asyncio.run(session.run(strict, progress=False))
        b = asyncio.run(session.run(lenient, progress=False))
        c = asyncio.run(session.run(contrary, progress=False))
    table = paired_comparison([a, b, c])
    row = table.iloc[0]
    # strict is right on the 3 human fails, lenient on the 3 human passes; never both.
    assert (
        row.paired_cases,
        row.a_right_b_wrong,
        row.b_right_a_wrong,
        row.both_right,
        row.both_wrong,
    ) == (6, 3, 3, 0, 0)
    assert row.p_mcnemar == pytest.approx(1.0)  # exact binomial, 3 vs 3
    # three pairs, three tests: q-values beside the p-values (Benjamini-Hochberg)
    from statsmodels.stats.multitest import multipletests

    assert list(table.p_mcnemar) == pytest.approx([1.0, 0.25, 0.25])  # 3 vs 0: 2 * 0.5**3
    assert list(table.q_bh) == pytest.approx([1.0, 0.375, 0.375])  # 0.25 * 3 / 2
    assert list(table.q_bh) == pytest.approx(
        list(multipletests(table.p_mcnemar, method="fdr_bh")[1])
    )
    assert list(table.columns).index("q_bh") == list(table.columns).index("p_mcnemar") + 1
    path = tmp_path / "selections.jsonl"
    record_selection(path, a, [a, b], reason="fewer false passes")
    record_selection(path, b, [a, b], reason="changed our mind")
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert [x["selected"] for x in lines] == ["phase-llm@1", "phase-llm@2"]
    assert lines[0]["partition"] == "calibration" and len(lines[0]["compared"]) == 2
    with pytest.raises(ValueError):
        record_selection(path, a, [a], reason="  ")
