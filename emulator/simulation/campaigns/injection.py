"""Events injected through the control API (POST /_emulator/events): the same effects as a
simulated one, for a member named in the request."""

from __future__ import annotations

import sqlite3
from typing import Literal, assert_never

from emulator.event_types import InjectableEvent
from emulator.simulation.campaigns import effects as fx
from emulator.simulation.campaigns.batch import Batch, Member
from emulator.simulation.campaigns.scheduling import SimulationError, complete_finished, load_plans
from emulator.simulation.campaigns.timeline import iso, parse_ms
from emulator.wire import Int64, Wire

InjectableType = InjectableEvent


class Injected(Wire):
    """An explicit event (POST /_emulator/events); `time` defaults to the clock's now."""

    campaignId: Int64
    contactId: Int64
    type: InjectableType
    content: str | None = None
    subject: str | None = None
    # MESSAGE_REPLIED: the channel answered (default: that of the latest message sent)
    channel: Literal["NETWORK_MESSAGE", "INMAIL", "EMAIL"] | None = None
    time: str | None = None


class InjectedOut(Wire):
    id: int
    type: str
    contactId: int
    campaignId: int
    messageId: int | None
    occurredAt: str


def inject(conn: sqlite3.Connection, event: Injected, ms: int) -> InjectedOut:
    plan = load_plans(conn, "WHERE id = ?", (event.campaignId,)).get(event.campaignId)
    if plan is None:
        raise SimulationError(404, f"Campaign {event.campaignId} not found", "campaignId")
    row = conn.execute(
        "SELECT m.campaignId, m.contactId, m.stepIndex, m.sequenceStatus, m.engagementStatus,"
        " m.opens, m.clicks, m.replies, m.nextActionAt, NULL, NULL, c.firstName, co.name,"
        " c.networkProfileUrl, m.rowid FROM campaign_members m"
        " LEFT JOIN contacts c ON c.id = m.contactId"
        " LEFT JOIN companies co ON co.id = c.companyId WHERE m.campaignId = ? AND m.contactId = ?",
        (event.campaignId, event.contactId),
    ).fetchone()
    if row is None:
        raise SimulationError(
            404,
            f"Contact {event.contactId} is not a member of campaign {event.campaignId}",
            "contactId",
        )
    member = Member(*row)
    member.next_at = iso(parse_ms(member.next_action_at)) if member.next_action_at else None
    batch = Batch(conn)
    batch.members[(member.campaign_id, member.contact_id)] = member
    at = iso(ms)
    conv = conn.execute(  # None: no conversation yet
        "SELECT MIN(id) FROM conversations WHERE contactId = ? AND campaignId = ?",
        (event.contactId, event.campaignId),
    ).fetchone()[0]
    last, sent = None, 0
    if conv is not None:
        last = conn.execute(
            "SELECT type, sequenceIndex FROM messages WHERE conversationId = ? AND isContactSender = 0"
            " AND type != 'CONNECTION_REQUEST' ORDER BY id DESC LIMIT 1",
            (conv,),
        ).fetchone()
        sent = conn.execute(
            "SELECT COALESCE(MAX(sequenceIndex), 0) FROM messages WHERE conversationId = ?"
            " AND isContactSender = 0",
            (conv,),
        ).fetchone()[0]
    etype = event.type
    content = event.content
    match etype:
        case "CONNECTION_REQUEST_SENT" | "NETWORK_MESSAGE_SENT" | "INMAIL_SENT" | "EMAIL_SENT":
            mtype = etype.removesuffix("_SENT")
            fx.send(batch, plan, member, at, mtype, None, sent + 1, content, event.subject)
        case "CONNECTION_REQUEST_ACCEPTED":
            fx.accept(batch, plan, member, at, None)
        case "MESSAGE_REPLIED":
            mtype = event.channel or (last[0] if last else "NETWORK_MESSAGE")
            number = last[1] if last and last[1] else max(sent, 1)
            fx.reply(batch, plan, member, at, None, mtype, number, content, event.subject)
        case "EMAIL_OPENED" | "LINK_CLICKED":
            email = (
                None
                if conv is None
                else conn.execute(
                    "SELECT sequenceIndex FROM messages WHERE conversationId = ? AND isContactSender = 0"
                    " AND type = 'EMAIL' ORDER BY id DESC LIMIT 1",
                    (conv,),
                ).fetchone()
            )
            if email is None:
                raise SimulationError(
                    409,
                    f"Contact {event.contactId} was sent no email in campaign {event.campaignId}",
                    "type",
                )
            fx.open_or_click(batch, plan, member, at, None, email[0] or 0, etype == "LINK_CLICKED")
        case "PROFILE_VISITED" | "POST_LIKED":
            fx.touch(batch, plan, member, at, None, etype)
        case _:
            assert_never(etype)
    batch.flush()
    complete_finished(conn, batch.touched)
    eid, mid = conn.execute("SELECT id, messageId FROM events ORDER BY id DESC LIMIT 1").fetchone()
    return InjectedOut(
        id=eid,
        type=etype,
        contactId=event.contactId,
        campaignId=event.campaignId,
        messageId=mid,
        occurredAt=iso(ms),
    )
