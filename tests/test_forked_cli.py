"""tests/_forked_cli.py: a forked ``python -m workbench`` behaves as a new interpreter's would.

The reference is the real thing: the same command run with :mod:`subprocess` gives the same
exit code, stdout and stderr. The rest checks what the suite's tests rely on: the child's own
environment and working directory, output that never reaches the test process's streams, a
process that can be killed, a timeout that kills and reaps it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import _forked_cli
import pytest
from conftest import make_case, write_dataset

WORKBENCH = [sys.executable, "-m", "workbench"]


def _bad_gold(tmp_path: Path) -> Path:
    """A gold with a line that is not JSON and a case with an unknown slice: two problems."""
    return write_dataset(
        tmp_path / "gold", [make_case("a"), "{not json", make_case("b", slice="nowhere")]
    )


@pytest.mark.parametrize(
    ("module", "args"),
    [
        ("workbench", ["validate", "GOLD"]),  # a refusal: every problem, exit 2
        ("workbench.cli.main", ["validate", "--no-such-option"]),  # click's usage error
    ],
)
def test_a_refusal_matches_a_new_interpreter_exactly(
    tmp_path: Path, module: str, args: list[str]
) -> None:
    gold = _bad_gold(tmp_path)
    command = [sys.executable, "-m", module, *(str(gold) if a == "GOLD" else a for a in args)]
    real = subprocess.run(command, capture_output=True, text=True, timeout=300)
    forked = _forked_cli.run(command, timeout=300)
    assert real.returncode == 2 and real.stderr, real  # the reference refuses
    # `python -m workbench.cli.main` warns that runpy found the module imported by its package:
    # an artefact of starting that way, which a fork (no runpy) does not repeat
    runpy = "<frozen runpy>:128: RuntimeWarning: 'workbench.cli.main' found in sys.modules"
    expected = "".join(
        line for line in real.stderr.splitlines(keepends=True) if not line.startswith(runpy)
    )
    assert (forked.returncode, forked.stdout, forked.stderr) == (
        real.returncode,
        real.stdout,
        expected,
    )
    assert forked.args == command and "Traceback" not in forked.stderr


def test_the_child_has_its_own_environment_directory_and_streams(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write_dataset(tmp_path / "gold", [make_case("a"), make_case("b", label="fail")])
    monkeypatch.setenv("FORKED_CLI_PROBE", "parent")
    before = (os.getcwd(), dict(os.environ))
    # a path relative to the child's directory only; an environment without the probe
    env = {k: v for k, v in os.environ.items() if k != "FORKED_CLI_PROBE"}
    done = _forked_cli.run([*WORKBENCH, "validate", "gold"], cwd=tmp_path, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() and done.stderr == ""
    assert (os.getcwd(), dict(os.environ)) == before  # the parent's are untouched
    assert capfd.readouterr() == ("", "")  # nothing reached the test process's streams
    missing = _forked_cli.run([*WORKBENCH, "validate", "gold"], timeout=300)  # the parent's cwd
    assert missing.returncode == 2 and "gold" in missing.stderr


def test_a_forked_command_is_a_process_that_can_be_killed_or_timed_out() -> None:
    with _forked_cli.Popen([*WORKBENCH, "fake-llm", "--port", "0"]) as server:  # serves forever
        time.sleep(0.2)
        assert server.poll() is None and server.pid != os.getpid()
        server.kill()
        assert server.wait(timeout=60) == -9
    late = _forked_cli.Popen([*WORKBENCH, "fake-llm", "--port", "0"])
    with pytest.raises(subprocess.TimeoutExpired):
        late.communicate(timeout=0.3)
    assert late.returncode == -9
    with pytest.raises(ChildProcessError):  # killed and reaped: no child left behind
        os.waitpid(late.pid, os.WNOHANG)


def test_only_workbench_commands_are_forked() -> None:
    with pytest.raises(ValueError, match="not a `python -m workbench` command"):
        _forked_cli.run(["bash", "-c", "true"])
