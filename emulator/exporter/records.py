"""Platform-side reads and writes of an export: synchronous functions run on the store's thread.

Each batch costs one `store.read` and one `store.write` hop; nothing reads a whole table.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from emulator.exporter import engagement as eng
from emulator.exporter import shapes
from emulator.exporter.plan import Kind
from emulator.fixtures.models import CrmConnection
from emulator.normalise import domain_key, email_key
from emulator.sequence_text import task_description, task_subject
from emulator.wire import decode, encode

_COMPANY_COLUMNS = (
    "id, name, domain, website, companyNetworkUrl, industry, rangeOfEmployees, numberOfEmployees,"
    " yearfounded, description, country, city, streetAddress, phoneNumber, revenueRange,"
    " customFields, companyCRMId"
)
_COMPANY_NAMES = [c.strip() for c in _COMPANY_COLUMNS.split(",")]
_CONTACT_SELECT = (
    "SELECT c.id, c.firstName, c.lastName, c.jobTitle, c.networkProfileUrl, c.professionalEmail,"
    " c.mobilePhone, c.phones, c.contactCountry, c.customFields, c.contactCRMId, c.companyId,"
    " co.name, co.companyCRMId FROM contacts c LEFT JOIN companies co ON co.id = c.companyId"
)
_CONTACT_NAMES = [
    "id", "firstName", "lastName", "jobTitle", "networkProfileUrl", "professionalEmail",
    "mobilePhone", "phones", "contactCountry", "customFields", "contactCRMId", "companyId",
    "companyName", "companyCRMId",
]
CRM_ID_COLUMN = {"companies": "companyCRMId", "contacts": "contactCRMId"}


def _steps(sequence: str) -> list[dict[str, Any]]:
    """A campaign's stored sequence (JSON list of steps)."""
    return decode(sequence, list[dict[str, Any]])


def only(column: str, ids: Sequence[int] | None) -> tuple[str, tuple[Any, ...]]:
    """An extra WHERE clause keeping `column` among `ids` (None: no limit); one JSON parameter
    whatever the number of ids, so no SQLite variable limit applies."""
    if ids is None:
        return "", ()
    return f" AND {column} IN (SELECT value FROM json_each(?))", (encode(list(ids)).decode(),)


def read_connection(conn: sqlite3.Connection) -> CrmConnection | None:
    row = conn.execute("SELECT settings FROM crm_connection WHERE id = 1").fetchone()
    return None if row is None else decode(row[0], CrmConnection)


def write_connection(conn: sqlite3.Connection, connection: CrmConnection) -> None:
    conn.execute(
        "INSERT INTO crm_connection(id, settings) VALUES (1, ?) "
        "ON CONFLICT(id) DO UPDATE SET settings = excluded.settings",
        (encode(connection).decode(),),
    )


def count(conn: sqlite3.Connection, kind: Kind) -> int:
    return int(conn.execute(f"SELECT count(*) FROM {kind}").fetchone()[0])


def _synced(conn: sqlite3.Connection, kind: Kind, ids: Sequence[int]) -> dict[int, list[str]]:
    marks = ",".join("?" * len(ids))
    rows = conn.execute(
        f"SELECT recordId, names FROM export_synced_properties WHERE kind = ? AND recordId IN ({marks})",
        (kind, *ids),
    ).fetchall()
    return {rid: decode(names) for rid, names in rows}


