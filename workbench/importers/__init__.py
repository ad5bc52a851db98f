"""Importers: any table (``import_table``, ``gold_from_dataframe``) and public human-judgment
datasets into the gold format."""

from ._registry import ImportSummary, available_importers, get_importer, run_importer
from ._results import import_results
from ._results_mapping import JudgeDeclaration, ResultsMapping, ScoreThreshold, command_line_options
from ._results_table import results_from_dataframe, results_from_ragas, results_from_table
from .evalsbench import import_evalsbench
from .llmbar import import_llmbar
from .pandalm import import_pandalm
from .table import TableMapping, gold_from_dataframe, import_table, load_mapping

__all__ = [
    "ImportSummary",
    "JudgeDeclaration",
    "ResultsMapping",
    "ScoreThreshold",
    "results_from_dataframe",
    "results_from_ragas",
    "results_from_table",
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
    "run_importer",
]
