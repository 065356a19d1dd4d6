"""httpcore's network layer on plain asyncio, and the plain-HTTP `Lane`: the transports of the
platform's own outgoing calls (`emulator.outbound`).

httpcore's default layer goes through anyio: a cancel scope per read and write, a select()
on every idle pooled connection before each request (`is_readable`), one send() for the
request head and another for its body. Deliveries and auto-sync pushes spent most of their time
there (py-spy). This layer answers the same interface (`httpcore.AsyncNetworkBackend`, a
documented extension point) with an asyncio protocol:

- the event loop already reads every socket it watches, so "is an idle connection readable"
  is whether the protocol holds data or saw the end of the stream: no system call;
- writes are gathered until the next read (HTTP/1.1 writes the whole request before it reads
  its answer), so a request goes out in one send() and reaches the receiver in one segment;
- a timeout is one timer on the waiting future, not a cancel scope.

Failures raise httpcore's own exceptions (ConnectError, ReadTimeout, ...), which httpx maps
to its own as it does for its default layer.

Plain-`http://` connections go one step further (`Lane`, handed out by `Lanes`): one
request at a time per connection needs no pool, state machine or locks, so a Lane writes the
request as h11 would and parses the answer with httptools (uvicorn's parser), ~0.1 ms of CPU a
call instead of ~0.35 ms; `https://` goes through httpcore on this layer. A Lane reads no more
than its response cap (`ResponseTooLarge` past it) and skips 1xx answers as h11 does; the
whole-exchange deadline is `emulator.outbound.exchange`'s, around it.
"""

from __future__ import annotations

import asyncio
import collections
import socket
import ssl
from collections.abc import Awaitable, Iterable
from typing import Any, cast

import httpcore
import httptools
import httpx

from emulator.outbound.limits import (
    HEAD_LIMIT,
    RESPONSE_CAP,
    Bounded,
    DeadlineExceeded,
    ResponseTooLarge,
    exchange_within,
    read_capped,
)

FLUSH_AT = 64 * 1024  # gathered bytes beyond this go out at once (large bodies)
_READ_ERRORS = (OSError, ssl.SSLError)


