"""One outgoing HTTP call of the platform (webhook deliveries, CRM health checks).

Every failure (refused connection, deadline, answer over the cap, bad URL, non-2xx answer)
becomes an `Outcome`, never an exception: the caller reports it, it does not crash the request
that caused it.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Callable

import httpx

from emulator.outbound.limits import (
    DELIVERY_DEADLINE,
    RESPONSE_CAP,
    ResponseTooLarge,
    exchange,
)
from emulator.outbound.tls import default_tls
from emulator.self_target import control_api_target
from emulator.wire import Wire

TIMEOUT_SECONDS = DELIVERY_DEADLINE
_BODY_EXCERPT = 200
MAX_CONCURRENT = 64  # outgoing calls open at once, across every caller of this process
MAX_IN_FLIGHT = 1024  # open plus waiting; beyond it a call fails at once instead of queueing


class _Gate:
    """The bound on outgoing calls of one event loop (tests run several loops in a process)."""

    def __init__(self) -> None:
        self.open = asyncio.Semaphore(MAX_CONCURRENT)
        self.in_flight = 0


_gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Gate] = weakref.WeakKeyDictionary()


def _gate() -> _Gate:
    loop = asyncio.get_running_loop()
    gate = _gates.get(loop)
    if gate is None:
        gate = _gates[loop] = _Gate()
    return gate


class Outcome(Wire):
    ok: bool  # the target answered 2xx within the time limit
    statusCode: int | None
    errorMessage: str | None
    durationMs: int


async def call(
    method: str,
    url: str,
    *,
    headers: dict[str, str] | httpx.Headers | None = None,
    content: bytes | None = None,
    timeout: float = TIMEOUT_SECONDS,
    client: httpx.AsyncClient | httpx.AsyncBaseTransport | None = None,
    cap: int = RESPONSE_CAP,
) -> Outcome:
    """Make one request; the whole exchange must finish within `timeout` seconds, its answer
    within `cap` bytes. Without `client`, a client of its own (proxy settings, default TLS)."""
    started = time.monotonic()

    def elapsed() -> int:
        return round((time.monotonic() - started) * 1000)

    if (loop := control_api_target(url)) is not None:  # seeded by fixtures, or an old --db
        return Outcome(ok=False, statusCode=None, durationMs=0, errorMessage=f"refused: url {loop}")
    gate = _gate()
    if gate.in_flight >= MAX_IN_FLIGHT:
        return Outcome(
            ok=False,
            statusCode=None,
            durationMs=0,
            errorMessage=f"refused: {MAX_IN_FLIGHT} outgoing calls already in flight",
        )
    gate.in_flight += 1
    try:
        async with gate.open:
            return await _send(method, url, headers, content, timeout, cap, client, elapsed)
    finally:
        gate.in_flight -= 1


async def _send(
    method: str,
    url: str,
    headers: dict[str, str] | httpx.Headers | None,
    content: bytes | None,
    timeout: float,
    cap: int,
    client: httpx.AsyncClient | httpx.AsyncBaseTransport | None,
    elapsed: Callable[[], int],
) -> Outcome:
    try:
        if client is None:
            async with httpx.AsyncClient(timeout=timeout, verify=default_tls()) as own:
                request = own.build_request(method, url, headers=headers, content=content)
                response, body = await exchange(own, request, deadline=timeout, cap=cap)
        elif isinstance(client, httpx.AsyncBaseTransport):
            request = httpx.Request(method, url, headers=headers, content=content)
            response, body = await exchange(client, request, deadline=timeout, cap=cap)
        else:
            request = client.build_request(method, url, headers=headers, content=content)
            response, body = await exchange(client, request, deadline=timeout, cap=cap)
    except (TimeoutError, httpx.TimeoutException):  # DeadlineExceeded, or a phase's own
        return Outcome(
            ok=False,
            statusCode=None,
            durationMs=elapsed(),
            errorMessage=f"timed out after {timeout:g} s",
        )
    except ResponseTooLarge as exc:
        return Outcome(ok=False, statusCode=None, durationMs=elapsed(), errorMessage=str(exc))
    except (httpx.HTTPError, httpx.InvalidURL, OSError, ValueError) as exc:
        detail = str(exc) or type(exc).__name__
        return Outcome(
            ok=False,
            statusCode=None,
            durationMs=elapsed(),
            errorMessage=f"request failed: {detail}",
        )
    status = response.status_code
    ok = 200 <= status < 300
    excerpt = body[:_BODY_EXCERPT].decode(response.encoding or "utf-8", "replace")
    return Outcome(
        ok=ok,
        statusCode=status,
        durationMs=elapsed(),
        errorMessage=None if ok else f"HTTP {status}: {excerpt}".rstrip(": "),
    )
