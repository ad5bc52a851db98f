"""One kernel zygote (``_kernel_zygote.py``) per test run: the pytest-xdist controller's, or a
single pytest process's.

Under xdist the controller starts it before the workers (see :func:`configure`); a single
process starts it at its first test marked ``notebook`` or ``browser``. Starting it points
``JUPYTER_PATH`` at a ``python3`` kernel spec whose command is the zygote's client, so every
kernel started from then on (papermill in the test, ``workbench certify`` as a child process,
JupyterLab) is forked from the zygote. Kernels started before it is ready start fresh.
``WORKBENCH_TEST_FRESH_KERNELS=1`` turns it off: every kernel is a fresh interpreter.
``tests/conftest.py`` registers this module as a plugin, which is how pytest finds the hook.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from _kernel_zygote import (
    ENV_FRESH,
    ENV_SOCKET,
    SUPPORTED,
    forked_kernels,
    ready_pid,
    refused_requests,
)

ZYGOTE = Path(__file__).with_name("_kernel_zygote.py")


def kernel_spec(python: str = sys.executable) -> dict[str, object]:
    """ipykernel's own ``python3`` spec with the zygote's client as the command."""
    from ipykernel.kernelspec import get_kernel_dict

    spec = dict(get_kernel_dict())
    spec["argv"] = [python, str(ZYGOTE), "client", "-f", "{connection_file}"]
    return spec


def running(pid: int) -> bool:
    """Whether process ``pid`` runs: neither gone nor a zombie (read from ``/proc`` once: a
    process may be reaped between two reads)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(") ", 1)[1][0] != "Z"


class Zygote:
    """A zygote, its socket and the kernel spec directory that points at it: one this process
    started (:meth:`start`), or this run's, which another process may have started
    (:meth:`of_this_run`)."""

    def __init__(self, home: Path, process: subprocess.Popen[bytes] | None = None) -> None:
        self.home = home
        self.socket = home / "zygote.sock"
        self.log = home / "zygote.log"
        self.process = process
        """The zygote's process, when this process started it (and stops it)."""

    @classmethod
    def start(cls) -> Zygote:
        # Short: a Unix socket path is limited to about 100 bytes.
        home = Path(tempfile.mkdtemp(prefix="wbz-", dir="/tmp" if Path("/tmp").is_dir() else None))
        spec_dir = home / "kernels" / "python3"
        spec_dir.mkdir(parents=True)
        (spec_dir / "kernel.json").write_text(json.dumps(kernel_spec(), indent=1), "utf-8")
        zygote = cls(home)
        with zygote.log.open("wb") as log:
            zygote.process = subprocess.Popen(
                [sys.executable, str(ZYGOTE), "serve", str(zygote.socket)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=home,
            )
        return zygote

    @classmethod
    def of_this_run(cls) -> Zygote | None:
        """The zygote this process's kernels come from (its variables are in ``os.environ``:
        the xdist controller's, or this process's own), or None."""
        sock = os.environ.get(ENV_SOCKET)
        return cls(Path(sock).parent) if sock else None

    def environment(self) -> dict[str, str]:
        """The variables that make kernels started with them come from this zygote."""
        jupyter_path = os.pathsep.join(
            p for p in (str(self.home), os.environ.get("JUPYTER_PATH", "")) if p
        )
        return {"JUPYTER_PATH": jupyter_path, ENV_SOCKET: str(self.socket)}

    def _log(self) -> str:
        try:
            return self.log.read_text("utf-8", errors="replace")
        except OSError:
            return ""

    def pid(self) -> int | None:
        """The zygote's pid: its process's, or the one its log gave once it was ready."""
        if self.process is not None:
            return self.process.pid
        return ready_pid(self._log())

    def running(self) -> bool:
        """Whether the zygote is still running (not exited, not a zombie)."""
        if self.process is not None:
            return self.process.poll() is None
        pid = self.pid()
        return pid is not None and running(pid)

    def wait_ready(self, timeout_s: float = 120.0) -> None:
        deadline = time.monotonic() + timeout_s
        while not self.socket.exists():
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"the kernel zygote exited: {self._log()}")
            if time.monotonic() > deadline:
                raise TimeoutError("the kernel zygote was not ready in time")
            time.sleep(0.1)

    def forked(self, test: str | None = None) -> list[tuple[int, int]]:
        """(kernel pid, client pid) of every kernel forked so far, from the zygote's log; with
        ``test``, those forked for that test node id."""
        return [
            (kernel, client)
            for kernel, client, for_test in forked_kernels(self._log())
            if test is None or for_test == test
        ]

    def refused(self) -> list[str]:
        """The reason of every request the zygote refused so far, from its log."""
        return refused_requests(self._log())

    def kernel_of(self, client: int) -> int:
        """The pid of the kernel forked for the client ``client``."""
        return {c: k for k, c in self.forked()}[client]

    def stop(self) -> None:
        """Stop the zygote, if this process started it, and remove its directory."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        shutil.rmtree(self.home, ignore_errors=True)


_session: list[Zygote | None] = []


def session_zygote() -> Zygote | None:
    """This process's zygote, started at the first call, its variables set in ``os.environ``
    (so child processes inherit them). None with ``WORKBENCH_TEST_FRESH_KERNELS=1``, where
    forking is not supported (not Linux), or when this process inherited the variables of one
    (an xdist worker of a controller that started it)."""
    if not _session:
        wanted = SUPPORTED and os.environ.get(ENV_FRESH) != "1" and not os.environ.get(ENV_SOCKET)
        try:
            zygote = Zygote.start() if wanted else None
        except OSError as exc:  # no temporary directory or no process: kernels start fresh
            print(f"kernel zygote not started ({exc}): kernels start fresh", file=sys.stderr)
            zygote = None
        if zygote is not None:
            os.environ.update(zygote.environment())
            atexit.register(zygote.stop)
        _session.append(zygote)
    return _session[0]


def inherited_environment() -> dict[str, str]:
    """The variables that give a child process started with a cleaned environment (JupyterLab's,
    without the developer's ``JUPYTER*``) this run's forked kernels: the zygote's kernel spec
    directory alone on ``JUPYTER_PATH``, and its socket. Empty when the run has no zygote."""
    zygote = Zygote.of_this_run()
    if zygote is None:
        return {}
    return {"JUPYTER_PATH": str(zygote.home), ENV_SOCKET: str(zygote.socket)}


def kernels_forked_for(nodeid: str) -> int:
    """How many kernels this run's zygote forked for the test ``nodeid``: those whose client had
    it in ``PYTEST_CURRENT_TEST``, whichever process started them (papermill in the test, or a
    ``workbench certify`` the test ran as a child process). 0 without a zygote."""
    zygote = Zygote.of_this_run()
    return len(zygote.forked(nodeid)) if zygote is not None else 0


def may_select_kernels(markexpr: str) -> bool:
    """Whether ``-m markexpr`` can select a test marked ``notebook`` or ``browser``."""
    if not markexpr:
        return True
    from _pytest.mark.expression import Expression

    expression = Expression.compile(markexpr)
    return any(
        expression.evaluate(lambda name, marks=marks, **_: name in marks)
        for marks in ({"notebook"}, {"browser"}, {"notebook", "browser"})
    )


def configure(config: pytest.Config) -> None:
    """Under pytest-xdist the controller starts the one zygote, before its workers start (they
    inherit its variables), if the run can select a notebook or browser test; a single process
    starts its own at its first such test."""
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        return
    if may_select_kernels(config.option.markexpr or ""):
        session_zygote()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("notebook") or item.get_closest_marker("browser"):
        session_zygote()
