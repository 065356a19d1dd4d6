"""What an export learns about platform records: their CRM ids, the core columns and custom
fields the CRM synced back, and which synced properties each record now holds."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from emulator.platform import companies, contacts
from emulator.wire import encode

Kind = Literal["companies", "contacts"]
CRM_ID_COLUMN = {"companies": "companyCRMId", "contacts": "contactCRMId"}


@dataclass
class RecordUpdate:
    """What one batch learnt about one platform record."""

    id: int
    crm_id: str
    columns: dict[str, Any] = field(default_factory=dict)
    custom: dict[str, Any] | None = None  # the new customFields, when properties changed it
    synced: frozenset[str] | None = None  # the new synced custom names, when properties came


def write_batch(
    conn: sqlite3.Connection, kind: Kind, updates: Iterable[RecordUpdate], now: str
) -> None:
    """Store CRM ids and sync-back changes; updatedAt moves only for records that changed.

    Updates that set the same columns share statements of many rows (`many_rows`).
    """
    crm_col = CRM_ID_COLUMN[kind]
    groups: dict[tuple[str, ...], list[tuple[Any, ...]]] = {}
    upserts: list[tuple[Any, ...]] = []
    deletes: list[tuple[Any, ...]] = []
    for u in updates:
        sets = (crm_col, *u.columns)
        params: list[Any] = [u.crm_id, *u.columns.values()]
        if u.custom is not None:
            sets += ("customFields",)
            params.append(encode(u.custom).decode())
        groups.setdefault(sets, []).append((u.id, now, *params))
        if u.synced is not None:
            if u.synced:
                upserts.append((kind, u.id, encode(sorted(u.synced)).decode()))
            else:
                deletes.append((kind, u.id))
    owner = contacts if kind == "contacts" else companies
    for sets, rows in groups.items():
        if sets == (crm_col,):  # the CRM id alone (every created record): one statement
            owner.write_one_column(conn, crm_col, encode({r[0]: r[2] for r in rows}).decode(), now)
        else:
            owner.write_synced(conn, sets, rows)
    conn.executemany(
        "INSERT INTO export_synced_properties(kind, recordId, names) VALUES (?, ?, ?) "
        "ON CONFLICT(kind, recordId) DO UPDATE SET names = excluded.names",
        upserts,
    )
    conn.executemany(
        "DELETE FROM export_synced_properties WHERE kind = ? AND recordId = ?", deletes
    )
