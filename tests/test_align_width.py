"""`workbench align` text fits 120 columns (issue 29 point 3); `run`'s sampled-out line is bounded.

The default text keeps the slice name and the alignment result first; the full tables (every
count, the token columns) are behind `--wide`, and the JSON is the same with or without it.
Long slice names of one model family wrap whole, so every row still names its slice in full.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from workbench.align import align, format_report
from workbench.align._report import Confusion
from workbench.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo"
CANDIDATE = ROOT / "data" / "candidates" / "rubric-judge@2.yaml"
WIDTH = 120


def cli(*args: Any) -> Any:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("run") / "run"
    result = cli(
        "run",
        "--candidate",
        CANDIDATE,
        "--gold",
        DEMO,
        "--partition",
        "development",
        "--no-cache",
        "--out",
        out,
    )
    assert result.exit_code == 0, result.output
    return out / "results.jsonl"


def _align(results: Path, *extra: str) -> Any:
    return cli("align", "--gold", DEMO, "--partition", "development", "--results", results, *extra)


def test_align_text_fits_120_columns_on_the_demo(demo_run: Path) -> None:
    result = _align(demo_run)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(len(line) for line in lines) <= WIDTH, max(lines, key=len)
    header = next(line for line in lines if line.startswith("slice") and "aligned" in line)
    # the slice name, then the alignment result and the false-pass / false-fail rates
    assert header.split()[:4] == ["slice", "aligned", "[95%", "CI]"]
    assert header.index("aligned") < header.index("FP rate") < header.index("FF rate")
    assert any(line.startswith("refund_policy ") and "0.83 [0.61, 0.94]" in line for line in lines)


def test_wide_keeps_the_full_columns(demo_run: Path) -> None:
    result = _align(demo_run, "--wide")
    assert result.exit_code == 0, result.output
    header = next(line for line in result.output.splitlines() if "false_pass" in line)
    for column in ("verdicts", "abstained", "errors", "missing", "coverage", "aligned"):
        assert column in header
    assert "FP rate [95% CI]" in header and "false_fail" in header and "kappa" in header
    assert "15/18 = 0.83 [0.61, 0.94]" in result.output  # counts beside the rates
    assert "tokens in/case median" in result.output
    assert max(len(line) for line in result.output.splitlines()) > WIDTH


def test_the_json_is_the_same_with_or_without_wide(demo_run: Path) -> None:
    plain, wide = _align(demo_run, "--json"), _align(demo_run, "--json", "--wide")
    assert plain.exit_code == wide.exit_code == 0, plain.output + wide.output
    assert plain.output == wide.output
    report = json.loads(plain.output)
    first = report["slices"][0]
    assert {"false_passes", "abstentions", "errors", "missing", "verdicts"} <= set(first)
    assert "tokens_in" in report["costs"][0]


LONG = [
    "Qwen/Qwen2.5-7B-Instruct",
    "Qwen/Qwen2.5-72B-Instruct",
    "meta-llama/Meta-Llama-3.1-70B-Instruct-Turbo-with-a-long-deployment-suffix-eu-west-1",
    "meta-llama/Meta-Llama-3.1-8B-Instruct-Turbo-with-a-long-deployment-suffix-eu-west-1",
]


def _row_names(lines: list[str], header: str) -> list[str]:
    """The slice names of the table whose header starts with ``header``: a row starts with the
    name's first part before two spaces and a figure; continuation lines carry the rest."""
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    names: list[str] = []
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        if line.startswith("  "):
            names[-1] += line.strip()
            continue
        match = re.match(r"(\S+?)\s{2,}(?:\d|-|n/a)", line)
        assert match, line
        names.append(match.group(1))
    return names


def test_long_slice_names_of_one_family_fit_and_stay_distinct(demo_run: Path) -> None:
    report = align(str(DEMO), str(demo_run), partition="development")
    rename = dict(zip([s.slice for s in report.slices], LONG, strict=False))
    slices = [s.model_copy(update={"slice": rename.get(s.slice, s.slice)}) for s in report.slices]
    costs = [c.model_copy(update={"slice": rename.get(c.slice, c.slice)}) for c in report.costs]
    labels = [
        f"{family}-rating-{grade}" for family in ("helpful", "harmless") for grade in "ABCDEF"
    ]
    confusion = Confusion(
        rows=labels, columns=labels, counts=[[i * j for j in range(12)] for i in range(12)]
    )  # a rubric of many long labels: the confusion prints in column blocks
    long = report.model_copy(update={"slices": slices, "costs": costs, "confusion": confusion})
    lines = format_report(long).splitlines()
    assert max(len(line) for line in lines) <= WIDTH, max(lines, key=len)
    names = _row_names(lines, "slice  ")
    assert names[: len(LONG)] == LONG  # every name whole, so no two rows read alike
    assert len(set(names)) == len(names)
    cost_names = _row_names(lines, "slice    ")
    assert set(LONG) <= set(cost_names)
    text = "\n".join(lines)
    assert all(f"{label} " in text for label in labels)


def test_run_prints_the_count_and_the_first_ten_sampled_out_ids(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        yaml.safe_dump(
            {
                "seed": 7,
                "owner": "eval-team",
                "applies_to": ["development"],
                "rationale": "low, medium and high slices sampled to a fifth.",
                "slices": {
                    name: {"fraction": 0.2}
                    for name in ("escalation_handoff", "shipping_delivery", "privacy_data_requests")
                },
            }
        ),
        encoding="utf-8",
    )
    out = tmp_path / "run"
    result = cli(
        "run",
        "--candidate",
        CANDIDATE,
        "--gold",
        DEMO,
        "--partition",
        "development",
        "--sampling-plan",
        plan,
        "--no-cache",
        "--out",
        out,
    )
    assert result.exit_code == 0, result.output
    sampled = json.loads((out / "run.json").read_text(encoding="utf-8"))["sampled_out"]
    assert len(sampled) > 10
    line = next(x for x in result.output.splitlines() if x.startswith("sampled out ("))
    assert line.startswith(f"sampled out ({len(sampled)}, declared plan")
    assert ", ".join(sampled[:10]) + f" and {len(sampled) - 10} more" in line
    assert sampled[10] not in line.split(" and ")[0]
    assert f"every one in {out / 'run.json'}, key 'sampled_out'" in line
