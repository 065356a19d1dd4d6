"""The reference CRM's behaviour over the store: sync, create, update, associations, activities.

Each batch is one `Store.read`/`write` with indexed `IN (...)` lookups and statements of many
rows, never a round trip per record. A batch of up to MAX_BATCH records (every sync, create
and update: the schemas cap them there) is a brief call (`Store.read`/`write` with
`brief=True`): it runs on the event loop's thread once the database thread is idle.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from typing import Any

from msgspec import UNSET

from emulator.crm.records import (
    Kind,
    Record,
    dumps,
    insert_records,
    loads,
    next_ids,
    record_row,
    sync_properties,
    update_records,
    user_ids,
)
from emulator.crm.schemas import (
    MAX_BATCH,
    Association,
    AssociationError,
    AssociationsOut,
    Created,
    CreateOut,
    SyncError,
    SyncOut,
    SyncResult,
    UpdateOut,
    UpdateResult,
)
from emulator.fixtures.models import CrmSettings, CrmUser
from emulator.store.db import Store
from emulator.store.many_rows import many_rows
from emulator.wire import decode

CHUNK = 500  # ids per IN (...) list: well under SQLite's variable limit
# Records a call may carry and still be brief for the store. On the database thread each of a
# batch's statements and rows lets go of the GIL and waits to take it back from the event
# loop, busy meanwhile with the next calls: run on the loop's thread instead, the CRM spent
# ~11% less CPU a record on the export's batches (docs/performance.md).
BRIEF_RECORDS = MAX_BATCH


def chunks(values: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(values), CHUNK):
        yield values[start : start + CHUNK]


def marks(n: int) -> str:
    return ", ".join("?" * n)


def existing(conn: sqlite3.Connection, table: str, column: str, ids: Iterable[str]) -> set[str]:
    """Which of `ids` the table holds."""
    found: set[str] = set()
    for part in chunks(list(set(ids))):
        sql = f"SELECT {column} FROM {table} WHERE {column} IN ({marks(len(part))})"
        found.update(row[0] for row in conn.execute(sql, part))
    return found


# --- settings and users -----------------------------------------------------------------


async def load_settings(db: Store) -> CrmSettings:
    row = await db.fetchone("SELECT settings FROM crm_settings WHERE id = 1")
    return CrmSettings() if row is None else decode(row[0], CrmSettings)


def write_settings(conn: sqlite3.Connection, settings: CrmSettings) -> None:
    """The one writer of crm_settings (the seed calls it too)."""
    conn.execute(
        "INSERT OR REPLACE INTO crm_settings(id, settings) VALUES (1, ?)", (dumps(settings),)
    )


async def save_settings(db: Store, settings: CrmSettings) -> None:
    await db.write(lambda conn: write_settings(conn, settings))


def insert_users(conn: sqlite3.Connection, rows: list[tuple[str, str, str | None]]) -> None:
    """(id, name, email) of the CRM's users: fixtures alone create them (the seed calls this)."""
    conn.executemany("INSERT INTO crm_users(id, name, email) VALUES (?, ?, ?)", rows)


async def list_users(db: Store) -> list[CrmUser]:
    rows = await db.fetchall("SELECT id, name, email FROM crm_users ORDER BY rowid")
    return [CrmUser(id=r[0], name=r[1], email=r[2]) for r in rows]


# --- contacts and companies -------------------------------------------------------------


def _matches(conn: sqlite3.Connection, kind: Kind, items: list[Record]) -> list[str | None]:
    """For each item, the oldest record found by the first match column that finds one.

    Column by column, only for the items still unmatched: in the usual case (the first key
    matches) one indexed query answers the whole batch.
    """
    candidates = [kind.candidates(item) for item in items]
    found: list[str | None] = [None] * len(items)
    for column, name in enumerate(kind.key_columns):
        pending = [i for i, crm_id in enumerate(found) if crm_id is None]
        wanted = list({k for i in pending for k in candidates[i][column] if k is not None})
        hits: dict[str, str] = {}
        for part in chunks(wanted):
            sql = (
                f"SELECT {name}, crmId FROM {kind.table}"
                f" WHERE {name} IN ({marks(len(part))}) ORDER BY rowid"
            )
            for key, crm_id in conn.execute(sql, part):
                hits.setdefault(key, crm_id)
        if hits:
            for i in pending:
                found[i] = next((hits[k] for k in candidates[i][column] if k in hits), None)
    return found


