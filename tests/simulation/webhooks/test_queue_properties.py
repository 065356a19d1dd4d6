"""Properties of webhook deliveries: the same log whatever the steps the clock took, and
exactly one first attempt per event and matching enabled subscription."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette

from emulator.simulation.dispatch import DeliveryListener
from emulator.simulation.webhooks import queue
from emulator.simulation.webhooks.events import WEBHOOK_EVENTS
from tests.simulation.webhooks.delivery_harness import (
    Scripted,
    at,
    by_hash,
    drop_fixture_webhooks,
    iso,
    scripted_receiver,
    subscribe,
)

pytestmark = pytest.mark.anyio

PROPERTY = settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
TYPES = sorted(WEBHOOK_EVENTS)
CAMPAIGNS = [1, 5, 6]
HORIZON = 4 * 3600

SUBSCRIPTION = st.fixed_dictionaries(
    {
        "events": st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True),
        "campaignIds": st.lists(st.sampled_from(CAMPAIGNS), max_size=2, unique=True),
        "enabled": st.booleans(),
        "secret": st.none() | st.just("whsec-property-0001"),
    }
)
EVENT = st.tuples(
    st.sampled_from([*TYPES, "EMAIL_OPENED", "SEQUENCE_FINISHED"]),
    st.integers(1, 30),  # contact
    st.sampled_from(CAMPAIGNS),
    st.integers(0, 3600),  # seconds after T0
)
CUTS = st.lists(st.integers(0, HORIZON), max_size=8)


@pytest.fixture(scope="module")
def receiver() -> Iterator[Scripted]:
    with scripted_receiver(by_hash) as r:
        yield r


async def play(
    client: httpx.AsyncClient,
    app: Starlette,
    receiver: Scripted,
    subs: list[dict[str, Any]],
    events: list[tuple[str, int, int, int]],
    steps: list[int],
) -> tuple[list[tuple[Any, ...]], list[bytes], list[int]]:
    """Fresh state, the story, the clock stepping through `steps`: the log and what came in."""
    emulator = app.state.services.emulator
    await emulator.reset()
    receiver.clear()
    await drop_fixture_webhooks(client)
    # The receiver answers per (path, body) repetition: a path per subscription and distinct
    # events keep equal bodies from racing each other for the answer meant for the first.
    hooks = [await subscribe(client, f"{receiver.url}/h{i}", **sub) for i, sub in enumerate(subs)]
    await emulator.db.executemany(
        "INSERT INTO events(type, contactId, campaignId, occurredAt, data) VALUES (?, ?, ?, ?, ?)",
        [
            (kind, contact, campaign, iso(s), json.dumps({"n": i}))
            for i, (kind, contact, campaign, s) in enumerate(sorted(events, key=lambda e: e[3]))
        ],
    )
    listener = DeliveryListener(emulator)
    for step in steps:
        await listener(at(step))
    log = await emulator.db.fetchall(
        "SELECT id, webhookId, eventType, statusCode, attemptNumber, createdAt, payload"
        " FROM webhook_deliveries ORDER BY id"
    )
    return log, sorted(g.body for g in receiver.received), hooks


@pytest.fixture(params=["as-is", "tiny-batches"])
def batches(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pass as configured, or reading 2 rows at a time, holding 1 retry after them (the
    others wait in the table) and writing after every attempt: the same log either way."""
    if request.param == "tiny-batches":
        monkeypatch.setattr(queue, "BATCH", 2)
        monkeypatch.setattr(queue, "HELD", 1)
        monkeypatch.setattr(queue, "WRITE_EVERY", 1)


@PROPERTY
@given(
    subs=st.lists(SUBSCRIPTION, min_size=1, max_size=3),
    events=st.lists(EVENT, max_size=10, unique=True),
    cuts=CUTS,
)
async def test_one_big_advance_and_many_small_ones_deliver_the_same(
    batches: None,
    client: httpx.AsyncClient,
    app: Starlette,
    receiver: Scripted,
    subs: list[dict[str, Any]],
    events: list[tuple[str, int, int, int]],
    cuts: list[int],
) -> None:
    big = await play(client, app, receiver, subs, events, [HORIZON])
    small = await play(client, app, receiver, subs, events, [*sorted(cuts), HORIZON])
    assert small == big
    log, received, hooks = big
    assert len(received) == len(log)  # every attempt was really sent, once

    # exactly one first attempt per event and matching enabled subscription
    expected: Counter[tuple[int, str, str]] = Counter()
    for hook, sub in zip(hooks, subs, strict=True):
        for kind, _, campaign, s in events:
            matches = kind in sub["events"] and (
                not sub["campaignIds"] or campaign in sub["campaignIds"]
            )
            if sub["enabled"] and matches:
                expected[(hook, kind, iso(s))] += 1
    firsts = Counter((row[1], row[2], row[5]) for row in log if row[4] == 1)
    assert firsts == expected
    # retries: at most 4 attempts, each after a failure of the one before
    for row in log:
        if row[4] > 1:
            before = [r for r in log if r[6] == row[6] and r[1] == row[1] and r[4] == row[4] - 1]
            assert len(before) == 1 and before[0][3] == 503 and before[0][0] < row[0]
        assert 1 <= row[4] <= 4
