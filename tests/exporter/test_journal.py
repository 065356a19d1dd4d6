"""The export journal's caps: rows and bytes, whichever is reached first; its size kept exact."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from emulator.exporter.client import Attempt
from emulator.exporter.journal import JOURNAL_BODY_CAP, JOURNAL_BYTES, Journal
from emulator.store.db import open_sync
from emulator.store.ddl import schema_sql

ACTUAL = (
    "SELECT coalesce(sum(length(CAST(coalesce(requestBody, '') AS BLOB))"
    " + length(CAST(coalesce(responseBody, '') AS BLOB)) + length(CAST(coalesce(error, '') AS BLOB))"
    " + length(CAST(path AS BLOB)) + length(CAST(exportId AS BLOB)) + 64), 0) FROM export_journal"
)


def attempt(n: int, size: int, rng: random.Random) -> Attempt:
    """An exchange whose bodies are `size` characters (some of them 3 bytes in UTF-8)."""
    text = "".join(rng.choices("abcdé€", k=size)).encode()
    return Attempt(
        method="POST",
        path=f"/crm/contacts/{n}",
        status=200,
        duration_ms=1.5,
        attempt=1,
        request=text,
        response=text[::-1],
        error=None,
    )


def write(conn: sqlite3.Connection, journal: Journal, count: int, size: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    for start in range(0, count, 50):  # a write hop's worth at a time, as a run stores them
        for n in range(start, min(start + 50, count)):
            journal.add(attempt(n, size, rng))
        journal.store(conn, journal.take())


def sizes(conn: sqlite3.Connection) -> tuple[int, int]:
    kept = conn.execute("SELECT bytes FROM export_journal_size").fetchone()[0]
    return kept, conn.execute(ACTUAL).fetchone()[0]


def test_the_byte_cap_drops_the_oldest_rows_and_the_size_stays_exact() -> None:
    conn = open_sync(None)
    cap = 300_000
    journal = Journal("run1", lambda: "2026-11-02T09:00:00.000Z", limit=100_000, max_bytes=cap)
    write(conn, journal, 400, 2_000)
    kept, actual = sizes(conn)
    assert kept == actual and cap - 20_000 < actual <= cap
    ids = [r[0] for r in conn.execute("SELECT id FROM export_journal ORDER BY id")]
    assert ids == list(range(ids[0], 401)) and ids[0] > 1  # the newest kept, the oldest gone


def test_the_row_cap_still_applies_and_keeps_the_size_exact() -> None:
    conn = open_sync(None)
    journal = Journal("run1", lambda: "2026-11-02T09:00:00.000Z", limit=30, max_bytes=10**9)
    write(conn, journal, 200, 100)
    assert conn.execute("SELECT count(*) FROM export_journal").fetchone()[0] == 30
    kept, actual = sizes(conn)
    assert kept == actual > 0


def test_a_store_from_before_the_size_was_kept_is_counted_on_open(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    conn = open_sync(path)
    write(conn, Journal("old", lambda: "t", limit=1000, max_bytes=10**9), 40, 500)
    expected = sizes(conn)[1]
    conn.execute("DROP TABLE export_journal_size")  # as a file written before it existed
    conn.close()
    reopened = open_sync(path)
    assert sizes(reopened) == (expected, expected)
    reopened.executescript(schema_sql())  # opening again counts nothing twice
    assert sizes(reopened) == (expected, expected)


@pytest.mark.parametrize("on_disk", [False, True])
def test_a_full_journal_takes_at_most_1_4_times_its_cap(tmp_path: Path, on_disk: bool) -> None:
    """Eight hours of back-to-back exports only ever refill the same capped table, so what
    they take is what a full journal takes: its cap plus SQLite's pages, index and free pages.
    Filled here twice over at a small cap with the largest rows the journal keeps (bodies cut
    at JOURNAL_BODY_CAP characters), then with small rows; the default cap (256 MiB) times the
    ratio asserted stays under 500 MB."""
    conn = open_sync(tmp_path / "j.sqlite" if on_disk else None)
    cap = 8 * 1024 * 1024
    journal = Journal("long", lambda: "2026-11-02T09:00:00.000Z", limit=100_000, max_bytes=cap)
    write(conn, journal, 2 * cap // (2 * JOURNAL_BODY_CAP), JOURNAL_BODY_CAP + 100, seed=2)
    write(conn, journal, 8_000, 200, seed=3)
    kept, actual = sizes(conn)
    assert kept == actual <= cap
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)") if on_disk else None
    used = page_size * pages
    assert used <= 1.4 * cap + 1024 * 1024, (used, cap)
    if on_disk:
        files = sum(p.stat().st_size for p in tmp_path.iterdir())
        assert files <= 1.4 * cap + 2 * 1024 * 1024, (files, cap)
    assert JOURNAL_BYTES * 1.4 < 500 * 1000 * 1000
