"""Importers: converters from public human-judgment datasets into the workbench gold format."""

from ._registry import (
    Importer,
    ImportSummary,
    available_importers,
    get_importer,
    register_importer,
    run_importer,
)
from .evalsbench import import_evalsbench
from .llmbar import import_llmbar
from .pandalm import import_pandalm

__all__ = [
    "ImportSummary",
    "Importer",
    "available_importers",
    "get_importer",
    "import_evalsbench",
    "import_llmbar",
    "import_pandalm",
    "register_importer",
    "run_importer",
]
