"""A response's pieces leave in one write, and nothing is held back: a streamed chunk, a
`100 Continue` and pipelined answers still go out when they should, whole and in order."""

from __future__ import annotations

import asyncio
import socket
import time
from typing import Any

import pytest

from emulator.connection_limits import limited
from emulator.response_writes import FLUSH_BYTES, BatchedWrites
from tests.servers import serve_app


class FakeTransport:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.closing = False

    def writelines(self, pieces: list[bytes]) -> None:
        self.calls.append(("writelines", list(pieces)))

    def close(self) -> None:
        self.calls.append(("close", None))
        self.closing = True

    def is_closing(self) -> bool:
        return self.closing

    def get_extra_info(self, name: str) -> str:
        return f"info {name}"


def batched() -> tuple[BatchedWrites, FakeTransport, list[str]]:
    transport, done = FakeTransport(), []
    loop = asyncio.get_running_loop()
    return BatchedWrites(transport, loop, lambda: done.append("next")), transport, done  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_a_response_leaves_in_one_write_when_it_is_complete() -> None:
    writes, transport, done = batched()
    writes.write(b"HTTP/1.1 200 OK\r\n\r\n")
    writes.write(b"items")
    writes.write(b"tail")
    assert transport.calls == []
    writes.completed()
    assert transport.calls == [("writelines", [b"HTTP/1.1 200 OK\r\n\r\n", b"items", b"tail"])]
    assert done == ["next"]  # the server's own step comes after the bytes left
    await asyncio.sleep(0)  # the end of the iteration finds nothing left
    assert len(transport.calls) == 1


@pytest.mark.anyio
async def test_a_piece_no_completion_follows_leaves_at_the_end_of_the_iteration() -> None:
    writes, transport, _ = batched()
    writes.write(b"HTTP/1.1 100 Continue\r\n\r\n")
    await asyncio.sleep(0)
    assert transport.calls == [("writelines", [b"HTTP/1.1 100 Continue\r\n\r\n"])]
    writes.write(b"chunk 1")
    writes.write(b"chunk 2")
    await asyncio.sleep(0)
    assert transport.calls[1] == ("writelines", [b"chunk 1", b"chunk 2"])


@pytest.mark.anyio
async def test_chunks_sent_without_a_pause_are_never_held_beyond_the_bound() -> None:
    writes, transport, _ = batched()
    chunk = b"x" * (64 << 10)
    written = 0
    for _ in range(FLUSH_BYTES // len(chunk) * 3):  # a stream that never waits in between
        writes.write(chunk)
        written += len(chunk)
        sent = sum(len(piece) for _, pieces in transport.calls for piece in pieces)
        assert written - sent <= FLUSH_BYTES  # what is held back
    assert len(transport.calls) >= 2


@pytest.mark.anyio
async def test_close_sends_what_is_held_first_and_a_closed_transport_gets_nothing() -> None:
    writes, transport, _ = batched()
    writes.write(b"last words")
    writes.close()
    assert transport.calls == [("writelines", [b"last words"]), ("close", None)]
    writes.write(b"too late")
    writes.completed()
    assert transport.calls[-1] == ("close", None)
    assert writes.is_closing()
    assert writes.get_extra_info("peername") == "info peername"


async def streamed(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """/stream: a chunk, a pause, a chunk; /echo: the body read back (after 100 Continue);
    anything else: its path."""
    if scope["type"] != "http":
        return
    path = scope["path"]
    if path == "/stream":
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"first;", "more_body": True})
        await asyncio.sleep(0.6)
        await send({"type": "http.response.body", "body": b"second", "more_body": False})
        return
    body = b""
    if path == "/echo":
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
    answer = body or path.encode()
    headers = [(b"content-length", str(len(answer)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": answer})


def connect(base_url: str) -> socket.socket:
    host, port = base_url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=5)


def read_until(sock: socket.socket, marker: bytes, have: bytes = b"") -> bytes:
    while marker not in have:
        chunk = sock.recv(65536)
        if not chunk:
            break
        have += chunk
    return have


def test_served_a_stream_flows_and_pipelined_answers_come_whole_in_order() -> None:
    with serve_app(streamed, lifespan="off", http=limited(5.0, 64)) as url:
        with connect(url) as sock:
            start = time.monotonic()
            sock.sendall(b"GET /stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            first = read_until(sock, b"first;")
            first_at = time.monotonic() - start
            rest = read_until(sock, b"second", first)
            assert b"first;" in first and b"second" not in first
            assert first_at < 0.4 <= time.monotonic() - start  # chunk 1 came before the pause
            assert rest.endswith(b"0\r\n\r\n") or read_until(sock, b"0\r\n\r\n", rest)
        with connect(url) as sock:
            sock.sendall(
                b"".join(f"GET /r{i} HTTP/1.1\r\nHost: h\r\n\r\n".encode() for i in range(5))
            )
            got = b""
            while got.count(b"HTTP/1.1 200") < 5 or not got.endswith(b"/r4"):
                chunk = sock.recv(65536)
                assert chunk, got
                got += chunk
            assert [part.rsplit(b"\r\n", 1)[-1] for part in got.split(b"HTTP/1.1 200 OK")[1:]] == [
                b"/r%d" % i for i in range(5)
            ]


def test_served_a_100_continue_is_sent_before_the_body_comes() -> None:
    with (
        serve_app(streamed, lifespan="off", http=limited(5.0, 64)) as url,
        connect(url) as sock,
    ):
        sock.sendall(
            b"POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"
        )
        sock.settimeout(2)
        assert read_until(sock, b"\r\n\r\n").startswith(b"HTTP/1.1 100 Continue")
        sock.sendall(b"hello")
        assert read_until(sock, b"hello").endswith(b"hello")
