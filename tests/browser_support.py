"""Helpers for the browser tests: Debian's chromium driven by Playwright, offline.

Nothing here downloads a browser: Playwright only drives ``/usr/bin/chromium``. On a machine
without it the browser tests are skipped with :data:`CHROMIUM_MISSING` as the reason (the
only skip the suite allows); CI installs it with apt-get in ``.ci/run``.

``watch_page`` records what a page tries to do (requests, dialogs, console errors) and, in
offline mode, aborts every request that is not a local file. :class:`JupyterLabServer` runs
JupyterLab on 127.0.0.1 for the review-widget test and always shuts it down.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser, ConsoleMessage, Dialog, Page, Request, Route

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_MISSING = (
    f"Debian chromium not found at {CHROMIUM}; install it with "
    "`apt-get install chromium` to run the browser tests"
)
PLAYWRIGHT_MISSING = (
    "the Python package playwright is not importable; install the test extras with "
    "`pip install -e '.[test]'` (no browser download is needed: Debian's chromium is used)"
)
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--no-first-run",
    "--no-default-browser-check",
    "--metrics-recording-only",
)

T = TypeVar("T")


def require_chromium() -> None:
    """Skip (with the reason printed by ``-ra``) when chromium or playwright is missing."""
    if not (CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK)):
        pytest.skip(CHROMIUM_MISSING)
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.skip(PLAYWRIGHT_MISSING)


@contextlib.contextmanager
def launch_chromium() -> Iterator[Browser]:
    """Headless Debian chromium under Playwright; closed (and Playwright stopped) on exit."""
    from _markers import note
    from playwright.sync_api import sync_playwright

    note("browser")  # the running test must carry @pytest.mark.browser

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=list(CHROMIUM_ARGS), timeout=60_000
        )
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class PageWatch:
    """What a page attempted while it was watched."""

    requests: list[str] = field(default_factory=list)
    """Every request URL the page issued (``page.on("request")``)."""
    blocked: list[str] = field(default_factory=list)
    """Requests aborted by the route handler (not allowed by ``allow``)."""
    dialogs: list[str] = field(default_factory=list)
    """``alert``/``confirm``/``prompt`` dialogs, as ``type: message`` (each is dismissed)."""
    console_errors: list[str] = field(default_factory=list)
    """Console messages of type error, plus uncaught page errors."""
    failed: list[str] = field(default_factory=list)
    """Requests that failed, with Chromium's reason."""

    def external_requests(self, allow: Callable[[str], bool]) -> list[str]:
        return [url for url in self.requests if not allow(url)]


def is_local_file(url: str) -> bool:
    """Allowed in offline mode: the report itself (file://) and inline data: URIs."""
    return url.startswith(("file://", "data:", "about:"))


def watch_page(page: Page, allow: Callable[[str], bool] = is_local_file) -> PageWatch:
    """Record requests, dialogs and console errors; abort every request ``allow`` refuses."""
    watch = PageWatch()

    def route(route: Route) -> None:
        url = route.request.url
        if allow(url):
            route.continue_()
        else:
            watch.blocked.append(url)
            route.abort("blockedbyclient")

    def on_dialog(dialog: Dialog) -> None:
        watch.dialogs.append(f"{dialog.type}: {dialog.message}")
        with contextlib.suppress(Exception):
            dialog.dismiss()

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":
            watch.console_errors.append(message.text)

    def on_failed(request: Request) -> None:
        watch.failed.append(f"{request.url[:200]}: {request.failure}")

    page.route("**/*", route)
    page.on("request", lambda request: watch.requests.append(request.url))
    page.on("dialog", on_dialog)
    page.on("console", on_console)
    page.on("pageerror", lambda error: watch.console_errors.append(f"uncaught: {error}"))
    page.on("requestfailed", on_failed)
    return watch