def read_batch(
    conn: sqlite3.Connection, kind: Kind, after: int, limit: int, ids: Sequence[int] | None = None
) -> list[dict[str, Any]]:
    """The next `limit` records with id > after (and among `ids` when given), as dicts
    (customFields decoded, `synced` added)."""
    if kind == "companies":
        where, extra = only("id", ids)
        sql, names = f"SELECT {_COMPANY_COLUMNS} FROM companies WHERE id > ?{where} ORDER BY id LIMIT ?", _COMPANY_NAMES
    else:
        where, extra = only("c.id", ids)
        sql, names = f"{_CONTACT_SELECT} WHERE c.id > ?{where} ORDER BY c.id LIMIT ?", _CONTACT_NAMES
    rows = [dict(zip(names, r, strict=True)) for r in conn.execute(sql, (after, *extra, limit))]
    if not rows:
        return rows
    synced = _synced(conn, kind, [r["id"] for r in rows])
    for r in rows:
        r["customFields"] = decode(r["customFields"]) if r["customFields"] else {}
        r["synced"] = synced.get(r["id"], [])
    return rows


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

    Updates that set the same columns share one statement run with executemany.
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
        groups.setdefault(sets, []).append((*params, now, u.id, *params))
        if u.synced is not None:
            if u.synced:
                upserts.append((kind, u.id, encode(sorted(u.synced)).decode()))
            else:
                deletes.append((kind, u.id))
    for sets, rows in groups.items():
        assign = ", ".join(f"{c} = ?" for c in sets)
        changed = " OR ".join(f"{c} IS NOT ?" for c in sets)
        conn.executemany(
            f"UPDATE {kind} SET {assign}, updatedAt = ? WHERE id = ? AND ({changed})", rows
        )
    conn.executemany(
        "INSERT INTO export_synced_properties(kind, recordId, names) VALUES (?, ?, ?) "
        "ON CONFLICT(kind, recordId) DO UPDATE SET names = excluded.names",
        upserts,
    )
    conn.executemany(
        "DELETE FROM export_synced_properties WHERE kind = ? AND recordId = ?", deletes
    )


def with_keys(kind: Kind, columns: dict[str, Any], row: dict[str, Any]) -> dict[str, Any]:
    """Core column changes plus the match keys derived from them (emailKey, domainKey)."""
    if kind == "contacts" and "professionalEmail" in columns:
        return {**columns, "emailKey": email_key(columns["professionalEmail"])}
    if kind == "companies" and "domain" in columns:
        return {**columns, "domainKey": domain_key(columns["domain"] or row.get("website"))}
    return columns


# ---------------------------------------------------------------------------------------------
# Activities and tasks


MessageRow = tuple[shapes.MessageView, str | None, str | None, str | None, int, int | None]


def read_messages(
    conn: sqlite3.Connection, after: int, limit: int, contacts: Sequence[int] | None = None
) -> list[MessageRow]:
    """Unlogged messages of campaigns with message sync on, of `contacts` when given:
    (view, contact CRM id, company CRM id, owner, contact id, company id)."""
    extra, params = only("cv.contactId", contacts)
    rows = conn.execute(
        "SELECT m.id, m.type, m.isContactSender, m.subject, m.content, m.sequenceIndex,"
        " m.createdAt, ca.sequence, i.name, i.companyName, c.firstName, c.lastName, co.name,"
        " c.contactCRMId, co.companyCRMId, ca.crmOwnerId, cv.contactId, c.companyId"
        " FROM messages m JOIN conversations cv ON cv.id = m.conversationId"
        " JOIN campaigns ca ON ca.id = cv.campaignId"
        " LEFT JOIN identities i ON i.id = cv.identityId"
        " LEFT JOIN contacts c ON c.id = cv.contactId"
        " LEFT JOIN companies co ON co.id = c.companyId"
        f" WHERE m.id > ? AND m.crmActivityId IS NULL AND ca.messageSync = 1{extra}"
        " ORDER BY m.id LIMIT ?",
        (after, *params, limit),
    ).fetchall()
    counts: dict[str, int] = {}
    out = []
    for r in rows:
        n = counts.get(r[7])
        if n is None:
            n = counts[r[7]] = shapes.sequence_count([step.get("type", "") for step in _steps(r[7])])
        view = shapes.MessageView(
            id=r[0], type=r[1], is_contact_sender=bool(r[2]), subject=r[3], content=r[4],
            sequence_index=r[5], sequence_count=n, occurred_at=r[6], sender_name=r[8],
            sender_company=r[9], contact_first=r[10], contact_last=r[11], contact_company=r[12],
        )
        out.append((view, r[13], r[14], r[15], r[16], r[17]))
    return out


