"""The docstring under each field of a record, read from the source when it is asked for.

Every record documents its fields the way inspect_ai's do: a string literal under the field::

    class Review(Record):
        reviewer_id: str
        \"\"\"Who reviewed the case.\"\"\"

pydantic's ``use_attribute_docstrings=True`` copies those strings into each field's
``description`` while the class is being built: for each class it walks the stack, tokenizes and
parses the class body twice. Over the ~120 records that made ``import workbench.reports`` 1.18x
slower (0.94 against 0.79 s, ``bench/bench_cli.py --docstrings``) in every process that imports
them (every ``workbench`` command and every certification kernel), for a value only a JSON schema
reads. So the records leave it off, and the docstrings are read here, on demand,
with one parse per module:

- :func:`field_docstrings` gives a class's fields and their docstrings, inherited ones included;
- :func:`add_field_docs` is the records' ``json_schema_extra``: ``Model.model_json_schema()``
  describes each property with its docstring, as ``use_attribute_docstrings`` did.

The rule is pydantic's: a string statement right after an annotated assignment to a name, in the
class body itself (not in a nested class or function), documents that name, after
:func:`inspect.cleandoc`.
"""

from __future__ import annotations

import ast
import functools
import inspect
import sys
from typing import Any

__all__ = ["add_field_docs", "field_docstrings"]


class _Collector(ast.NodeVisitor):
    """Every class of a module by its ``__qualname__``, with its own fields' docstrings."""

    def __init__(self) -> None:
        self.classes: dict[str, dict[str, str]] = {}
        self._prefix: list[str] = []

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        qualname = ".".join([*self._prefix, node.name])
        self.classes[qualname] = _body_docstrings(node.body)
        self._prefix.append(node.name)
        self.generic_visit(node)
        self._prefix.pop()

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._prefix.extend([node.name, "<locals>"])
        self.generic_visit(node)
        del self._prefix[-2:]

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function


def _body_docstrings(body: list[ast.stmt]) -> dict[str, str]:
    docs: dict[str, str] = {}
    for previous, statement in zip(body, body[1:], strict=False):
        if (
            isinstance(previous, ast.AnnAssign)
            and isinstance(previous.target, ast.Name)
            and isinstance(statement, ast.Expr)
            and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, str)
        ):
            docs[previous.target.id] = inspect.cleandoc(statement.value.value)
    return docs


@functools.cache
def _module_classes(module_name: str) -> dict[str, dict[str, str]]:
    module = sys.modules.get(module_name)
    if module is None:
        return {}
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError):  # no source (a frozen or compiled-only module)
        return {}
    collector = _Collector()
    collector.visit(ast.parse(source))
    return collector.classes


def _own_docstrings(cls: type) -> dict[str, str]:
    return _module_classes(cls.__module__).get(cls.__qualname__, {})


def field_docstrings(cls: type) -> dict[str, str]:
    """``{field: docstring}`` for ``cls`` and its bases; a subclass's docstring wins."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass.__module__ != "builtins" and not klass.__module__.startswith("pydantic"):
            docs.update(_own_docstrings(klass))  # pydantic's BaseModel declares no field
    fields = getattr(cls, "model_fields", None)
    return {k: v for k, v in docs.items() if fields is None or k in fields}


def add_field_docs(schema: dict[str, Any], cls: type) -> None:
    """``json_schema_extra`` of the records: each property without a description gets its
    field's docstring (properties are named by alias where the field has one)."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return
    fields = getattr(cls, "model_fields", {})
    for name, doc in field_docstrings(cls).items():
        info = fields.get(name)
        key = info.alias if info is not None and info.alias and info.alias in properties else name
        prop = properties.get(key)
        if isinstance(prop, dict) and "description" not in prop:
            prop["description"] = doc
