"""One way to produce HTML: jinja2 templates through one autoescaping Environment.

A source scan keeps hand-written HTML out of ``workbench/`` (no f-string builds tags, no
module escapes by hand), and every template is rendered here with hostile text: a
``<script>``, an ``<img onerror>`` and quotes that try to leave an attribute.
"""

from __future__ import annotations

import ast
import re
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace as NS
from typing import Any

import pytest

import workbench
from workbench import _html

ROOT = Path(workbench.__file__).resolve().parent
HOSTILE = "<script>alert(1)</script>\"' onmouseover=alert(2) <img src=x onerror=alert(3)>"

# -- the source scan ---------------------------------------------------------------------

_TAGS = (
    "html|head|body|meta|title|style|script|link|div|span|p|a|b|i|u|em|strong|code|pre|br|hr"
    "|ul|ol|li|table|thead|tbody|tr|td|th|caption|details|summary|section|h[1-6]|img|svg|input"
    "|label|select|option|form|button|iframe"
)
HTML_TAG = re.compile(
    rf"</(?:{_TAGS})\s*>"  # a closing tag
    rf"|<(?:{_TAGS})\s[^<>]*=[^<>]*>"  # an opening tag with an attribute
    r"|<(?:br|hr|p|div|ul|ol|li|tr|td|th|pre|code|b|h[1-6])>"  # a bare element
    r"|<!doctype",
    re.IGNORECASE,
)
"""An HTML tag in Python source (``<label>`` or ``<a named team>`` in a message is not one)."""
ESCAPERS = {"html.escape", "escape", "html_lib.escape", "markupsafe.escape", "esc", "e"}
MARKUP_HOME = ROOT / "_html.py"
"""The one module that may mark a string as markup (what templates and renderers produced)."""


def _docstrings(nodes: list[ast.AST]) -> set[int]:
    found: set[int] = set()
    for node in nodes:
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for index, stmt in enumerate(body):
            is_string = isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
            first = index == 0 and isinstance(
                node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
            )
            after_assign = index > 0 and isinstance(body[index - 1], ast.Assign | ast.AnnAssign)
            if is_string and (first or after_assign):
                found.add(id(stmt.value))  # type: ignore[attr-defined]
    return found


def _regex_arguments(nodes: list[ast.AST]) -> set[int]:
    found: set[int] = set()
    for node in nodes:
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "re"
        ):
            for arg in node.args[:1]:
                found.update(id(sub) for sub in ast.walk(arg))
    return found


