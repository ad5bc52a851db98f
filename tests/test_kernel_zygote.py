"""The suite's forked notebook kernels (tests/_kernel_zygote.py) behave as fresh ones do.

Every notebook test relies on this: a forked kernel must see the environment, working
directory, ``sys.path`` and arguments a fresh ``python -m ipykernel_launcher`` would, be
interruptible, exit when shut down, and die with the client or the kernel manager that started
it, as a fresh kernel dies with its parent.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import stat
import struct
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _kernel_zygote import ENV_FRESH, RENDERER_READY, SUPPORTED
from _kernels import Zygote, kernel_spec, kernels_forked_for, may_select_kernels
from _kernels import running as alive

pytestmark = [
    pytest.mark.notebook,
    pytest.mark.skipif(not SUPPORTED, reason="kernels are forked on Linux only (os.pidfd_open)"),
]

PROBE = textwrap.dedent(
    """
    import json, os, sys
    from ipykernel.kernelapp import IPKernelApp
    import probe_module
    print(json.dumps({
        "path": sys.path, "cwd": os.getcwd(), "argv": sys.argv, "executable": sys.executable,
        "variable": os.environ.get("ZYGOTE_PROBE"), "module": probe_module.__file__,
        "parent_handle": IPKernelApp.instance().parent_handle, "pid": os.getpid(),
        "dont_write_bytecode": sys.dont_write_bytecode,
    }))
    """
)


CHARTS = textwrap.dedent(
    """
    import json, os
    import vl_convert
    from chart_probe import chart
    from workbench.reports._charts import to_svg

    def threads():
        tasks = os.listdir("/proc/self/task")
        return sorted(open(f"/proc/self/task/{t}/comm").read().strip() for t in tasks)

    svg = to_svg(chart())
    after_chart = threads()
    try:
        vl_convert.vegalite_to_svg({"mark": "nonsense"})
        error = None
    except ValueError as exc:
        error = str(exc)
    print(json.dumps({
        "svg": svg, "threads": after_chart, "error": error,
        "via_renderer": hasattr(vl_convert.vegalite_to_svg, "__wrapped__"),
    }))
    """
)
CHART_PROBE = textwrap.dedent(
    """
    import altair as alt
    import pandas as pd

    def chart():
        frame = pd.DataFrame({"slice": ["billing", "general", "<b>x</b>"], "errors": [3, 1, 2]})
        return alt.Chart(frame).mark_bar().encode(x="slice:N", y="errors:Q", tooltip=["slice"])
    """
)


@pytest.fixture(scope="module")
def zygote() -> Iterator[Zygote]:
    """This run's zygote (the one every notebook test's kernels come from); a zygote of this
    module's own in a run without one (``WORKBENCH_TEST_FRESH_KERNELS=1``)."""
    run = Zygote.of_this_run()
    z = run if run is not None else Zygote.start()
    try:
        z.wait_ready()
        yield z
    finally:
        z.stop()  # only the module's own