class _Protocol(asyncio.Protocol):
    """The received bytes and the state of one connection, for `Stream`."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.eof = False
        self.error: BaseException | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.drained: asyncio.Future[None] | None = None  # set while writing is paused

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's are not subclasses

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        self._wake()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake()
        return False  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        self.error = exc
        self._wake()
        self.resume_writing()

    async def readable(self, timeout: float | None, error: type[Exception]) -> None:
        """Until bytes or the end of the stream are there; `error` after `timeout` seconds."""
        if not self.buffer and not self.eof:
            self.waiter = asyncio.get_running_loop().create_future()
            try:
                await _wait(self.waiter, timeout, error)
            finally:
                self.waiter = None

    def pause_writing(self) -> None:
        if self.drained is None:
            self.drained = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self.drained is not None:
            if not self.drained.done():
                self.drained.set_result(None)
            self.drained = None

    def _wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)


async def _wait(fut: asyncio.Future[None], timeout: float | None, error: type[Exception]) -> None:
    """Wait for `fut`; `error` when `timeout` seconds pass first."""
    if timeout is None:
        await fut
        return
    handle = asyncio.get_running_loop().call_later(timeout, _expire, fut, error)
    try:
        await fut
    finally:
        handle.cancel()


def _expire(fut: asyncio.Future[None], error: type[Exception]) -> None:
    if not fut.done():
        fut.set_exception(error("timed out"))


class Stream(httpcore.AsyncNetworkStream):
    def __init__(self, transport: asyncio.Transport, protocol: _Protocol) -> None:
        self._transport = transport
        self._protocol = protocol
        self._pending: list[bytes] = []
        self._pending_size = 0

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        await self._flush(timeout, httpcore.ReadError, httpcore.ReadTimeout)
        protocol = self._protocol
        await protocol.readable(timeout, httpcore.ReadTimeout)
        if protocol.buffer:
            data = bytes(protocol.buffer[:max_bytes])
            del protocol.buffer[:max_bytes]
            return data
        if protocol.error is not None:  # reset, not a clean end of stream
            raise httpcore.ReadError(str(protocol.error) or type(protocol.error).__name__)
        return b""

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        self._pending.append(buffer)
        self._pending_size += len(buffer)
        if self._pending_size >= FLUSH_AT:
            await self._flush(timeout, httpcore.WriteError, httpcore.WriteTimeout)

    async def _flush(
        self, timeout: float | None, error: type[Exception], timed_out: type[Exception]
    ) -> None:
        if not self._pending:
            return
        data = self._pending[0] if len(self._pending) == 1 else b"".join(self._pending)
        self._pending.clear()
        self._pending_size = 0
        if self._transport.is_closing():
            raise error(str(self._protocol.error or "connection closed"))
        self._transport.write(data)
        if self._protocol.drained is not None:
            await _wait(self._protocol.drained, timeout, timed_out)

    async def aclose(self) -> None:
        self._pending.clear()
        self._transport.close()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                await self._flush(timeout, httpcore.ConnectError, httpcore.ConnectTimeout)
                transport = await loop.start_tls(
                    self._transport,
                    self._protocol,
                    ssl_context,
                    server_hostname=server_hostname,
                )
        except TimeoutError as exc:
            self._transport.close()
            raise httpcore.ConnectTimeout(str(exc) or "TLS handshake timed out") from exc
        except _READ_ERRORS as exc:
            self._transport.close()
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        if transport is None:  # the loop closed it under us
            raise httpcore.ConnectError("connection closed during the TLS handshake")
        self._protocol.transport = transport
        return Stream(transport, self._protocol)

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":  # an idle connection the server closed or wrote to
            return bool(self._protocol.buffer) or self._protocol.eof
        if info == "ssl_object":
            return self._transport.get_extra_info("ssl_object")
        if info == "client_addr":
            return self._transport.get_extra_info("sockname")
        if info == "server_addr":
            return self._transport.get_extra_info("peername")
        if info == "socket":
            return self._transport.get_extra_info("socket")
        return None


SocketOptions = Iterable[
    tuple[int, int, int] | tuple[int, int, bytes | bytearray] | tuple[int, int, None, int]
]


class Backend(httpcore.AsyncNetworkBackend):
    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: SocketOptions | None = None,
    ) -> httpcore.AsyncNetworkStream:
        local = None if local_address is None else (local_address, 0)
        opening = asyncio.get_running_loop().create_connection(
            _Protocol, host, port, local_addr=local
        )
        return _stream(*await _open(opening, timeout), socket_options)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: SocketOptions | None = None,
    ) -> httpcore.AsyncNetworkStream:
        opening = asyncio.get_running_loop().create_unix_connection(_Protocol, path)
        return _stream(*await _open(opening, timeout), socket_options)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


async def _open(
    opening: Awaitable[tuple[asyncio.BaseTransport, _Protocol]], timeout: float | None
) -> tuple[asyncio.Transport, _Protocol]:
    """A new connection, or httpcore's ConnectTimeout / ConnectError."""
    try:
        async with asyncio.timeout(timeout):
            transport, protocol = await opening
    except TimeoutError as exc:
        raise httpcore.ConnectTimeout(str(exc) or "connect timed out") from exc
    except OSError as exc:
        raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
    return cast(asyncio.Transport, transport), protocol  # uvloop's are not subclasses


def _stream(
    transport: asyncio.Transport, protocol: _Protocol, options: SocketOptions | None
) -> Stream:
    sock: socket.socket | None = transport.get_extra_info("socket")
    if sock is not None:
        for option in options or ():
            sock.setsockopt(*option)  # type: ignore[call-overload]
    return Stream(transport, protocol)


class Transport(httpx.AsyncHTTPTransport):
    """httpx's own HTTP transport (its pool, its exception mapping) over `Backend`."""

    def __init__(self, *, ssl_context: ssl.SSLContext, limits: httpx.Limits) -> None:
        super().__init__(verify=ssl_context, limits=limits)
        # AsyncHTTPTransport takes no network backend: the same pool as its own, given ours.
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=Backend(),
        )


_ONE = httpx.Limits(max_connections=1, max_keepalive_connections=1)


class _Answer:
    """httptools' callbacks: one response's reason, headers and body (at most `cap` bytes)."""

    def __init__(self, cap: int) -> None:
        self.reason = b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.body: list[bytes] = []
        self.size = 0
        self.cap = cap
        self.too_large = False
        self.headers_done = False
        self.done = False
        self.keep_alive = False
        self.parser: Any = None

    def on_status(self, reason: bytes) -> None:
        self.reason += reason

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        self.headers_done = True

    def on_body(self, body: bytes) -> None:
        self.size += len(body)
        if self.size > self.cap:
            self.too_large = True  # raised once feed_data returns; the body is kept no further
        else:
            self.body.append(body)

    def on_message_complete(self) -> None:
        status = self.parser.get_status_code()
        if 100 <= status < 200 and status != 101:  # informational: the answer comes after it
            self.reason, self.headers, self.body, self.headers_done = b"", [], [], False
            return
        self.done = True
        self.keep_alive = self.parser.should_keep_alive()  # reset once the message is over

    def framed(self) -> bool:
        """Whether the body has a length or chunks (else it runs to the end of the stream)."""
        return any(n.lower() in (b"content-length", b"transfer-encoding") for n, _ in self.headers)


