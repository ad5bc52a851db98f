"""The walk-through of docs/bring-your-own-data.md ("Walk-through: from an empty folder to an
alignment table"), run on the committed example ``examples/span-annotations``.

The test runs the commands the section shows, in the order it shows them, in an empty folder
(the CLI through ``CliRunner``; the ``workbench fake-llm -- COMMAND`` prefix is replaced by the
same server started in-process, since it only serves COMMAND), and checks that:

- every ``workbench`` command of the section is one the test ran, with the same arguments;
- the per-slice alignment table and the confusion the section prints are what ``align`` prints;
- the figures are right: false passes and false fails per slice counted here from the raw
  JSONL (the reviewers' majority, and the stand-in judge's rule written out again), Wilson
  intervals against statsmodels and Cohen's kappa against scikit-learn.

The notebook step is left to ``test_walkthrough_develop_notebook`` (marked ``notebook``).
"""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.proportion import proportion_confint

from workbench.cli.main import main
from workbench.testing import FakeLLM

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "bring-your-own-data.md"
EX = REPO / "examples" / "span-annotations"
SPEC = "data/candidates/span-bench-judge@1.yaml"
POLICY = "data/policies/span-bench@1.yaml"
RESULTS = "runs/span-bench-judge@1/development/results.jsonl"
_MONTHS_DAYS = r"Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|January|February|March"
_MONTHS_DAYS += r"|April|May|June|July|August|September|October|November|December"


def section() -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("## Walk-through: from an empty folder to an alignment table")
    return text[start : text.index("\n## ", start + 1)]


def code_blocks(text: str) -> list[str]:
    return re.findall(r"^```[a-z]*\n(.*?)^```", text, flags=re.S | re.M)


def doc_commands() -> list[list[str]]:
    """Every ``workbench`` command of the section, as arguments (the part after ``--`` of a
    ``workbench fake-llm ... --`` line; ``papermill`` lines are the notebook test's)."""
    commands = []
    for block in code_blocks(section()):
        for line in block.replace("\\\n", " ").splitlines():
            if not line.startswith("workbench "):
                continue  # output, or a shell line (cd, cp, sed, export)
            words = shlex.split(line)
            if words[:2] == ["workbench", "fake-llm"]:
                words = words[words.index("--") + 1 :]
            if words[:1] == ["workbench"]:
                commands.append(words[1:])
    return commands


def doc_align_output() -> list[str]:
    """The lines of the block printed after the section's ``workbench align`` command."""
    blocks = code_blocks(section())
    index = next(i for i, b in enumerate(blocks) if b.startswith("workbench align"))
    return [line for line in blocks[index + 1].splitlines() if line.strip()]


