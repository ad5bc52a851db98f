"""Judge calibration workbench.

Proves, or disproves, that an LLM judge agrees with qualified human reviewers before the
judge is allowed to gate a release.

Public subpackages, one concept each:

- :mod:`workbench.gold`: gold datasets, rubric, validation, corrections, dataset cards.
- :mod:`workbench.agreement`: human-human agreement.
- :mod:`workbench.results`: the judge-result contract every judge kind writes.
- :mod:`workbench.align`: joining judge results to gold and the alignment statistics.
- :mod:`workbench.judges`: judge candidates, their fingerprints and the registry of kinds.
- :mod:`workbench.runs`: the run engine that executes a candidate over a partition.
- :mod:`workbench.importers`: converters from public datasets into the gold format.
- :mod:`workbench.stats`: interval and agreement statistics.
"""

import os

from . import _startup

# Ragas posts telemetry on many calls unless told not to. This must be set before any
# module of the package imports ragas, so it lives in the package root.
os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")

# jsonschema (under papermill, nbconvert and Altair) would build an IRI grammar nothing here
# uses, about a second per process: it is built on first use instead (see workbench._startup).
_startup.defer_rfc3987_syntax()

__version__ = "0.1.0"

__all__ = ["__version__"]
