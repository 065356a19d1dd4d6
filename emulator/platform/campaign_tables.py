"""The only writer of the campaign engine's tables: campaigns, conversations, messages, events,
simulation_campaigns and simulation_members (tests/platform/test_sole_writer.py). The engine
(simulation/campaigns/), the fixture seeder and the exporter call these; it sits down here, at
the bottom layer, so that the seeder may too. Rows are tuples in each statement's column order.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any

from emulator.platform.sql import id_array
from emulator.store.many_rows import Statements, many_rows, many_rows_statements

Row = tuple[Any, ...]


# -- campaigns -----------------------------------------------------------------------------------


def insert_campaigns(conn: sqlite3.Connection, rows: Iterable[Row]) -> None:
    """Fixture campaigns, every column in the table's order."""
    conn.executemany("INSERT INTO campaigns VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)


def set_campaign_status(
    conn: sqlite3.Connection, campaign_id: int, status: str, only_from: str | None = None
) -> bool:
    """Move a campaign to `status` (only from `only_from`, if given); True if it moved."""
    if only_from is None:
        cur = conn.execute("UPDATE campaigns SET status = ? WHERE id = ?", (status, campaign_id))
    else:
        cur = conn.execute(
            "UPDATE campaigns SET status = ? WHERE id = ? AND status = ?",
            (status, campaign_id, only_from),
        )
    return cur.rowcount > 0


def pause_campaign(conn: sqlite3.Connection, campaign_id: int, paused_at: str | None) -> None:
    """Record when a campaign stopped (None: it runs again)."""
    conn.execute(
        "INSERT INTO simulation_campaigns(campaignId, pausedAt) VALUES (?, ?)"
        " ON CONFLICT(campaignId) DO UPDATE SET pausedAt = excluded.pausedAt",
        (campaign_id, paused_at),
    )


# -- simulated members -----------------------------------------------------------------------------


def insert_simulation_members(
    conn: sqlite3.Connection, campaign_id: int, anchor_at: str, contact_ids: list[int]
) -> None:
    """Members of one campaign whose timelines start at step 0 from `anchor_at`, in the
    order of `contact_ids`. One statement over a JSON array of the ids: a row bound at a
    time costs about twice as much (the members of 1,000,000 contacts' campaigns at seeding)."""
    conn.execute(
        "INSERT INTO simulation_members(campaignId, contactId, anchorAt, firstStep)"
        " SELECT ?, value, ?, 0 FROM json_each(?)",
        (campaign_id, anchor_at, id_array(contact_ids)),
    )


def move_anchors(conn: sqlite3.Connection, rows: Iterable[Row]) -> None:
    """(anchorAt, campaignId, contactId): members' timelines shifted (a stopped campaign
    resumes)."""
    conn.executemany(
        "UPDATE simulation_members SET anchorAt = ? WHERE campaignId = ? AND contactId = ?", rows
    )


# -- conversations, messages, events ---------------------------------------------------------------


# OR FAIL, as the simulation's inserts below (why there); a seed that fails is discarded whole.
_INSERT_CONVERSATIONS = "INSERT OR FAIL INTO conversations VALUES "
_COUNT_VIEWS = (
    "UPDATE messages SET viewCount = viewCount + ?, clickCount = clickCount + ?,"
    " updatedAt = max(updatedAt, ?) WHERE id = ?"
)


def insert_conversations(conn: sqlite3.Connection, rows: list[Row]) -> None:
    """(id, contactId, campaignId, identityId) rows."""
    many_rows(conn, _INSERT_CONVERSATIONS, rows)


def insert_fixture_messages(conn: sqlite3.Connection, rows: Iterable[Row]) -> None:
    """Fixture messages: every column in the table's order but the CRM activity id."""
    conn.executemany(
        "INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)",
        rows,
    )


def set_crm_activity_ids(conn: sqlite3.Connection, rows: Iterable[Row]) -> sqlite3.Cursor:
    """(crmActivityId, messageId): the CRM's ids of exported messages (a message keeps the
    first one it got)."""
    return conn.executemany(
        "UPDATE messages SET crmActivityId = ? WHERE id = ? AND crmActivityId IS NULL", rows
    )


# The simulation's inserts are OR FAIL: a statement of many rows that may abort half way
# (plain INSERT) first copies every page it changes that an earlier statement of the same
# transaction changed too (the tables' last pages, the index pages a chunk's 10,000 events
# and messages share) into a statement journal, to undo its own rows alone: ~10% of these
# inserts at 1,000,000 contacts. A failed insert still raises, and the simulation's
# transaction (a chunk, an injected event) then rolls back whole.
_SIMULATED_MESSAGES = (
    "INSERT OR FAIL INTO messages(id, conversationId, content, subject, type, isContactSender,"
    " isAutosent, sequenceIndex, createdAt, updatedAt) VALUES "
)
_SIMULATED_EVENTS = (
    "INSERT OR FAIL INTO events(type, contactId, campaignId, messageId, occurredAt, data) VALUES "
)


def simulated_statements(
    conversations: list[Row], messages: list[Row], views: list[Row], events: list[Row]
) -> Statements:
    """The simulation's writes of these rows, in this order, made without the connection
    (many_rows.run_statements runs them): the engine makes them while its contacts' touches hold
    the connection. Rows: conversations as `insert_conversations` takes them; messages
    (id, conversationId, content, subject, type, isContactSender, isAutosent, sequenceIndex,
    createdAt, updatedAt); views (views, clicks, at, messageId): opens and clicks added,
    updatedAt never moved back; events (type, contactId, campaignId, messageId, occurredAt,
    data), their ids in the rows' order."""
    return [
        *many_rows_statements(_INSERT_CONVERSATIONS, conversations),
        *many_rows_statements(_SIMULATED_MESSAGES, messages),
        *([(_COUNT_VIEWS, views)] if views else []),
        *many_rows_statements(_SIMULATED_EVENTS, events),
    ]
