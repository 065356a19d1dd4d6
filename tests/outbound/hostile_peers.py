"""Peers that misbehave on purpose, on loopback, in a thread of their own: one that dribbles
its answer (the head at once, then a byte every DRIBBLE_SECONDS, for ever) and one whose body
never ends (chunks as fast as the client reads them). Each answers every request so, whatever
the path (a CRM's /health, a webhook receiver's URL). And the memory of a process, from /proc."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.raw_http import read_request

DRIBBLE_SECONDS = 0.2  # between two bytes: well under any per-read timeout of the client
CHUNK = b"x" * 65536
DRIBBLE_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
)
ENDLESS_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
)


@dataclass
class Peers:
    dribbling: str  # base URLs
    endless: str
    requests: int = 0
    most_sent: int = 0  # the most bytes of body any one endless answer got out
    paths: list[str] = field(default_factory=list)


async def _dribble(writer: asyncio.StreamWriter) -> None:
    writer.write(DRIBBLE_HEAD)
    while True:
        await writer.drain()
        await asyncio.sleep(DRIBBLE_SECONDS)
        writer.write(b" ")


async def _endless(writer: asyncio.StreamWriter, peers: Peers) -> None:
    writer.write(ENDLESS_HEAD)
    framed = b"%x\r\n%s\r\n" % (len(CHUNK), CHUNK)
    sent = 0
    while True:
        writer.write(framed)
        await writer.drain()
        sent += len(CHUNK)
        peers.most_sent = max(peers.most_sent, sent)


@contextmanager
def hostile_peers() -> Iterator[Peers]:
    """Both peers on free loopback ports until the block ends."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    peers = Peers("", "")
    servers: list[asyncio.Server] = []

    def handler(kind: str):  # type: ignore[no-untyped-def]
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError, asyncio.CancelledError):
                request = await read_request(reader)
                if request is None:
                    return
                peers.requests += 1
                peers.paths.append(request[0].split(b" ")[1].decode())
                await (_dribble(writer) if kind == "dribbling" else _endless(writer, peers))
            writer.close()

        return handle

    async def start() -> None:
        for kind in ("dribbling", "endless"):
            server = await asyncio.start_server(handler(kind), "127.0.0.1", 0)
            servers.append(server)
            setattr(peers, kind, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}")
        ready.set()

    def run() -> None:
        loop.run_until_complete(start())
        loop.run_forever()

    thread = threading.Thread(target=run, name="hostile-peers", daemon=True)
    thread.start()
    ready.wait(10)
    try:
        yield peers
    finally:

        async def stop() -> None:
            for server in servers:
                server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        asyncio.run_coroutine_threadsafe(stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


MB = 1024 * 1024


class Memory:
    """Peak resident memory of a process from now on (Linux: /proc/PID/clear_refs resets the
    peak, VmHWM reads it)."""

    def __init__(self, pid: int) -> None:
        self.proc = Path(f"/proc/{pid}")
        self.start = self._field("VmRSS")
        (self.proc / "clear_refs").write_text("5")  # peak RSS := current RSS

    def _field(self, name: str) -> int:
        for line in (self.proc / "status").read_text().splitlines():
            if line.startswith(name + ":"):
                return int(line.split()[1]) * 1024
        raise LookupError(name)

    def growth(self) -> int:
        """Bytes the peak went above the resident memory at the start."""
        return self._field("VmHWM") - self.start
