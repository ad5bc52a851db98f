"""Held-out results must be accounted for by the ledger before anything analyses them.

Judging the held-out partition outside ``workbench certify`` (an imported file, a hand-run
notebook, a copy of a report's run records with one line changed) would be a second,
unrecorded use. :func:`check_held_out_results` refuses such results: a results file that holds
held-out verdicts is accepted only when its sha256 is the ``run_records_sha256`` of a
``finished`` entry in the dataset's own ledger (found from the gold dataset, never given).
"""

from __future__ import annotations

from pathlib import Path

from .._io import iter_jsonl_lines, loads_json, sha256_file
from ..errors import Problem, WorkbenchError
from ._ledger import HeldOutLedger
from ._location import ledger_path_for


def _result_case_ids(path: Path) -> set[str]:
    ids: set[str] = set()
    # Bounded (a line too long is refused); not-UTF-8 lines are reported by the results reader.
    for _number, line in iter_jsonl_lines(path, []):
        try:
            record = loads_json(line)
        except ValueError:
            continue  # bad lines are reported by the results reader itself
        if isinstance(record, dict) and isinstance(record.get("case_id"), str):
            ids.add(record["case_id"])
    return ids


def check_held_out_results(gold: str | Path, results: str | Path, partition: str | None) -> None:
    """Refuse held-out results that no ``finished`` ledger entry accounts for (exit 2 in the CLI).

    ``partition`` is the partition being analysed: ``held_out`` is always checked; ``None``
    (every partition) is checked when the results hold a verdict for any held-out case;
    development and calibration are not checked.
    """
    if partition not in (None, "held_out"):
        return
    results_path = Path(results)
    if not results_path.is_file():
        return  # the results reader reports a missing or unreadable file in its own words
    if partition is None:
        from ..gold import load_dataset

        held_out_ids = {c.case_id for c in load_dataset(gold).partition("held_out")}
        if not held_out_ids & _result_case_ids(results_path):
            return
    ledger = HeldOutLedger(ledger_path_for(gold))
    digest = sha256_file(results_path)
    entries = ledger.entries()  # a damaged ledger cannot account for anything: refused
    if any(e.event == "finished" and digest in (e.run_records_sha256, e.baseline_run_records_sha256) for e in entries):
        return
    raise WorkbenchError(
        "held-out results refused",
        [
            Problem(
                location=str(results_path),
                code="held_out_unaccounted",
                message=f"these results judge held-out cases but no finished certification in the held-out ledger ({ledger.path}) recorded them (sha256 {digest[:12]})",
                fix="held-out data is judged once, by `workbench certify`; analyse the run records of a certification report (restricted/run/results.jsonl), or use development or calibration",
            )
        ],
    )
