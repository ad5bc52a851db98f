"""``python -m workbench ...`` as a forked copy of the test process: a process of its own, without
a new interpreter's imports.

A ``workbench`` command started with :mod:`subprocess` spends 1-3 s of CPU importing Python,
click, pandas, pydantic, Ragas... before it does anything; the test process has imported all of
that already. :func:`run` and :class:`Popen` fork the test process instead, and the child runs
``workbench.cli``'s entry point as ``python -m workbench`` would:

* its own process: its pid, exit code, signals (a test may kill it), its own open files and
  locks (``fcntl`` locks belong to the process: two forked commands race as two processes do);
* its own standard streams: stdin from ``/dev/null``, stdout and stderr
  written to files the parent reads when the child has exited (no pipe to fill);
* its own environment and working directory, set before the command runs, and ``sys.argv``;
* what a test process changed that a new interpreter would not have is undone first: pytest's
  log handlers and warning filters (Python's defaults again), the exit handlers registered by the
  test process (its own run at exit, as an interpreter runs them), signal dispositions.

What a forked command does *not* have is a fresh interpreter: modules the test process imported
stay imported, with what they read from the environment at import. So tests of start-up, of
what a command imports, of packaging and entry points (``.venv/bin/workbench``, ``python -m
workbench`` itself) keep :mod:`subprocess`; a test whose claim is a command's behaviour (exit
code, output, files, locks, a kill) can use this.
"""

from __future__ import annotations

import atexit
import gc
import io
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from workbench.reports._kernel import ForkedKernel, exit_forked

MODULES = ("workbench", "workbench.cli.main")
"""``python -m MODULE`` commands a forked run stands for (both run ``workbench.cli.run``); the
rest of the argument list is ``workbench``'s."""
_RESET_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGCHLD)


def _module(args: list[str]) -> str:
    if args[:2] != [sys.executable, "-m"] or len(args) < 3 or args[2] not in MODULES:
        raise ValueError(f"not a `python -m workbench` command: {args[:3]}")
    return args[2]


def _standard_stream(fd: int, *, line_buffering: bool, errors: str) -> io.TextIOWrapper:
    """A text stream on ``fd`` as a new interpreter makes one (not a tty: block buffered,
    except stderr, which is line buffered and escapes what it cannot encode)."""
    return io.TextIOWrapper(
        io.FileIO(fd, "rb" if fd == 0 else "wb", closefd=False),
        encoding="utf-8",
        errors=errors,
        line_buffering=line_buffering,
        write_through=line_buffering,
    )


def _fresh_process_state(
    env: Mapping[str, str], cwd: str | None, fds: tuple[int, int, int]
) -> None:
    """In the child: the streams, environment, directory, signals, exit handlers, logging and
    warning filters a new ``python -m workbench`` starts with."""
    gc.freeze()  # the test process's objects are never collected (nor finalized) here
    atexit._clear()  # the test process's exit handlers are not the command's
    for signum in _RESET_SIGNALS:
        signal.signal(
            signum, signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL
        )
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    sys.stdin = sys.__stdin__ = _standard_stream(0, line_buffering=False, errors="strict")
    sys.stdout = sys.__stdout__ = _standard_stream(1, line_buffering=False, errors="strict")
    sys.stderr = sys.__stderr__ = _standard_stream(
        2, line_buffering=True, errors="backslashreplace"
    )
    os.environ.clear()
    os.environ.update(env)
    if cwd is not None:
        os.chdir(cwd)
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    root.setLevel(logging.WARNING)
    logging.disable(logging.NOTSET)
    warnings.resetwarnings()  # Python's default filters, as in a new interpreter
    warnings.showwarning = warnings._showwarning_orig  # type: ignore[attr-defined]
    for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
        warnings.simplefilter("ignore", category)
    warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")


def _exit_code(stop: SystemExit) -> int:
    if stop.code is None:
        return 0
    if isinstance(stop.code, int):
        return stop.code
    print(stop.code, file=sys.stderr)  # as the interpreter does with sys.exit("message")
    return 1


