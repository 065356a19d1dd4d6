"""One HTTP/1.1 suite over both plain-HTTP paths of `outbound.exchange`: the hand-written
`Lane` and httpx's own transport. Each case expects the same answer (or the same error) of
both: bodies framed by Content-Length, chunks or the end of the stream, kept connections
and ones the peer closed, 1xx answers, slow and oversize bodies, early closes, redirects."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gzip
import ssl
import time
import tracemalloc
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import httpx
import pytest

from emulator.outbound import DeadlineExceeded, ResponseTooLarge, exchange
from emulator.outbound.lane import Lane
from tests.raw_http import Server, raw_server, read_request

pytestmark = pytest.mark.anyio

CAP = 64 * 1024  # a small response cap, so oversize answers stay small
MIB = 1024 * 1024
# what a server does on a request: writes (and reads) until it returns, then closes
Writer = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def make(kind: str) -> httpx.AsyncBaseTransport:
    if kind == "lane":
        return Lane(ssl.create_default_context(), CAP)
    one = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    return httpx.AsyncHTTPTransport(limits=one)


@pytest.fixture(params=["lane", "httpx"])
async def transport(request: pytest.FixtureRequest) -> AsyncIterator[httpx.AsyncBaseTransport]:
    made = make(request.param)
    yield made
    await made.aclose()


@asynccontextmanager
async def peer(
    answers: dict[int, bytes | None] | Writer,
) -> AsyncIterator[tuple[str, Server]]:
    """A server answering the n-th request with answers[n] (None: closing instead), the
    connection kept while answers are framed; or running a writer function on each request."""
    count = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, s: Server) -> None:
        nonlocal count
        with contextlib.suppress(ConnectionError):
            while (request := await read_request(reader)) is not None:
                s.requests.append(request)
                count += 1
                if callable(answers):
                    await answers(reader, writer)
                    return
                data = answers.get(count, answers.get(0))
                if data is None:
                    return
                writer.write(data)
                await writer.drain()
                low = data.lower()
                if b"connection: close" in low or not (
                    b"content-length" in low or b"transfer-encoding" in low
                ):
                    return

    async with raw_server(handle, path="/x") as served:
        yield served


async def call(
    transport: httpx.AsyncBaseTransport, url: str, *, deadline: float = 5.0
) -> tuple[int, dict[str, str], bytes]:
    request = httpx.Request("POST", url, content=b'{"a": 1}')
    request.extensions = {"timeout": httpx.Timeout(deadline).as_dict()}
    response, body = await exchange(transport, request, deadline=deadline, cap=CAP)
    return response.status_code, dict(response.headers), body


OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-A: 1\r\n\r\nok"


async def test_a_content_length_body_and_a_kept_connection(
    transport: httpx.AsyncBaseTransport,
) -> None:
    async with peer({0: OK}) as (url, server):
        answers = [await call(transport, url) for _ in range(3)]
    assert answers == [(200, {"content-length": "2", "x-a": "1"}, b"ok")] * 3
    assert server.connections == 1 and len(server.requests) == 3


async def test_a_chunked_body(transport: httpx.AsyncBaseTransport) -> None:
    chunked = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
    )
    async with peer({0: chunked}) as (url, server):
        first, second = await call(transport, url), await call(transport, url)
    assert first[2] == second[2] == b"abcde"
    assert server.connections == 1


async def test_a_body_ending_with_the_stream(transport: httpx.AsyncBaseTransport) -> None:
    async with peer({1: b"HTTP/1.1 200 OK\r\n\r\nuntil the end", 2: OK}) as (url, server):
        assert (await call(transport, url))[2] == b"until the end"
        assert (await call(transport, url))[2] == b"ok"
    assert server.connections == 2


async def test_a_gzip_body_is_decoded(transport: httpx.AsyncBaseTransport) -> None:
    packed = gzip.compress(b'{"ok": true}')
    answer = b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(
        packed
    )
    async with peer({0: answer + packed}) as (url, _):
        assert (await call(transport, url))[2] == b'{"ok": true}'


@pytest.mark.parametrize("coding", ["gzip", "deflate"])
async def test_a_compressed_body_that_inflates_past_the_cap_fails(
    transport: httpx.AsyncBaseTransport, coding: str
) -> None:
    inflated = b"0" * (100 * CAP)  # compresses to about 1/1000
    packed = gzip.compress(inflated) if coding == "gzip" else zlib.compress(inflated)
    head = b"HTTP/1.1 200 OK\r\nContent-Encoding: %s\r\nContent-Length: %d\r\n\r\n"
    async with peer({0: head % (coding.encode(), len(packed)) + packed}) as (url, _):
        with pytest.raises(ResponseTooLarge):
            await call(transport, url)


@functools.cache
def bomb() -> bytes:
    """64 MiB of zeros, gzipped: a few hundred KiB."""
    squeezer = zlib.compressobj(1, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    block = bytes(MIB)
    return b"".join([*(squeezer.compress(block) for _ in range(64)), squeezer.flush()])


async def test_a_compression_bomb_is_inflated_no_further_than_the_cap(
    transport: httpx.AsyncBaseTransport,
) -> None:
    packed = bomb()
    head = b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n"
    async with peer({0: head % len(packed) + packed}) as (url, _):
        tracemalloc.start()
        try:
            with pytest.raises(ResponseTooLarge):
                await call(transport, url)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peak < 16 * MIB, f"{peak / MIB:.0f} MiB"


async def test_a_raw_deflate_body_is_decoded(transport: httpx.AsyncBaseTransport) -> None:
    squeezer = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    packed = squeezer.compress(b"raw deflate") + squeezer.flush()
    head = b"HTTP/1.1 200 OK\r\nContent-Encoding: deflate\r\nContent-Length: %d\r\n\r\n"
    async with peer({0: head % len(packed) + packed}) as (url, _):
        assert (await call(transport, url))[2] == b"raw deflate"


async def test_keep_alive_closed_by_the_peer(transport: httpx.AsyncBaseTransport) -> None:
    closing = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"
    async with peer({1: closing, 2: OK, 3: OK}) as (url, server):
        assert (await call(transport, url))[2] == b"ok"
        await asyncio.sleep(0.05)  # the close reaches the client while it is idle
        assert (await call(transport, url))[2] == b"ok"
        assert (await call(transport, url))[2] == b"ok"
    assert server.connections == 2


async def test_an_idle_connection_the_peer_dropped_is_replaced(
    transport: httpx.AsyncBaseTransport,
) -> None:
    async def then_close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(OK)
        await writer.drain()  # the handler returns: the server closes a kept connection

    async with peer(then_close) as (url, server):
        assert (await call(transport, url))[2] == b"ok"
        await asyncio.sleep(0.05)
        assert (await call(transport, url))[2] == b"ok"
    assert server.connections == 2


async def test_informational_answers_come_before_the_answer(
    transport: httpx.AsyncBaseTransport,
) -> None:
    early = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
    async with peer({0: early + OK}) as (url, server):
        assert await call(transport, url) == (200, {"content-length": "2", "x-a": "1"}, b"ok")
        assert (await call(transport, url))[2] == b"ok"
    assert server.connections == 1


async def test_a_redirect_is_the_answer_not_followed(transport: httpx.AsyncBaseTransport) -> None:
    moved = b"HTTP/1.1 302 Found\r\nLocation: /elsewhere\r\nContent-Length: 0\r\n\r\n"
    async with peer({0: moved}) as (url, server):
        status, headers, _ = await call(transport, url)
    assert (status, headers["location"]) == (302, "/elsewhere")
    assert len(server.requests) == 1


async def dribble(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """An answer whose body comes one byte every 50 ms, for ever."""
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n")
    while True:
        writer.write(b"x")
        await writer.drain()
        await asyncio.sleep(0.05)


async def test_a_dribbling_body_fails_at_the_deadline(
    transport: httpx.AsyncBaseTransport,
) -> None:
    async with peer(dribble) as (url, _):
        started = time.monotonic()
        with pytest.raises(DeadlineExceeded, match=r"within the 0\.5 s deadline"):
            await call(transport, url, deadline=0.5)
        assert 0.45 < time.monotonic() - started < 1.5


async def test_a_silent_peer_fails_at_the_deadline(transport: httpx.AsyncBaseTransport) -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # until the client gives up

    async with peer(silent) as (url, _):
        with pytest.raises(DeadlineExceeded):
            await call(transport, url, deadline=0.3)


async def test_a_slow_answer_within_the_deadline_is_read(
    transport: httpx.AsyncBaseTransport,
) -> None:
    async def slow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n")
        for byte in b"abc":
            await asyncio.sleep(0.05)
            writer.write(bytes([byte]))
            await writer.drain()

    async with peer(slow) as (url, _):
        assert (await call(transport, url, deadline=2))[2] == b"abc"


async def endless(writer: asyncio.StreamWriter, head: bytes) -> None:
    writer.write(head)
    chunk = b"x" * 16384
    framed = b"%x\r\n%s\r\n" % (len(chunk), chunk) if b"chunked" in head else chunk
    while True:
        writer.write(framed)
        await writer.drain()


@pytest.mark.parametrize(
    "head",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 100000000000\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n\r\n",
    ],
    ids=["content-length", "chunked", "until-close"],
)
async def test_an_oversize_body_fails_at_the_cap_and_the_next_call_works(
    transport: httpx.AsyncBaseTransport, head: bytes
) -> None:
    state = {"calls": 0}

    async def big_then_ok(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        state["calls"] += 1
        if state["calls"] == 1:
            await endless(writer, head)
        writer.write(OK)
        await writer.drain()

    async with peer(big_then_ok) as (url, server):
        with pytest.raises(ResponseTooLarge, match="larger than the 64 KiB cap"):
            await call(transport, url)
        assert (await call(transport, url))[2] == b"ok"
    assert server.connections == 2


async def test_a_body_of_exactly_the_cap_is_read(transport: httpx.AsyncBaseTransport) -> None:
    body = b"y" * CAP
    async with peer({0: b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % CAP + body}) as (url, _):
        assert (await call(transport, url))[2] == body


async def test_an_oversize_head_fails(transport: httpx.AsyncBaseTransport) -> None:
    async def headers(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\n")
        while True:
            writer.write(b"X-Filler: " + b"f" * 1000 + b"\r\n")
            await writer.drain()

    async with peer(headers) as (url, _):
        with pytest.raises(httpx.RemoteProtocolError):
            await call(transport, url)


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (None, "Server disconnected without sending a response"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", "complete message body"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", "complete message body"),
    ],
    ids=["no-answer", "cut-content-length", "cut-chunks"],
)
async def test_an_early_close_fails_as_a_protocol_error(
    transport: httpx.AsyncBaseTransport, answer: bytes | None, message: str
) -> None:
    async def cut(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if answer is not None:
            writer.write(answer)
            await writer.drain()

    async with peer(cut) as (url, _):
        with pytest.raises(httpx.RemoteProtocolError, match=message):
            await call(transport, url)


async def test_a_refused_connection_fails_as_a_connect_error(
    transport: httpx.AsyncBaseTransport,
) -> None:
    async with peer({0: OK}) as (url, _):
        pass  # closed: nobody listens there any more
    with pytest.raises(httpx.ConnectError):
        await call(transport, url)
