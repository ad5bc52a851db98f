"""The ``workbench`` command line: a thin layer over library functions."""

from .main import main, run

__all__ = ["main", "run"]
