"""``workbench._startup``: jsonschema's IRI grammar (``rfc3987_syntax``) is built on first use only.

Importing it builds some forty Earley parsers (about a second; several under load), paid in
the certify process by nbformat's jsonschema and again in the kernel by Altair, for ``iri``
format checks neither schema uses. After ``import workbench`` the package is a stand-in until
an ``iri`` is checked, and every check gives the answer the real package gives.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip(
    "rfc3987_syntax", reason="jsonschema[format-nongpl] is not installed: nothing to defer"
)

_CHECKS = [
    ("http://example.com/ä", "iri"),
    ("not an iri", "iri"),
    ("/a/b?c#d", "iri-reference"),
    ("a b", "iri-reference"),
]

_PROBE = """
import json, sys
first = sys.argv[1]
if first == "workbench":
    import workbench
import jsonschema, nbformat
state = {
    "after_import": type(sys.modules["rfc3987_syntax"]).__name__,
    "lark_after_import": "lark" in sys.modules,
}
checker = jsonschema.FormatChecker()
state["answers"] = [checker.conforms(value, fmt) for value, fmt in json.loads(sys.argv[2])]
state["after_check"] = type(sys.modules["rfc3987_syntax"]).__name__
print(json.dumps(state))
"""


def _probe(first: str, **env_vars: str) -> dict:
    env = {**os.environ, "RAGAS_DO_NOT_TRACK": "true", **env_vars}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, first, json.dumps(_CHECKS)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_jsonschema_after_workbench_does_not_build_the_iri_grammar() -> None:
    state = _probe("workbench")
    assert state["after_import"] == "_Deferred"
    assert state["lark_after_import"] is False  # the grammar (lark) was not built by the imports


def test_iri_checks_answer_as_without_the_deferral() -> None:
    deferred, plain = _probe("workbench"), _probe("plain")
    assert plain["after_import"] == "module"  # the reference process loads the real package
    assert deferred["answers"] == plain["answers"] == [True, False, True, False]
    assert deferred["after_check"] == "module"  # the first check replaced the stand-in


def test_the_switch_leaves_the_package_as_it_ships() -> None:
    from workbench._startup import SWITCH

    off = _probe("workbench", **{SWITCH: "0"})
    assert off["after_import"] == "module" and off["lark_after_import"] is True
    assert off["answers"] == [True, False, True, False]


def test_no_stand_in_when_jsonschema_came_first() -> None:
    # The real package is already in use: the stand-in must not replace it.
    code = (
        "import sys, jsonschema; from workbench import _startup;"
        " print(_startup.defer_rfc3987_syntax(), type(sys.modules['rfc3987_syntax']).__name__)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "RAGAS_DO_NOT_TRACK": "true"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "module"]
