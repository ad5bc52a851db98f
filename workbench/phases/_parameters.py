"""A notebook's parameters checked: papermill only warns about a parameter the notebook does not
declare, and the notebook then runs on its default (a typo in ``-p polcy ...`` certifies nothing
it was asked to)."""

from __future__ import annotations

import ast
import difflib
from collections.abc import Sequence

from ..errors import WorkbenchError, problem

MARK = "# Parameters"
"""How the notebook's parameters cell, and the cell papermill injects after it, begin."""


def _assigned(source: str) -> set[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    return {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name)
    }


def unknown_parameters(cells: Sequence[str]) -> list[tuple[str, str | None]]:
    """``(name, closest declared name)`` of every name an injected parameters cell sets that the
    notebook's own parameters cell (the first of ``cells`` starting with :data:`MARK`) does
    not."""
    marked = [c for c in cells if c.lstrip().startswith(MARK)]
    if len(marked) < 2:
        return []
    declared = _assigned(marked[0])
    injected = set().union(*(_assigned(c) for c in marked[1:])) - declared
    return [
        (n, next(iter(difflib.get_close_matches(n, declared, n=1)), None)) for n in sorted(injected)
    ]


def check_parameters() -> None:
    """In a notebook run by papermill: refuse (:class:`WorkbenchError`, shown without a
    traceback) a parameter the notebook does not declare, with the name it probably meant."""
    try:
        from IPython import get_ipython
    except ImportError:  # not in IPython: nothing was injected
        return
    shell = get_ipython()
    history = shell.user_ns.get("In", []) if shell is not None else []
    unknown = unknown_parameters([c for c in history if isinstance(c, str)])
    if unknown:
        raise WorkbenchError(
            f"{len(unknown)} unknown notebook parameter(s)",
            [
                problem(
                    f"-p {name}",
                    "unknown_parameter",
                    f"the notebook has no parameter {name!r}; it would run on its defaults",
                    f"did you mean -p {near} ...?"
                    if near
                    else "see the notebook's parameters cell",
                )
                for name, near in unknown
            ],
        )