def _child(
    args: list[str],
    env: Mapping[str, str],
    cwd: str | None,
    fds: tuple[int, int, int],
    new_session: bool,
) -> NoReturn:
    code = 1
    try:
        if new_session:
            os.setsid()
        _fresh_process_state(env, cwd, fds)
        module = _module(args)
        path = Path(__file__).resolve().parents[1] / module.replace(".", "/")
        script = path / "__main__.py" if path.is_dir() else path.with_suffix(".py")
        sys.argv = [str(script), *args[3:]]
        from workbench.cli import main

        try:
            # run() is main(); click names the program from ``__main__``, which is the test
            # process's here: the name it gives ``python -m MODULE`` is passed instead.
            main(prog_name=f"python -m {module}")
            code = 0
        except SystemExit as stop:
            code = _exit_code(stop)
        except BaseException:  # as the interpreter reports an uncaught exception
            traceback.print_exc()
            code = 1
    finally:
        exit_forked(code)


class Popen(ForkedKernel):
    """A forked ``python -m workbench`` command, used like :class:`subprocess.Popen` (the methods
    the suite's tests call: ``pid``, ``poll``, ``wait``, ``communicate``, ``send_signal``,
    ``terminate``, ``kill``, ``returncode``; ``poll`` and the signals are the certify kernel's
    stand-in's, :class:`workbench.reports._kernel.ForkedKernel`). Its stdout and stderr are
    files read by :meth:`communicate` (text, or bytes with ``text=False``)."""

    def __init__(
        self,
        command: Sequence[str | os.PathLike[str]],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        text: bool = True,
        stdout: int | None = subprocess.PIPE,
        stderr: int | None = subprocess.PIPE,
        start_new_session: bool = False,
    ) -> None:
        self.args = [os.fspath(part) for part in command]
        _module(self.args)
        self.text = text
        # DEVNULL discards a stream; anything else is captured for communicate()
        self._out = tempfile.TemporaryFile()  # noqa: SIM115 (read and closed by communicate)
        self._err = tempfile.TemporaryFile()  # noqa: SIM115
        environment = dict(os.environ if env is None else env)
        directory = None if cwd is None else os.fspath(cwd)
        sys.stdout.flush()
        sys.stderr.flush()
        null = os.open(os.devnull, os.O_RDWR)
        fds = (
            null,
            null if stdout == subprocess.DEVNULL else self._out.fileno(),
            null if stderr == subprocess.DEVNULL else self._err.fileno(),
        )
        try:
            pid = os.fork()
            if pid == 0:  # the child never returns
                _child(self.args, environment, directory, fds, start_new_session)
        finally:
            os.close(null)
        super().__init__(pid)

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = 0.0005
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
        assert self.returncode is not None
        return self.returncode

    def _read(self, stream: Any) -> str | bytes:
        stream.seek(0)
        data: bytes = stream.read()
        stream.close()
        return data.decode("utf-8", errors="replace") if self.text else data

    def communicate(self, timeout: float | None = None) -> tuple[Any, Any]:
        """Wait for the command (killed on ``timeout``, as :func:`subprocess.run` does) and
        return its stdout and stderr."""
        try:
            self.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            self.wait()
            raise
        return self._read(self._out), self._read(self._err)

    def __enter__(self) -> Popen:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.poll() is None:
            self.kill()
        self.wait()
        for stream in (self._out, self._err):
            stream.close()


def run(
    command: Sequence[str | os.PathLike[str]],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    text: bool = True,
    capture_output: bool = True,
    timeout: float | None = None,
    check: bool = False,
) -> subprocess.CompletedProcess[Any]:
    """:func:`subprocess.run` of ``[sys.executable, "-m", "workbench", *args]``, by a forked
    command (:class:`Popen`); its output is always captured (``capture_output`` is accepted
    for a drop-in call)."""
    proc = Popen(command, env=env, cwd=cwd, text=text)
    out, err = proc.communicate(timeout=timeout)
    done = subprocess.CompletedProcess(proc.args, proc.wait(), out, err)
    if check:
        done.check_returncode()
    return done
