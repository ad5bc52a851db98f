"""Notebook kernels for the test suite, forked from one process that has already imported them.

A notebook kernel spends most of its CPU importing: ipykernel, pandas, Altair, the workbench
and Ragas (the demo judges are Ragas metrics), about 2.5 of its 4 seconds. The suite starts
about forty kernels. Here one *zygote* process per test run (``tests/_kernels.py`` starts it)
imports all of that once and forks a kernel for each request, so a kernel's CPU is the
notebook's own work.

Nothing the notebooks or the workbench do changes: the kernel is a real ``ipykernel`` kernel,
started through the same kernel spec lookup (``python3``), by the same papermill, certification
and JupyterLab code. Only the process that becomes the kernel is made by ``fork`` instead of a
new interpreter:

* the suite puts a ``python3`` kernel spec first on ``JUPYTER_PATH``; its command is this file
  run as a *client* (``python _kernel_zygote.py client -f {connection_file}``);
* the client sends its arguments, environment and working directory, and its standard
  streams, to the zygote over a Unix socket in a private directory; the zygote forks; the child
  takes them on and runs ``ipykernel``'s launcher, as ``python -m ipykernel_launcher`` would;
* the client stays as the kernel's stand-in for the kernel manager: it passes on the signals
  the manager sends (interrupt, terminate) and exits with the kernel's exit status; the kernel
  exits when the client or the kernel manager's process (``JPY_PARENT_PID``, which ipykernel
  itself watches) dies, as a kernel exits when its parent does;
* what ipykernel reads from the environment when it is imported (``JPY_PARENT_PID``,
  ``JPY_INTERRUPT_EVENT``) and what Python reads at start-up (``PYTHONPATH``, the bytecode
  settings) is set again in the child from the client's environment.
* Without a zygote (none started, not ready yet, or ``WORKBENCH_TEST_FRESH_KERNELS=1``) the
  client replaces itself with ``python -m ipykernel_launcher``: a fresh interpreter, as without
  this module.
* vl-convert's runtime (V8, in threads, so it cannot be started before a fork) would start in
  every kernel at its first chart, about 0.9 s of CPU. The zygote's *chart renderer*, a child
  started before the imports, starts it once; a forked kernel's
  ``vl_convert.vegalite_to_svg(spec)`` is converted there and the SVG sent back. Any other
  call, a renderer that does not answer and a conversion that failed run vl-convert in the
  kernel, so errors are its own.
* Some work is paid once per process at first use, not at import: Altair builds its Vega-Lite
  schema validator (about 0.05 s) and the workbench compiles its jinja2 report templates
  (0.06 s for all of them). The zygote does both once
  (:func:`_warm_up`) so the kernels inherit the compiled objects; a warm-up that fails is
  skipped, and each kernel then pays (and reports) it itself.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import selectors
import signal
import socket
import struct
import sys
import threading
from typing import Any

ENV_SOCKET = "WORKBENCH_TEST_KERNEL_ZYGOTE"
ENV_FRESH = "WORKBENCH_TEST_FRESH_KERNELS"
SUPPORTED = sys.platform.startswith("linux") and hasattr(os, "pidfd_open")
"""Forking needs Linux's process file descriptors (``os.pidfd_open``); elsewhere kernels start
fresh."""
FORWARDED_SIGNALS = (
    signal.SIGINT,
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
)

# What the notebooks and the certification import: loaded once, before any fork.
PRELOAD = (
    "ipykernel.kernelapp",
    "ipykernel.ipkernel",
    "ipykernel.zmqshell",
    "IPython",
    "IPython.display",
    "pandas",
    "altair",
    "vl_convert",
    "yaml",
    "workbench.reports",
    "workbench.phases",
    "workbench.judges.demo",
    "workbench.ranking",
    "workbench.noise",
    "workbench.estimate",
    "workbench.planning",
    "workbench.migration",
    "workbench.demo.noise",
    "workbench.demo.ranking",
    # imported by every kernel as it starts (its debugger, IPython's history, inspection)
    "ipykernel.debugger",
    "sqlite3",
    "pdb",
    "IPython.core.debugger",
    "IPython.core.oinspect",
    "IPython.core.completerlib",
    "IPython.extensions.storemagic",
    "tornado.platform.asyncio",
    # imported by the notebooks' cells after the fork (a suite run's kernels listed; each module
    # is in at least 7 of its 41 kernels): frames shown, Altair's data through narwhals, the
    # workbench's authority, repeatability and controls, and an LLM judge's OpenAI client
    "pandas.io.formats.string",
    "pandas.io.formats.style",
    "pandas.core.methods.to_dict",
    "narwhals.stable.v1",
    "narwhals._pandas_like.dataframe",
    "narwhals._pandas_like.namespace",
    "narwhals._interchange.dataframe",
    "workbench.align._sampled",
    "workbench.authority",
    "workbench.controls",
    "workbench.judges._function",
    "workbench.repeatability",
    "workbench.reports._restricted",
    "openai.resources",
    "openai.lib.streaming.chat",
    "httpcore",
    "ragas.llms.adapters",
    # a failed cell's traceback
    "stack_data",
    "pygments.formatters.terminal256",
    # imported by the workbench's statistics when a notebook needs them (1-2 s each)
    "scipy.stats",
    "statsmodels.stats.contingency_tables",
    "statsmodels.stats.proportion",
    "krippendorff",
)

_HEADER = struct.Struct("!I")

READY = "ready: {count} modules preloaded, pid {pid}"
"""The zygote's log line once its socket accepts."""
FORKED = "forked kernel {kernel} for client {client} in {test}"
"""The zygote's log line for each kernel it forks; ``test`` is the client's
``PYTEST_CURRENT_TEST`` (empty outside a test)."""
RENDERER_READY = "chart renderer ready, pid {pid}"
"""The chart renderer's log line once its socket accepts."""
RENDERER = "chart-renderer"
"""The chart renderer's process name (``/proc/PID/comm``); it keeps the zygote's command line."""
REFUSED = "refused a request: {reason}"
"""The zygote's log line for a connection it forked nothing for (a client that hung up, or
sent what is not a request)."""