class Walk:
    """The section's commands, run one by one in ``project``; ``ran`` collects them."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.monkeypatch = monkeypatch
        self.ran: list[list[str]] = []

    def __call__(self, *args: str, code: int = 0) -> str:
        result = CliRunner().invoke(main, list(args))
        assert result.exit_code == code, (args, result.output)
        self.ran.append(list(args))
        return str(result.output)


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) >= 1, (path, old)
    path.write_text(text.replace(old, new), encoding="utf-8")


def responder() -> Any:
    spec = importlib.util.spec_from_file_location("number_judge", Path("number_judge.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.respond


def walk_to_alignment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Walk, str, Path]:
    """Steps 1-6 of the walk-through; returns the walk, align's output and the project."""
    monkeypatch.chdir(tmp_path)
    wb = Walk(monkeypatch)
    wb("init", "span-project", "--name", "span-bench")
    project = tmp_path / "span-project"
    monkeypatch.chdir(project)
    monkeypatch.setenv("WORKBENCH_PROJECT_ROOT", str(project))
    for name in ("summaries.jsonl", "number_judge.py"):
        shutil.copy(EX / name, project / name)
    shutil.copy(EX / "mapping.yaml", project / "data/span-bench/mapping.yaml")
    mapping = "data/span-bench/mapping.yaml"
    imported = wb(
        "import", "table", "summaries.jsonl", "--mapping", mapping, "--out", "data/span-bench"
    )
    assert "(development 14, calibration 7, held_out 3)" in imported
    assert "policy drafted: " in imported
    edit(project / "data/span-bench/rubric.yaml", "risk: unset", "risk: critical")  # the sed line
    assert "OK - 24 cases (development 14, calibration 7, held_out 3)" in wb(
        "validate", "data/span-bench"
    )
    agreement = wb("agreement", "data/span-bench")
    assert "Krippendorff's alpha (nominal): 0.7207 (n=24)" in agreement
    spec = project / SPEC
    edit(spec, "model: null", "model: number-judge")
    base = "  base_url: https://api.openai.com/v1\n"
    edit(spec, base, base + "  base_url_env: SPAN_JUDGE_URL\n")
    edit(spec, "_per_million_usd: null", "_per_million_usd: 0")
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    out = "runs/span-bench-judge@1/development"
    with FakeLLM(responder=responder(), port=0) as server:
        monkeypatch.setenv("SPAN_JUDGE_URL", server.base_url)
        run = wb(
            "run",
            "--candidate",
            SPEC,
            "--gold",
            "data/span-bench",
            "--partition",
            "development",
            "--out",
            out,
            "--budget-usd",
            "1",
        )
    assert "COMPLETE - 14 verdicts, 0 evaluator errors" in run
    aligned = wb(
        "align", "--gold", "data/span-bench", "--partition", "development", "--results", RESULTS
    )
    return wb, aligned, project


