"""The registry of judge kinds: kinds outside the core, stubs imported on first build.

``TerseReasonJudge`` below is a kind defined outside ``workbench``: it subclasses the public
``workbench.judges.LLMJudge`` and overrides one hook (``_interpret``), and is registered with
``register_kind`` (decorator) or ``declare_kind`` (``"module:attribute"``).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import make_case

from workbench.errors import WorkbenchError
from workbench.gold import load_dataset
from workbench.judges import (
    BUILTIN_KINDS,
    CaseRef,
    HoldsResources,
    JudgeInput,
    LLMJudge,
    ModelJudge,
    ReplayJudge,
    Verdict,
    available_kinds,
    declare_kind,
    kind_info,
    kinds_where,
    load_candidate,
    register_kind,
)
from workbench.judges import _registry as registry
from workbench.runs import RunOptions, run_candidate_sync
from workbench.testing import FakeLLM, Reply, Rule

ROOT = Path(__file__).resolve().parents[1]
KEY_ENV = "WB_TEST_KIND_KEY"
PROMPT = (
    "Notes: {grading_notes}\n\nQuestion: {user_input}\n\nResponse:\n{response}\n\nAnswer pass"
    " or fail."
)


class TerseReasonJudge(LLMJudge):
    """A kind outside the core: an LLM verdict whose reason has fewer than 3 words is refused."""

    def _interpret(
        self, result: Any, exchange: Any, judge_input: Any, ref: CaseRef | None
    ) -> Verdict:
        if result.reason is not None and len(str(result.reason).split()) < 3:
            return self._failed(
                exchange, "reason_too_short", f"the reason {result.reason!r} has fewer than 3 words"
            )
        return super()._interpret(result, exchange, judge_input, ref)


@pytest.fixture(autouse=True)
def kinds(monkeypatch: pytest.MonkeyPatch) -> dict:
    """A private copy of the registry: kinds registered by a test vanish after it."""
    monkeypatch.setenv(KEY_ENV, "k-test-kinds")
    copy = dict(registry._KINDS)
    monkeypatch.setattr(registry, "_KINDS", copy)
    return copy


def write_spec(directory: Path, kind: str, base_url: str = "http://127.0.0.1:9/v1") -> Path:
    spec = {
        "name": "terse",
        "version": "1",
        "kind": kind,
        "labels": ["pass", "fail"],
        "model": "fake-judge",
        "prompt": PROMPT,
        "endpoint": {
            "base_url": base_url,
            "api_key_env": KEY_ENV,
            "timeout_s": 2,
            "max_retries": 1,
        },
        "params": {"temperature": 0, "max_tokens": 100},
    }
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "terse@1.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return path


def test_a_kind_outside_the_core_subclasses_llm_judge_and_runs(
    make_dataset, tmp_path: Path
) -> None:
    register_kind("test-terse-llm")(TerseReasonJudge)
    assert "test-terse-llm" in available_kinds()
    cases = [
        make_case(f"c{i}", "pass", response=f"Answer {i}: refund in 5 business days.")
        for i in range(4)
    ]
    gold = make_dataset(cases)
    rules = [Rule(contains="Answer 0:", reply=Reply(value="pass", reason="fine"))]
    with FakeLLM(
        rules=rules,
        default=Reply(value="pass", reason="names the refund window"),
        require_api_key="k-test-kinds",
    ) as server:
        judge = load_candidate(write_spec(tmp_path, "test-terse-llm", server.base_url))
        assert isinstance(judge, TerseReasonJudge) and judge.identity.kind == "test-terse-llm"
        direct = asyncio.run(
            judge.evaluate(
                JudgeInput(user_input="q", response="Answer 9: ok"),
                CaseRef(case_id="x", response_hash="h"),
            )
        )
        summary = run_candidate_sync(
            judge, load_dataset(gold), "development", tmp_path / "out", RunOptions(progress=False)
        )
    # the base class did the HTTP call, the wire capture and the token count ...
    assert direct.value == "pass" and direct.rendered_request is not None and direct.tokens_in
    # ... and the subclass's hook decided: the one-word reason became an evaluator error
    rows = {
        r["case_id"]: r
        for r in map(json.loads, (tmp_path / "out" / "results.jsonl").read_text().splitlines())
    }
    assert rows["c0"]["value"] is None and rows["c0"]["error"]["kind"] == "reason_too_short"
    assert {rows[f"c{i}"]["value"] for i in (1, 2, 3)} == {"pass"}
    assert summary.verdicts == 3 and rows["c1"]["judge"]["kind"] == "test-terse-llm"


def test_a_declared_kind_is_imported_when_first_built(tmp_path: Path, kinds: dict) -> None:
    declare_kind("test-declared", f"{__name__}:TerseReasonJudge")
    assert kinds["test-declared"].target == f"{__name__}:TerseReasonJudge"  # a stub until built
    judge = load_candidate(write_spec(tmp_path, "test-declared"))
    assert type(judge) is TerseReasonJudge
    assert kinds["test-declared"].target is TerseReasonJudge  # resolved once, then kept


def test_a_declaration_must_name_module_and_attribute() -> None:
    with pytest.raises(ValueError, match="module:attribute"):
        declare_kind("test-bad", "no_colon_here")


@pytest.mark.parametrize(
    ("target", "fragment"),
    [
        ("workbench_no_such_module:Judge", "No module named"),
        (f"{__name__}:NoSuchJudge", "NoSuchJudge"),
    ],
)
def test_a_declared_kind_that_cannot_load_is_one_problem(
    tmp_path: Path, target: str, fragment: str
) -> None:
    declare_kind("test-missing", target)
    with pytest.raises(WorkbenchError) as info:
        load_candidate(write_spec(tmp_path, "test-missing"))
    [problem] = info.value.problems
    assert (
        problem.code == "kind_unavailable"
        and target in problem.message
        and fragment in problem.message
    )


def test_an_unknown_kind_lists_the_registered_ones(tmp_path: Path) -> None:
    with pytest.raises(WorkbenchError) as info:
        load_candidate(write_spec(tmp_path, "no-such-kind"))
    [problem] = info.value.problems
    assert (
        problem.code == "unknown_kind"
        and "ragas-noise" in problem.fix
        and "ragas-ranking" in problem.fix
    )


def test_every_builtin_stub_names_a_judge_factory() -> None:
    import importlib

    for kind, entry in BUILTIN_KINDS.items():
        assert isinstance(entry.target, str)
        module, _, attribute = entry.target.partition(":")
        assert callable(getattr(importlib.import_module(module), attribute)), kind
    assert set(BUILTIN_KINDS) <= set(available_kinds())


_PROBE = """
import json, sys
from workbench.judges import load_candidate
PREFIXES = ("workbench.noise", "workbench.ranking")
loaded = lambda: sorted(m for m in sys.modules if m.startswith(PREFIXES))
steps = [loaded()]
for spec in sys.argv[1:]:
    load_candidate(spec)
    steps.append(loaded())
