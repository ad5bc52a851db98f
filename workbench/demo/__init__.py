"""The project's demo: its synthetic gold dataset (``python -m workbench.demo.build``), noise and
ranking data and the scripted models that answer the demo candidates."""

from ._serve import serve_scripted

__all__ = ["serve_scripted"]