def expected_by_slice(project: Path) -> dict[str, dict[str, Any]]:
    """Per slice of the development partition: the reviewers' majority and the stand-in's
    verdict per case, counted from the raw rows (the partition is the import's)."""
    partition = {}
    for line in (project / "data/span-bench/gold.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        partition[record["case_id"]] = record["partition"]
    words = r"\d+(?:[.,:]\d+)*|\b(?:" + _MONTHS_DAYS + r")\b"
    found: dict[str, dict[str, Any]] = {}
    for line in (EX / "summaries.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if partition[row["id"]] != "development":
            continue
        votes = Counter(a["label"] for a in row["annotations"])
        human = "fail" if votes["hallucinated"] >= 2 else "pass"
        invented = set(re.findall(words, row["summary"])) - set(re.findall(words, row["source"]))
        judge = "fail" if invented else "pass"
        cell = found.setdefault(row["model"], {"human": [], "judge": []})
        cell["human"].append(human)
        cell["judge"].append(judge)
    return found


def wilson(k: int, n: int) -> tuple[float, float]:
    low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
    return float(low), float(high)


def test_the_documented_commands_print_the_documented_alignment_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wb, aligned, _ = walk_to_alignment(tmp_path, monkeypatch)
    assert doc_commands() == wb.ran
    printed = [line.rstrip() for line in aligned.splitlines()]
    documented = doc_align_output()
    assert documented[0].startswith("slice ") and len(documented) == 10, documented
    for line in documented:
        if line.startswith("human \\ judge"):  # pandas' index header; trailing spaces trimmed
            line = "human \\ judge"
        assert line in printed, (line, aligned)


def test_the_alignment_figures_are_counted_from_the_raw_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wb, _, project = walk_to_alignment(tmp_path, monkeypatch)
    report = json.loads(
        wb(
            "align",
            "--gold",
            "data/span-bench",
            "--partition",
            "development",
            "--results",
            RESULTS,
            "--json",
        )
    )
    expected = expected_by_slice(project)
    assert {s["slice"] for s in report["slices"]} == set(expected)
    for got in report["slices"]:
        cell = expected[got["slice"]]
        pairs = list(zip(cell["human"], cell["judge"], strict=True))
        fails = [judge for human, judge in pairs if human == "fail"]
        passes = [judge for human, judge in pairs if human == "pass"]
        fp = (fails.count("pass"), len(fails))
        ff = (passes.count("fail"), len(passes))
        assert (got["false_pass_rate"]["k"], got["false_pass_rate"]["n"]) == fp
        assert (got["false_fail_rate"]["k"], got["false_fail_rate"]["n"]) == ff
        low, high = wilson(*fp)
        assert got["false_pass_rate"]["ci95_low"] == pytest.approx(low, abs=1e-9)
        assert got["false_pass_rate"]["ci95_high"] == pytest.approx(high, abs=1e-9)
        kappa = cohen_kappa_score(cell["human"], cell["judge"])
        assert got["cohen_kappa"]["value"] == pytest.approx(kappa, abs=1e-9)
    # what the section's prose says: 3 false passes of 7 human fails, none of 7 human passes
    overall = report["overall"]
    assert (overall["false_pass_rate"]["k"], overall["false_pass_rate"]["n"]) == (3, 7)
    assert (overall["false_fail_rate"]["k"], overall["false_fail_rate"]["n"]) == (0, 7)


def doc_notebook_parameters() -> dict[str, Any]:
    """The ``-p``/``-r`` parameters of the section's papermill command (``-p`` reads ``False``
    as a boolean, ``-r`` keeps text, as papermill does)."""
    block = next(b for b in code_blocks(section()) if "papermill" in b)
    words = shlex.split(block.replace("\\\n", " "))
    words = words[words.index("papermill") :]
    parameters: dict[str, Any] = {}
    for i, word in enumerate(words):
        if word in ("-p", "-r"):
            name, value = words[i + 1], words[i + 2]
            parameters[name] = False if (word == "-p" and value == "False") else value
    return parameters


def html_text(nb: Any) -> str:
    parts = []
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            parts.append("".join(output.get("text", "")))
            parts.append("".join(output.get("data", {}).get("text/html", "")))
    text = re.sub(r"<style.*?</style>|<[^>]+>", " ", "\n".join(parts), flags=re.S)
    return re.sub(r"\s+", " ", text)


@pytest.mark.notebook
def test_walkthrough_develop_notebook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import nbformat
    from test_notebooks import _execute

    _, _, project = walk_to_alignment(tmp_path, monkeypatch)
    policy = project / POLICY
    edit(policy, 'owner: ""', 'owner: "Summaries eval team"')
    edit(policy, 'rationale: ""\n', 'rationale: "A passed hallucination reaches readers."\n')
    edit(policy, "max_false_pass_rate: 0.0\n", "max_false_pass_rate: 0.10\n")
    edit(policy, "max_false_fail_rate: 0.0\n", "max_false_fail_rate: 0.20\n")
    parameters = doc_notebook_parameters()
    assert parameters == {
        "run_root": "runs/develop",
        "notes_path": "runs/review_notes.jsonl",
        "serve_fake_llm": False,
        "new_version": "2",
        "save_to": "data/candidates",
    }
    out = project / "runs" / "01_develop.ipynb"
    with FakeLLM(responder=responder(), port=0) as server:
        monkeypatch.setenv("SPAN_JUDGE_URL", server.base_url)
        _execute(
            str(REPO / "notebooks" / "01_develop.ipynb"),
            str(out),
            parameters=parameters,
            cwd=str(project),
            progress_bar=False,
            kernel_name="python3",
        )
    text = html_text(nbformat.read(out, as_version=4))
    assert "span-bench-judge@1: complete, 0 calls, 14 cached" in text
    assert "Notice" not in text
    rows = [line.split() for line in section().splitlines() if line.startswith(("acme/", "other/"))]
    for row in rows[-3:]:  # the notebook's table: slice, result, risk, n, rate [CI], FP k/n
        cells = [re.escape(cell) for cell in row[:4]] + [r"\S+ \(\S+\)"]  # coverage left out
        cells += [re.escape(cell) for cell in row[4:7]]
        assert re.search(" ".join(cells) + " ", text), (row, text)
    assert (project / "data/candidates/span-bench-judge@2.yaml").exists()
