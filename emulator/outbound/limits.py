"""The bounds of every outgoing exchange: a total deadline and a response cap.

An exchange is one request and its whole answer: connecting, sending, the head and every byte
of the body. `exchange` runs it within `deadline` seconds (a peer that answers one byte a
second fails at the deadline, not after each read's timeout) and reads at most `cap` bytes of
body (a larger answer fails naming the cap and is read no further). Redirects are never
followed: a 3xx is the answer.
"""

from __future__ import annotations

import asyncio
import zlib

import httpx

MIB = 1024 * 1024
RESPONSE_CAP = 4 * MIB  # bytes of body an answer may have; larger fails the exchange
HEAD_LIMIT = 64 * 1024  # bytes of status line and headers (h11's own bound)

# Deadlines per kind of call (seconds), for the whole exchange. Each is the default of the
# setting or flag that configures it, where one does (docs/outgoing-calls.md).
EXPORT_DEADLINE = 10.0  # export, record, auto-sync, actions exports: connection timeoutSeconds
VERIFY_DEADLINE = 10.0  # emulator verify --timeout, POST /_emulator/verify timeoutSeconds
CONNECT_DEADLINE = 10.0  # custom-CRM connect and test (GET /health, GET /users)
HEALTH_DEADLINE = 3.0  # the periodic health check, inside an advance of the clock
DELIVERY_DEADLINE = 10.0  # webhook deliveries, test deliveries, actions-export deliveries


class ResponseTooLarge(httpx.TransportError):
    """The answer's body went past the response cap (read no further)."""

    def __init__(self, cap: int, request: httpx.Request | None = None) -> None:
        super().__init__(f"response larger than the {describe_size(cap)} cap", request=request)
        self.cap = cap


class DeadlineExceeded(httpx.TimeoutException):
    """No whole answer within the exchange's deadline."""

    def __init__(self, deadline: float, request: httpx.Request | None = None) -> None:
        super().__init__(f"no whole answer within the {deadline:g} s deadline", request=request)
        self.deadline = deadline


def describe_size(size: int) -> str:
    """Bytes as people read them: 4 MiB, 512 KiB, 100 bytes."""
    if size >= MIB and size % MIB == 0:
        return f"{size // MIB} MiB"
    if size >= 1024 and size % 1024 == 0:
        return f"{size // 1024} KiB"
    return f"{size} bytes"


COMPRESSED = frozenset({"gzip", "x-gzip", "deflate"})  # what httpx would decode (no br, zstd)


async def read_capped(
    response: httpx.Response, cap: int = RESPONSE_CAP, request: httpx.Request | None = None
) -> bytes:
    """The body as `response.aread()` decodes it, failing once more than `cap` bytes came (on
    the wire, or decoded). A compressed body is inflated at most `cap` bytes at a time: a small
    compressed chunk never expands to more than the cap in memory."""
    if encoding := response.headers.get("content-encoding"):
        codings = [c.strip().lower() for c in encoding.split(",")]
        compressed = [c for c in codings if c in COMPRESSED]
        if len(compressed) > 1:
            raise httpx.DecodingError("more than one compression of the body", request=request)
        if compressed:
            return await _inflated(response, cap, request, compressed[0])
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > cap or response.num_bytes_downloaded > cap:
            raise ResponseTooLarge(cap, request)
        chunks.append(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


async def _inflated(
    response: httpx.Response, cap: int, request: httpx.Request | None, coding: str
) -> bytes:
    """A gzip or deflate body decoded as httpx decodes it (deflate: zlib-wrapped, else raw),
    with no step making more than what is left of the cap."""
    wbits = zlib.MAX_WBITS | 16 if coding != "deflate" else zlib.MAX_WBITS
    inflater = zlib.decompressobj(wbits)
    first = True
    chunks: list[bytes] = []
    size = 0
    async for raw in response.aiter_raw():
        if response.num_bytes_downloaded > cap:
            raise ResponseTooLarge(cap, request)
        data = raw
        while data:
            try:
                out = inflater.decompress(data, cap + 1 - size)
            except zlib.error as exc:
                if not (first and coding == "deflate"):
                    raise httpx.DecodingError(str(exc), request=request) from exc
                inflater = zlib.decompressobj(-zlib.MAX_WBITS)  # raw deflate, as httpx retries
                first = False
                continue
            first = False
            size += len(out)
            if size > cap:
                raise ResponseTooLarge(cap, request)
            chunks.append(out)
            data = inflater.unconsumed_tail
    rest = inflater.flush()
    if size + len(rest) > cap:
        raise ResponseTooLarge(cap, request)
    return b"".join([*chunks, rest])


class Bounded(httpx.AsyncBaseTransport):
    """A transport that bounds an exchange itself (the plain-HTTP lane: no timer of its own
    for the deadline, a body read no further than the cap as it is parsed)."""

    async def bounded(
        self, request: httpx.Request, deadline: float, cap: int
    ) -> tuple[httpx.Response, bytes]:
        raise NotImplementedError


Via = httpx.AsyncClient | httpx.AsyncBaseTransport


async def exchange(
    via: Via, request: httpx.Request, *, deadline: float, cap: int = RESPONSE_CAP
) -> tuple[httpx.Response, bytes]:
    """Send `request` through a client (which routes by proxy settings; redirects not
    followed) or a transport; the response (closed, headers and status readable) and its body,
    both within `deadline` seconds and `cap` bytes of body."""
    if isinstance(via, Bounded):
        return await via.bounded(request, deadline, cap)
    return await exchange_within(via, request, deadline, cap)


async def exchange_within(
    via: Via, request: httpx.Request, deadline: float, cap: int
) -> tuple[httpx.Response, bytes]:
    """`exchange` through any client or transport, under one timer for the deadline."""
    try:
        async with asyncio.timeout(deadline):
            if isinstance(via, httpx.AsyncClient):
                response = await via.send(request, stream=True, follow_redirects=False)
            else:
                response = await via.handle_async_request(request)
                response.request = request
            try:
                body = await read_capped(response, cap, request)
            finally:
                await response.aclose()
    except TimeoutError:
        raise DeadlineExceeded(deadline, request) from None
    return response, body
