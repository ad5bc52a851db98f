"""Held-out results must be accounted for by the ledger before anything analyses them: only
results whose sha256 a ``finished`` entry records are accepted."""

from __future__ import annotations

from pathlib import Path

from .._io import iter_jsonl_lines, loads_json
from ..errors import refusal
from ._ledger import HeldOutLedger
from ._location import ledger_path_for


def _result_case_ids(path: Path) -> set[str]:
    if path.is_dir():  # a directory of result shards: every shard's case ids
        from ..results import result_files

        return set().union(*(_result_case_ids(shard) for shard in result_files(path)))
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            column = pq.read_table(path).column("case_id").to_pylist()
        except Exception:  # noqa: BLE001 - unreadable: counted as held-out below (fail closed)
            return {"\0unreadable"}
        return {c for c in column if isinstance(c, str)} or {"\0unreadable"}
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
    """Refuse held-out results that no ``finished`` ledger entry accounts for. ``held_out`` is
    always checked; ``None`` when the results hold a held-out verdict; other partitions never."""
    if partition not in (None, "held_out"):
        return
    from ..results import results_sha256

    results_path = Path(results)
    if not results_path.is_file() and not results_path.is_dir():
        return  # the results reader reports a missing or unreadable file in its own words
    if partition is None:
        from ..gold import gold_index

        held_out_ids = set(gold_index(gold).case_ids("held_out"))
        found = _result_case_ids(results_path)
        if not held_out_ids & found and "\0unreadable" not in found:
            return
    ledger = HeldOutLedger(ledger_path_for(gold))
    digest = results_sha256(results_path)  # of shards: a digest no ledger entry holds
    entries = ledger.entries()  # a damaged ledger cannot account for anything: refused
    if any(
        e.event == "finished" and digest in (e.run_records_sha256, e.baseline_run_records_sha256)
        for e in entries
    ):
        return
    raise refusal(
        "held-out results refused",
        str(results_path),
        "held_out_unaccounted",
        "these results judge held-out cases but no finished certification in the held-out ledger"
        f" ({ledger.path}) recorded them (sha256 {digest[:12]})",
        "held-out data is judged once, by `workbench certify`; analyse the development or"
        " calibration cases with `--partition development` (or `--partition calibration`), or"
        " the run records of a certification report (restricted/run/results.jsonl)",
    )
