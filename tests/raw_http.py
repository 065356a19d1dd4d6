"""A bare HTTP/1.1 server on asyncio streams, for tests that look at the exact bytes a client
sends (request line, header order, body) and at its connections; TLS with a trustme CA."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trustme

NO_CONTENT = b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n"


def answer(body: bytes, *extra: bytes) -> bytes:
    """A 200 with a JSON `body` and `extra` header lines."""
    head = [b"HTTP/1.1 200 OK", b"Content-Type: application/json", *extra]
    return b"\r\n".join([*head, b"Content-Length: %d" % len(body), b"", body])


class Server:
    """What the server saw: each request's (head, body), and how many connections."""

    def __init__(self, reply: bytes) -> None:
        self.reply = reply
        self.requests: list[tuple[bytes, bytes]] = []
        self.connections = 0


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, Server], Awaitable[None]]


async def read_request(reader: asyncio.StreamReader) -> tuple[bytes, bytes] | None:
    """One request's head and body (by its Content-Length), or None once the client is gone."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    length = 0
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return head, await reader.readexactly(length)


async def keep_alive(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, s: Server) -> None:
    """Answer every request of the connection with the server's reply."""
    while (request := await read_request(reader)) is not None:
        s.requests.append(request)
        writer.write(s.reply)
        await writer.drain()


@asynccontextmanager
async def raw_server(
    handler: Handler = keep_alive,
    *,
    reply: bytes = NO_CONTENT,
    tls: ssl.SSLContext | None = None,
    path: str = "/",
) -> AsyncIterator[tuple[str, Server]]:
    """A server on a free loopback port; yields (its URL ending in `path`, what it saw)."""
    state = Server(reply)

    async def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        state.connections += 1
        try:
            await handler(reader, writer, state)
        finally:
            writer.close()

    server = await asyncio.start_server(connected, "127.0.0.1", 0, ssl=tls)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{port}{path}", state


class Certificate:
    """A trustme CA and a certificate for 127.0.0.1 it issued: the server's TLS context, and
    the CA as a file a client can be told to trust."""

    def __init__(self, directory: Path) -> None:
        self.ca = trustme.CA()
        self.ca_file = directory / "ca.pem"
        self.ca.cert_pem.write_to_path(self.ca_file)
        self.server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ca.issue_cert("127.0.0.1").configure_cert(self.server)


def proxy_everything(monkeypatch: pytest.MonkeyPatch, proxy: str) -> None:
    """Every plain-HTTP request of this test goes through `proxy` (HTTP_PROXY, no NO_PROXY)."""
    monkeypatch.setenv("HTTP_PROXY", proxy)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