def forked_kernels(log: str) -> list[tuple[int, int, str]]:
    """(kernel pid, client pid, test node id) of every :data:`FORKED` line in a zygote's log."""
    out = []
    for line in log.splitlines():
        if line.startswith("forked kernel "):
            head, _, test = line.partition(" in ")
            words = head.split()
            out.append((int(words[2]), int(words[5]), test.rsplit(" (", 1)[0]))
    return out


def ready_pid(log: str) -> int | None:
    """The zygote's pid from its :data:`READY` line, or None before it is ready."""
    for line in log.splitlines():
        if line.startswith("ready: ") and ", pid " in line:
            return int(line.rsplit(", pid ", 1)[1])
    return None


def refused_requests(log: str) -> list[str]:
    """The reason of every :data:`REFUSED` line in a zygote's log."""
    prefix = REFUSED.split("{", 1)[0]
    return [line[len(prefix) :] for line in log.splitlines() if line.startswith(prefix)]


def _send_message(
    sock: socket.socket, payload: dict[str, Any], fds: list[int] | None = None
) -> None:
    data = json.dumps(payload).encode()
    blob = _HEADER.pack(len(data)) + data
    if fds:
        sent = socket.send_fds(sock, [blob[:4096]], fds)
        sock.sendall(blob[sent:])
    else:
        sock.sendall(blob)


def _recv_exactly(sock: socket.socket, n: int, first: bytes = b"") -> bytes:
    data = bytearray(first)
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("the other end closed the zygote socket")
        data += chunk
    return bytes(data)


def _recv_message(sock: socket.socket, with_fds: int = 0) -> tuple[dict[str, Any], list[int]]:
    fds: list[int] = []
    if with_fds:
        first, fds, _flags, _addr = socket.recv_fds(sock, 4096, with_fds)
        if not first:
            raise ConnectionError("the client closed the zygote socket")
    else:
        first = b""
    try:
        head = _recv_exactly(sock, _HEADER.size, first[: _HEADER.size])
        (length,) = _HEADER.unpack(head)
        body = _recv_exactly(sock, length, first[_HEADER.size :])
        message = json.loads(body)
        if not isinstance(message, dict):
            raise ValueError("a zygote message is a JSON object")
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return message, fds


def _check_request(request: dict[str, Any], fds: list[int]) -> None:
    """Raise ValueError unless ``request`` is what :func:`client` sends, with its three streams."""
    argv, env = request.get("argv"), request.get("env")
    ok = (
        len(fds) == 3
        and isinstance(argv, list)
        and all(isinstance(a, str) for a in argv)
        and isinstance(env, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
        and isinstance(request.get("cwd"), str)
        and isinstance(request.get("client_pid"), int)
    )
    if not ok:
        raise ValueError("not a kernel request")


# --- the client: the kernel command the kernel manager starts ---------------------------------


def _fresh_kernel(argv: list[str]) -> None:
    os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", *argv])


def client(argv: list[str]) -> int:
    path = os.environ.get(ENV_SOCKET)
    if not path or os.environ.get(ENV_FRESH) == "1":
        _fresh_kernel(argv)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)  # type: ignore[arg-type]
    except OSError:  # no zygote (not ready, or gone): a fresh interpreter
        sock.close()
        _fresh_kernel(argv)
    request = {"argv": argv, "env": dict(os.environ), "cwd": os.getcwd(), "client_pid": os.getpid()}
    try:
        _send_message(sock, request, [0, 1, 2])
        reply, _ = _recv_message(sock)
    except (OSError, ValueError):  # the zygote refused or ended before it forked: start fresh
        sock.close()
        _fresh_kernel(argv)
    child = int(reply["pid"])

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signum)

    for signum in FORWARDED_SIGNALS:
        signal.signal(signum, forward)
    try:
        ended, _ = _recv_message(sock)
    except ConnectionError:  # the zygote died: the kernel is gone with it or is ending
        return 1
    status = int(ended["status"])
    return os.waitstatus_to_exitcode(status) if status >= 0 else 1


