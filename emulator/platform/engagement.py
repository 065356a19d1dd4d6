"""Campaign engagement of members (`campaign_members`' sequence and engagement values): the
vocabulary (decisions.md §3's order) and its writes."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from emulator.platform.sql import id_array

ENGAGEMENT_ORDER = (
    "Added to Campaign",
    "Connection Request Sent",
    "Connection Accepted",
    "Message Sent",
    "Message Replied",
)
SEQUENCE_ORDER = {"Not Started": 0, "Ongoing": 1, "Finished": 2, "Replied": 3}
# The engagement fields of the spec's table, per record kind (names the user maps to CRM fields).
CONTACT_ENGAGEMENT = (
    "campaignEngagementStatus",
    "campaignSequenceStatus",
    "campaignSequenceDetails",
    "campaignOpens",
    "campaignClicks",
    "campaignOpenAnalysis",
    "campaignClickAnalysis",
    "campaignReplyAnalysis",
    "activities",
    "senders",
    "campaigns",
)
_CONTACT_ONLY = frozenset(
    {
        "campaignSequenceDetails",
        "campaignOpenAnalysis",
        "campaignClickAnalysis",
        "campaignReplyAnalysis",
    }
)
COMPANY_ENGAGEMENT = tuple(f for f in CONTACT_ENGAGEMENT if f not in _CONTACT_ONLY)
ENGAGEMENT_FIELDS: dict[str, tuple[str, ...]] = {
    "contacts": CONTACT_ENGAGEMENT,
    "companies": COMPANY_ENGAGEMENT,
}

# The sequence steps that send a message (the others: visits, likes, tasks, waits).
MESSAGE_STEPS = frozenset({"CONNECTION_REQUEST", "NETWORK_MESSAGE", "INMAIL", "EMAIL"})
# Channel names inside "Message Sent (<n>/<m>) - <CHANNEL>".
CHANNELS = {
    "CONNECTION_REQUEST": "NETWORK",
    "NETWORK_MESSAGE": "NETWORK",
    "INMAIL": "INMAIL",
    "EMAIL": "EMAIL",
}
_NUMBER = re.compile(r"\((\d+)/\d+\)")
_ranks: dict[str, tuple[int, int]] = {}


def engagement_rank(status: str) -> tuple[int, int]:
    """Position of an engagement value in the spec's order (then its message number)."""
    rank = _ranks.get(status)
    if rank is None:
        rank = (-1, 0)
        for i, prefix in enumerate(ENGAGEMENT_ORDER):
            if status.startswith(prefix):
                m = _NUMBER.search(status)
                rank = (i, int(m.group(1)) if m else 0)
                break
        if len(_ranks) < 10_000:
            _ranks[status] = rank
    return rank


# New memberships: (campaignId, contactId, addedAt).
ADD_MEMBERS = "INSERT INTO campaign_members(campaignId, contactId, addedAt) VALUES (?, ?, ?)"


def add_members(conn: sqlite3.Connection, rows: Iterable[Sequence[Any]]) -> None:
    """New memberships: (campaignId, contactId, addedAt); the one writer of the table's rows
    (but the contacts worker's, which runs ADD_MEMBERS on its own file)."""
    conn.executemany(ADD_MEMBERS, rows)


def copy_members_from(conn: sqlite3.Connection, schema: str) -> None:
    """Every membership of the attached database `schema` into the empty main table, rowids
    and order kept (SQLite's transfer: records as they are, no value decoded)."""
    conn.execute(f"INSERT INTO main.campaign_members SELECT * FROM {schema}.campaign_members")


def set_member_states(conn: sqlite3.Connection, rows: Iterable[tuple[Any, ...]]) -> None:
    """(stepIndex, sequenceStatus, engagementStatus, opens, clicks, replies, campaignId,
    contactId) per member: a state read off its history."""
    conn.executemany(
        "UPDATE campaign_members SET stepIndex = ?, sequenceStatus = ?, engagementStatus = ?,"
        " opens = ?, clicks = ?, replies = ? WHERE campaignId = ? AND contactId = ?",
        rows,
    )


def write_members(conn: sqlite3.Connection, rows: Iterable[tuple[Any, ...]]) -> None:
    """As set_member_states, with the member's next action time, then the rowid of its row
    (read in the same transaction): no search of the primary key's index (~1 us a row)."""
    conn.executemany(
        "UPDATE campaign_members SET stepIndex = ?, sequenceStatus = ?, engagementStatus = ?,"
        " opens = ?, clicks = ?, replies = ?, nextActionAt = ? WHERE rowid = ?",
        rows,
    )


def schedule_campaign_members(
    conn: sqlite3.Connection, campaign_id: int, at: str, contact_ids: list[int]
) -> None:
    """The same next item due `at` for these members of one campaign (one statement, as
    campaign_tables.insert_simulation_members)."""
    conn.execute(
        "UPDATE campaign_members SET nextActionAt = ?"
        " WHERE campaignId = ? AND contactId IN (SELECT value FROM json_each(?))",
        (at, campaign_id, id_array(contact_ids)),
    )


def schedule_members(conn: sqlite3.Connection, rows: Iterable[tuple[Any, ...]]) -> None:
    """Set when each member's next sequence item is due: (nextActionAt, campaignId, contactId)."""
    conn.executemany(
        "UPDATE campaign_members SET nextActionAt = ? WHERE campaignId = ? AND contactId = ?", rows
    )
