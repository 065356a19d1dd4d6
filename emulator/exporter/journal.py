"""The export journal: every HTTP attempt of a run, buffered on the event loop and stored by the
run's write hops (a capped table); and the coalescing writer of CRM ids."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable
from typing import Any

from emulator.exporter.client import Attempt

JOURNAL_BODY_CAP = 4096
JOURNAL_BUFFER = 1 << 20  # bytes of bodies buffered before a call stores them (RunContext.call)


class Journal:
    """Buffers attempts on the event loop; a batch's write hop stores them (capped table)."""

    def __init__(self, export_id: str, now: Callable[[], str], limit: int) -> None:
        self.export_id, self.now, self.limit = export_id, now, limit
        self._rows: list[tuple[Any, ...]] = []
        self.buffered = 0  # characters of bodies in `_rows`

    def add(self, a: Attempt) -> None:
        def cap(data: bytes | None) -> str | None:
            if data is None:
                return None
            text = data[:JOURNAL_BODY_CAP].decode("utf-8", "replace")
            return text + "…" if len(data) > JOURNAL_BODY_CAP else text

        request, response = cap(a.request), cap(a.response)
        self.buffered += len(request or "") + len(response or "")
        self._rows.append(
            (
                self.export_id,
                self.now(),
                a.method,
                a.path,
                a.status,
                round(a.duration_ms, 3),
                a.attempt,
                request,
                response,
                a.error,
            )
        )

    def take(self) -> list[tuple[Any, ...]]:
        rows, self._rows = self._rows, []
        self.buffered = 0
        return rows

    def store(self, conn: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
        if not rows:
            return
        conn.executemany(
            "INSERT INTO export_journal(exportId, at, method, path, status, durationMs, attempt,"
            " requestBody, responseBody, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        conn.execute(
            "DELETE FROM export_journal WHERE id <= (SELECT max(id) FROM export_journal) - ?",
            (self.limit,),
        )


class Coalescer:
    """Writes rows as soon as possible, several at once: one commit for whatever piled up
    while the previous commit ran. `add` returns once its row is stored."""

    def __init__(self, write: Callable[[list[tuple[Any, ...]]], Awaitable[None]]) -> None:
        self._write = write
        self._pending: list[tuple[tuple[Any, ...], asyncio.Future[None]]] = []
        self._running = False
        self._drainer: asyncio.Task[None] | None = None  # held: the loop keeps only weak references

    async def add(self, row: tuple[Any, ...]) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending.append((row, future))
        if not self._running:
            self._running = True
            self._drainer = asyncio.create_task(self._drain())
        await future

    async def _drain(self) -> None:
        try:
            while self._pending:
                batch, self._pending = self._pending, []
                try:
                    await self._write([row for row, _ in batch])
                except Exception as exc:  # handed to every waiting caller
                    for _, future in batch:
                        future.set_exception(exc)
                else:
                    for _, future in batch:
                        future.set_result(None)
        finally:
            self._running = False