def ensure_platform_tasks(conn: sqlite3.Connection, contacts: Sequence[int] | None = None) -> int:
    """A platform task for every TASK step a campaign member (of `contacts` when given) has
    passed; answers rows added."""
    extra, params = only("m.contactId", contacts)
    added = 0
    for cid, name, sequence in conn.execute("SELECT id, name, sequence FROM campaigns").fetchall():
        for index, step in enumerate(_steps(sequence)):
            if step.get("type") != "TASK":
                continue
            members = conn.execute(
                "SELECT m.contactId, c.firstName, co.name FROM campaign_members m"
                " JOIN contacts c ON c.id = m.contactId LEFT JOIN companies co ON co.id = c.companyId"
                f" WHERE m.campaignId = ? AND m.stepIndex > ?{extra} AND NOT EXISTS ("
                "  SELECT 1 FROM platform_tasks t WHERE t.contactId = m.contactId"
                "  AND t.campaignId = m.campaignId AND t.stepIndex = ?)",
                (cid, index, *params, index),
            ).fetchall()
            conn.executemany(
                "INSERT INTO platform_tasks(contactId, campaignId, stepIndex, subject, type)"
                " VALUES (?, ?, ?, ?, ?)",
                [(contact, cid, index,
                  task_subject(step.get("taskSubject"), step.get("taskType"), name, first, company),
                  step.get("taskType")) for contact, first, company in members],
            )
            added += len(members)
    return added


TaskRow = tuple[int, dict[str, Any], str | None, str | None, int, int | None]


def read_tasks_to_create(
    conn: sqlite3.Connection, after: int, limit: int, contacts: Sequence[int] | None = None
) -> list[TaskRow]:
    """Unsent tasks (of `contacts` when given): (task id, task body without owner,
    contact CRM id, campaign owner, contact id, company id)."""
    extra, params = only("t.contactId", contacts)
    rows = conn.execute(
        "SELECT t.id, t.subject, t.type, t.dueDate, c.contactCRMId, co.companyCRMId,"
        " ca.crmOwnerId, ca.name, t.contactId, c.companyId, t.stepIndex, ca.sequence,"
        " c.firstName, co.name FROM platform_tasks t"
        " LEFT JOIN contacts c ON c.id = t.contactId"
        " LEFT JOIN companies co ON co.id = c.companyId"
        " LEFT JOIN campaigns ca ON ca.id = t.campaignId"
        f" WHERE t.id > ? AND t.crmTaskId IS NULL{extra} ORDER BY t.id LIMIT ?",
        (after, *params, limit),
    ).fetchall()
    steps: dict[str, list[dict[str, Any]]] = {}  # per campaign sequence: decoded once
    out = []
    for (tid, subject, typ, due, contact, company, owner, campaign, contact_id, company_id,
         index, sequence, first, company_name) in rows:
        if sequence is not None and sequence not in steps:
            steps[sequence] = _steps(sequence)
        step = steps[sequence][index] if sequence is not None and index < len(steps[sequence]) else {}
        body: dict[str, Any] = {"subject": subject}
        for key, value in (
            ("description", task_description(step.get("content"), campaign, first, company_name)),
            ("type", typ), ("dueDate", due), ("contactId", contact), ("companyId", company),
        ):
            if value is not None:
                body[key] = value
        out.append((tid, body, contact, owner, contact_id, company_id))
    return out


# Completed on the platform, not yet on the CRM, and the CRM still knows the task.
COMPLETIONS_DUE = (
    "SELECT id, crmTaskId FROM platform_tasks t WHERE completed = 1 AND crmCompleted = 0"
    " AND crmTaskId IS NOT NULL AND NOT EXISTS (SELECT 1 FROM export_tasks_gone g WHERE g.taskId = t.id)"
)


def read_tasks_to_complete(conn: sqlite3.Connection) -> list[tuple[int, str]]:
    return conn.execute(f"{COMPLETIONS_DUE} ORDER BY id").fetchall()


