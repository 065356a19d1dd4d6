"""The pages of a selection (auto-sync's contacts, an actions run's records): every row of the
selection once, none of any other record, and each page read by the selection's listing, not
by the whole selection again (emulator/exporter/listing.py)."""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import httpx
import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette

from emulator.exporter.phases import activities, engagement
from emulator.exporter.run import Exporter
from emulator.platform import connection as platform_connection
from emulator.platform.connection import IN_PROCESS_BASE
from tests.simulation.crm_link.autosync_harness import (
    SYNCED,
    autosync_of,
    crm_all,
    emulator_of,
    export_in_process,
    members,
    message_event,
    set_autosync,
    task_event,
)

pytestmark = pytest.mark.anyio
AT = "2026-03-02T09:00:00.000Z"
TARGET = datetime(2026, 3, 2, 9, tzinfo=UTC)
PAGE = 2  # rows per page read: a selection of a few contacts takes several pages


async def ready(app: Starlette, client: httpx.AsyncClient) -> list[int]:
    await export_in_process(app)
    await set_autosync(client)
    return await emulator_of(app).db.read(lambda c: members(c, SYNCED, in_crm=True))


def silent_message(conn: sqlite3.Connection, contact: int) -> int:
    """An unlogged message of a contact with no event: no push selects its contact for it."""
    found = conn.execute(
        "SELECT id FROM conversations WHERE contactId = ? AND campaignId = ?", (contact, SYNCED)
    ).fetchone()
    conv = (
        found[0]
        if found is not None
        else conn.execute(
            "INSERT INTO conversations(contactId, campaignId, identityId) VALUES (?, ?, 1)",
            (contact, SYNCED),
        ).lastrowid
    )
    message = conn.execute(
        "INSERT INTO messages(conversationId, content, type, sequenceIndex, createdAt, updatedAt)"
        " VALUES (?, 'aside', 'NETWORK_MESSAGE', 1, ?, ?)",
        (conv, AT, AT),
    ).lastrowid
    assert message is not None
    return message


def unlogged_of(conn: sqlite3.Connection, contacts: set[int]) -> set[int]:
    """Messages of `contacts` in a synced campaign not logged to the CRM yet."""
    return {
        m
        for m, contact in conn.execute(
            "SELECT m.id, cv.contactId FROM messages m JOIN conversations cv"
            " ON cv.id = m.conversationId JOIN campaigns ca ON ca.id = cv.campaignId"
            " WHERE m.crmActivityId IS NULL AND ca.messageSync = 1"
        )
        if contact in contacts
    }


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    touched=st.lists(st.integers(0, 7), min_size=1, max_size=5),
    aside=st.lists(st.integers(0, 7), max_size=3),
)
async def test_a_push_sends_every_message_of_its_contacts_and_no_other(
    app: Starlette,
    client: httpx.AsyncClient,
    monkeypatch: pytest.MonkeyPatch,
    touched: list[int],
    aside: list[int],
) -> None:
    """Whatever contacts a push covers, read `PAGE` rows a page: each unlogged message of those
    contacts becomes one activity, and the messages of the other contacts wait."""
    monkeypatch.setattr(activities, "STREAM_PAGE", PAGE)
    if not hasattr(app.state, "contacts"):
        app.state.contacts = await ready(app, client)
    contacts = app.state.contacts
    selected = {contacts[i] for i in touched}

    def add(conn: sqlite3.Connection) -> tuple[set[int], set[int]]:
        waiting = {silent_message(conn, contacts[i]) for i in aside if contacts[i] not in selected}
        for contact in sorted(selected):
            message_event(conn, contact, SYNCED, AT)
        return unlogged_of(conn, selected), waiting

    expected, waiting = await emulator_of(app).db.write(add)
    before = {a["metadata"]["messageId"] for a in await crm_all(client, "activities")}
    await autosync_of(app)(TARGET)
    after = [a["metadata"]["messageId"] for a in await crm_all(client, "activities")]
    new = [m for m in after if m not in before]
    assert sorted(new) == sorted(str(m) for m in expected)  # each once, none missing
    still = await emulator_of(app).db.read(lambda c: unlogged_of(c, set(contacts)))
    assert waiting <= still  # the contacts no push covered keep theirs


