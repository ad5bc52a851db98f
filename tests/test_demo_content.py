"""The demo's authored content is package data, validated by its models on load.

``tests/test_demo_data.py`` checks that the generator still writes ``data/demo`` byte for byte
from it; these tests check that a broken content file is refused with one problem per fault,
and that the files ship in the wheel.
"""

from __future__ import annotations

import shutil
import tomllib
from collections.abc import Callable
from pathlib import Path, PurePosixPath

import pytest

from workbench.demo import _content
from workbench.demo._content import Topic, load_content
from workbench.errors import WorkbenchError

ROOT = Path(__file__).resolve().parents[1]
PACKAGED = ROOT / "workbench" / "demo" / "content"


@pytest.fixture()
def content(tmp_path: Path) -> Path:
    root = tmp_path / "content"
    shutil.copytree(PACKAGED, root)
    return root


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path.name}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def _codes(root: Path) -> list[tuple[str, str, str]]:
    with pytest.raises(WorkbenchError) as info:
        load_content(root)
    return [
        (p.location.removeprefix("workbench/demo/content/"), p.code, p.message)
        for p in info.value.problems
    ]


def test_packaged_content_loads_and_is_what_the_module_exposes(content: Path) -> None:
    loaded = load_content(content)
    assert loaded == _content._CONTENT
    assert [s.name for s in loaded.handbook.slices] == sorted(
        {t.slice for t in loaded.topics}, key=[s.name for s in loaded.handbook.slices].index
    )
    assert len(loaded.topics) == 43 and len(loaded.evidence) == 44
    assert all(isinstance(t, Topic) for t in _content.TOPICS)
    assert _content.EVIDENCE[0] == ("pol-ref-01", loaded.evidence[0].text, "§2.1 Refund window")
    assert _content.OPENERS[0] == "" and _content.CLOSERS[0] == ""


BREAKAGES: dict[str, tuple[Callable[[Path], None], tuple[str, str, str]]] = {
    "unknown field": (
        lambda r: _edit(
            r / "topics" / "refund_policy.yaml",
            "  slug: late-refund\n",
            "  slug: late-refund\n  slgu: typo\n",
        ),
        (
            "topics/refund_policy.yaml",
            "demo_content_invalid",
            "topics.0.slgu: Extra inputs are not permitted",
        ),
    ),
    "bad enum": (
        lambda r: _edit(r / "handbook.yaml", "risk: critical", "risk: severe"),
        (
            "handbook.yaml",
            "demo_content_invalid",
            "slices.0.risk: Input should be 'critical', 'high', 'medium' or 'low'",
        ),
    ),
    "empty sentence": (
        lambda r: _edit(
            r / "phrases.yaml", "- concept: two-factor authentication", "- concept: ''"
        ),
        (
            "phrases.yaml",
            "demo_content_invalid",
            "approved_terms.0.concept: String should have at least 1 character",
        ),
    ),
    "topic filed under another slice": (
        lambda r: _edit(
            r / "topics" / "refund_policy.yaml",
            "- slice: refund_policy\n  slug: late-refund",
            "- slice: account_security\n  slug: late-refund",
        ),
        (
            "topics/refund_policy.yaml",
            "demo_content_slice",
            "topic 'late-refund' belongs to slice 'account_security', not 'refund_policy'",
        ),
    ),
    "duplicate passage id": (
        lambda r: (r / "evidence.jsonl").write_text(
            (text := (r / "evidence.jsonl").read_text()) + text.splitlines(keepends=True)[0]
        ),
        (
            "evidence.jsonl",
            "demo_content_duplicate",
            "passage id 'pol-ref-01' appears more than once",
        ),
    ),
    "cited passage missing": (
        lambda r: _edit(
            r / "topics" / "refund_policy.yaml",
            "  - pol-ref-02\n  - pol-ref-01\n",
            "  - pol-ref-99\n  - pol-ref-01\n",
        ),
        (
            "topics/refund_policy.yaml",
            "demo_content_unknown_evidence",
            "topic 'late-refund' cites passage 'pol-ref-99', which evidence.jsonl lacks",
        ),
    ),
    "wrong_replaces out of range": (
        lambda r: _edit(
            r / "topics" / "refund_policy.yaml",
            "wrong_replaces: 0\n  extra: It helps",
            "wrong_replaces: 2\n  extra: It helps",
        ),
        (
            "topics/refund_policy.yaml",
            "demo_content_invalid",
            "topic 'late-refund': wrong_replaces 2 names no concept (2 concepts)",
        ),
    ),
    "duplicate YAML key": (
        lambda r: _edit(
            r / "handbook.yaml", "company: Tallowmere\n", "company: Tallowmere\ncompany: Other\n"
        ),
        (
            "handbook.yaml:4",
            "duplicate_yaml_key",
            "found duplicate key 'company' (first on line 3)",
        ),
    ),
    "not JSON": (
        lambda r: _edit(r / "evidence.jsonl", '{"id": "pol-ref-03"', '{id: "pol-ref-03"'),
        ("evidence.jsonl:3", "demo_content_json", ""),
    ),
    "missing topics file": (
        lambda r: (r / "topics" / "escalation_handoff.yaml").unlink(),
        ("topics/escalation_handoff.yaml", "demo_content_missing", ""),
    ),
}


@pytest.mark.parametrize("name", sorted(BREAKAGES))
def test_broken_content_is_refused_with_one_problem(content: Path, name: str) -> None:
    breakage, (location, code, message) = BREAKAGES[name]
    breakage(content)
    problems = _codes(content)
    assert len(problems) == 1, problems
    got_location, got_code, got_message = problems[0]
    assert (got_location, got_code) == (location, code)
    assert got_message.startswith(message), got_message


def test_every_content_file_ships_in_the_wheel() -> None:
    """pyproject's package-data globs cover every content file (so an installed wheel builds the
    demo).
    """
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]["workbench"]
    files = [
        PurePosixPath(p.relative_to(ROOT / "workbench").as_posix())
        for p in PACKAGED.rglob("*")
        if p.is_file()
    ]
    # content (handbook, evidence, phrases, variants, the card's front matter and body), topics,
    # noise
    assert len(files) == 6 + 7 + 5
    uncovered = [
        str(f)
        for f in files
        if not any(f.match(g) or f.match(g.removeprefix("**/")) for g in globs)
    ]
    assert uncovered == []
