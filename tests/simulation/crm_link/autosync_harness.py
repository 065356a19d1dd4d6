"""Auto-sync test helpers: an in-process export, events written the way the simulation writes
them, and readers of what the reference CRM holds (through /_emulator/crm)."""

from __future__ import annotations

import sqlite3
from typing import Any

import httpx
import msgspec
from starlette.applications import Starlette

from emulator.exporter.report import Report
from emulator.exporter.run import Exporter
from emulator.platform import connection as platform_connection
from emulator.platform.connection import IN_PROCESS_BASE
from emulator.simulation.crm_link.autosync import AutoSync
from emulator.state import Emulator

# Campaign 1 ("Q1 SaaS Founders") has message sync on; campaign 6 has it off.
SYNCED, UNSYNCED = 1, 6


def emulator_of(app: Starlette) -> Emulator:
    return app.state.services.emulator  # type: ignore[no-any-return]


def autosync_of(app: Starlette) -> AutoSync:
    return app.state.services.autosync  # type: ignore[no-any-return]


async def export_in_process(app: Starlette) -> Report:
    """A full export of the default fixtures to the app's own /crm, without a socket."""
    emulator, autosync = emulator_of(app), autosync_of(app)
    conn = await emulator.db.read(platform_connection.read)
    assert conn is not None
    conn = msgspec.structs.replace(conn, crmUrl=IN_PROCESS_BASE + "/crm")
    report = await Exporter(
        emulator.db,
        conn,
        now=emulator.clock.now_iso,
        export_id="first-export",
        transport=autosync.transport,
    ).run()
    assert report.status == "ok", report.message
    return report


async def set_autosync(client: httpx.AsyncClient, on: bool = True, **changes: Any) -> None:
    conn = (await client.get("/_emulator/connection")).json()
    conn.update(apiKey="crm-demo-key", autoSync=on, **changes)
    answer = await client.put("/_emulator/connection", json=conn)
    assert answer.status_code == 200, answer.text


async def set_faults(client: httpx.AsyncClient, faults: list[dict[str, Any]]) -> None:
    settings = (await client.get("/_emulator/crm/settings")).json()
    settings["faults"] = faults
    answer = await client.put("/_emulator/crm/settings", json=settings)
    assert answer.status_code == 200, answer.text


async def crm_all(client: httpx.AsyncClient, kind: str) -> list[dict[str, Any]]:
    """Every record of a kind the reference CRM holds, in insertion order."""
    out: list[dict[str, Any]] = []
    page = 1
    while True:
        body = (
            await client.get(f"/_emulator/crm/{kind}", params={"page": page, "pageSize": 100})
        ).json()
        out += body["data"]
        if len(out) >= body["meta"]["total"] or not body["data"]:
            return out
        page += 1


def members(conn: sqlite3.Connection, campaign: int, in_crm: bool) -> list[int]:
    """Members of a campaign whose contact is (or is not) in the CRM."""
    test = "IS NOT NULL" if in_crm else "IS NULL"
    return [
        r[0]
        for r in conn.execute(
            "SELECT m.contactId FROM campaign_members m JOIN contacts c ON c.id = m.contactId"
            f" WHERE m.campaignId = ? AND c.contactCRMId {test} ORDER BY m.contactId",
            (campaign,),
        )
    ]


def message_event(
    conn: sqlite3.Connection,
    contact: int,
    campaign: int,
    at: str,
    *,
    kind: str = "NETWORK_MESSAGE",
    inbound: bool = False,
    engagement: str | None = None,
) -> int:
    """One message with its event, as the simulation writes them; answers the message id."""
    row = conn.execute(
        "SELECT id FROM conversations WHERE contactId = ? AND campaignId = ?", (contact, campaign)
    ).fetchone()
    if row is None:
        identity = conn.execute(
            "SELECT coalesce(senderIdentityId, 1) FROM campaigns WHERE id = ?", (campaign,)
        ).fetchone()[0]
        conv = conn.execute(
            "INSERT INTO conversations(contactId, campaignId, identityId) VALUES (?, ?, ?)",
            (contact, campaign, identity),
        ).lastrowid
    else:
        conv = row[0]
    message = conn.execute(
        "INSERT INTO messages(conversationId, content, type, isContactSender, sequenceIndex,"
        " createdAt, updatedAt) VALUES (?, 'hello there', ?, ?, 2, ?, ?)",
        (conv, kind, int(inbound), at, at),
    ).lastrowid
    event = (
        "MESSAGE_REPLIED"
        if inbound
        else {
            "NETWORK_MESSAGE": "NETWORK_MESSAGE_SENT",
            "EMAIL": "EMAIL_SENT",
            "INMAIL": "INMAIL_SENT",
            "CONNECTION_REQUEST": "CONNECTION_REQUEST_SENT",
        }[kind]
    )
    conn.execute(
        "INSERT INTO events(type, contactId, campaignId, messageId, occurredAt, data)"
        " VALUES (?, ?, ?, ?, ?, '{}')",
        (event, contact, campaign, message, at),
    )
    if engagement is not None:
        conn.execute(
            "UPDATE campaign_members SET engagementStatus = ?, sequenceStatus = 'Ongoing',"
            " replies = replies + ? WHERE contactId = ? AND campaignId = ?",
            (engagement, int(inbound), contact, campaign),
        )
    conn.execute("UPDATE contacts SET updatedAt = ? WHERE id = ?", (at, contact))
    assert message is not None
    return message


def task_event(conn: sqlite3.Connection, contact: int, campaign: int, at: str, step: int) -> int:
    """A TASK step reached: its platform task and a TASK_CREATED event; answers the task id."""
    task = conn.execute(
        "INSERT INTO platform_tasks(contactId, campaignId, stepIndex, subject, type, dueDate)"
        " VALUES (?, ?, ?, 'Call them', 'call', ?)",
        (contact, campaign, step, at),
    ).lastrowid
    conn.execute(
        "INSERT INTO events(type, contactId, campaignId, occurredAt, data)"
        " VALUES ('TASK_CREATED', ?, ?, ?, '{}')",
        (contact, campaign, at),
    )
    assert task is not None
    return task
