"""Importers: any table (``import_table``, ``gold_from_dataframe``) and public human-judgment
datasets into the gold format."""

from ._registry import (
    Importer,
    ImportSummary,
    available_importers,
    get_importer,
    register_importer,
    run_importer,
)
from ._results import ResultsImport, import_results
from ._results_mapping import (
    JudgeDeclaration,
    ResultsMapping,
    ScoreThreshold,
    command_line_options,
)
from ._results_table import (
    ImportedResults,
    results_from_dataframe,
    results_from_ragas,
    results_from_table,
)
from .evalsbench import import_evalsbench
from .llmbar import import_llmbar
from .pandalm import import_pandalm
from .table import TableImport, TableMapping, gold_from_dataframe, import_table, load_mapping

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
    "TableImport",
    "TableMapping",
    "available_importers",
    "command_line_options",
    "get_importer",
    "gold_from_dataframe",
    "import_evalsbench",
    "import_llmbar",
    "import_pandalm",
    "import_results",
    "import_table",
    "load_mapping",
    "register_importer",
    "run_importer",
]
