"""The HTTP transport of networked judges: httpx's client API on aiohttp's connection pool.

The OpenAI client (and so Ragas and instructor) needs an ``httpx.AsyncClient``; the client keeps
doing what it does (headers, event hooks that capture the wire, cookies, proxies from the
environment, redirects, response decoding), and only the connection pool and HTTP/1.1 parsing
below it are aiohttp's (its C parser), which costs a third of httpcore's CPU per call (issue 31,
``bench/bench_engine.py``). aiohttp's failures become httpx's, so the OpenAI client maps them as
before: a timeout to ``APITimeoutError``, anything else to ``APIConnectionError`` (its cause
chain ends at the socket error).
"""

from __future__ import annotations

from typing import Any

import aiohttp
import httpx


class _Pool:
    """One aiohttp session and connector, created on first use in the running event loop."""

    def __init__(self, connections: int, ssl_context: Any) -> None:
        self._connections = connections
        self._ssl_context = ssl_context
        self.session: aiohttp.ClientSession | None = None

    def open(self) -> aiohttp.ClientSession:
        if self.session is None:
            self.session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(
                    limit=self._connections, limit_per_host=0, ssl=self._ssl_context
                ),
                cookie_jar=aiohttp.DummyCookieJar(),  # httpx keeps the cookies
                auto_decompress=False,  # httpx decodes the body from its Content-Encoding
            )
        return self.session

    async def close(self) -> None:
        if self.session is not None:
            await self.session.close()
            self.session = None


class AiohttpTransport(httpx.AsyncBaseTransport):
    """An ``httpx`` transport sending over at most ``connections`` pooled aiohttp connections,
    verified with ``ssl_context``."""

    def __init__(self, connections: int, ssl_context: Any) -> None:
        self._pool = _Pool(connections, ssl_context)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeout = request.extensions.get("timeout", {})
        try:
            async with self._pool.open().request(
                request.method,
                str(request.url),
                headers=request.headers.multi_items(),
                data=await request.aread(),
                allow_redirects=False,  # httpx follows redirects when asked
                timeout=aiohttp.ClientTimeout(
                    total=None,
                    connect=timeout.get("pool"),
                    sock_connect=timeout.get("connect"),
                    sock_read=timeout.get("read"),
                ),
            ) as response:
                body = await response.read()
                version = response.version or aiohttp.HttpVersion11
        except aiohttp.ConnectionTimeoutError as exc:
            raise httpx.ConnectTimeout(str(exc) or "connect timed out", request=request) from exc
        except TimeoutError as exc:  # aiohttp's read timeouts
            raise httpx.ReadTimeout(str(exc) or "read timed out", request=request) from exc
        except aiohttp.ClientConnectorError as exc:
            raise httpx.ConnectError(str(exc), request=request) from exc
        except aiohttp.ServerDisconnectedError as exc:
            raise httpx.RemoteProtocolError(str(exc), request=request) from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise httpx.ReadError(f"{type(exc).__name__}: {exc}", request=request) from exc
        return httpx.Response(
            response.status,
            headers=response.raw_headers,
            content=body,
            request=request,
            extensions={
                "http_version": f"HTTP/{version.major}.{version.minor}".encode(),
                "reason_phrase": (response.reason or "").encode("latin-1", "replace"),
            },
        )

    async def aclose(self) -> None:
        await self._pool.close()