def _records(conn: sqlite3.Connection, kind: Kind, crm_ids: Iterable[str]) -> dict[str, Record]:
    records: dict[str, Record] = {}
    for part in chunks(list(set(crm_ids))):
        sql = f"SELECT crmId, record FROM {kind.table} WHERE crmId IN ({marks(len(part))})"
        records.update((crm_id, loads(record)) for crm_id, record in conn.execute(sql, part))
    return records


def _stored_rows(
    conn: sqlite3.Connection, kind: Kind, crm_ids: list[str]
) -> dict[str, tuple[Record, tuple[str | None, ...]]]:
    """crmId -> (its record, its stored externalId and match keys, in `record_row` order)."""
    found: dict[str, tuple[Record, tuple[str | None, ...]]] = {}
    keys = ", ".join(kind.key_columns)
    for part in chunks(list(set(crm_ids))):
        sql = (
            f"SELECT crmId, record, externalId, {keys} FROM {kind.table}"
            f" WHERE crmId IN ({marks(len(part))})"
        )
        for crm_id, record, *columns in conn.execute(sql, part):
            found[crm_id] = (loads(record), tuple(columns))
    return found


async def sync(db: Store, kind: Kind, items: list[Record], settings: CrmSettings) -> SyncOut:
    """Matched items in `results`, injected failures in `errors`, unmatched ones left out."""
    mode = settings.syncBack

    def read(conn: sqlite3.Connection) -> tuple[list[str | None], dict[str, Record]]:
        matched = _matches(conn, kind, items)
        wanted = (c for c in matched if c is not None)
        return matched, {} if mode == "none" else _records(conn, kind, wanted)

    matched, records = await db.read(read, brief=len(items) <= BRIEF_RECORDS)
    failing = set(settings.syncErrors)
    results: list[SyncResult] = []
    errors: list[SyncError] = []
    for item, crm_id in zip(items, matched, strict=True):
        external_id = item["externalId"]
        if external_id in failing:
            errors.append(SyncError(externalId=external_id, error=f"Sync failed for {external_id}"))
        elif crm_id is not None:
            properties = (
                UNSET if mode == "none" else sync_properties(mode, kind, records[crm_id], item)
            )
            results.append(SyncResult(externalId=external_id, crmId=crm_id, properties=properties))
    return SyncOut(results=results, errors=errors) if errors else SyncOut(results=results)


async def create(db: Store, kind: Kind, items: list[Record], now: str) -> CreateOut:
    """Store each item (every field, plus the CRM's own fields) under a new crmId."""

    def write(conn: sqlite3.Connection) -> list[str]:
        ids = next_ids(conn, kind.prefix, len(items))
        users = user_ids(conn)
        rows = []
        for crm_id, item in zip(ids, items, strict=True):
            record = dict(item)
            kind.fill_owned(crm_id, record, users)
            rows.append(record_row(kind, crm_id, record, now, now))
        insert_records(conn, kind, rows)
        return ids

    ids = await db.write(write, brief=len(items) <= BRIEF_RECORDS)
    return CreateOut(
        results=[
            Created(externalId=i["externalId"], crmId=c) for i, c in zip(items, ids, strict=True)
        ]
    )


