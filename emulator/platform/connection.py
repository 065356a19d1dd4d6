"""The CRM connection row (`crm_connection`, id 1): its settings and its last health."""

from __future__ import annotations

import sqlite3

from emulator.fixtures.models import CrmConnection
from emulator.wire import decode, encode


def read(conn: sqlite3.Connection) -> CrmConnection | None:
    row = conn.execute("SELECT settings FROM crm_connection WHERE id = 1").fetchone()
    return None if row is None else decode(row[0], CrmConnection)


def write(conn: sqlite3.Connection, connection: CrmConnection) -> None:
    """Store the settings; a connection's health history stays."""
    conn.execute(
        "INSERT INTO crm_connection(id, settings) VALUES (1, ?) "
        "ON CONFLICT(id) DO UPDATE SET settings = excluded.settings",
        (encode(connection).decode(),),
    )


def replace(conn: sqlite3.Connection, settings: str, health: str) -> None:
    """Store encoded settings with the health of their first probes (a new history)."""
    conn.execute(
        "INSERT INTO crm_connection(id, settings, lastHealth) VALUES (1, ?, ?)"
        " ON CONFLICT(id) DO UPDATE SET settings = excluded.settings,"
        " lastHealth = excluded.lastHealth",
        (settings, health),
    )


def record_health(conn: sqlite3.Connection, health: str, settings: str) -> None:
    """Store a periodic check's health, unless the connection was replaced meanwhile."""
    conn.execute(
        "UPDATE crm_connection SET lastHealth = ? WHERE id = 1 AND settings = ?", (health, settings)
    )


def delete(conn: sqlite3.Connection) -> bool:
    """Forget the connection; answers whether there was one."""
    return conn.execute("DELETE FROM crm_connection WHERE id = 1").rowcount > 0
