"""The processes the workbench owns (``workbench._startup``).

The ``workbench`` command and the kernels certification starts collect garbage as batch
processes (``BATCH_GC_THRESHOLDS``); importing the library changes nothing in the importing
process. A finished command that loaded pyarrow ends without native teardown: a C++ destructor
that aborts at exit (as Arrow's thread pool can, apache/arrow#34314) is registered with the C
library in the child, and the command's exit code, output and ``atexit`` handlers survive it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import nbformat
import papermill
import pytest
from _fresh import run_fresh
from conftest import make_case, make_result, write_results
from lineage_support import stamped

from workbench._startup import BATCH_GC_THRESHOLDS, batch_kernel_command
from workbench.reports._kernel import kernel_manager_class


def test_the_thresholds_collect_less_often_with_cpythons_ratios() -> None:
    young, middle, old = BATCH_GC_THRESHOLDS
    assert young > 700 and (middle, old) == (10, 10)  # CPython 3.11: (700, 10, 10)


def test_importing_the_library_and_its_cli_leaves_the_collector_alone() -> None:
    out = run_fresh(
        "import gc, json; before = gc.get_threshold()\n"
        "import workbench, workbench.cli, workbench.reports\n"
        "print(json.dumps([before, gc.get_threshold()]))"
    )
    before, after = json.loads(out)
    assert after == before and tuple(after) != BATCH_GC_THRESHOLDS


def test_the_workbench_command_runs_as_a_batch_process() -> None:
    out = run_fresh(
        "import gc, json, sys\n"
        "from workbench.cli import run\n"
        "sys.argv = ['workbench', '--version']\n"
        "try:\n    run()\nexcept SystemExit as stop:\n"
        "    print(json.dumps([stop.code, gc.get_threshold()]))"
    )
    code, thresholds = json.loads(out.splitlines()[-1])
    assert code in (0, None) and tuple(thresholds) == BATCH_GC_THRESHOLDS
    assert "workbench, version " in out  # the command itself ran
    (script,) = entry_points(group="console_scripts", name="workbench")
    assert script.value == "workbench.cli:run"  # what `pip install` writes as the command
    main_module = Path(__file__).resolve().parents[1] / "workbench" / "__main__.py"
    assert "run()" in main_module.read_text(encoding="utf-8")  # python -m workbench too


def test_only_the_standard_kernel_launcher_is_wrapped() -> None:
    standard = ["/env/bin/python", "-m", "ipykernel_launcher", "-f", "/tmp/k.json"]
    wrapped = batch_kernel_command(standard)
    assert wrapped[0] == "/env/bin/python" and wrapped[1] == "-c" and wrapped[3:] == standard[3:]
    assert "gc.set_threshold({}, {}, {})".format(*BATCH_GC_THRESHOLDS) in wrapped[2]
    assert "run_module('ipykernel_launcher', run_name='__main__', alter_sys=True)" in wrapped[2]
    for other in (
        ["/env/bin/python", "-m", "other_kernel", "-f", "/tmp/k.json"],
        ["/usr/bin/julia", "-i", "kernel.jl", "/tmp/k.json"],
        ["python"],
    ):
        assert batch_kernel_command(other) == other


@pytest.mark.notebook
def test_a_certification_kernel_is_a_batch_process_started_as_the_launcher_starts_it(
    tmp_path: Path,
) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "import gc, json, sys\n"
            "print(json.dumps({'thresholds': gc.get_threshold(), 'argv0': sys.argv[0]}))"
        )
    ]
    source, out = tmp_path / "probe.ipynb", tmp_path / "out.ipynb"
    nbformat.write(nb, source)
    with kernel_manager_class() as manager:
        papermill.execute_notebook(
            str(source),
            str(out),
            kernel_manager_class=manager,  # type: ignore[arg-type]
            progress_bar=False,
            kernel_name="python3",
        )
    (cell,) = nbformat.read(out, as_version=4).cells
    seen = json.loads(cell.outputs[0]["text"])
    assert tuple(seen["thresholds"]) == BATCH_GC_THRESHOLDS
    assert seen["argv0"].endswith("ipykernel_launcher.py")  # as `python -m ipykernel_launcher`


# The child registers C's abort() as an exit handler with the C library (__cxa_atexit, which
# C++ destructors use): a process that ends through C's exit() dies with SIGABRT after its work,
# as Arrow's teardown sometimes does; one that ends with os._exit does not run it.
_ABORT_AT_NATIVE_EXIT = """
import atexit, ctypes, sys
libc = ctypes.CDLL(None)
assert libc.__cxa_atexit(ctypes.cast(libc.abort, ctypes.c_void_p), None, None) == 0
atexit.register(lambda: print("atexit handler ran", flush=True))
mode, *args = sys.argv[1:]
if mode == "plain":  # what the command did before: Python's normal exit
    import pyarrow.compute
    print("plain exit", flush=True)
    sys.exit(0)
sys.argv = ["workbench", *args]
from workbench.cli import run
run()
"""


def _command_with_an_aborting_native_destructor(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _ABORT_AT_NATIVE_EXIT, *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_probe_reproduces_an_abort_at_exit() -> None:
    plain = _command_with_an_aborting_native_destructor("plain")
    assert plain.returncode == -6, (plain.returncode, plain.stderr[-2000:])  # SIGABRT
    assert "plain exit" in plain.stdout and "atexit handler ran" in plain.stdout


def test_a_finished_command_that_loaded_pyarrow_ends_without_native_teardown(
    make_dataset, tmp_path: Path
) -> None:
    cases = [make_case("a", "pass"), make_case("b", "fail"), make_case("c", "fail")]
    ds = make_dataset(cases)
    results = write_results(
        tmp_path / "r.jsonl",
        stamped([make_result(c, "fail") for c in cases], ds),
    )
    done = _command_with_an_aborting_native_destructor(
        "cli", "align", "--gold", str(ds), "--results", str(results), "--json"
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    report, handler, _ = done.stdout.rsplit("\n", 2)  # the JSON, the handler's line, ""
    assert json.loads(report)["overall"]["false_passes"] == 0 and handler == "atexit handler ran"
    # an error exit keeps its code (2: invalid input), its message and the handlers
    broken = write_results(tmp_path / "broken.jsonl", [*stamped([make_result(cases[0])], ds), "{"])
    refused = _command_with_an_aborting_native_destructor(
        "cli", "align", "--gold", str(ds), "--results", str(broken)
    )
    assert refused.returncode == 2, (refused.returncode, refused.stderr[-2000:])
    assert "broken.jsonl:2" in refused.stderr and "Traceback" not in refused.stderr
    assert refused.stdout.strip().endswith("atexit handler ran")
