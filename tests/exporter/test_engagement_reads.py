"""records.read_engagement: paged over a list of ids (auto-sync's pushes), it answers the rows a
plain reading answers for those ids, each with its memberships and its latest 20 log entries."""

from __future__ import annotations

import random
import sqlite3
from typing import Any

import pytest

from emulator.exporter import engagement as eng
from emulator.exporter import records as rec
from emulator.exporter import shapes
from emulator.platform.sql import steps
from tests.exporter.harness import open_platform, small_fixtures

pytestmark = pytest.mark.anyio


def reference(conn: sqlite3.Connection, kind: str) -> dict[int, tuple[Any, ...]]:
    """Every exported record with members: (crmId, memberships, last 20 log entries), read
    the plain way (campaigns joined onto each member, the whole history sorted in Python)."""
    crm_col = rec.CRM_ID_COLUMN[kind]  # type: ignore[index]
    owner = "ct.id" if kind == "contacts" else "ct.companyId"
    members: dict[int, list[eng.Membership]] = {}
    for row in conn.execute(
        f"SELECT {owner}, ca.name, i.name, ca.sequence, m.sequenceStatus, m.engagementStatus,"
        " m.opens, m.clicks, m.replies, m.addedAt FROM campaign_members m"
        " JOIN contacts ct ON ct.id = m.contactId JOIN campaigns ca ON ca.id = m.campaignId"
        " LEFT JOIN identities i ON i.id = ca.senderIdentityId"
    ):
        types = tuple(step.get("type", "") for step in steps(row[3]))
        members.setdefault(row[0], []).append(eng.Membership(row[1], row[2], types, *row[4:]))
    history: dict[int, list[tuple[str, int, str]]] = {}
    for who, at, mid, typ, inbound in conn.execute(
        f"SELECT {owner}, m.createdAt, m.id, m.type, m.isContactSender FROM messages m"
        " JOIN conversations cv ON cv.id = m.conversationId"
        " JOIN contacts ct ON ct.id = cv.contactId"
    ):
        history.setdefault(who, []).append((at, mid, shapes.event_name(typ, bool(inbound))))
    return {
        rid: (
            crm,
            members[rid],
            [name for _, _, name in sorted(history.get(rid, []))][-20:],
        )
        for rid, crm in conn.execute(f"SELECT id, {crm_col} FROM {kind} WHERE {crm_col} NOT NULL")
        if rid in members
    }


@pytest.mark.parametrize("kind", ["contacts", "companies"])
async def test_pages_over_ids_answer_what_a_plain_reading_answers(kind: str) -> None:
    platform = await open_platform(small_fixtures(companies=5, contacts=60))
    try:

        def prepare(conn: sqlite3.Connection) -> None:
            conn.execute("UPDATE contacts SET contactCRMId = 'ct-' || id WHERE id % 7 != 0")
            conn.execute("UPDATE companies SET companyCRMId = 'co-' || id WHERE id != 2")
            # a long history for some: more than 20 entries, out of id order in time
            rows = [
                (conv, typ, i % 2, f"2026-02-{1 + (i * 7) % 28:02d}T00:00:00.000Z")
                for conv in (1, 3, 5)
                for i, typ in enumerate(["EMAIL", "NETWORK_MESSAGE", "INMAIL"] * 9)
            ]
            conn.executemany(
                "INSERT INTO messages(conversationId, type, isContactSender, createdAt, updatedAt)"
                " VALUES (?, ?, ?, ?, ?4)",
                rows,
            )

        await platform.db.write(prepare)
        expected = await platform.db.read(lambda c: reference(c, kind))
        everything = await platform.db.read(
            lambda c: rec.read_engagement(c, kind, 0, 1000)  # type: ignore[arg-type]
        )
        assert {r[0]: r[1:] for r in everything} == expected
        assert any(len(log) == 20 for _, _, log in expected.values())
        # the engagement phase's progress total: the records a reading lists
        count = await platform.db.read(lambda c: rec.count_engagement(c, kind))  # type: ignore[arg-type]
        assert count == len(expected)

        wanted = random.Random(7).sample(range(0, 70), 40)  # unsorted, some unknown ids
        pages: list[Any] = []
        after = 0
        while rows := await platform.db.read(
            lambda c, after=after: rec.read_engagement(c, kind, after, 3, wanted)  # type: ignore[arg-type]
        ):
            pages += rows
            after = rows[-1][0]
        assert [r[0] for r in pages] == sorted(i for i in wanted if i in expected)
        count = await platform.db.read(
            lambda c: rec.count_engagement(c, kind, wanted)  # type: ignore[arg-type]
        )
        assert count == len(pages)
        assert {r[0]: r[1:] for r in pages} == {i: expected[i] for i in wanted if i in expected}
    finally:
        await platform.close()
