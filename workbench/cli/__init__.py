"""The ``workbench`` command line: a thin layer over library functions."""

from .main import main

__all__ = ["main"]