# The first columns of a page read of messages, of tasks to create, of contacts to export, of
# records whose engagement is sent.
PAGE_READS = {
    "SELECT m.id,": "messages",
    "SELECT t.id,": "tasks",
    "SELECT c.id,": "contacts",
    "SELECT r.id,": "engagement",
}


async def page_plans(app: Starlette, run: Callable[[], Awaitable[Any]]) -> dict[str, list[str]]:
    """The query plan of each page read of messages, tasks or contacts that `run` made, by
    what it reads, from the statements traced on the store's connection."""
    seen: list[str] = []
    db = emulator_of(app).db
    await db.read(lambda c: c.set_trace_callback(seen.append))
    try:
        await run()
    finally:
        await db.read(lambda c: c.set_trace_callback(None))

    def explain(conn: sqlite3.Connection) -> dict[str, list[str]]:
        plans: dict[str, list[str]] = {}
        for sql in seen:
            name = next((n for head, n in PAGE_READS.items() if sql.startswith(head)), None)
            if name is not None and "ORDER BY" in sql and " LIMIT " in sql:
                plan = conn.execute(f"EXPLAIN QUERY PLAN {sql}").fetchall()
                plans.setdefault(name, []).extend(row[3] for row in plan)
        return plans

    return await db.read(explain)


async def test_a_page_of_a_selection_reads_its_listing_not_the_whole_selection(
    app: Starlette, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page of a push's messages, tasks and engagement records, and of an actions run's
    contacts, is read in id order from the selection's listing: no scan of the whole selection
    (json_each) and no sort of every row left (a temp b-tree) on each page."""
    monkeypatch.setattr(activities, "STREAM_PAGE", PAGE)
    monkeypatch.setattr(engagement, "PREFETCH_LIMIT", 0)  # a push too large to read ahead
    contacts = await ready(app, client)

    def add(conn: sqlite3.Connection) -> None:
        for contact in contacts[:5]:
            message_event(conn, contact, SYNCED, AT)
            message_event(conn, contact, SYNCED, AT, kind="EMAIL")
        for step, contact in enumerate(contacts[:3]):
            task_event(conn, contact, SYNCED, AT, step=5 + step)

    await emulator_of(app).db.write(add)
    before = len(await crm_all(client, "activities"))
    plans = await page_plans(app, lambda: autosync_of(app)(TARGET))
    assert len(await crm_all(client, "activities")) == before + 10

    emulator = emulator_of(app)
    conn = await emulator.db.read(platform_connection.read)
    assert conn is not None
    exporter = Exporter(
        emulator.db,
        msgspec.structs.replace(conn, crmUrl=IN_PROCESS_BASE + "/crm", batchSize=PAGE),
        now=emulator.clock.now_iso,
        export_id="selection",
        transport=autosync_of(app).transport,
    )
    reports = []

    async def export() -> None:  # an actions run's EXPORT_TO_CRM of five contacts
        reports.append(await exporter.export_records(contacts[:5], []))

    plans |= await page_plans(app, export)
    assert reports[0].status == "ok", reports[0].message
    done = reports[0].phases["contacts"]
    assert done.created + done.updated + done.unchanged == 5

    assert set(plans) == {"messages", "tasks", "contacts", "engagement"}
    for name, details in plans.items():
        assert not [d for d in details if "json_each" in d or "TEMP B-TREE" in d], (name, details)
    # each phase's listing is forgotten when the phase ends
    left = await emulator.db.fetchone("SELECT count(*) FROM temp.export_listed")
    assert left == (0,)
