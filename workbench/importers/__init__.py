"""Importers: converters from public human-judgment datasets into the workbench gold format."""

from ._registry import (
    Importer,
    ImportSummary,
    available_importers,
    get_importer,
    register_importer,
    run_importer,
)
from ._results import ResultsImport, import_results
from ._results_mapping import JudgeDeclaration, ResultsMapping, ScoreThreshold
from ._results_table import (
    ImportedResults,
    results_from_dataframe,
    results_from_ragas,
    results_from_table,
)
from .evalsbench import import_evalsbench
from .llmbar import import_llmbar
from .pandalm import import_pandalm

__all__ = [
    "ImportSummary",
    "ImportedResults",
    "JudgeDeclaration",
    "ResultsMapping",
    "ScoreThreshold",
    "results_from_dataframe",
    "results_from_ragas",
    "results_from_table",
    "ResultsImport",
    "Importer",
    "available_importers",
    "get_importer",
    "import_evalsbench",
    "import_llmbar",
    "import_pandalm",
    "import_results",
    "register_importer",
    "run_importer",
]
