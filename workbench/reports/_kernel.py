"""A warm certification kernel: forked from the ``workbench certify`` process once the candidate's
judge is built, so the kernel has Ragas, the candidate's judge and the workbench imported already.

Without it the kernel is a new interpreter that imports everything the certify process has just
imported (Ragas alone is about a third of each process's CPU). The seed is forked before the
ledger is touched (it holds no ledger lock, no token; a refused certification discards it) and,
while certify checks its other inputs, opens its ledger entry and copies the inputs, imports what
the notebook uses and starts vl-convert's JavaScript runtime. When papermill starts the kernel, the
seed takes on the environment, directory and arguments the kernel manager gives and runs
ipykernel's launcher, as ``python -m ipykernel_launcher`` would. It is used only for a kernel
spec that runs this interpreter's ``ipykernel_launcher`` and only by the command-line process
(``certify(..., warm_kernel=True)``), never by a library caller's process, which may hold
threads and state a fork must not copy. Everything the kernel does is unchanged: the notebook,
its parameters and token, the kernel manager, the IPC transport, and the checks before and after.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import os
import select
import signal
import sys
import threading
from typing import Any, NoReturn

PRELOAD = (
    "ipykernel.kernelapp",
    "ipykernel.ipkernel",
    "IPython.display",
    "pandas",
    "altair",
    "workbench.reports",
    "workbench.phases",
    "workbench.align",
    "ipykernel.debugger",
    "pandas.io.formats.style",
    "workbench.authority",
    "scipy.stats",
)
"""What the seed imports while certify checks the rest of its inputs, opens the ledger entry and
starts the kernel manager: the notebook's imports, in the order its cells need them (scipy.stats
last: the held-out breakdown's Fisher tests). The seed stops importing once the kernel is
requested, so a preload never delays the kernel: the cells import what is left."""

_WARM_CHART: dict[str, Any] = {
    "data": {"values": [{"x": 0}]},
    "mark": "point",
    "encoding": {"x": {"field": "x", "type": "quantitative"}},
}
"""A one-point chart: drawing it starts vl-convert's JavaScript runtime, which the report's
first chart otherwise waits for (most of that start is outside the interpreter's lock)."""


def native_kernel(kernel_name: str) -> bool:
    """Whether ``kernel_name``'s spec runs this interpreter's ``ipykernel_launcher``."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        argv = KernelSpecManager().get_kernel_spec(kernel_name).argv
    except NoSuchKernel:
        return False
    pythons = {"python", f"python{sys.version_info[0]}", "python{}.{}".format(*sys.version_info)}
    return bool(argv) and (argv[0] in pythons or argv[0] == sys.executable) and _launcher(argv)


def _launcher(argv: list[str]) -> bool:
    return argv[1:3] == ["-m", "ipykernel_launcher"]


class ForkedKernel:
    """The seed once it is the kernel, as the kernel provisioner sees a ``Popen``."""

    stdin = stdout = stderr = None

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            with contextlib.suppress(ChildProcessError):
                pid, status = os.waitpid(self.pid, os.WNOHANG)
                if pid == 0:
                    return None
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int | None:
        if self.returncode is None:
            try:
                _, status = os.waitpid(self.pid, 0)
                self.returncode = os.waitstatus_to_exitcode(status)
            except ChildProcessError:
                self.returncode = 0
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


class KernelSeed:
    """A child of this process waiting to become the notebook's kernel."""

    def __init__(self) -> None:
        read, self._write = os.pipe()
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        try:
            self.pid = os.fork()
        except OSError:
            os.close(read)
            os.close(self._write)
            raise
        if self.pid == 0:
            os.close(self._write)
            _seed(read)  # never returns
        os.close(read)
        self.launched = False

    def accepts(self, kernel_cmd: list[str]) -> bool:
        """Whether ``kernel_cmd`` (formatted by the kernel manager) is this interpreter's
        ``ipykernel_launcher``, the only command the seed can become."""
        return not self.launched and kernel_cmd[:1] == [sys.executable] and _launcher(kernel_cmd)

    def launch(self, kernel_cmd: list[str], env: dict[str, str], cwd: str) -> ForkedKernel:
        """Hand the seed the kernel's arguments, environment and directory."""
        self.launched = True
        request = {"argv": kernel_cmd[3:], "env": {**env, "JPY_PARENT_PID": str(os.getpid())}}
        with os.fdopen(self._write, "w", encoding="utf-8") as pipe:
            json.dump({**request, "cwd": cwd}, pipe)
        return ForkedKernel(self.pid)

    def discard(self) -> None:
        """Stop a seed that was never launched (a refused or failed certification)."""
        if not self.launched:
            self.launched = True
            os.close(self._write)
            with contextlib.suppress(OSError):  # it holds nothing: no need to await its imports
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)


def _take_environment(env: dict[str, str], cwd: str) -> None:
    """Take on ``env`` and ``cwd`` as ``python -m ipykernel_launcher`` started with them would:
    the variables, the working directory first on ``sys.path``, the byte code settings."""
    before = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    path = [p for p in sys.path[1:] if p not in before]
    after = [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:] = [os.getcwd(), *after, *path]
    sys.dont_write_bytecode = bool(env.get("PYTHONDONTWRITEBYTECODE"))
    sys.pycache_prefix = env.get("PYTHONPYCACHEPREFIX") or None
    importlib.invalidate_caches()


def _seed(read: int) -> None:
    """In the forked child: import what the notebook uses, wait for the kernel's arguments (end
    of file: exit), then run ipykernel's launcher. Never returns."""
    code = 1
    try:
        atexit._clear()  # the certify process's exit handlers are not the kernel's
        os.setsid()  # its own session, as the kernel manager starts a kernel
        signal.signal(signal.SIGINT, signal.default_int_handler)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        charts = threading.Thread(target=_warm_charts, daemon=True)
        charts.start()
        for name in PRELOAD:
            if select.select([read], [], [], 0)[0]:  # the kernel is requested (or discarded)
                break
            _preload(name)
        with os.fdopen(read, encoding="utf-8") as pipe:
            data = pipe.read()
        charts.join()  # before the environment changes under it
        if not data:
            code = 0
            return
        request: dict[str, Any] = json.loads(data)
        _take_environment(request["env"], request["cwd"])
        code = _run_kernel(request["argv"])
    finally:
        exit_forked(code)


def exit_forked(code: int) -> NoReturn:
    """End a forked child as an interpreter ends: its exit handlers, its streams flushed, then
    ``os._exit(code)`` (never the parent's teardown, which the fork inherited)."""
    try:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def _preload(name: str) -> None:
    with contextlib.suppress(Exception):  # the kernel imports it again and raises
        importlib.import_module(name)


def _warm_charts() -> None:
    with contextlib.suppress(Exception):  # the report's first chart raises it again
        import vl_convert

        vl_convert.vegalite_to_svg(_WARM_CHART)


def _run_kernel(argv: list[str]) -> int:
    import ipykernel
    from ipykernel import kernelapp

    site = os.path.dirname(os.path.dirname(ipykernel.__file__))
    sys.argv = [os.path.join(site, "ipykernel_launcher.py"), *argv]
    try:
        app: Any = kernelapp.IPKernelApp.instance()  # untyped
        # Read from the environment when ipykernel is imported, which was before the request.
        app.parent_handle = int(os.environ.get("JPY_PARENT_PID") or 0)
        app.interrupt = int(os.environ.get("JPY_INTERRUPT_EVENT") or 0)
        app.initialize()
        app.start()
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    return 0