# --- the zygote ------------------------------------------------------------------------------


def _watch(pids: list[int]) -> None:
    """In the kernel: exit when any of ``pids`` (the client, the kernel manager) ends."""
    fds = []
    for pid in pids:
        try:
            fds.append(os.pidfd_open(pid))
        except ProcessLookupError:
            os._exit(1)
    selector = selectors.DefaultSelector()
    for fd in fds:
        selector.register(fd, selectors.EVENT_READ)

    def run() -> None:
        selector.select()
        os._exit(1)

    threading.Thread(target=run, name="kernel-zygote-watch", daemon=True).start()


def _take_environment(env: dict[str, str]) -> None:
    """Take on ``env`` as a fresh interpreter started with it would: the variables, and what
    Python reads from them at start-up (``PYTHONPATH`` on ``sys.path``, the bytecode settings)."""
    before = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ.clear()
    os.environ.update(env)
    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if p != here and p not in before]  # as with -m: no script dir
    after = [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:] = after + path
    sys.dont_write_bytecode = bool(env.get("PYTHONDONTWRITEBYTECODE"))
    sys.pycache_prefix = env.get("PYTHONPYCACHEPREFIX") or None
    importlib.invalidate_caches()


def _listen(path: str) -> socket.socket:
    """A Unix socket listening at ``path``, which appears only once it accepts."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path + ".tmp")
    os.rename(path + ".tmp", path)
    listener.listen(64)
    return listener


def _charts_socket(path: str) -> str:
    """The chart renderer's socket, beside the zygote's ``path``."""
    return path + ".charts"


def _render_charts_in(charts: str) -> None:
    """In a forked kernel: ``vl_convert.vegalite_to_svg(spec)`` is answered by the zygote's
    chart renderer (:func:`_serve_charts`), whose vl-convert runtime has started already. The
    kernel then never starts its own, which takes about 0.5 s of CPU at the first chart. Any
    other call, a renderer that is not there or does not answer, and a conversion that failed
    there are converted here, so an error is vl-convert's own, raised in the kernel."""
    import vl_convert

    local = vl_convert.vegalite_to_svg

    def vegalite_to_svg(vl_spec: Any, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs:
            return local(vl_spec, *args, **kwargs)
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(120)
                sock.connect(charts)
                _send_message(sock, {"spec": vl_spec})
                reply, _ = _recv_message(sock)
        except (OSError, ValueError, TypeError):  # no renderer, or a spec JSON cannot carry
            return local(vl_spec)
        svg = reply.get("svg")
        return svg if isinstance(svg, str) else local(vl_spec)

    vegalite_to_svg.__wrapped__ = local  # type: ignore[attr-defined]
    vl_convert.vegalite_to_svg = vegalite_to_svg


def _serve_charts(path: str, zygote: int) -> None:
    """The chart renderer, a child of the zygote: starts vl-convert's runtime once, then
    converts the specs forked kernels send, one at a time, until the zygote is gone."""
    # its name in ps and /proc (it keeps the zygote's command line)
    with contextlib.suppress(OSError), open("/proc/self/comm", "w") as comm:
        comm.write(RENDERER)
    import vl_convert

    vl_convert.vegalite_to_svg({"mark": "point", "data": {"values": []}})  # start the runtime
    listener = _listen(path)
    listener.settimeout(1.0)
    print(RENDERER_READY.format(pid=os.getpid()), flush=True)
    while os.getppid() == zygote:
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            continue
        with conn:
            try:
                conn.settimeout(30)
                spec = _recv_message(conn)[0]["spec"]
                try:
                    reply = {"svg": vl_convert.vegalite_to_svg(spec)}
                except Exception:  # no SVG: the kernel converts it and raises vl-convert's error
                    reply = {}
                _send_message(conn, reply)
            except (OSError, ValueError, KeyError):
                continue  # a kernel that hung up or sent no spec


def _become_kernel(request: dict[str, Any], fds: list[int], charts: str) -> None:
    """In the forked child: take on the client's streams, environment and directory, send
    charts to the renderer at ``charts``, then run ipykernel's launcher. Never returns."""
    code = 1
    try:
        os.setsid()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the zygote's own handler, not a kernel's
        for target, fd in enumerate(fds[:3]):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        os.chdir(request["cwd"])
        _take_environment(request["env"])
        _render_charts_in(charts)
        import ipykernel

        launcher = os.path.join(
            os.path.dirname(os.path.dirname(ipykernel.__file__)), "ipykernel_launcher.py"
        )
        sys.argv = [launcher, *request["argv"]]
        watched = [int(request["client_pid"])]
        parent = os.environ.get("JPY_PARENT_PID", "")
        if parent.isdigit() and int(parent) > 1:
            watched.append(int(parent))
        _watch(watched)
        from ipykernel import kernelapp

        try:
            app = kernelapp.IPKernelApp.instance()
            # Read from the environment when ipykernel is imported, which was in the zygote.
            app.parent_handle = int(os.environ.get("JPY_PARENT_PID") or 0)
            app.interrupt = int(os.environ.get("JPY_INTERRUPT_EVENT") or 0)
            app.initialize()
            app.start()
            code = 0
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    finally:
        from workbench.reports._kernel import exit_forked

        exit_forked(code)


def serve(path: str) -> int:
    """The zygote: its chart renderer, then the kernels' socket at ``path``."""
    # Stopped with SIGTERM by the suite: exit as Python does, running the exit handlers.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
    charts = _charts_socket(path)
    renderer = os.fork()
    if renderer == 0:  # before the imports: the renderer needs vl-convert alone
        code = 1
        try:
            _serve_charts(charts, os.getppid())
            code = 0
        finally:
            os._exit(code)
    try:
        return _serve_kernels(path, charts)
    finally:  # stopped and reaped, so its CPU counts as the zygote's children's
        with contextlib.suppress(OSError):
            os.kill(renderer, signal.SIGTERM)
            os.waitpid(renderer, 0)


def _warm_up() -> None:
    """Pay the first-use costs the kernels would each pay (see the module's docstring).

    Only caches fill: each library still checks every spec and renders every table, and a
    template file edited after the fork is compiled again (jinja2 checks its modification
    time)."""
    import altair
    import pandas

    with contextlib.suppress(Exception):
        frame = pandas.DataFrame({"slice": ["a"], "rate": [0.5]})
        altair.Chart(frame).mark_bar().encode(x="rate:Q", y="slice:N").to_dict()
    with contextlib.suppress(Exception):
        from workbench._html import environment

        templates = environment()
        for name in templates.list_templates():
            templates.get_template(name)


def _serve_kernels(path: str, charts: str) -> int:
    import gc

    for name in PRELOAD:
        importlib.import_module(name)
    _warm_up()
    gc.collect()
    gc.freeze()  # the forked kernels share these pages rather than copy them on the next GC
    parent = os.getppid()
    listener = _listen(path)
    print(READY.format(count=len(PRELOAD), pid=os.getpid()), flush=True)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, None)
    while True:
        if os.getppid() != parent:
            return 0  # the pytest process that started it is gone
        for key, _ in selector.select(timeout=1.0):
            if key.data is None:
                conn, _ = listener.accept()
                try:
                    conn.settimeout(10)
                    request, fds = _recv_message(conn, with_fds=3)
                    conn.settimeout(None)
                except (OSError, ValueError) as exc:  # a client that lied or hung up
                    print(REFUSED.format(reason=exc), flush=True)
                    conn.close()
                    continue
                try:
                    _check_request(request, fds)
                except ValueError as exc:
                    print(REFUSED.format(reason=exc), flush=True)
                    for fd in fds:
                        os.close(fd)
                    conn.close()
                    continue
                pid = os.fork()
                if pid == 0:
                    for other in list(selector.get_map().values()):
                        if other.data is not None:
                            other.data[1].close()  # the other kernels' clients
                        os.close(other.fd)
                    selector.close()
                    conn.close()
                    _become_kernel(request, fds, charts)
                for fd in fds:
                    os.close(fd)
                test = request["env"].get("PYTEST_CURRENT_TEST", "")
                print(
                    FORKED.format(kernel=pid, client=request["client_pid"], test=test), flush=True
                )
                pidfd = os.pidfd_open(pid)
                selector.register(pidfd, selectors.EVENT_READ, (pid, conn))
                with contextlib.suppress(OSError):
                    _send_message(conn, {"pid": pid})
            else:
                pid, conn = key.data
                selector.unregister(key.fileobj)
                os.close(key.fd)
                _, status = os.waitpid(pid, 0)
                with contextlib.suppress(OSError):
                    _send_message(conn, {"status": status})
                conn.close()


def main(argv: list[str]) -> int:
    if argv[:1] == ["client"]:
        return client(argv[1:])
    if argv[:1] == ["serve"] and len(argv) == 2:
        return serve(argv[1])
    print("usage: _kernel_zygote.py client -f CONNECTION_FILE | serve SOCKET", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
