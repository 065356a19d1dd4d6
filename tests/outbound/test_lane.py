"""outbound.lane.Lane, the plain-HTTP transport of outgoing calls: answers framed every way HTTP/1.1
allows, kept and dropped connections, and httpx's exceptions where httpcore's would map."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import httpx
import pytest

from emulator.outbound.lane import Lane

pytestmark = pytest.mark.anyio

Reply = Callable[[int], bytes | None]  # the n-th request's raw answer (None: close instead)


@asynccontextmanager
async def server(reply: Reply) -> AsyncIterator[tuple[str, list[int]]]:
    """Answers each request (head and Content-Length body read) with reply(n); closes the
    connection after an answer without keep-alive. Yields the URL and the requests seen per
    connection."""
    seen: list[int] = []
    count = 0
    handlers: set[asyncio.Task[None]] = set()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal count
        handlers.add(asyncio.current_task())  # type: ignore[arg-type]
        seen.append(0)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    ),
                    0,
                )
                await reader.readexactly(length)
                seen[-1] += 1
                count += 1
                data = reply(count)
                if data is None:
                    break
                writer.write(data)
                await writer.drain()
                low = data.lower()
                framed = b"content-length" in low or b"transfer-encoding" in low
                if b"connection: close" in low or not framed:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
            handlers.discard(asyncio.current_task())  # type: ignore[arg-type]

    srv = await asyncio.start_server(handle, "127.0.0.1", 0)
    async with srv:
        yield f"http://127.0.0.1:{srv.sockets[0].getsockname()[1]}", seen
        await asyncio.gather(*handlers, return_exceptions=True)


async def send(lane: Lane, url: str, body: bytes = b"") -> httpx.Response:
    request = httpx.Request("POST" if body else "GET", url + "/x", content=body or None)
    request.extensions = {"timeout": {"connect": 5, "read": 5, "write": 5, "pool": 5}}
    response = await lane.handle_async_request(request)
    await response.aread()
    return response


def lane() -> Lane:
    return Lane(ssl.create_default_context())


async def test_a_kept_connection_carries_every_call() -> None:
    ok = b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\nX-A: 1\r\n\r\n{}"
    async with server(lambda n: ok) as (url, seen):
        one = lane()
        answers = [await send(one, url, b'{"n": %d}' % i) for i in range(3)]
        await one.aclose()
    assert seen == [3]
    assert [(r.status_code, r.content, r.headers["x-a"]) for r in answers] == [
        (201, b"{}", "1")
    ] * 3
    assert answers[0].reason_phrase == "Created" and answers[0].http_version == "HTTP/1.1"


async def test_a_chunked_answer_is_joined_and_its_headers_kept_as_sent() -> None:
    chunked = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
    )
    async with server(lambda n: chunked) as (url, seen):
        one = lane()
        first, second = await send(one, url), await send(one, url)
        await one.aclose()
    assert first.content == second.content == b"abcde"
    assert "content-length" not in first.headers
    assert seen == [2]


async def test_a_body_ending_with_the_stream_and_a_close_open_new_connections() -> None:
    replies = {
        1: b"HTTP/1.1 200 OK\r\n\r\nuntil the end",
        2: b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
        3: b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nkept",
    }
    async with server(replies.__getitem__) as (url, seen):
        one = lane()
        got = [(await send(one, url)).content for _ in range(3)]
        await one.aclose()
    assert got == [b"until the end", b"ok", b"kept"]
    assert seen == [1, 1, 1]


async def test_a_connection_the_server_closed_while_idle_is_replaced() -> None:
    ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    async with server(lambda n: ok if n != 2 else None) as (url, seen):
        one = lane()
        assert (await send(one, url)).content == b"ok"
        with pytest.raises(httpx.RemoteProtocolError, match="Server disconnected without"):
            await send(one, url)  # the server closes instead of answering
        assert (await send(one, url)).content == b"ok"  # a new connection
        await one.aclose()
    assert seen == [2, 1]


async def test_a_cut_body_and_a_silent_server_fail_as_httpx_errors() -> None:
    cut = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 10\r\n\r\nabc"
    async with server(lambda n: cut) as (url, _):
        with pytest.raises(httpx.RemoteProtocolError, match="complete message body"):
            await send(lane(), url)

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # until the client gives up and closes
        writer.close()
        await writer.wait_closed()

    srv = await asyncio.start_server(silent, "127.0.0.1", 0)
    async with srv:
        url = f"http://127.0.0.1:{srv.sockets[0].getsockname()[1]}"
        request = httpx.Request("GET", url)
        request.extensions = {"timeout": {"connect": 1, "read": 0.1, "write": 1, "pool": 1}}
        with pytest.raises(httpx.ReadTimeout, match="timed out"):
            await lane().handle_async_request(request)  # the lane closes its connection
        await asyncio.sleep(0.05)
    with pytest.raises(httpx.ConnectError):
        await send(lane(), url)  # nobody listens any more
