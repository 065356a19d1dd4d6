"""The last store version at which a few rarely written tables changed.

A cache of one of them (the API keys, the CRM connection's link templates, a list's member
count) re-reads it only when a write touched it, not after every write: TEMP triggers on the
store's connection name the table in `table_watch` inside the writing transaction, and the
store collects the names as the transaction commits (a restore of the whole database changes
every table).
"""

from __future__ import annotations

import sqlite3

WATCHED = ("api_keys", "crm_connection", "list_members")

WATCH_SQL = "\n".join(
    [
        "CREATE TEMP TABLE IF NOT EXISTS table_watch (name TEXT PRIMARY KEY);",
        *(
            f"CREATE TEMP TRIGGER IF NOT EXISTS watch_{table}_{event.lower()} AFTER {event}"
            f" ON main.{table} BEGIN INSERT OR IGNORE INTO table_watch VALUES ('{table}'); END;"
            for table in WATCHED
            for event in ("INSERT", "UPDATE", "DELETE")
        ),
    ]
)


def install(conn: sqlite3.Connection) -> None:
    conn.executescript(WATCH_SQL)


def collect(conn: sqlite3.Connection) -> list[str]:
    """The watched tables written since the last collect, and start over."""
    return [row[0] for row in conn.execute("DELETE FROM temp.table_watch RETURNING name")]
