"""None parameters bind as SQL NULL through the adapter `emulator.store.binding` registers
(the contacts worker writes through apsw, which binds None as NULL itself)."""

from __future__ import annotations

import sqlite3

import emulator.store.db  # noqa: F401  (registers the None adapter)


def test_none_binds_as_null() -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t(a, b TEXT, c INTEGER NOT NULL DEFAULT 0)")
    conn.executemany("INSERT INTO t(a, b) VALUES (?, ?)", [(None, None), (1, "x")])
    rows = conn.execute(
        "SELECT typeof(a), typeof(b), a IS NULL, b FROM t ORDER BY rowid"
    ).fetchall()
    assert rows == [("null", "null", 1, None), ("integer", "text", 0, "x")]
    assert conn.execute("SELECT count(*) FROM t WHERE a = ?", (None,)).fetchone() == (0,)
    assert conn.execute("SELECT ? IS NULL", (None,)).fetchone() == (1,)
