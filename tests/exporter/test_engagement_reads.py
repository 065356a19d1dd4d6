"""records.read_engagement: paged over a list of ids (auto-sync's pushes), it answers the rows a
plain reading answers for those ids, each with its memberships and its latest 20 log entries;
the engagement phase's read ahead answers the same pages."""

from __future__ import annotations

import random
import sqlite3
from functools import partial
from operator import itemgetter
from typing import Any

import msgspec
import pytest

from emulator.exporter import engagement as eng
from emulator.exporter import records as rec
from emulator.exporter import shapes
from emulator.exporter.context import RunContext
from emulator.exporter.phases import engagement as engagement_phase
from emulator.platform import connection as platform_connection
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


@pytest.mark.parametrize("batch_size", [1, 3, 7, 100])
async def test_read_ahead_answers_the_pages_a_reading_by_batch_size_answers(
    batch_size: int,
) -> None:
    """Auto-sync reads the engagement rows ahead in small pages on the event loop's thread and
    cuts them into batches: the same records, batch by batch, as pages of `batchSize` read
    while the engagement phase runs (each batch is one PUT)."""
    fixtures = small_fixtures(companies=5, contacts=60)
    fixtures.connection = msgspec.structs.replace(fixtures.connection, batchSize=batch_size)
    platform = await open_platform(fixtures)
    try:
        await platform.db.write(
            lambda c: (
                c.execute("UPDATE contacts SET contactCRMId = 'ct-' || id WHERE id % 7 != 0"),
                c.execute("UPDATE companies SET companyCRMId = 'co-' || id WHERE id != 2"),
            )
        )
        connection = await platform.db.read(platform_connection.read)
        ctx = RunContext(platform.db, connection, now=platform.clock.now_iso)
        contacts = sorted(random.Random(3).sample(range(1, 70), 45))  # some unknown ids
        companies = [1, 2, 3, 5, 9]
        ahead = engagement_phase.prefetch(ctx, contacts, companies)
        assert ahead is not None
        pages = await ahead
        for kind, ids in (("contacts", contacts), ("companies", companies)):
            reader = partial(rec.read_engagement, kind=kind, ids=ids)
            expected = [rows async for rows in ctx.pages(reader, itemgetter(0), batch_size)]
            assert pages[kind] == expected  # type: ignore[index]
            assert expected and all(len(rows) <= batch_size for rows in expected)
    finally:
        await platform.close()