async def update(
    db: Store, kind: Kind, items: list[Record], settings: CrmSettings, now: str
) -> UpdateOut:
    """Merge every field of each item into its record; unknown or failing crmIds fail alone."""
    failing = set(settings.updateFailures)

    def write(conn: sqlite3.Connection) -> list[UpdateResult]:
        stored = _stored_rows(conn, kind, [item["crmId"] for item in items])
        results: list[UpdateResult] = []
        changed: dict[str, Record] = {}
        for item in items:
            crm_id = item["crmId"]
            row = stored.get(crm_id)
            if crm_id in failing:
                results.append(
                    UpdateResult(crmId=crm_id, success=False, error=f"Update failed for {crm_id}")
                )
            elif row is None:
                results.append(
                    UpdateResult(crmId=crm_id, success=False, error=f"Unknown crmId {crm_id}")
                )
            else:
                row[0].update((k, v) for k, v in item.items() if k != "crmId")
                changed[crm_id] = row[0]
                results.append(UpdateResult(crmId=crm_id, success=True))
        # Only the indexed columns whose value changes are set: an update that leaves the
        # match keys alone (engagement fields, a title) rewrites no index entry.
        groups: dict[tuple[str, ...], list[tuple[Any, ...]]] = {}
        names = ("externalId", *kind.key_columns)
        for crm_id, record in changed.items():
            _, external_id, text, *keys = record_row(kind, crm_id, record, now, now)[:6]
            new = (external_id, *keys)
            sets = tuple(n for n, a, b in zip(names, stored[crm_id][1], new, strict=True) if a != b)
            values = [v for n, v in zip(names, new, strict=True) if n in sets]
            groups.setdefault(sets, []).append((text, *values, now, crm_id))
        for sets, rows in groups.items():
            update_records(conn, kind, sets, rows)
        return results

    return UpdateOut(results=await db.write(write, brief=len(items) <= BRIEF_RECORDS))


def link(conn: sqlite3.Connection, rows: list[tuple[str, str, str]]) -> int:
    """Store (contact crmId, company crmId, createdAt) links, an existing one kept; answers
    how many are new. The one writer of crm_associations (the seed calls it too). Many rows
    a statement, as `records.insert_records`."""
    before = conn.total_changes
    many_rows(conn, "INSERT OR IGNORE INTO crm_associations VALUES ", rows)
    return conn.total_changes - before


async def associate(db: Store, pairs: list[Association], now: str) -> AssociationsOut:
    """Link each pair whose two records exist; `created` counts the links that are new."""

    def write(conn: sqlite3.Connection) -> AssociationsOut:
        contacts = existing(conn, "crm_contacts", "crmId", (p.contactCRMId for p in pairs))
        companies = existing(conn, "crm_companies", "crmId", (p.companyCRMId for p in pairs))
        errors: list[AssociationError] = []
        rows = []
        for p in pairs:
            problem = (
                f"Unknown contact crmId {p.contactCRMId}"
                if p.contactCRMId not in contacts
                else f"Unknown company crmId {p.companyCRMId}"
                if p.companyCRMId not in companies
                else None
            )
            if problem is None:
                rows.append((p.contactCRMId, p.companyCRMId, now))
            else:
                errors.append(
                    AssociationError(
                        contactCRMId=p.contactCRMId, companyCRMId=p.companyCRMId, error=problem
                    )
                )
        created = link(conn, rows)
        if errors:
            return AssociationsOut(created=created, errors=errors)
        return AssociationsOut(created=created)

    return await db.write(write, brief=len(pairs) <= BRIEF_RECORDS)


# --- activities -------------------------------------------------------------------------


async def create_activity(db: Store, fields: Record, now: str) -> dict[str, Any]:
    """Store the activity as sent; answer it with its new id. Two statements: a brief write
    (`Store.write`), run on the event loop's thread when the database thread is idle, without
    the hop there and back (~75 us of CPU, more than the write; one POST per message)."""
    body = {k: v for k, v in fields.items() if k != "id"}

    def write(conn: sqlite3.Connection) -> str:
        (activity_id,) = next_ids(conn, "crm-act-", 1)
        conn.execute("INSERT INTO crm_activities VALUES (?, ?, ?)", (activity_id, dumps(body), now))
        return activity_id

    return {"id": await db.write(write, brief=True), **body}
