"""Moving the webhooks' cursor past events nobody listens to: on the event loop's thread when
few events are new (a brief write), on the database thread otherwise, with the same outcome."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator

import pytest

from emulator.simulation.webhooks import events
from emulator.store.db import Store, read_meta

pytestmark = pytest.mark.anyio
T = "2026-01-01T00:{:02d}:00.000Z"
HORIZON = T.format(30)


@pytest.fixture
async def store() -> AsyncIterator[Store]:
    store = await Store.open()
    try:
        yield store
    finally:
        await store.close()


async def add_events(store: Store, minutes: list[int]) -> None:
    def write(conn: sqlite3.Connection) -> None:
        conn.executemany(
            "INSERT INTO events(type, contactId, campaignId, occurredAt) VALUES (?, 1, 1, ?)",
            [("EMAIL_SENT", T.format(m)) for m in minutes],
        )

    await store.write(write)


async def subscribe(store: Store, enabled: bool) -> None:
    await store.write(
        lambda conn: conn.execute(
            "INSERT INTO webhooks(name, url, events, enabled, createdAt, updatedAt)"
            " VALUES ('s', 'http://127.0.0.1:9/hook', '[\"EMAIL_SENT\"]', ?, ?, ?)",
            (int(enabled), T.format(0), T.format(0)),
        )
    )


async def cursor(store: Store) -> str | None:
    return await store.read(lambda conn: read_meta(conn, events.CURSOR))


@pytest.mark.parametrize("brief_skip", [events.BRIEF_SKIP, 0])
async def test_nobody_listening_moves_the_cursor_up_to_the_first_event_ahead(
    store: Store, monkeypatch: pytest.MonkeyPatch, brief_skip: int
) -> None:
    monkeypatch.setattr(events, "BRIEF_SKIP", brief_skip)  # 0: always the database thread
    await add_events(store, [1, 2, 40, 3])  # the third lies ahead of the horizon
    await events.enqueue_events(store, HORIZON)
    assert await cursor(store) == "2"
    await events.enqueue_events(store, T.format(45))
    assert await cursor(store) == "4"


async def test_a_disabled_subscription_listens_to_nothing(store: Store) -> None:
    await subscribe(store, enabled=False)
    await add_events(store, [1, 2])
    assert await store.write(lambda conn: events._skip_unheard(conn, HORIZON), brief=True)
    assert await cursor(store) == "2"


async def test_an_enabled_subscription_leaves_the_events_to_the_full_pass(store: Store) -> None:
    await subscribe(store, enabled=True)
    await add_events(store, [1, 2])
    assert not await store.write(lambda conn: events._skip_unheard(conn, HORIZON), brief=True)
    assert await cursor(store) is None  # nothing skipped: each event is still to queue


async def test_more_new_events_than_a_brief_skip_walks_go_to_the_full_pass(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(events, "BRIEF_SKIP", 2)
    await add_events(store, [1, 2, 3])
    assert not await store.write(lambda conn: events._skip_unheard(conn, HORIZON), brief=True)
    await events.enqueue_events(store, HORIZON)
    assert await cursor(store) == "3"
