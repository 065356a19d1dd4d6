"""One outgoing HTTP call of the platform (webhook deliveries, CRM health checks).

Every failure (refused connection, timeout, bad URL, non-2xx answer) becomes an `Outcome`,
never an exception: the caller reports it, it does not crash the request that caused it.
"""

from __future__ import annotations

import asyncio
import time

import httpx

from emulator.wire import Wire

TIMEOUT_SECONDS = 10.0
_BODY_EXCERPT = 200


class Outcome(Wire):
    ok: bool  # the target answered 2xx within the time limit
    statusCode: int | None
    errorMessage: str | None
    durationMs: int


async def call(
    method: str,
    url: str,
    *,
    headers: dict[str, str] | None = None,
    content: bytes | None = None,
    timeout: float = TIMEOUT_SECONDS,
    client: httpx.AsyncClient | None = None,
) -> Outcome:
    """Make one request; the whole exchange must finish within `timeout` seconds."""
    started = time.monotonic()

    def elapsed() -> int:
        return round((time.monotonic() - started) * 1000)

    try:
        async with asyncio.timeout(timeout):
            if client is None:
                async with httpx.AsyncClient(timeout=timeout) as own:
                    response = await own.request(method, url, headers=headers, content=content)
            else:
                response = await client.request(method, url, headers=headers, content=content)
    except (TimeoutError, httpx.TimeoutException):
        return Outcome(ok=False, statusCode=None, durationMs=elapsed(),
                       errorMessage=f"timed out after {timeout:g} s")
    except (httpx.HTTPError, httpx.InvalidURL, OSError, ValueError) as exc:
        detail = str(exc) or type(exc).__name__
        return Outcome(ok=False, statusCode=None, durationMs=elapsed(),
                       errorMessage=f"request failed: {detail}")
    status = response.status_code
    ok = 200 <= status < 300
    return Outcome(
        ok=ok, statusCode=status, durationMs=elapsed(),
        errorMessage=None if ok else f"HTTP {status}: {response.text[:_BODY_EXCERPT]}".rstrip(": "),
    )
