"""The export journal: every HTTP attempt of a run, buffered on the event loop and stored by the
run's write hops (a capped table). (The CRM ids of activities and tasks: sends.py.)"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from emulator.exporter.client import Attempt
from emulator.redaction import Redactor

JOURNAL_BODY_CAP = 4096
JOURNAL_BUFFER = 1 << 20  # bytes of bodies buffered before a call stores them (RunContext.call)
# Bytes of rows kept (Settings.journalBytes): with the rows' other columns and SQLite's pages
# and index, the table stays under ~1.4 times this on disk and in memory (docs/security.md).
JOURNAL_BYTES = 256 * 1024 * 1024
ROW_OVERHEAD = 64  # the fixed-size columns of a row (at, method, status, numbers), counted once
# A row's size as the byte cap counts it; the same sum as the schema's first count.
ROW_BYTES = (
    "length(CAST(coalesce(requestBody, '') AS BLOB)) + length(CAST(coalesce(responseBody, '')"
    " AS BLOB)) + length(CAST(coalesce(error, '') AS BLOB)) + length(CAST(path AS BLOB))"
    f" + length(CAST(exportId AS BLOB)) + {ROW_OVERHEAD}"
)


def row_bytes(row: tuple[Any, ...]) -> int:
    """ROW_BYTES of a row as `Journal.add` builds it, counted in Python."""
    export_id, _, _, path, _, _, _, request, response, error = row
    texts = (request, response, error, path, export_id)
    return sum(len(t.encode("utf-8", "surrogatepass")) for t in texts if t) + ROW_OVERHEAD


class Journal:
    """Buffers attempts on the event loop; a batch's write hop stores them (capped table)."""

    def __init__(
        self,
        export_id: str,
        now: Callable[[], str],
        limit: int,
        max_bytes: int = JOURNAL_BYTES,
        redactor: Redactor | None = None,
    ) -> None:
        self.export_id, self.now, self.limit, self.max_bytes = export_id, now, limit, max_bytes
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

    def put_back(self, rows: list[tuple[Any, ...]]) -> None:
        """Rows `take` answered that were not stored after all: first again, in their order."""
        self._rows[:0] = rows
        self.buffered += sum(len(row[7] or "") + len(row[8] or "") for row in rows)

    def store(self, conn: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
        if not rows:
            return
        conn.executemany(
            "INSERT INTO export_journal(exportId, at, method, path, status, durationMs, attempt,"
            " requestBody, responseBody, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        added = sum(row_bytes(row) for row in rows)
        conn.execute("UPDATE export_journal_size SET bytes = bytes + ?", (added,))
        last = conn.execute("SELECT max(id) FROM export_journal").fetchone()[0]
        drop_through(conn, last - self.limit)  # the row cap
        total = conn.execute("SELECT bytes FROM export_journal_size").fetchone()[0]
        if total > self.max_bytes:  # the byte cap: the oldest rows until the rest fits
            excess, cut = total - self.max_bytes, None
            oldest = conn.execute(f"SELECT id, {ROW_BYTES} FROM export_journal ORDER BY id")
            for row_id, size in oldest:
                excess, cut = excess - size, row_id
                if excess <= 0:
                    break
            oldest.close()
            if cut is not None:
                drop_through(conn, cut)


def drop_through(conn: sqlite3.Connection, last_id: int) -> None:
    """Delete the journal's rows up to `last_id` and take their bytes off its size."""
    freed = conn.execute(
        f"SELECT coalesce(sum({ROW_BYTES}), 0) FROM export_journal WHERE id <= ?", (last_id,)
    ).fetchone()[0]
    if freed:
        conn.execute("DELETE FROM export_journal WHERE id <= ?", (last_id,))
        conn.execute("UPDATE export_journal_size SET bytes = bytes - ?", (freed,))