print(json.dumps(steps))
"""


def test_a_builtin_kind_module_loads_only_when_its_judge_is_built() -> None:
    # One fresh interpreter builds both judges in turn (each was a process, a Ragas import each):
    # nothing of either module before, each module right after its own judge's build, and the
    # noise judge's build does not load the ranking module.
    env = {
        **os.environ,
        "DEMO_LLM_API_KEY": "k-demo",
        "RAGAS_DO_NOT_TRACK": "true",
        "WORKBENCH_DEMO_NOISE_URL": "http://127.0.0.1:40021/v1",
    }  # built, never called
    candidates = ROOT / "data" / "candidates"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            _PROBE,
            str(candidates / "noise-judge@1.yaml"),
            str(candidates / "policy-ranker@1.yaml"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    before, after_noise, after_ranker = json.loads(done.stdout)
    assert before == []
    assert "workbench.noise._judge" in after_noise
    assert "workbench.ranking._judges" not in after_noise
    assert "workbench.ranking._judges" in after_ranker


def test_a_kind_declares_its_flags_and_the_ci_lanes_read_them(kinds: dict) -> None:
    from workbench.ci import DETERMINISTIC_KINDS, LABEL_KINDS, RUNNABLE_KINDS

    assert LABEL_KINDS == ("ragas-llm", "ragas-function", "imported")
    assert DETERMINISTIC_KINDS == ("ragas-function",)
    assert RUNNABLE_KINDS == ("ragas-llm", "ragas-function")  # imported verdicts are replayed
    assert kinds_where(output="ranking") == ("ragas-ranking", "ragas-ranking-function")
    register_kind("test-ranker", output="ranking", deterministic=True)(TerseReasonJudge)
    declare_kind("test-scorer", f"{__name__}:TerseReasonJudge", output="score", command="x {spec}")
    assert kinds_where(output="ranking", deterministic=True) == (
        "ragas-ranking-function",
        "test-ranker",
    )
    info = kind_info("test-scorer")
    assert info is not None and info.command.format(spec="s.yaml") == "x s.yaml"
    assert kind_info("no-such-kind") is None
    with pytest.raises(TypeError):
        register_kind("test-typo", outptu="label")(TerseReasonJudge)  # a flag that does not exist


class _Plain:
    """A judge with no optional capability."""

    spec: Any = None
    identity: Any = None

    def render(self, judge_input: Any, ref: Any) -> dict[str, Any]:
        return {}

    def estimate_cost(self, judge_input: Any) -> float:
        return 0.0

    async def evaluate(self, judge_input: Any, ref: Any) -> Verdict:
        return Verdict(value="pass")


def test_capabilities_are_protocols_the_judges_implement(tmp_path: Path) -> None:
    llm = load_candidate(write_spec(tmp_path, "ragas-llm"))
    function = load_candidate(ROOT / "data" / "candidates" / "rubric-judge@2.yaml")
    assert isinstance(llm, ModelJudge) and isinstance(llm, HoldsResources)
    assert not isinstance(llm, ReplayJudge)
    assert not isinstance(function, ModelJudge) and not isinstance(function, HoldsResources)
    assert not isinstance(_Plain(), ModelJudge | HoldsResources | ReplayJudge)


def test_the_engine_sizes_and_closes_a_model_judge_and_needs_nothing_of_a_plain_one(
    make_dataset, tmp_path: Path
) -> None:
    seen: list[Any] = []

    class Sized(_Plain):
        endpoint_url = "http://endpoint.invalid/v1"

        def __init__(self, spec: Any, identity: Any) -> None:
            self.spec, self.identity = spec, identity

        def prepare(self, concurrency: int) -> None:
            seen.append(("prepare", concurrency))

        async def aclose(self) -> None:
            seen.append("aclose")

        def secrets(self) -> list[str]:
            return ["s3cr3t-value"]

        def estimate_usage(self, judge_input: Any) -> tuple[int, int, str] | None:
            return None

        async def evaluate(self, judge_input: Any, ref: Any) -> Verdict:
            return Verdict(value="pass", reason="echo s3cr3t-value")

    base = load_candidate(ROOT / "data" / "candidates" / "rubric-judge@2.yaml")
    gold = load_dataset(make_dataset([make_case(f"c{i}", "pass") for i in range(3)]))
    sized = Sized(base.spec, base.identity)
    summary = run_candidate_sync(
        sized, gold, "development", tmp_path / "sized", RunOptions(concurrency=3, cache_dir=False)
    )
    assert seen == [("prepare", 3), "aclose"] and summary.verdicts == 3
    assert summary.endpoint_url == "http://endpoint.invalid/v1"
    records = (tmp_path / "sized" / "results.jsonl").read_text()
    assert "s3cr3t-value" not in records and "echo" in records  # its secrets are redacted
    plain = _Plain()
    plain.spec, plain.identity = base.spec, base.identity
    summary = run_candidate_sync(
        plain, gold, "development", tmp_path / "plain", RunOptions(cache_dir=False)
    )
    assert summary.verdicts == 3 and summary.endpoint_url is None