def _head(request: httpx.Request) -> bytes:
    """The request line and headers as h11 writes them (Host first, then the rest in order)."""
    raw = request.headers.raw
    lines = [b"%s %s HTTP/1.1\r\n" % (request.method.encode(), request.url.raw_path)]
    lines += [b"%s: %s\r\n" % (n, v) for n, v in raw if n.lower() == b"host"]
    lines += [b"%s: %s\r\n" % (n, v) for n, v in raw if n.lower() != b"host"]
    lines.append(b"\r\n")
    return b"".join(lines)


class _Expired(httpx.TimeoutException):
    """The exchange's deadline passed (`Lane.bounded` names it)."""


class Lane(Bounded):
    """One keep-alive HTTP/1.1 connection as an httpx transport, for plain `http://`.

    The CRM client sends one request at a time per lane, so the pool, h11's state machine and
    httpcore's locks and stream layers (most of a call's CPU, py-spy) are not needed: the
    request goes out in one write (head as h11 writes it, then the body) and httptools parses
    the answer. Failures raise httpx's exceptions as its own transport maps httpcore's.
    `https://` (and anything else) goes through `Transport` (httpcore) as before.

    `bounded` (what `outbound.exchange` calls) makes one exchange within a deadline and a cap
    with one timer per wait, as the per-read timeouts of `handle_async_request` have.
    """

    def __init__(self, ssl_context: ssl.SSLContext, cap: int = RESPONSE_CAP) -> None:
        self._ssl_context = ssl_context
        self._cap = cap
        self._other: Transport | None = None
        self._conn: tuple[asyncio.Transport, _Protocol] | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.scheme != "http":
            if self._other is None:
                self._other = Transport(ssl_context=self._ssl_context, limits=_ONE)
            return await self._other.handle_async_request(request)
        timeouts = request.extensions.get("timeout", {})
        return (await self._send(request, timeouts, None, self._cap))[0]

    async def bounded(
        self, request: httpx.Request, deadline: float, cap: int
    ) -> tuple[httpx.Response, bytes]:
        if request.url.scheme != "http":
            return await exchange_within(self, request, deadline, cap)
        expires = asyncio.get_running_loop().time() + deadline
        try:
            response, body = await self._send(request, {}, expires, cap)
        except (_Expired, httpx.ConnectTimeout):
            raise DeadlineExceeded(deadline, request) from None
        response.request = request
        if "content-encoding" in response.headers:  # decoded, and bounded when inflated
            body = await read_capped(response, cap, request)
        return response, body

    async def _send(
        self,
        request: httpx.Request,
        timeouts: dict[str, float | None],
        expires: float | None,
        cap: int,
    ) -> tuple[httpx.Response, bytes]:
        """The answer and its raw body; each wait bounded by `timeouts` or, when given, by the
        loop time `expires` (then `_Expired`)."""
        body = await request.aread()
        connect = timeouts.get("connect") if expires is None else self._left(expires)
        transport, protocol = await self._connection(request, connect)
        close = request.headers.get("connection", "").lower() == "close"
        try:
            return await self._exchange(
                transport, protocol, _head(request) + body, timeouts, expires, cap, close
            )
        except BaseException:
            self._close()
            raise

    @staticmethod
    def _left(expires: float) -> float:
        return expires - asyncio.get_running_loop().time()

    async def _connection(
        self, request: httpx.Request, timeout: float | None
    ) -> tuple[asyncio.Transport, _Protocol]:
        conn = self._conn
        if conn is not None:
            transport, protocol = conn
            # idle and the server closed it or wrote to it: not reusable (httpcore's check)
            if not (protocol.buffer or protocol.eof or transport.is_closing()):
                return conn
            self._close()
        url = request.url
        opening = asyncio.get_running_loop().create_connection(_Protocol, url.host, url.port or 80)
        try:
            self._conn = await _open(opening, timeout)
        except httpcore.ConnectTimeout as exc:  # as httpx's own transport maps them
            raise httpx.ConnectTimeout(str(exc), request=request) from exc
        except httpcore.ConnectError as exc:
            raise httpx.ConnectError(str(exc), request=request) from exc
        return self._conn

    async def _exchange(
        self,
        transport: asyncio.Transport,
        protocol: _Protocol,
        data: bytes,
        timeouts: dict[str, float | None],
        expires: float | None,
        cap: int,
        close: bool,
    ) -> tuple[httpx.Response, bytes]:
        if transport.is_closing():
            raise httpx.WriteError(str(protocol.error or "connection closed"))
        transport.write(data)
        if protocol.drained is not None:
            if expires is None:
                await _wait(protocol.drained, timeouts.get("write"), httpx.WriteTimeout)
            else:
                await _wait(protocol.drained, self._left(expires), _Expired)
        answer = _Answer(cap)
        parser = answer.parser = httptools.HttpResponseParser(answer)
        read_timeout = timeouts.get("read")
        timed_out: type[Exception] = httpx.ReadTimeout if expires is None else _Expired
        started = False
        head = 0  # bytes received before the (final) answer's headers ended
        while not answer.done:
            if expires is not None:
                read_timeout = self._left(expires)
            await protocol.readable(read_timeout, timed_out)
            if protocol.buffer:
                chunk = bytes(protocol.buffer)
                protocol.buffer.clear()
                started = True
                try:
                    parser.feed_data(chunk)
                except httptools.HttpParserError as exc:
                    raise httpx.RemoteProtocolError(str(exc)) from exc
                if answer.too_large:
                    raise ResponseTooLarge(cap)
                if not answer.headers_done:
                    head += len(chunk)
                    if head > HEAD_LIMIT:  # h11's bound on a head, as httpcore has it
                        raise httpx.RemoteProtocolError(
                            f"response head larger than {HEAD_LIMIT} bytes"
                        )
                continue
            if protocol.error is not None:
                raise httpx.ReadError(str(protocol.error) or type(protocol.error).__name__)
            if not started:
                raise httpx.RemoteProtocolError("Server disconnected without sending a response.")
            if answer.headers_done and not answer.framed():
                answer.done = True  # a body that ends with the stream
                break
            raise httpx.RemoteProtocolError(
                "peer closed connection without sending complete message body"
            )
        if protocol.buffer or protocol.eof or not answer.keep_alive or close:
            self._close()
        body = b"".join(answer.body)
        response = httpx.Response(
            parser.get_status_code(),
            headers=answer.headers,
            stream=httpx.ByteStream(body),
            extensions={
                "http_version": b"HTTP/" + parser.get_http_version().encode(),
                "reason_phrase": answer.reason,
            },
        )
        return response, body

    def _close(self) -> None:
        if self._conn is not None:
            self._conn[0].close()
            self._conn = None

    async def aclose(self) -> None:
        self._close()
        if self._other is not None:
            await self._other.aclose()


