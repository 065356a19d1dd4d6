"""The hour counts answer every updatedAt range exactly as counting the rows would, for any
text a column holds and any bound, after any insert, update and delete."""

from __future__ import annotations

import sqlite3
from unittest.mock import patch

from hypothesis import example, given, settings
from hypothesis import strategies as st

from emulator.store import updated_counts

# Timestamps of a few hours (so buckets hold several rows and bounds fall inside them), and
# odd texts: shorter than an hour's prefix, past the last code point, empty.
STAMP = st.builds(
    "2026-05-0{}T1{}:{}0:00.000Z".format,
    st.integers(1, 2),
    st.integers(0, 2),
    st.integers(0, 5),
)
TEXT = STAMP | st.text("20-6T1:\U0010ffff", max_size=15)
BOUND = st.none() | TEXT


def store(stamps: list[str]) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    for table in updated_counts.TABLES:
        conn.execute(f"CREATE TABLE {table}(id INTEGER PRIMARY KEY, updatedAt TEXT NOT NULL)")
        conn.execute(f"CREATE INDEX {table}_updated ON {table}(updatedAt)")
    conn.executemany("INSERT INTO contacts(updatedAt) VALUES (?)", [(s,) for s in stamps])
    return conn


def counted(conn: sqlite3.Connection, low: str | None, high: str | None) -> int:
    """The reference: every row compared."""
    rows = conn.execute("SELECT updatedAt FROM contacts").fetchall()
    return sum((low is None or low <= s) and (high is None or s <= high) for (s,) in rows)


Write = st.one_of(
    st.tuples(st.just("insert"), TEXT),
    st.tuples(st.just("update"), st.integers(1, 30), TEXT),
    st.tuples(st.just("delete"), st.integers(1, 30)),
    st.tuples(st.just("fill")),  # the build's next chunk: writes land on both sides of it
)


@settings(max_examples=200, deadline=None)
@given(
    stamps=st.lists(TEXT, max_size=30),
    writes=st.lists(Write, max_size=12),
    bounds=st.lists(st.tuples(BOUND, BOUND), min_size=1, max_size=5),
    chunk=st.integers(1, 4),
)
# a move within one hour across the build's mark (found by a CI run): it must count
@example(
    stamps=[
        "2026-05-01T10:00:00.000Z",
        "6",
        "2026-05-02T12:10:00.000Z",
        "2026-05-01T10:00:00.000Z",
    ],
    writes=[("insert", ""), ("fill",), ("update", 3, "2026-05-02T12:00:00.000Z")],
    bounds=[(None, "6")],
    chunk=3,
)
def test_a_range_counts_what_counting_every_row_gives(
    stamps: list[str],
    writes: list[tuple[object, ...]],
    bounds: list[tuple[str | None, ...]],
    chunk: int,
) -> None:
    conn = store(stamps)
    with patch.object(updated_counts, "CHUNK", chunk):
        updated_counts.start(conn)
        for write in writes:
            match write:
                case ("insert", stamp):
                    conn.execute("INSERT INTO contacts(updatedAt) VALUES (?)", (stamp,))
                case ("update", row, stamp):
                    conn.execute("UPDATE contacts SET updatedAt = ? WHERE id = ?", (stamp, row))
                case ("delete", row):
                    conn.execute("DELETE FROM contacts WHERE id = ?", (row,))
                case ("fill",):
                    updated_counts.fill(conn, "contacts")
        while not updated_counts.fill(conn, "contacts"):
            pass
    for low, high in bounds:
        assert updated_counts.range_count(conn, "contacts", low, high) == counted(conn, low, high)


def test_an_edge_hour_is_read_through_the_index_alone() -> None:
    conn = store([])
    sql = (
        "EXPLAIN QUERY PLAN SELECT count(*) FROM main.contacts WHERE updatedAt >= ?"
        " AND substr(updatedAt, 1, 13) = ? AND updatedAt >= ? AND updatedAt < ?"
    )
    plan = " ".join(row[3] for row in conn.execute(sql, ["a", "b", "c", "d"]))
    assert "updatedAt>? AND updatedAt<?" in plan, plan


def test_the_least_text_above_a_prefix() -> None:
    assert updated_counts.after_bucket("2026-05-01T13") == "2026-05-01T14"
    assert updated_counts.after_bucket("a\U0010ffff") is None
