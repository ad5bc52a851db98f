"""Judge calibration workbench: proves, or disproves, that an LLM judge agrees with qualified
human reviewers before the judge is allowed to gate a release."""

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
