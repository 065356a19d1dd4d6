"""Platform-side reads and writes of an export: synchronous functions run on the store's thread.

Each batch costs one `store.read` and one `store.write` hop; nothing reads a whole table.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from emulator.exporter import engagement as eng
from emulator.exporter import listing as lst
from emulator.exporter import shapes
from emulator.exporter.plan import Kind
from emulator.platform import tasks as platform_tasks
from emulator.platform.crm_sync import CRM_ID_COLUMN as CRM_ID_COLUMN
from emulator.platform.sequence_text import task_description
from emulator.platform.sql import id_array
from emulator.platform.sql import only as only
from emulator.platform.sql import steps as _steps
from emulator.wire import decode

_COMPANY_COLUMNS = (
    "id, name, domain, website, companyNetworkUrl, industry, rangeOfEmployees, numberOfEmployees,"
    " yearfounded, description, country, city, streetAddress, phoneNumber, revenueRange,"
    " customFields, companyCRMId"
)
_COMPANY_NAMES = [c.strip() for c in _COMPANY_COLUMNS.split(",")]
_COMPANY_SELECT = "SELECT " + ", ".join(f"co.{name}" for name in _COMPANY_NAMES)
_CONTACT_SELECT = (
    "SELECT c.id, c.firstName, c.lastName, c.jobTitle, c.networkProfileUrl, c.professionalEmail,"
    " c.mobilePhone, c.phones, c.contactCountry, c.customFields, c.contactCRMId, c.companyId,"
    " co.name, co.companyCRMId"
)
_CONTACT_NAMES = [
    "id",
    "firstName",
    "lastName",
    "jobTitle",
    "networkProfileUrl",
    "professionalEmail",
    "mobilePhone",
    "phones",
    "contactCountry",
    "customFields",
    "contactCRMId",
    "companyId",
    "companyName",
    "companyCRMId",
]


def count(conn: sqlite3.Connection, kind: Kind) -> int:
    return int(conn.execute(f"SELECT count(*) FROM {kind}").fetchone()[0])


def _synced(conn: sqlite3.Connection, kind: Kind, ids: Sequence[int]) -> dict[int, list[str]]:
    marks = ",".join("?" * len(ids))
    rows = conn.execute(
        f"SELECT recordId, names FROM export_synced_properties WHERE kind = ? AND recordId IN ({marks})",
        (kind, *ids),
    ).fetchall()
    return {rid: decode(names) for rid, names in rows}


def list_records(conn: sqlite3.Connection, listing: int, ids: Sequence[int]) -> int:
    """List the records of an export of a selection (their ids, for `read_batch`)."""
    return lst.fill(conn, listing, "SELECT value AS id FROM json_each(?)", (id_array(ids),))


def read_batch(
    conn: sqlite3.Connection, kind: Kind, after: int, limit: int, listing: int | None = None
) -> list[dict[str, Any]]:
    """The next `limit` records with id > after (and among those listed under `listing` when
    given, by `list_records`), as dicts (customFields decoded, `synced` added)."""
    if kind == "companies":
        source, where, order = lst.page_source("companies", "co", listing)
        select, names = f"{_COMPANY_SELECT} FROM {source}", _COMPANY_NAMES
    else:
        source, where, order = lst.page_source("contacts", "c", listing)
        select = f"{_CONTACT_SELECT} FROM {source} LEFT JOIN companies co ON co.id = c.companyId"
        names = _CONTACT_NAMES
    sql = f"{select} WHERE {where} ORDER BY {order} LIMIT ?"
    params = (*lst.page_params(listing, after), limit)
    rows = [dict(zip(names, r, strict=True)) for r in conn.execute(sql, params)]
    if not rows:
        return rows
    synced = _synced(conn, kind, [r["id"] for r in rows])
    for r in rows:
        r["customFields"] = decode(r["customFields"]) if r["customFields"] else {}
        r["synced"] = synced.get(r["id"], [])
    return rows


def read_links(conn: sqlite3.Connection, ids: Sequence[int]) -> list[tuple[str, str]]:
    """(contact CRM id, company CRM id) of the given contacts, in their order; a contact
    without both is left out."""
    marks = ",".join("?" * len(ids))
    found = {
        row[0]: (row[1], row[2])
        for row in conn.execute(
            "SELECT c.id, c.contactCRMId, co.companyCRMId FROM contacts c"
            f" JOIN companies co ON co.id = c.companyId WHERE c.id IN ({marks})",
            tuple(ids),
        )
    }
    return [found[i] for i in ids if i in found and found[i][0] and found[i][1]]


# ---------------------------------------------------------------------------------------------
# Activities and tasks


MessageRow = tuple[shapes.MessageView, str | None, str | None, str | None, int, int | None]


_UNLOGGED = "m.crmActivityId IS NULL AND ca.messageSync = 1"  # a message read_messages sends


def count_messages(conn: sqlite3.Connection, contacts: Sequence[int] | None = None) -> int:
    """How many messages `read_messages` would list from the start (a progress total)."""
    extra, params = only("cv.contactId", contacts)
    return int(
        conn.execute(
            "SELECT count(*) FROM messages m JOIN conversations cv ON cv.id = m.conversationId"
            " JOIN campaigns ca ON ca.id = cv.campaignId"
            f" WHERE {_UNLOGGED}{extra}",
            params,
        ).fetchone()[0]
    )


def list_messages(conn: sqlite3.Connection, listing: int, contacts: Sequence[int]) -> int:
    """List the messages of `contacts` that `read_messages` would read (for a selection)."""
    return lst.fill(
        conn,
        listing,
        "SELECT m.id FROM messages m JOIN conversations cv ON cv.id = m.conversationId"
        f" JOIN campaigns ca ON ca.id = cv.campaignId WHERE {_UNLOGGED}"
        " AND cv.contactId IN (SELECT value FROM json_each(?))",
        (id_array(contacts),),
    )


def read_messages(
    conn: sqlite3.Connection, after: int, limit: int, listing: int | None = None
) -> list[MessageRow]:
    """Unlogged messages of campaigns with message sync on, among those listed under
    `listing` when given (`list_messages`): (view, contact CRM id, company CRM id, owner,
    contact id, company id)."""
    source, where, order = lst.page_source("messages", "m", listing)
    rows = conn.execute(
        "SELECT m.id, m.type, m.isContactSender, m.subject, m.content, m.sequenceIndex,"
        " m.createdAt, ca.sequence, i.name, i.companyName, c.firstName, c.lastName, co.name,"
        " c.contactCRMId, co.companyCRMId, ca.crmOwnerId, cv.contactId, c.companyId"
        f" FROM {source} JOIN conversations cv ON cv.id = m.conversationId"
        " JOIN campaigns ca ON ca.id = cv.campaignId"
        " LEFT JOIN identities i ON i.id = cv.identityId"
        " LEFT JOIN contacts c ON c.id = cv.contactId"
        " LEFT JOIN companies co ON co.id = c.companyId"
        f" WHERE {where} AND {_UNLOGGED} ORDER BY {order} LIMIT ?",
        (*lst.page_params(listing, after), limit),
    ).fetchall()
    counts: dict[str, int] = {}
    out = []
    for r in rows:
        n = counts.get(r[7])
        if n is None:
            n = counts[r[7]] = shapes.sequence_count(
                [step.get("type", "") for step in _steps(r[7])]
            )
        view = shapes.MessageView(
            id=r[0],
            type=r[1],
            is_contact_sender=bool(r[2]),
            subject=r[3],
            content=r[4],
            sequence_index=r[5],
            sequence_count=n,
            occurred_at=r[6],
            sender_name=r[8],
            sender_company=r[9],
            contact_first=r[10],
            contact_last=r[11],
            contact_company=r[12],
        )
        out.append((view, r[13], r[14], r[15], r[16], r[17]))
    return out


TaskRow = tuple[int, dict[str, Any], str | None, str | None, bool, int, int | None]


def count_tasks_to_create(conn: sqlite3.Connection, contacts: Sequence[int] | None = None) -> int:
    """How many tasks `read_tasks_to_create` would list from the start (a progress total)."""
    extra, params = only("t.contactId", contacts)
    sql = f"SELECT count(*) FROM platform_tasks t WHERE t.crmTaskId IS NULL{extra}"
    return int(conn.execute(sql, params).fetchone()[0])


def list_tasks_to_create(conn: sqlite3.Connection, listing: int, contacts: Sequence[int]) -> int:
    """List the unsent tasks of `contacts` (for `read_tasks_to_create` of a selection)."""
    return lst.fill(
        conn,
        listing,
        "SELECT t.id FROM platform_tasks t WHERE t.crmTaskId IS NULL"
        " AND t.contactId IN (SELECT value FROM json_each(?))",
        (id_array(contacts),),
    )


def read_tasks_to_create(
    conn: sqlite3.Connection, after: int, limit: int, listing: int | None = None
) -> list[TaskRow]:
    """Unsent tasks (among those listed under `listing` when given: `list_tasks_to_create`):
    (task id, task body without owner, contact CRM id, campaign owner, completed on the
    platform, contact id, company id)."""
    source, where, order = lst.page_source("platform_tasks", "t", listing)
    rows = conn.execute(
        "SELECT t.id, t.subject, t.type, t.dueDate, c.contactCRMId, co.companyCRMId,"
        " ca.crmOwnerId, ca.name, t.contactId, c.companyId, t.stepIndex, ca.sequence,"
        f" c.firstName, co.name, t.completed FROM {source}"
        " LEFT JOIN contacts c ON c.id = t.contactId"
        " LEFT JOIN companies co ON co.id = c.companyId"
        " LEFT JOIN campaigns ca ON ca.id = t.campaignId"
        f" WHERE {where} AND t.crmTaskId IS NULL ORDER BY {order} LIMIT ?",
        (*lst.page_params(listing, after), limit),
    ).fetchall()
    steps: dict[str, list[dict[str, Any]]] = {}  # per campaign sequence: decoded once
    out = []
    for (
        tid,
        subject,
        typ,
        due,
        contact,
        company,
        owner,
        campaign,
        contact_id,
        company_id,
        index,
        sequence,
        first,
        company_name,
        completed,
    ) in rows:
        if sequence is not None and sequence not in steps:
            steps[sequence] = _steps(sequence)
        step = (
            steps[sequence][index] if sequence is not None and index < len(steps[sequence]) else {}
        )
        body: dict[str, Any] = {"subject": subject}
        for key, value in (
            ("description", task_description(step.get("content"), campaign, first, company_name)),
            ("type", typ),
            ("dueDate", due),
            ("contactId", contact),
            ("companyId", company),
        ):
            if value is not None:
                body[key] = value
        out.append((tid, body, contact, owner, bool(completed), contact_id, company_id))
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
    conn: sqlite3.Connection,
    completed: Sequence[tuple[int, str | None]],
    gone: Sequence[tuple[int, str]],
    now: str,
) -> None:
    """Tasks completed on the CRM side become completed on the platform; tasks the CRM no
    longer knows are remembered."""
    platform_tasks.complete_from_crm(conn, completed, now)
    conn.executemany(
        "INSERT OR IGNORE INTO export_tasks_gone(taskId, crmTaskId, at) VALUES (?, ?, ?)",
        [(task_id, crm_id, now) for task_id, crm_id in gone],
    )


# ---------------------------------------------------------------------------------------------
# Engagement


def count_engagement(conn: sqlite3.Connection, kind: Kind, ids: Sequence[int] | None = None) -> int:
    """How many records `read_engagement` would list from the start (a progress total)."""
    crm_col = CRM_ID_COLUMN[kind]
    extra, params = only("r.id", ids)
    if kind == "contacts":
        joined = "campaign_members m WHERE m.contactId = r.id"
    else:
        joined = (
            "contacts ct JOIN campaign_members m ON m.contactId = ct.id WHERE ct.companyId = r.id"
        )
    return int(
        conn.execute(
            f"SELECT count(*) FROM {kind} r WHERE r.{crm_col} IS NOT NULL{extra}"
            f" AND EXISTS (SELECT 1 FROM {joined})",
            params,
        ).fetchone()[0]
    )


def read_engagement(
    conn: sqlite3.Connection,
    kind: Kind,
    after: int,
    limit: int,
    ids: Sequence[int] | None = None,
    listing: int | None = None,
) -> list[tuple[int, str, list[eng.Membership], list[str]]]:
    """(id, crmId, memberships, activity log) of exported records with campaign members:
    among `ids` when given (a few: the read-ahead's), else among those listed under `listing`
    when given (`list_records`)."""
    crm_col = CRM_ID_COLUMN[kind]
    source, where, order = lst.page_source(kind, "r", listing)
    extra, params = only("r.id", ids)
    # owner_sql: the record of `kind` a contact row `ct` counts for
    if kind == "contacts":
        owner_sql, joined = "ct.id", "campaign_members m WHERE m.contactId = r.id"
    else:
        owner_sql = "ct.companyId"
        joined = (
            "contacts ct JOIN campaign_members m ON m.contactId = ct.id WHERE ct.companyId = r.id"
        )
    records = conn.execute(
        f"SELECT r.id, r.{crm_col} FROM {source} WHERE {where} AND r.{crm_col} IS NOT NULL{extra}"
        f" AND EXISTS (SELECT 1 FROM {joined}) ORDER BY {order} LIMIT ?",
        (*lst.page_params(listing, after), *params, limit),
    ).fetchall()
    if not records:
        return []
    record_ids = [r[0] for r in records]
    marks = ",".join("?" * len(record_ids))
    rows = conn.execute(
        f"SELECT {owner_sql}, m.campaignId, m.sequenceStatus, m.engagementStatus, m.opens,"
        " m.clicks, m.replies, m.addedAt FROM campaign_members m"
        f" JOIN contacts ct ON ct.id = m.contactId WHERE {owner_sql} IN ({marks})",
        record_ids,
    ).fetchall()
    # Each campaign's name, sender and step types once, not joined onto every member row (a
    # company's members repeat a few campaigns, and a sequence is ~1 KB of JSON to decode).
    campaign_ids = list({row[1] for row in rows})
    campaigns = {
        cid: (name, sender, tuple(step.get("type", "") for step in _steps(sequence)))
        for cid, name, sender, sequence in conn.execute(
            "SELECT ca.id, ca.name, i.name, ca.sequence FROM campaigns ca"
            " LEFT JOIN identities i ON i.id = ca.senderIdentityId"
            f" WHERE ca.id IN ({','.join('?' * len(campaign_ids))})",
            campaign_ids,
        )
    }
    members: dict[int, list[eng.Membership]] = {}
    for owner, cid, *state in rows:
        members.setdefault(owner, []).append(eng.Membership(*campaigns[cid], *state))
    log: dict[int, list[str]] = {}
    names: dict[tuple[str, int], str] = {}  # (type, isContactSender) -> event name
    for owner, typ, inbound in conn.execute(
        f"SELECT {owner_sql}, m.type, m.isContactSender FROM messages m"
        " JOIN conversations cv ON cv.id = m.conversationId JOIN contacts ct ON ct.id = cv.contactId"
        f" WHERE {owner_sql} IN ({marks}) ORDER BY m.createdAt, m.id",
        record_ids,
    ):
        name = names.get((typ, inbound))
        if name is None:
            name = names[(typ, inbound)] = shapes.event_name(typ, bool(inbound))
        log.setdefault(owner, []).append(name)
    # The latest 20 entries: a CRM text field is no place for a whole history.
    return [(rid, crm, members.get(rid, []), log.get(rid, [])[-20:]) for rid, crm in records]
