"""Serve a demo's scripted model on a free port and point the demo candidates at it.

The demo candidates name an environment variable in ``endpoint.base_url_env`` (see
docs/formats.md#candidate-specs). A helper here binds port 0, so two notebooks, two test runs
or a notebook beside ``make demo`` never collide, and sets that variable to the URL it got;
a judge built afterwards in the same process calls it. The URL is not part of the judge's
fingerprint, so the verdict cache and certification do not depend on the port.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from ..testing import ChatRequest, FakeLLM, Reply

DEMO_KEY_ENV = "DEMO_LLM_API_KEY"
"""The API-key variable the demo candidates name; the fake server needs no key."""


def serve_scripted(
    responder: Callable[[ChatRequest], Reply],
    *,
    env: str | None,
    port: int = 0,
    latency_s: float = 0.0,
    what: str = "the demo model",
) -> FakeLLM:
    """Start ``responder`` on 127.0.0.1:``port`` (0: a free port) and export its base URL as
    ``$env``.

    Sets a placeholder ``DEMO_LLM_API_KEY`` when none is set: the candidate reads its key from
    the environment like a real one. Returns the running server (call ``.stop()``); its
    ``port`` and ``base_url`` say where it listens.
    """
    os.environ.setdefault(DEMO_KEY_ENV, "demo-placeholder-key")
    try:
        server = FakeLLM(responder=responder, latency_s=latency_s, port=port).start()
    except OSError as exc:
        raise RuntimeError(
            f"cannot serve {what} on 127.0.0.1:{port} ({exc.strerror or exc}); pass port=0 to get a"
            " free port"
        ) from None
    if env:
        os.environ[env] = server.base_url
    return server
