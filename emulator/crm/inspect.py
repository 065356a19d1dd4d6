"""Read-only views of everything the CRM holds, for the control API and tests."""

from __future__ import annotations

import sqlite3
from typing import Any

from emulator.crm.records import KINDS, loads
from emulator.crm.schemas import StoredAssociation, StoredRecord
from emulator.crm.service import chunks, marks
from emulator.crm.tasks import task_view
from emulator.store.db import Store, select_page

INSPECTABLE = ("contacts", "companies", "activities", "tasks", "associations")

# kind -> (table, id column, selected columns)
_TABLES = {
    "contacts": ("crm_contacts", "crmId", "crmId, externalId, createdAt, updatedAt, record"),
    "companies": ("crm_companies", "crmId", "crmId, externalId, createdAt, updatedAt, record"),
    "activities": ("crm_activities", "id", "id, record, createdAt"),
    "tasks": ("crm_tasks", "id", "id, record, completed, completedAt"),
    "associations": ("crm_associations", "contactCRMId", "contactCRMId, companyCRMId, createdAt"),
}


def _links(conn: sqlite3.Connection, kind: str, ids: list[str]) -> dict[str, list[str]]:
    """Associated crmIds of each record: companies of contacts, contacts of companies."""
    mine, other = (
        ("contactCRMId", "companyCRMId") if kind == "contacts" else ("companyCRMId", "contactCRMId")
    )
    links: dict[str, list[str]] = {i: [] for i in ids}
    for part in chunks(ids):
        sql = (
            f"SELECT {mine}, {other} FROM crm_associations WHERE {mine} IN ({marks(len(part))})"
            " ORDER BY rowid"
        )
        for key, value in conn.execute(sql, part):
            links[key].append(value)
    return links


def _views(conn: sqlite3.Connection, kind: str, rows: list[tuple[Any, ...]]) -> list[Any]:
    if kind in KINDS:
        links = _links(conn, kind, [r[0] for r in rows])
        field = "companyCRMIds" if kind == "contacts" else "contactCRMIds"
        return [
            StoredRecord(
                crmId=r[0],
                externalId=r[1],
                createdAt=r[2],
                updatedAt=r[3],
                fields=loads(r[4]),
                **{field: links[r[0]]},
            )
            for r in rows
        ]
    if kind == "activities":
        return [{"id": r[0], **loads(r[1]), "createdAt": r[2]} for r in rows]
    if kind == "tasks":
        return [task_view(r) for r in rows]
    return [StoredAssociation(contactCRMId=r[0], companyCRMId=r[1], createdAt=r[2]) for r in rows]


async def list_stored(
    db: Store, kind: str, page: int, page_size: int, external_id: str | None = None
) -> tuple[int, list[Any]]:
    """(total, one page) of a kind in insertion order; contacts and companies by externalId too."""
    table, _, columns = _TABLES[kind]
    clauses, params = [], []
    if external_id is not None and kind in KINDS:
        clauses, params = ["externalId = ?"], [external_id]

    def read(conn: sqlite3.Connection) -> tuple[int, list[Any]]:
        total, rows = select_page(conn, table, columns, clauses, params, page, page_size, "rowid")
        return total, _views(conn, kind, rows)

    return await db.read(read)


async def get_stored(db: Store, kind: str, record_id: str) -> Any | None:
    """One contact, company, activity or task by id; for associations, the links of a crmId."""
    table, id_column, columns = _TABLES[kind]

    def read(conn: sqlite3.Connection) -> Any | None:
        if kind == "associations":
            sql = f"SELECT {columns} FROM {table} WHERE contactCRMId = ? OR companyCRMId = ?"
            return _views(conn, kind, conn.execute(sql, (record_id, record_id)).fetchall())
        sql = f"SELECT {columns} FROM {table} WHERE {id_column} = ?"
        rows = conn.execute(sql, (record_id,)).fetchall()
        return _views(conn, kind, rows)[0] if rows else None

    return await db.read(read)
