"""The simulation's writes of conversations, messages, views and events
(`campaign_tables.simulated_statements`): what they write, and that a failed insert raises
so that the transaction around it rolls back whole (they run as INSERT OR FAIL, which keeps
the rows a statement wrote before failing until that rollback)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest

from emulator.platform.campaign_tables import simulated_statements
from emulator.store.db import open_sync
from emulator.store.many_rows import run_statements

AT = "2026-11-02T09:00:00.000Z"
LATER = "2026-11-02T10:00:00.000Z"


@pytest.fixture
def conn() -> Iterator[sqlite3.Connection]:
    connection = open_sync(None)
    yield connection
    connection.close()


def message(mid: int, conversation: int) -> tuple[object, ...]:
    return (mid, conversation, "Hello", "Hi", "EMAIL", 0, 1, 1, AT, AT)


def event(contact: int, mid: int | None) -> tuple[object, ...]:
    return ("MESSAGE_SENT", contact, 7, mid, AT, "{}")


def table(conn: sqlite3.Connection, sql: str) -> list[tuple[object, ...]]:
    return conn.execute(sql).fetchall()


def test_the_rows_are_written_as_given_with_event_ids_in_their_order(
    conn: sqlite3.Connection,
) -> None:
    # 600 events: more than one statement (128 rows at most each)
    events = [event(contact, None) for contact in range(600, 0, -1)]
    conn.execute("BEGIN")
    run_statements(
        conn,
        simulated_statements(
            [(1, 42, 7, 3)], [message(10, 1), message(11, 1)], [(2, 1, LATER, 10)], events
        ),
    )
    conn.execute("COMMIT")
    assert table(conn, "SELECT * FROM conversations") == [(1, 42, 7, 3)]
    assert table(
        conn, "SELECT id, conversationId, viewCount, clickCount, updatedAt FROM messages"
    ) == [(10, 1, 2, 1, LATER), (11, 1, 0, 0, AT)]
    rows = table(conn, "SELECT id, contactId FROM events ORDER BY id")
    assert [contact for _, contact in rows] == list(range(600, 0, -1))
    assert [eid for eid, _ in rows] == list(range(1, 601))


def test_a_failed_insert_raises_and_its_transaction_rolls_back_whole(
    conn: sqlite3.Connection,
) -> None:
    conn.execute("BEGIN")
    run_statements(conn, simulated_statements([], [message(10, 1)], [], []))
    conn.execute("COMMIT")
    # the second batch's messages, one statement of 8 rows: 11-17 go in before 10, taken
    # already, fails
    batch = [message(mid, 1) for mid in (11, 12, 13, 14, 15, 16, 17, 10)]
    statements = simulated_statements([(1, 42, 7, 3)], batch, [], [event(42, 11)])
    conn.execute("BEGIN")
    with pytest.raises(sqlite3.IntegrityError):
        run_statements(conn, statements)
    # OR FAIL: the failed statement's earlier rows stand until the transaction's rollback
    assert table(conn, "SELECT id FROM messages") == [(mid,) for mid in range(10, 18)]
    conn.execute("ROLLBACK")
    assert table(conn, "SELECT id FROM messages") == [(10,)]
    assert table(conn, "SELECT * FROM conversations") == []
    assert table(conn, "SELECT * FROM events") == []
