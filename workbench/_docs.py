"""The docstring under each field of a record, read from the source on demand (pydantic's
``use_attribute_docstrings`` made import 1.18x slower), by pydantic's own rule."""

from __future__ import annotations

import ast
import functools
import inspect
import sys
from typing import Any


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