class Lanes:
    """Keep-alive connections to one server, each an httpx transport of ONE connection,
    handed out one request at a time.

    httpcore's pool scans every connection it holds on each request and response (and for
    each idle one, all of them again); with one connection a lane skips that work. A lane is
    added only while every lane is busy, at most `max_lanes`; beyond that a caller waits
    (`pool_timeout` seconds at most, then httpx's PoolTimeout) for one to be given back.
    """

    def __init__(
        self,
        ssl_context: ssl.SSLContext,
        max_lanes: int,
        pool_timeout: float | None = None,
        cap: int = RESPONSE_CAP,
    ) -> None:
        self._ssl_context = ssl_context
        self._cap = cap
        self._max = max(1, max_lanes)
        self._pool_timeout = pool_timeout
        self._idle: list[Lane] = []
        self._lanes: list[Lane] = []  # every lane opened, closed by aclose
        self._waiters: collections.deque[asyncio.Future[Lane]] = collections.deque()

    async def take(self) -> Lane:
        if self._idle:
            return self._idle.pop()
        if len(self._lanes) < self._max:
            lane = Lane(self._ssl_context, self._cap)
            self._lanes.append(lane)
            return lane
        waiter: asyncio.Future[Lane] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            async with asyncio.timeout(self._pool_timeout):
                return await waiter
        except TimeoutError:
            raise httpx.PoolTimeout("no connection became free in time") from None
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self.give(waiter.result())  # handed over as this caller gave up: pass it on
            raise

    def give(self, lane: Lane) -> None:
        """Back from a finished exchange (its response read and closed)."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(lane)
                return
        self._idle.append(lane)

    async def aclose(self) -> None:
        lanes, self._lanes, self._idle = self._lanes, [], []
        for lane in lanes:
            await lane.aclose()