def read_tasks_to_read_back(conn: sqlite3.Connection) -> list[tuple[int, str]]:
    """(task id, CRM task id) of every task the CRM holds and has not completed as far as the
    platform knows, less those the CRM no longer knows."""
    return conn.execute(
        "SELECT id, crmTaskId FROM platform_tasks t WHERE crmTaskId IS NOT NULL AND crmCompleted = 0"
        " AND NOT EXISTS (SELECT 1 FROM export_tasks_gone g WHERE g.taskId = t.id) ORDER BY id"
    ).fetchall()


def write_read_back(
    conn: sqlite3.Connection, completed: Sequence[tuple[int, str | None]],
    gone: Sequence[tuple[int, str]], now: str,
) -> None:
    """Tasks completed on the CRM side become completed on the platform (keeping a platform
    completion time when there is one); tasks the CRM no longer knows are remembered."""
    conn.executemany(
        "UPDATE platform_tasks SET completed = 1, crmCompleted = 1,"
        " completedAt = coalesce(completedAt, ?) WHERE id = ?",
        [(at or now, task_id) for task_id, at in completed],
    )
    conn.executemany(
        "INSERT OR IGNORE INTO export_tasks_gone(taskId, crmTaskId, at) VALUES (?, ?, ?)",
        [(task_id, crm_id, now) for task_id, crm_id in gone],
    )


# ---------------------------------------------------------------------------------------------
# Engagement


def read_engagement(
    conn: sqlite3.Connection, kind: Kind, after: int, limit: int, ids: Sequence[int] | None = None
) -> list[tuple[int, str, list[eng.Membership], list[str]]]:
    """(id, crmId, memberships, activity log) of exported records (among `ids` when given)
    with campaign members."""
    crm_col = CRM_ID_COLUMN[kind]
    extra, params = only("r.id", ids)
    # owner_sql: the record of `kind` a contact row `ct` counts for
    if kind == "contacts":
        owner_sql, joined = "ct.id", "campaign_members m WHERE m.contactId = r.id"
    else:
        owner_sql = "ct.companyId"
        joined = "contacts ct JOIN campaign_members m ON m.contactId = ct.id WHERE ct.companyId = r.id"
    records = conn.execute(
        f"SELECT r.id, r.{crm_col} FROM {kind} r WHERE r.id > ? AND r.{crm_col} IS NOT NULL{extra}"
        f" AND EXISTS (SELECT 1 FROM {joined}) ORDER BY r.id LIMIT ?",
        (after, *params, limit),
    ).fetchall()
    if not records:
        return []
    record_ids = [r[0] for r in records]
    marks = ",".join("?" * len(record_ids))
    members: dict[int, list[eng.Membership]] = {}
    step_types: dict[str, tuple[str, ...]] = {}  # per campaign sequence: decoded once, not per member
    for row in conn.execute(
        f"SELECT {owner_sql}, ca.name, i.name, ca.sequence, m.sequenceStatus, m.engagementStatus,"
        " m.opens, m.clicks, m.replies, m.addedAt FROM campaign_members m"
        " JOIN contacts ct ON ct.id = m.contactId JOIN campaigns ca ON ca.id = m.campaignId"
        " LEFT JOIN identities i ON i.id = ca.senderIdentityId"
        f" WHERE {owner_sql} IN ({marks})",
        record_ids,
    ):
        steps = step_types.get(row[3])
        if steps is None:
            steps = step_types[row[3]] = tuple(step.get("type", "") for step in _steps(row[3]))
        members.setdefault(row[0], []).append(
            eng.Membership(row[1], row[2], steps, row[4], row[5], row[6], row[7], row[8], row[9])
        )
    log: dict[int, list[str]] = {}
    for owner, typ, inbound in conn.execute(
        f"SELECT {owner_sql}, m.type, m.isContactSender FROM messages m"
        " JOIN conversations cv ON cv.id = m.conversationId JOIN contacts ct ON ct.id = cv.contactId"
        f" WHERE {owner_sql} IN ({marks}) ORDER BY m.createdAt, m.id",
        record_ids,
    ):
        log.setdefault(owner, []).append(shapes.event_name(typ, bool(inbound)))
    # The latest 20 entries: a CRM text field is no place for a whole history.
    return [(rid, crm, members.get(rid, []), log.get(rid, [])[-20:]) for rid, crm in records]