def wait_gone(pid: int, timeout_s: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def start(
    zygote: Zygote, monkeypatch: pytest.MonkeyPatch, cwd: Path, **env: str
) -> tuple[Any, Any]:
    from jupyter_client.manager import start_new_kernel

    for name, value in zygote.environment().items():
        monkeypatch.setenv(name, value)
    return start_new_kernel(
        kernel_name="python3",
        startup_timeout=120,
        cwd=str(cwd),
        env={**os.environ, ENV_FRESH: "0", **env},  # forked even in a fresh-kernel run
    )


def run(kc: Any, code: str, timeout_s: float = 60) -> tuple[str, dict[str, Any]]:
    out: list[str] = []

    def hook(msg: dict[str, Any]) -> None:
        if msg["msg_type"] == "stream":
            out.append(msg["content"]["text"])

    reply = kc.execute_interactive(code, output_hook=hook, timeout=timeout_s)
    return "".join(out), reply["content"]


def test_the_spec_is_ipykernels_own_with_the_client_as_command() -> None:
    from ipykernel.kernelspec import get_kernel_dict

    native, ours = get_kernel_dict(), kernel_spec()
    assert {k: v for k, v in ours.items() if k != "argv"} == {
        k: v for k, v in native.items() if k != "argv"
    }
    assert ours["argv"][-2:] == ["-f", "{connection_file}"]


@pytest.mark.parametrize(
    ("markexpr", "selects"),
    [
        ("", True),
        ("notebook", True),
        ("browser and not notebook", True),
        ("not browser and not notebook", False),  # make test-fast: no zygote
        ("datasets", False),
        ("not datasets", True),
    ],
)
def test_the_controller_starts_a_zygote_only_when_kernels_can_be_selected(
    markexpr: str, selects: bool
) -> None:
    assert may_select_kernels(markexpr) is selects


def test_a_forked_kernel_sees_what_a_fresh_one_sees(
    zygote: Zygote, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "probe_module.py").write_text("X = 1\n", encoding="utf-8")
    seen = {}
    for mode, fresh in (("forked", "0"), ("fresh", "1")):
        km, kc = start(
            zygote,
            monkeypatch,
            tmp_path,
            ZYGOTE_PROBE=mode,
            PYTHONPATH=str(tmp_path / "lib"),
            **{ENV_FRESH: fresh},
        )
        try:
            text, reply = run(kc, PROBE)
            assert reply["status"] == "ok", reply
            seen[mode] = json.loads(text)
            seen[mode]["client"] = km.provisioner.process.pid
            seen[mode]["manager"] = os.getpid()
        finally:
            kc.stop_channels()
            km.shutdown_kernel()
    forked, fresh = seen["forked"], seen["fresh"]
    # The forked kernel came from the zygote (its own pid, not the client's); the fresh one is
    # the client process itself, which replaced itself with ipykernel's launcher.
    assert (forked["pid"], forked["client"]) in zygote.forked()
    assert fresh["pid"] == fresh["client"] and fresh["pid"] not in dict(zygote.forked())
    # The zygote logged the test the forked kernel ran for (tests/_markers.py reads it).
    assert kernels_forked_for(request.node.nodeid) == 1
    for key in ("path", "cwd", "argv", "executable", "dont_write_bytecode"):
        if key == "argv":  # the connection file differs
            assert forked[key][:-1] == fresh[key][:-1]
        else:
            assert forked[key] == fresh[key], key
    assert forked["variable"] == "forked" and fresh["variable"] == "fresh"
    assert forked["module"] == fresh["module"] == str(tmp_path / "lib" / "probe_module.py")
    # ipykernel reads JPY_PARENT_PID when it is imported (in the zygote): set again for the fork.
    assert forked["parent_handle"] == fresh["parent_handle"] == os.getpid()


@contextlib.contextmanager
def forked_kernel(
    zygote: Zygote, monkeypatch: pytest.MonkeyPatch, cwd: Path
) -> Iterator[tuple[Any, Any, Any, int]]:
    """A forked kernel: its manager, client, the client process and the kernel's pid. Shut down
    afterwards (or its resources released, if the test killed it)."""
    km, kc = start(zygote, monkeypatch, cwd)
    try:
        client = km.provisioner.process
        yield km, kc, client, zygote.kernel_of(client.pid)
    finally:
        kc.stop_channels()
        if km.is_alive():
            km.shutdown_kernel()
        else:
            km.cleanup_resources()


def test_the_zygote_is_private_and_outlives_malformed_requests(
    zygote: Zygote, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Only this user reaches the socket; a client that lies or hangs up forks nothing and
    leaves the zygote serving. (Other workers' kernels may be forked meanwhile: the zygote
    refuses each lie in its log, and this test's own kernels are counted by its node id.)"""
    assert stat.S_IMODE(zygote.home.stat().st_mode) == 0o700
    test = request.node.nodeid
    refused = len(zygote.refused())
    lies = {
        b"": "closed",  # connects and hangs up
        struct.pack("!I", 10_000) + b"{}": "closed",  # a length it never sends
        struct.pack("!I", 9) + b"not json!": "Expecting value",
        struct.pack("!I", 2) + b"[]": "JSON object",  # JSON, but not a request
        struct.pack("!I", 2) + b"{}": "not a kernel request",  # an object, not a client's
    }
    for lie in lies:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(str(zygote.socket))
            if lie:
                socket.send_fds(sock, [lie], [0, 1, 2])
            sock.shutdown(socket.SHUT_WR)
            assert sock.recv(100) == b""  # closed without a reply
    reasons = zygote.refused()[refused:]
    for expected in lies.values():  # each lie refused, for what it is
        assert any(expected in reason for reason in reasons), (expected, reasons)
    assert len(reasons) >= len(lies) and zygote.forked(test) == [] and zygote.running()
    with forked_kernel(zygote, monkeypatch, tmp_path) as (_, kc, _, _):
        text, reply = run(kc, "print('still serving')")
        assert reply["status"] == "ok" and text.strip() == "still serving"
    assert len(zygote.forked(test)) == 1


def test_a_forked_kernel_is_interrupted_and_shuts_down(
    zygote: Zygote, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with forked_kernel(zygote, monkeypatch, tmp_path) as (km, kc, client, kernel):
        msg_id = kc.execute("import time; time.sleep(120)")
        while True:  # interrupt once the code runs (a loaded machine may take seconds to get there)
            msg = kc.get_iopub_msg(timeout=60)
            if msg["msg_type"] == "execute_input" and msg["parent_header"]["msg_id"] == msg_id:
                break
        time.sleep(0.5)
        km.interrupt_kernel()
        reply = kc.get_shell_msg(timeout=30)
        assert reply["parent_header"]["msg_id"] == msg_id
        assert reply["content"]["status"] == "error"
        assert reply["content"]["ename"] == "KeyboardInterrupt"
        for _ in range(20):  # ipykernel aborts what arrives just after an error: ask again
            text, after = run(kc, "print(6 * 7)")
            if after["status"] != "aborted":
                break
            time.sleep(0.5)
        assert after["status"] == "ok" and text.strip() == "42"  # the kernel lives on
    assert client.returncode == 0
    assert wait_gone(kernel)
    assert zygote.running()  # the zygote serves the next kernel


def test_a_forked_kernel_dies_with_its_client(
    zygote: Zygote, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with forked_kernel(zygote, monkeypatch, tmp_path) as (_, _, client, kernel):
        assert alive(kernel)
        os.kill(client.pid, signal.SIGKILL)
        assert wait_gone(kernel)


def test_a_forked_kernel_dies_with_the_process_that_started_it(
    zygote: Zygote, tmp_path: Path
) -> None:
    """As ``workbench certify`` killed mid-run: its kernel must not run on (a fresh kernel's
    ipykernel notices its parent is gone)."""
    starter = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from jupyter_client.manager import start_new_kernel\n"
            "import sys, time\n"
            "km, kc = start_new_kernel(kernel_name='python3', startup_timeout=120)\n"
            "print(km.provisioner.process.pid, flush=True)\n"
            "time.sleep(600)\n",
        ],
        env={**os.environ, **zygote.environment(), ENV_FRESH: "0"},
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert starter.stdout is not None
        client = int(starter.stdout.readline())
        kernel = zygote.kernel_of(client)
        assert alive(kernel) and alive(client)
    finally:
        starter.kill()
        starter.wait(timeout=30)
    assert wait_gone(kernel)
    assert wait_gone(client)


def test_a_forked_kernels_charts_are_converted_by_vl_convert_in_the_renderer(
    zygote: Zygote, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The zygote's chart renderer converts a forked kernel's charts: the same SVG and the same
    error as vl-convert gives in this process, and the kernel starts no runtime of its own (no
    V8 or tokio thread)."""
    import vl_convert

    from workbench.reports._charts import to_svg

    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "chart_probe.py").write_text(CHART_PROBE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path / "lib"))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "lib"))
    assert RENDERER_READY.split(",")[0] in zygote.log.read_text("utf-8")
    with forked_kernel(zygote, monkeypatch, tmp_path) as (_, kc, _, _):
        text, reply = run(kc, CHARTS)
        assert reply["status"] == "ok", reply
    seen = json.loads(text)
    import chart_probe

    assert seen["via_renderer"]
    assert seen["svg"] == to_svg(chart_probe.chart()) and seen["svg"].startswith("<svg")
    with pytest.raises(ValueError) as here:
        vl_convert.vegalite_to_svg({"mark": "nonsense"})
    assert seen["error"] == str(here.value)
    assert not [t for t in seen["threads"] if t.startswith(("V8", "tokio"))], seen["threads"]


def test_without_an_answering_renderer_a_kernel_converts_its_charts_itself(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A renderer that is not there (or not yet), or a socket that answers with nonsense: the
    kernel's call converts the chart with vl-convert in the kernel, as without a zygote."""
    import threading

    import vl_convert
    from _kernel_zygote import _render_charts_in

    spec = {"mark": "bar", "data": {"values": [{"a": "x", "b": 2}]},
            "encoding": {"x": {"field": "a", "type": "nominal"},
                         "y": {"field": "b", "type": "quantitative"}}}  # fmt: skip
    original = vl_convert.vegalite_to_svg
    here = original(spec)
    monkeypatch.setattr(vl_convert, "vegalite_to_svg", original)  # restored after the test
    _render_charts_in(str(tmp_path / "no-renderer.sock"))
    assert vl_convert.vegalite_to_svg is not original
    assert vl_convert.vegalite_to_svg.__wrapped__ is original
    assert vl_convert.vegalite_to_svg(spec) == here

    liar = tmp_path / "liar.sock"  # accepts, reads, answers a JSON object without an SVG
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(liar))
    server.listen(1)

    received: list[bytes] = []

    def answer() -> None:
        conn, _ = server.accept()
        with conn:
            received.append(conn.recv(1 << 20))
            body = b'{"svg": 42}'
            conn.sendall(struct.pack("!I", len(body)) + body)

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    monkeypatch.setattr(vl_convert, "vegalite_to_svg", original)
    _render_charts_in(str(liar))
    assert vl_convert.vegalite_to_svg(spec) == here
    thread.join(timeout=30)
    server.close()
    assert received and b'"spec"' in received[0]  # it asked the liar first


def test_the_chart_renderer_outlives_malformed_requests(zygote: Zygote) -> None:
    """The renderer every forked kernel shares: a kernel that hangs up, lies about a length,
    sends what is not JSON or not a request, or a spec vl-convert refuses gets no SVG (the
    kernel converts it itself), and the renderer goes on converting the next chart."""
    from _kernel_zygote import _charts_socket, _recv_message, _send_message

    charts = _charts_socket(str(zygote.socket))
    lies = [
        b"",  # connects and hangs up
        struct.pack("!I", 10_000) + b"{}",  # a length it never sends
        struct.pack("!I", 9) + b"not json!",
        struct.pack("!I", 2) + b"[]",  # JSON, but not a request
        struct.pack("!I", 2) + b"{}",  # an object without a spec
    ]
    for lie in lies:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(60)
            sock.connect(charts)
            sock.sendall(lie)
            sock.shutdown(socket.SHUT_WR)
            assert sock.recv(100) == b""  # closed without an answer

    def ask(spec: object) -> dict[str, Any]:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(60)
            sock.connect(charts)
            _send_message(sock, {"spec": spec})
            return _recv_message(sock)[0]

    assert ask({"mark": "nonsense"}) == {}  # refused by vl-convert: no SVG
    answer = ask({"mark": "point", "data": {"values": [{"a": 1}]},
                  "encoding": {"x": {"field": "a", "type": "quantitative"}}})  # fmt: skip
    assert answer["svg"].startswith("<svg")


TEMPLATES_SEEN = """
import json
from workbench._html import environment
print(json.dumps(sorted(name for _, name in environment().cache.keys())))
"""


def test_a_forked_kernel_starts_with_every_report_template_compiled(
    zygote: Zygote, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The zygote compiled the workbench's templates once (``_warm_up``): a forked kernel holds
    every one of them before it renders anything."""
    from workbench._html import environment

    with forked_kernel(zygote, monkeypatch, tmp_path) as (_, kc, _, _):
        text, reply = run(kc, TEMPLATES_SEEN)
        assert reply["status"] == "ok", reply
    assert json.loads(text) == sorted(environment().list_templates())
