"""Campaign engagement of members (`campaign_members`' sequence and engagement values): the
vocabulary (decisions.md §3's order) and its writes."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
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


def write_members(
    conn: sqlite3.Connection, rows: Iterable[tuple[Any, ...]], moved: Mapping[int, int]
) -> None:
    """As set_member_states, with the member's next action time, then the rowid of its row
    (read in the same transaction): no search of the primary key's index (~1 us a row).
    `moved`: campaign id -> how many more of these members have a next action time than
    before (those given one less those whose one is cleared), as the caller read them in
    the same transaction: the campaigns' counts of members left to move (`moving`)."""
    conn.executemany(
        "UPDATE campaign_members SET stepIndex = ?, sequenceStatus = ?, engagementStatus = ?,"
        " opens = ?, clicks = ?, replies = ?, nextActionAt = ? WHERE rowid = ?",
        rows,
    )
    _add_moving(conn, moved)


def schedule_campaign_members(
    conn: sqlite3.Connection,
    campaign_id: int,
    at: str,
    contact_ids: list[int],
    first: bool = False,
) -> None:
    """The same next item due `at` for these members of one campaign (one statement, as
    campaign_tables.insert_simulation_members, where none of them had one: the usual case;
    a second one for those that had). `first`: the campaign's first scheduling (none of its
    members has a simulation_members row, so none has a next action: only scheduling gives
    one), whose count is then these members, not counted along the campaign (at seeding
    ~0.5 us a member, three times the index this count replaces)."""
    ids = id_array(contact_ids)
    started = conn.execute(
        "UPDATE campaign_members SET nextActionAt = ?"
        " WHERE campaignId = ? AND contactId IN (SELECT value FROM json_each(?))"
        " AND nextActionAt IS NULL",
        (at, campaign_id, ids),
    ).rowcount
    if started < len(contact_ids):  # some had a next action already (or are no members)
        conn.execute(
            "UPDATE campaign_members SET nextActionAt = ?"
            " WHERE campaignId = ? AND contactId IN (SELECT value FROM json_each(?))"
            " AND nextActionAt IS NOT NULL",
            (at, campaign_id, ids),
        )
    if first:
        conn.execute(
            "INSERT OR REPLACE INTO simulation_moving(campaignId, members) VALUES (?, ?)",
            (campaign_id, started),
        )
    else:
        _add_moving(conn, {campaign_id: started})
        moving(conn, [campaign_id])  # a campaign without a count gets one now, not in a chunk


def move_members(conn: sqlite3.Connection, rows: Iterable[tuple[Any, ...]]) -> None:
    """Move the next action of members that have one: (nextActionAt, campaignId, contactId).
    A member without one keeps none (the count of members left to move stands)."""
    conn.executemany(
        "UPDATE campaign_members SET nextActionAt = ? WHERE campaignId = ? AND contactId = ?"
        " AND nextActionAt IS NOT NULL",
        rows,
    )


def moving(conn: sqlite3.Connection, campaign_ids: Sequence[int]) -> dict[int, int]:
    """How many members of each of these campaigns have a next action (nextActionAt set):
    their rows of simulation_moving, which the writes above keep; a campaign without one is
    counted along its members (the primary key) and its row written."""
    counts = dict(
        conn.execute(
            "SELECT campaignId, members FROM simulation_moving"
            " WHERE campaignId IN (SELECT value FROM json_each(?))",
            (id_array(campaign_ids),),
        ).fetchall()
    )
    for cid in campaign_ids:
        if cid not in counts:
            (counts[cid],) = conn.execute(
                "SELECT count(*) FROM campaign_members"
                " WHERE campaignId = ? AND nextActionAt IS NOT NULL",
                (cid,),
            ).fetchone()
            conn.execute(
                "INSERT INTO simulation_moving(campaignId, members) VALUES (?, ?)",
                (cid, counts[cid]),
            )
    return counts


def _add_moving(conn: sqlite3.Connection, moved: Mapping[int, int]) -> None:
    """Add to the campaigns' counts of members left to move; a campaign without a row keeps
    none (`moving` counts it when asked, these writes included)."""
    changes = [(n, cid) for cid, n in moved.items() if n]
    if changes:
        conn.executemany(
            "UPDATE simulation_moving SET members = members + ? WHERE campaignId = ?", changes
        )