def wait_until(
    predicate: Callable[[], T | None],
    *,
    timeout_s: float,
    what: str,
    interval_s: float = 0.25,
    diagnose: Callable[[], str] | None = None,
) -> T:
    """Poll ``predicate`` until it returns a truthy value; fail naming ``what`` on timeout."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            detail = f"\n{diagnose()}" if diagnose else ""
            pytest.fail(
                f"timed out after {timeout_s:.0f} s waiting for {what}{detail}", pytrace=False
            )
        time.sleep(interval_s)


# -- ports ---------------------------------------------------------------------------------
def port_is_closed(port: int, host: str = "127.0.0.1") -> bool:
    """Whether nothing accepts connections on ``host:port`` any more (never binds it)."""
    try:
        socket.create_connection((host, port), timeout=1.0).close()
    except OSError:
        return True
    return False


# -- JupyterLab ----------------------------------------------------------------------------
LAB_SETTINGS: dict[str, dict[str, Any]] = {
    # Every cell stays in the DOM (no virtual scrolling), so the widget output is findable.
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    # No news or update checks: the test runs offline and must not be interrupted by toasts.
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
}


class JupyterLabServer:
    """``jupyter lab`` from the project's virtualenv on 127.0.0.1, isolated under ``home``.

    Its config, settings, workspaces and runtime files live in ``home``; the caller passes the
    rest of the environment (e.g. ``WORKBENCH_CACHE_DIR``). The server runs in its own process
    group; :meth:`stop` asks it to shut down (which stops its kernels) and then makes sure.
    """

    def __init__(self, root_dir: Path, home: Path, env: dict[str, str]) -> None:
        self.root_dir = root_dir
        self.home = home
        self.port = 0  # JupyterLab binds a free port; known once start() returns
        self.token = secrets.token_hex(16)
        self.log_path = home / "jupyterlab.log"
        self.env = {**env, **self._isolation_env()}
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        return f"{self.base_url}/{path.lstrip('/')}?token={self.token}"

    def _isolation_env(self) -> dict[str, str]:
        dirs = {
            name: self.home / name
            for name in ("config", "data", "runtime", "settings", "workspaces", "ipython")
        }
        for path in dirs.values():
            path.mkdir(parents=True, exist_ok=True)
        for name, value in LAB_SETTINGS.items():
            target = dirs["settings"] / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(value), encoding="utf-8")
        return {
            "JUPYTER_CONFIG_DIR": str(dirs["config"]),
            "JUPYTER_DATA_DIR": str(dirs["data"]),
            "JUPYTER_RUNTIME_DIR": str(dirs["runtime"]),
            "JUPYTERLAB_SETTINGS_DIR": str(dirs["settings"]),
            "JUPYTERLAB_WORKSPACES_DIR": str(dirs["workspaces"]),
            "IPYTHONDIR": str(dirs["ipython"]),
            "PYTHONUNBUFFERED": "1",
        }

    def start(self, timeout_s: float = 60.0) -> None:
        jupyter = Path(sys.executable).with_name("jupyter")
        command = [
            str(jupyter), "lab",
            "--no-browser",
            f"--IdentityProvider.token={self.token}",
            "--ServerApp.ip=127.0.0.1",
            "--ServerApp.port=0",  # a free port; read back from the runtime file
            "--ServerApp.port_retries=0",
            f"--ServerApp.root_dir={self.root_dir}",
            "--ServerApp.disable_check_xsrf=True",
            "--LabApp.expose_app_in_browser=True",
            "--LabApp.news_url=",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.extension_manager=readonly",  # never lists extensions from PyPI
        ]  # fmt: skip
        if os.geteuid() == 0:  # CI runs as root on a fresh machine
            command.append("--ServerApp.allow_root=True")
        log = self.log_path.open("wb")
        try:
            self.process = subprocess.Popen(
                command,
                cwd=self.root_dir,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            log.close()
        wait_until(
            self._ready,
            timeout_s=timeout_s,
            what="JupyterLab to bind a free port and answer",
            interval_s=0.3,
            diagnose=self.log_tail,
        )

    def _ready(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            pytest.fail(
                f"JupyterLab exited with code {self.process.returncode} before it was"
                f" ready\n{self.log_tail()}",
                pytrace=False,
            )
        if not self.port:
            self.port = self._bound_port()
            if not self.port:
                return False
        try:
            with urllib.request.urlopen(self.url("api/status"), timeout=2) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def _bound_port(self) -> int:
        """The port from the server's runtime file (``jpserver-<pid>.json``), 0 until it is
        written.
        """
        for info in sorted(Path(self.env["JUPYTER_RUNTIME_DIR"]).glob("jpserver-*.json")):
            try:
                return int(json.loads(info.read_text(encoding="utf-8"))["port"])
            except (OSError, ValueError, KeyError, TypeError):
                continue
        return 0

    def api(self, method: str, path: str) -> Any:
        request = urllib.request.Request(
            self.url(path),
            method=method,
            headers={"Authorization": f"token {self.token}"},
            data=b"" if method == "POST" else None,
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
        return json.loads(body) if body else None

    def log_tail(self, chars: int = 4000) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no JupyterLab log)"
        return "--- JupyterLab log (tail) ---\n" + text[-chars:]

    def stop(self) -> None:
        """Shut down gracefully (kernels included), then terminate the process group if needed."""
        process = self.process
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(Exception):
            for session in self.api("GET", "api/sessions") or []:
                self.api("DELETE", f"api/sessions/{session['id']}")
        with contextlib.suppress(Exception):
            self.api("POST", "api/shutdown")
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            for sig, wait_s in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, sig)
                try:
                    process.wait(timeout=wait_s)
                    break
                except subprocess.TimeoutExpired:
                    continue
