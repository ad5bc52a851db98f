"""``make lint``'s size rules (bench/code_size.py --check): no function over 80 lines but those
on the ratchet list, which may only shrink; and the package's figures for the issue's note."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("code_size", ROOT / "bench" / "code_size.py")
assert _spec is not None and _spec.loader is not None
code_size = importlib.util.module_from_spec(_spec)
sys.modules["code_size"] = code_size
_spec.loader.exec_module(code_size)


def _package(tmp_path: Path, body_lines: int) -> Path:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    body = "".join(f"    x{i} = {i}\n" for i in range(body_lines - 1))
    (pkg / "m.py").write_text(
        f"def long():\n{body}\n\nclass C:\n    def short(self):\n        return 1\n",
        encoding="utf-8",
    )
    return pkg


def test_a_long_function_fails_unless_the_ratchet_lists_it(tmp_path: Path) -> None:
    pkg = _package(tmp_path, 81)
    assert code_size.function_sizes(pkg) == {"pkg/m.py:long": 81, "pkg/m.py:C.short": 2}
    (problem,) = code_size.check(pkg, {})
    assert "pkg/m.py:long has 81 lines (limit 80)" in problem
    assert code_size.check(pkg, {"pkg/m.py:long": 81}) == []
    (grew,) = code_size.check(pkg, {"pkg/m.py:long": 85 - 5})
    assert "grew from 80 to 81" in grew


def test_the_ratchet_only_shrinks(tmp_path: Path) -> None:
    pkg = _package(tmp_path, 40)
    (stale,) = code_size.check(pkg, {"pkg/m.py:long": 90})
    assert "is 40 lines now: take it off" in stale
    (gone,) = code_size.check(pkg, {"pkg/m.py:gone": 90})
    assert "pkg/m.py:gone is gone" in gone


def test_the_ratchet_file_parses_and_the_package_meets_it() -> None:
    ratchet = code_size.read_ratchet()
    assert all(lines > code_size.MAX_FUNCTION_LINES for lines in ratchet.values())
    assert code_size.check(ROOT / "workbench", ratchet) == []
