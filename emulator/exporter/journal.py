"""The export journal: every HTTP attempt of a run, buffered on the event loop and stored by the
run's write hops (a capped table). (The CRM ids of activities and tasks: sends.py.)"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
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
