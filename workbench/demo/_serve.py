"""Serve a demo's scripted model on a free port and point the demo candidates at it (they name
the variable in ``endpoint.base_url_env``; the URL is not part of a judge's fingerprint)."""

from __future__ import annotations

import os
from collections.abc import Callable

from ..testing import ChatRequest, FakeLLM, Reply

DEMO_KEY_ENV = "DEMO_LLM_API_KEY"


def serve_scripted(
    responder: Callable[[ChatRequest], Reply],
    *,
    env: str | None,
    port: int = 0,
    latency_s: float = 0.0,
    what: str = "the demo model",
) -> FakeLLM:
    """Start ``responder`` on 127.0.0.1:``port`` (0: a free port), export its base URL as ``$env``
    and a placeholder ``DEMO_LLM_API_KEY`` when unset; call ``.stop()`` on the returned server."""
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
