"""The export journal: every HTTP attempt of a run, buffered on the event loop and stored by the
run's write hops (a capped table); and the coalescing writer of CRM ids."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable
from typing import Any

from emulator.exporter.client import Attempt
from emulator.redaction import Redactor

JOURNAL_BODY_CAP = 4096
JOURNAL_BUFFER = 1 << 20  # bytes of bodies buffered before a call stores them (RunContext.call)


class Journal:
    """Buffers attempts on the event loop; a batch's write hop stores them (capped table)."""

    def __init__(
        self,
        export_id: str,
        now: Callable[[], str],
        limit: int,
        redactor: Redactor | None = None,
    ) -> None:
        self.export_id, self.now, self.limit = export_id, now, limit
        # The journal is a sink: it redacts what it stores whoever sent the request (the
        # client redacts too; a second pass over a clean body is one quick scan).
        self.redact = redactor or Redactor()
        self._rows: list[tuple[Any, ...]] = []
        self.buffered = 0  # characters of bodies in `_rows`

    def add(self, a: Attempt) -> None:
        def cap(data: bytes | None) -> str | None:
            if data is None:
                return None
            data = self.redact.bytes(data)  # whole, before the cut: no half secret is kept
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
                self.redact.optional(a.error),
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


COALESCE_ROWS = 100  # rows of one write at most
COALESCE_SECONDS = 0.01  # how long a row may wait for others before its write starts


class Coalescer:
    """Writes rows in batches, off the callers' path: a row waits at most COALESCE_SECONDS
    (or until COALESCE_ROWS piled up) for others to share its commit. One write runs at a
    time; `stored(rows)` is called after each. `flush()` writes what is left at once and
    returns when every row added so far is stored, raising what a write raised.

    (Before, each caller awaited its own row's commit: ~3 rows a commit, a thousand commits
    over the auto-sync bench, each a round trip to the database thread.)"""

    def __init__(
        self,
        write: Callable[[list[tuple[Any, ...]]], Awaitable[None]],
        stored: Callable[[list[tuple[Any, ...]]], None] | None = None,
    ) -> None:
        self._write, self._stored = write, stored
        self._pending: list[tuple[Any, ...]] = []
        self._full = asyncio.Event()  # COALESCE_ROWS piled up, or a flush wants them now
        self._flushing = False
        self._drainer: asyncio.Task[None] | None = None  # held: the loop keeps only weak refs
        self._error: BaseException | None = None

    def add(self, row: tuple[Any, ...]) -> None:
        if self._error is not None:
            raise self._error
        self._pending.append(row)
        if len(self._pending) >= COALESCE_ROWS:
            self._full.set()
        if self._drainer is None:
            self._drainer = asyncio.create_task(self._drain())

    async def flush(self) -> None:
        self._flushing = True
        self._full.set()
        try:
            while self._drainer is not None:
                await asyncio.shield(self._drainer)
        finally:
            self._flushing = False
            self._full.clear()
        if self._error is not None:
            raise self._error

    async def _drain(self) -> None:
        try:
            while self._pending:
                if not self._full.is_set():
                    try:
                        async with asyncio.timeout(COALESCE_SECONDS):
                            await self._full.wait()
                    except TimeoutError:
                        pass
                batch, self._pending = self._pending[:COALESCE_ROWS], self._pending[COALESCE_ROWS:]
                if len(self._pending) < COALESCE_ROWS and not self._flushing:
                    self._full.clear()
                await self._write(batch)
                if self._stored is not None:
                    self._stored(batch)
        except Exception as exc:  # kept for add() and flush() to raise
            self._error = exc
        finally:
            self._drainer = None
