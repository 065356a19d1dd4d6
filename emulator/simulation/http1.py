"""A small HTTP/1.1 keep-alive client for delivery POSTs to plain `http://` receivers.

Why not httpx here: on a busy 2-core machine an httpx (httpcore + anyio) request costs
~3-10 ms of CPU, which caps webhook delivery near 100-300/s; this client does the same
exchange in a fraction of that, so deliveries keep up with the simulation (>= 1,000/s).
It only POSTs a body and reads the answer (Content-Length, chunked, or until close);
anything it does not understand fails the attempt (and closes the connection), which the
caller logs and retries like any failed delivery. `https://` targets still go through httpx.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from urllib.parse import urlsplit

from emulator.public_api.outbound import TIMEOUT_SECONDS, Outcome, answered

_MAX_HEAD = 64 * 1024
_MAX_BODY = 1024 * 1024

Conn = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class ProtocolError(Exception):
    pass


class Http1Pool:
    """Idle keep-alive connections per (host, port); `close()` drops them all."""

    def __init__(self) -> None:
        self._idle: dict[tuple[str, int], list[Conn]] = defaultdict(list)

    async def close(self) -> None:
        for conns in self._idle.values():
            for _, writer in conns:
                writer.close()
        self._idle.clear()

    async def post(
        self, url: str, headers: dict[str, str], body: bytes, timeout: float = TIMEOUT_SECONDS
    ) -> Outcome:
        """POST `body` to an http:// url; every failure becomes a failed Outcome."""
        started = time.monotonic()

        def elapsed() -> int:
            return round((time.monotonic() - started) * 1000)

        try:
            parts = urlsplit(url)
            host, port = parts.hostname or "", parts.port or 80
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            lines = [f"POST {target} HTTP/1.1", f"Host: {parts.netloc.rpartition('@')[2]}",
                     f"Content-Length: {len(body)}"]
            lines += [f"{k}: {v}" for k, v in headers.items() if k.lower() != "content-length"]
            request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
        except (ValueError, UnicodeEncodeError) as exc:
            return Outcome(ok=False, statusCode=None, durationMs=elapsed(),
                           errorMessage=f"request failed: {exc}")
        try:
            async with asyncio.timeout(timeout):
                status, text = await self._exchange((host, port), request)
        except TimeoutError:
            return Outcome(ok=False, statusCode=None, durationMs=elapsed(),
                           errorMessage=f"timed out after {timeout:g} s")
        except (OSError, ProtocolError, asyncio.IncompleteReadError, ValueError) as exc:
            detail = str(exc) or type(exc).__name__
            return Outcome(ok=False, statusCode=None, durationMs=elapsed(),
                           errorMessage=f"request failed: {detail}")
        return answered(status, text, elapsed())

    async def _exchange(self, origin: tuple[str, int], request: bytes) -> tuple[int, str]:
        idle = self._idle[origin]
        while idle:  # a kept connection the server closed meanwhile: try the next, then anew
            conn = idle.pop()
            if conn[0].at_eof() or conn[1].is_closing():
                conn[1].close()
                continue
            try:
                return await self._once(origin, conn, request)
            except (OSError, asyncio.IncompleteReadError):
                conn[1].close()
            except BaseException:
                conn[1].close()
                raise
        conn = await asyncio.open_connection(*origin)
        try:
            return await self._once(origin, conn, request)
        except BaseException:
            conn[1].close()
            raise

    async def _once(self, origin: tuple[str, int], conn: Conn, request: bytes) -> tuple[int, str]:
        reader, writer = conn
        writer.write(request)
        await writer.drain()
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            if len(head) > _MAX_HEAD:
                raise ProtocolError("response head too large")
            status_line, *header_lines = head.decode("latin-1").split("\r\n")
            version, _, rest = status_line.partition(" ")
            if not version.startswith("HTTP/1."):
                raise ProtocolError(f"not an HTTP/1.x answer: {status_line[:40]!r}")
            status = int(rest[:3])
            fields: dict[str, str] = {}
            for line in header_lines:
                if line:
                    name, _, value = line.partition(":")
                    fields[name.strip().lower()] = value.strip()
            if not 100 <= status < 200:
                break  # an interim 1xx answer is followed by the real one
        keep = version == "HTTP/1.1" and "close" not in fields.get("connection", "").lower()
        if status in (204, 304):
            body = b""
        elif "chunked" in fields.get("transfer-encoding", "").lower():
            body = await _chunked(reader)
        elif "content-length" in fields:
            length = int(fields["content-length"])
            if not 0 <= length <= _MAX_BODY:
                raise ProtocolError("response body too large")
            body = await reader.readexactly(length)
        else:
            body = await _until_close(reader)
            keep = False
        if keep:
            self._idle[origin].append(conn)
        else:
            writer.close()
        return status, body.decode("utf-8", "replace")


async def _until_close(reader: asyncio.StreamReader) -> bytes:
    parts: list[bytes] = []
    size = 0
    while chunk := await reader.read(65_536):
        size += len(chunk)
        if size > _MAX_BODY:
            raise ProtocolError("response body too large")
        parts.append(chunk)
    return b"".join(parts)


async def _chunked(reader: asyncio.StreamReader) -> bytes:
    parts: list[bytes] = []
    size_total = 0
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0].strip(), 16)
        if size == 0:
            while (await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers
                pass
            return b"".join(parts)
        size_total += size
        if size_total > _MAX_BODY:
            raise ProtocolError("response body too large")
        parts.append(await reader.readexactly(size))
        await reader.readexactly(2)