def hand_written_html(source: str, *, markup_allowed: bool = False) -> list[str]:
    """Every place in ``source`` that builds HTML by hand or escapes by hand."""
    nodes = list(ast.walk(ast.parse(source)))  # walked once: three walks were most of the scan
    skip = _docstrings(nodes) | _regex_arguments(nodes)
    hits: list[str] = []
    for node in nodes:
        if id(node) in skip:
            continue
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.JoinedStr):
            text = "".join(
                v.value
                for v in node.values
                if isinstance(v, ast.Constant) and isinstance(v.value, str)
            )
            if HTML_TAG.search(text):
                skip.update(id(v) for v in node.values)
                hits.append(f"{line}: f-string builds HTML: {text[:60]!r}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if HTML_TAG.search(node.value):
                hits.append(f"{line}: HTML literal: {node.value[:60]!r}")
        elif isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            if name in ESCAPERS:
                hits.append(f"{line}: escapes by hand: {name}()")
            if name in ("Markup", "markupsafe.Markup") and not markup_allowed:
                hits.append(f"{line}: marks a string as markup: {name}()")
        elif isinstance(node, ast.Import) and any(
            a.name in ("html", "markupsafe") for a in node.names
        ):
            hits.append(f"{line}: imports an escaper module")
        elif (
            isinstance(node, ast.ImportFrom)
            and node.module in ("html", "markupsafe")
            and any(a.name == "escape" for a in node.names)
        ):
            hits.append(f"{line}: imports an escaper: from {node.module}")
    return hits


def test_no_module_under_workbench_builds_html_by_hand() -> None:
    found = {
        str(path.relative_to(ROOT)): hits
        for path in sorted(ROOT.rglob("*.py"))
        if (
            hits := hand_written_html(
                path.read_text(encoding="utf-8"), markup_allowed=path == MARKUP_HOME
            )
        )
    }
    assert found == {}


@pytest.mark.parametrize(
    "source",
    [
        'x = f"<b>{name}</b>"',
        "x = f'<span class=\"k\">{name}'",
        "x = ('<div class=\"wb\">' f'{name}')",
        "x = '<p>nothing to review</p>'",
        "import html\ny = html.escape(name)",
        "from html import escape\ny = escape(name)",
        "from markupsafe import Markup\ny = Markup(name)",
        "from markupsafe import escape\ny = escape(name)",
        "x = '<!doctype html>' + body",
    ],
)
def test_the_scan_catches_hand_written_html(source: str) -> None:
    assert hand_written_html(source)


@pytest.mark.parametrize(
    "source",
    [
        "x = f'location <label> in {path}'",
        "x = 'add owner: <a named person or team>'",
        "x = re.compile(r'<script\\b[^>]*>.*?</script\\s*>')",
        "def f():\n    '''Shows <b>bold</b> text.'''",
        "x = f'<candidate label=\"{c}\">'",
    ],
)
def test_the_scan_leaves_other_angle_brackets_alone(source: str) -> None:
    assert hand_written_html(source) == []


# -- one Environment ---------------------------------------------------------------------


def test_one_autoescaping_strict_environment() -> None:
    import jinja2

    env = _html.environment()
    assert env is _html.environment() and env.autoescape is True
    assert env.undefined is jinja2.StrictUndefined
    with pytest.raises(jinja2.UndefinedError):
        env.from_string("{{ missing }}").render()
    assert_escaped(env.from_string("<p title='{{ x }}'>{{ x }}</p>").render(x=HOSTILE), copies=2)


TEMPLATES = {
    "reports/templates": {
        "blockers.html.j2",
        "controls.html.j2",
        "fragments.html.j2",
        "lineage.html.j2",
        "outputs.html.j2",
        "page.html.j2",
        "restricted.html.j2",
        "sections.html.j2",
        "slices.html.j2",
        "summary.html.j2",
        "transitions.html.j2",
    },
    "ui/templates": {"case.html.j2", "transition.html.j2"},
    "phases/templates": {"calibration.html.j2"},
}
"""Every template, by folder: a new one must be added here with a hostile-text test below."""


def test_every_template_is_known_and_names_are_unique() -> None:
    assert set(_html.TEMPLATE_DIRS) == set(TEMPLATES)
    found = {d: {p.name for p in (ROOT / d).glob("*.j2")} for d in _html.TEMPLATE_DIRS}
    assert found == TEMPLATES
    names = [n for group in TEMPLATES.values() for n in group]
    assert len(names) == len(set(names))  # found by file name, so no name twice


# -- hostile text through every new template ---------------------------------------------


def assert_escaped(html: str, *, copies: int = 1) -> None:
    """``HOSTILE`` shows as text ``copies`` times or more; none of it became markup."""
    assert "<script" not in html and "<img" not in html
    assert '" onmouseover' not in html and "' onmouseover" not in html
    assert html.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= copies
    assert html.count("&lt;img src=x onerror=alert(3)&gt;") >= copies


def test_fragments_escape_hostile_text() -> None:
    from workbench.reports._present import blockers_html, key_value_html, outcome_section
    from workbench.reports._render import section_html

    blocker = NS(
        code=HOSTILE, category=HOSTILE, slice=HOSTILE, message=HOSTILE, evidence={HOSTILE: HOSTILE}
    )
    banner = section_html(
        outcome_section("certified", [blocker], candidate=HOSTILE, rerun_reason=HOSTILE)
    )
    assert_escaped(banner, copies=7)
    assert_escaped(key_value_html(HOSTILE, [(HOSTILE, HOSTILE)]), copies=3)
    gate = NS(outcome="review_required", blockers=[], waived=[])
    folded = blockers_html(gate, title=HOSTILE)
    assert_escaped(folded)
    assert '<details class="wb-candidate">' in folded


def test_the_one_report_renderer_escapes_every_section_and_loads_nothing() -> None:
    """Every block a feature's section can use (sections.html.j2), through the one page: hostile
    text stays text, the page has its CSP, no script and nothing from the network."""
    from workbench.reports import Section, external_references, render_document
    from workbench.reports._present import outcome_section
    from workbench.reports._render import table_section

    blocker = NS(code=HOSTILE, category="quality", slice=HOSTILE, message=HOSTILE, evidence={})
    page = render_document(
        HOSTILE,
        [
            outcome_section("quality_failed", [blocker], candidate=HOSTILE),
            Section("facts", {"title": HOSTILE, "rows": [(HOSTILE, HOSTILE)]}),
            table_section(HOSTILE, [HOSTILE], [[HOSTILE]], intro=HOSTILE, note=HOSTILE),
            table_section(HOSTILE, [HOSTILE], [], empty=HOSTILE),
            Section("items", {"title": HOSTILE, "lines": [HOSTILE]}),
        ],
    )
    assert_escaped(page, copies=15)
    assert external_references(page) == [] and "Content-Security-Policy" in page


def test_migration_fragments_and_restricted_page_escape_hostile_text(tmp_path: Path) -> None:
    from workbench.reports._migration import (
        TRANSITIONS_HTML,
        authority_html,
        migration_html,
        write_transitions_html,
    )

    counts = NS(slice=HOSTILE, risk=HOSTILE, cases=1, transitions={"fixed": 1}, verdict_changed=1)
    summary = NS(
        baseline=HOSTILE,
        candidate=HOSTILE,
        cases=1,
        baseline_run_status=HOSTILE,
        baseline_controls=HOSTILE,
        label_mapping_sha256=None,
        reviews=[NS(slice=HOSTILE, accepted=1, rejected=0, unreviewed=0)],
        slices=[counts],
        overall=counts,
    )
    assert_escaped(migration_html(summary), copies=6)
    grant = NS(describe=lambda: HOSTILE)
    assert_escaped(authority_html(grant, NS(describe=lambda: [HOSTILE])), copies=2)
    transition = NS(
        case_id=HOSTILE,
        slice=HOSTILE,
        risk=None,
        human_label=HOSTILE,
        transition=HOSTILE,
        verdict_changed=True,
        needs_review=True,
    )
    row = NS(
        transition=transition,
        old_verdict=HOSTILE,
        new_verdict=HOSTILE,
        review=HOSTILE,
        review_id=HOSTILE,
    )
    write_transitions_html(tmp_path, NS(summary=summary, rows=[row]), report_id=HOSTILE)
    page = (tmp_path / TRANSITIONS_HTML).read_text(encoding="utf-8")
    assert_escaped(page, copies=12)
    assert page.startswith("<!doctype html>")


def test_tables_and_ordinal_section_escape_hostile_footnotes(monkeypatch: Any) -> None:
    from workbench.reports import _tables
    from workbench.reports._tables import Table

    class Styler:
        def to_html(self) -> str:
            return "<table><tr><td>cell</td></tr></table>"

    table = Table(data=[], styler=Styler(), footnotes=[HOSTILE])
    html = table.to_html()
    assert_escaped(html)
    assert "<td>cell</td>" in html  # pandas' own markup passes as is
    monkeypatch.setattr(_tables, "ordinal_tables", lambda report: [table])
    section = _tables.ordinal_section_html(NS(scale="ordinal", scale_labels=[HOSTILE, "b"]))
    assert_escaped(section, copies=2)


def test_notebook_outputs_escape_hostile_text() -> None:
    from workbench.reports._render import _output, add_content_security_policy

    stream = _output({"output_type": "stream", "name": "stderr", "text": [HOSTILE]})
    assert_escaped(stream)
    assert stream.startswith('<pre class="wb-stderr">')
    assert_escaped(_output({"output_type": "error", "ename": HOSTILE, "evalue": HOSTILE}), copies=2)
    assert_escaped(_output({"output_type": "execute_result", "data": {"text/plain": HOSTILE}}))
    png = _output({"output_type": "display_data", "data": {"image/png": HOSTILE}})
    assert_escaped(png.replace('<img alt="chart"', "", 1))  # the template's own img, no other
    assert png.count("<") == 3  # a div, an img, the div closed, the data stays in src
    page = add_content_security_policy("<html><head></head><body></body></html>")
    assert page.count('http-equiv="Content-Security-Policy"') == 1
    assert add_content_security_policy(page) == page  # once only


def test_case_pane_escapes_hostile_text_everywhere() -> None:
    from workbench.ui._render import case_html

    long = (HOSTILE + "\n") * 10
    case = {
        "case_id": HOSTILE,
        "slice": HOSTILE,
        "risk": HOSTILE,
        "partition": HOSTILE,
        "tags": [HOSTILE],
        "error_class": HOSTILE,
        "outcome": "error",
        "error_kind": HOSTILE,
        "error_message": long,
        "human_label": HOSTILE,
        "input": HOSTILE,
        "response": long,
        "grading_notes": HOSTILE,
        "reference": HOSTILE,
        "contexts": [HOSTILE],
        "attempts": HOSTILE,
        "reviews": [
            {
                "reviewer": HOSTILE,
                "label": HOSTILE,
                "confidence": HOSTILE,
                "rationale": HOSTILE,
                "evidence": [HOSTILE],
                "escalate": True,
            },
            {"reviewer": "b", "label": "pass", "rationale": HOSTILE},
        ],
        "adjudication": {"label": HOSTILE, "reason": HOSTILE, "adjudicator": HOSTILE},
        "rendered_request": {
            HOSTILE: HOSTILE,
            "messages": [{"role": HOSTILE, "content": [{"text": HOSTILE}]}],
            "follow_up_requests": [HOSTILE],
        },
    }
    note = NS(cause=HOSTILE, reviewer=HOSTILE, created_at=datetime(2026, 1, 1, tzinfo=UTC))
    html = case_html(case, note)  # type: ignore[arg-type]
    assert_escaped(html, copies=25)
    assert "<details class='wb-more'>" in html and "wb-cls-&lt;script&gt;" in html


def test_transition_form_escapes_hostile_text() -> None:
    pending = NS(
        case_id=HOSTILE,
        slice=HOSTILE,
        human_label=HOSTILE,
        old_verdict=HOSTILE,
        new_verdict=HOSTILE,
        cited=(HOSTILE,),
    )
    done = NS(decision=HOSTILE, reviewer=HOSTILE, evidence_ids=[HOSTILE])
    assert_escaped(str(_html.fragment("transition.html.j2", "detail", pending, done)), copies=8)
    problems = [(HOSTILE, HOSTILE)]
    assert_escaped(str(_html.fragment("transition.html.j2", "problems", problems)), copies=2)
    saved = _html.fragment("transition.html.j2", "saved", HOSTILE, HOSTILE)
    assert_escaped(str(saved), copies=2)


def test_calibration_verdict_escapes_hostile_text() -> None:
    from workbench.phases._calibrate import FrozenThreshold

    for failing in ([], [HOSTILE]):
        frozen = object.__new__(FrozenThreshold)
        values = {
            "judge": NS(spec=NS(label=HOSTILE, threshold=NS(value=0.5))),
            "failing": failing,
            "accepted_failing": True,
            "saved": Path(HOSTILE),
        }
        for name, value in values.items():
            object.__setattr__(frozen, name, value)
        assert_escaped(frozen._repr_html_(), copies=2 + len(failing))
