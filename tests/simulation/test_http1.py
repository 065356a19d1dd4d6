"""The delivery client for http:// receivers: answers in every framing, keep-alive, failures."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest

from emulator.simulation.http1 import Http1Pool
from tests.servers import unused_url

pytestmark = pytest.mark.anyio

# what the server answers to the n-th request on a connection (n from 0); None closes it
Script = Callable[[int], bytes | None]


async def serve(script: Script) -> tuple[asyncio.Server, str, list[bytes], list[int]]:
    requests: list[bytes] = []
    connections: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        n = 0
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length:"))
                requests.append(head + await reader.readexactly(length))
                answer = script(n)
                n += 1
                if answer is None:
                    break
                writer.write(answer)
                await writer.drain()
                if answer.startswith(b"HTTP/1.0"):
                    break  # no length: the end of the body is the end of the connection
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, f"http://127.0.0.1:{port}/hook?x=1", requests, connections


@pytest.fixture
async def pool() -> AsyncIterator[Http1Pool]:
    p = Http1Pool()
    yield p
    await p.close()


HEADERS = {"Content-Type": "application/json", "X-Webhook-Secret": "s3cret-value"}


async def test_keep_alive_and_every_framing(pool: Http1Pool) -> None:
    answers = [
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
        (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 202 Accepted\r\nTransfer-Encoding: chunked\r\n"
         b"\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n"),
        b"HTTP/1.1 204 No Content\r\n\r\n",
        b"HTTP/1.1 503 Busy\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbusy",
    ]
    server, url, requests, connections = await serve(lambda n: answers[n])
    async with server:
        outcomes = [await pool.post(url, HEADERS, b'{"n": %d}' % i) for i in range(4)]
        again = await pool.post(url, HEADERS, b"{}")  # the server closed: a new connection
    assert [(o.ok, o.statusCode, o.body) for o in outcomes] == [
        (True, 200, "ok"), (True, 202, "abcde"), (True, 204, ""), (False, 503, "busy"),
    ]
    assert outcomes[3].errorMessage == "HTTP 503: busy"
    assert again.ok and len(connections) == 2
    first = requests[0].decode()
    assert first.startswith("POST /hook?x=1 HTTP/1.1\r\n")
    assert "X-Webhook-Secret: s3cret-value\r\n" in first and first.endswith('{"n": 0}')


async def test_a_kept_connection_the_server_dropped_is_replaced(pool: Http1Pool) -> None:
    ok = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
    server, url, _, connections = await serve(lambda n: ok if n == 0 else None)
    async with server:
        assert (await pool.post(url, HEADERS, b"1")).ok
        assert (await pool.post(url, HEADERS, b"2")).ok  # the first connection says nothing
    assert len(connections) >= 2


async def test_failures_are_outcomes(pool: Http1Pool) -> None:
    refused = await pool.post(unused_url() + "/x", HEADERS, b"{}")
    assert not refused.ok and refused.statusCode is None and "request failed" in (
        refused.errorMessage or "")
    server, url, _, _ = await serve(lambda n: b"SSH-2.0-nope\r\n\r\n")
    async with server:
        garbage = await pool.post(url, HEADERS, b"{}")
    assert not garbage.ok and "not an HTTP/1.x answer" in (garbage.errorMessage or "")
    server, url, _, _ = await serve(lambda n: b"")  # never answers
    async with server:
        slow = await pool.post(url, HEADERS, b"{}", timeout=0.2)
    assert not slow.ok and slow.errorMessage == "timed out after 0.2 s"
    long = b"x" * 200_000
    server, url, _, _ = await serve(lambda n: b"HTTP/1.0 200 OK\r\n\r\n" + long)
    async with server:
        closing = await pool.post(url, HEADERS, b"{}")
    assert closing.ok and closing.body == long.decode()
