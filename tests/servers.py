"""Run an ASGI app under uvicorn on a free loopback port, in a thread, for the span of a test.

with serve_app(app) as base_url: ...          # any ASGI app (the emulator, a fake CRM)
with recording_server() as receiver: ...      # a receiver that records what it is sent
unused_url()                                  # a loopback URL where nothing listens
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


@contextmanager
def serve_app(
    app: Any,
    *,
    lifespan: Literal["auto", "on", "off"] = "auto",
    timeout: float = 10.0,
    http: Any = "auto",
) -> Iterator[str]:
    """Serve `app` on 127.0.0.1 at a port the OS picks; yield its base URL; stop on exit.
    `http`: uvicorn's protocol (a name, or a class such as the emulator's own)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))  # bound before uvicorn starts: no race for the port
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app, lifespan=lifespan, log_level="warning", ws="none", access_log=False, http=http
    )
    server = uvicorn.Server(config)
    failure: list[BaseException] = []

    def run() -> None:
        try:
            server.run(sockets=[sock])
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=run, name=f"uvicorn:{port}", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + timeout
        while not server.started:
            if failure or not thread.is_alive():
                raise RuntimeError(f"server on port {port} failed to start: {failure}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"server on port {port} did not start in {timeout} s")
            time.sleep(0.01)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout)
        sock.close()


def unused_url() -> str:
    """A loopback base URL with nothing listening (the port was free a moment ago)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """What a recording server was sent; `status` is what it answers (may be changed)."""

    url: str = ""
    status: int = 200
    delay: float = 0.0
    requests: list[Recorded] = field(default_factory=list)
    status_for: dict[str, int] = field(default_factory=dict)  # path -> its own answer


def recording_app(receiver: Receiver) -> Starlette:
    async def record(request: Request) -> Response:
        receiver.requests.append(
            Recorded(
                method=request.method,
                path=request.url.path,
                headers={k.lower(): v for k, v in request.headers.items()},
                body=await request.body(),
            )
        )
        if receiver.delay:
            await asyncio.sleep(receiver.delay)
        status = receiver.status_for.get(request.url.path, receiver.status)
        return Response(b'{"ok": true}', status, media_type="application/json")

    methods = ["GET", "POST", "PUT", "PATCH", "DELETE"]
    return Starlette(routes=[Route("/{path:path}", record, methods=methods)])


@contextmanager
def recording_server(status: int = 200) -> Iterator[Receiver]:
    """A server that records every request and answers `status` with a small JSON body."""
    receiver = Receiver(status=status)
    with serve_app(recording_app(receiver), lifespan="off") as url:
        receiver.url = url
        yield receiver
