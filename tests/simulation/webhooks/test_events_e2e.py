"""Webhooks end to end: the campaign simulation's events, advanced through
POST /_emulator/clock/advance, reach a real receiver on a loopback port (with retries)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emulator.simulation.webhooks.events import WEBHOOK_EVENTS
from tests.public_api.paging import fixtures
from tests.simulation.webhooks.delivery_harness import (
    SECRET,
    always,
    by_hash,
    drop_fixture_webhooks,
    fail_first,
    logs,
    scripted_receiver,
    subscribe,
)

pytestmark = pytest.mark.anyio
DAY = 86_400


async def advance(client: httpx.AsyncClient, seconds: float) -> dict[str, Any]:
    response = await client.post("/_emulator/clock/advance", json={"seconds": seconds})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def events(client: httpx.AsyncClient) -> list[dict[str, Any]]:
    """The whole event log, oldest first."""
    found: list[dict[str, Any]] = []
    after = 0
    while True:
        response = await client.get("/_emulator/events", params={"afterId": str(after)})
        assert response.status_code == 200, response.text
        page = response.json()
        found.extend(page["data"])
        if page["nextAfterId"] is None:
            return found
        after = page["nextAfterId"]


def member_of(campaign: int) -> int:
    return min(c.id for c in fixtures().contacts if campaign in c.campaignIds)


async def test_retries_after_30_s_5_min_and_50_min_of_virtual_time(
    client: httpx.AsyncClient,
) -> None:
    await drop_fixture_webhooks(client)
    await advance(client, 3600)  # events before a subscription exists are never sent to it
    contact = member_of(1)
    with scripted_receiver(always(500)) as receiver:
        hook = await subscribe(
            client, f"{receiver.url}/in", secret=SECRET, events=["PROFILE_VISITED"], campaignIds=[1]
        )
        injected = await client.post(
            "/_emulator/events",
            json={
                "campaignId": 1,
                "contactId": contact,
                "type": "PROFILE_VISITED",
            },
        )
        assert injected.status_code == 201, injected.text
        at = injected.json()["occurredAt"]

        def mine() -> list[Any]:
            return [
                g
                for g in receiver.received
                if g.json["data"]["contact"]["id"] == contact and g.json["timestamp"] == at
            ]

        counts = []
        for seconds in (0, 29, 1, 299, 1, 2999, 1, DAY):
            await advance(client, seconds)
            counts.append(len(mine()))
        got = mine()
    assert counts == [1, 1, 2, 2, 3, 3, 4, 4]
    assert {g.headers["x-webhook-secret"] for g in got} == {SECRET}
    assert len({g.body for g in got}) == 1 and got[0].json["eventType"] == "PROFILE_VISITED"
    entries = [e for e in await logs(client, hook) if e["createdAt"] >= at]
    assert sorted(e["attemptNumber"] for e in entries).count(4) >= 1
    assert all(e["statusCode"] == 500 for e in entries)


async def test_every_simulated_event_is_delivered_once_to_each_match(
    client: httpx.AsyncClient,
) -> None:
    await drop_fixture_webhooks(client)
    with scripted_receiver(fail_first(1)) as receiver:
        every = await subscribe(
            client, f"{receiver.url}/every", events=sorted(WEBHOOK_EVENTS), secret=SECRET
        )
        first = await subscribe(
            client,
            f"{receiver.url}/first",
            campaignIds=[1],
            events=["CONNECTION_REQUEST_SENT", "MESSAGE_REPLIED"],
        )
        off = await subscribe(
            client, f"{receiver.url}/off", events=sorted(WEBHOOK_EVENTS), enabled=False
        )
        await advance(client, DAY)
        await advance(client, 30)  # the retries of the last moment's refusals
    log = [e for e in await events(client) if e["type"] in WEBHOOK_EVENTS]
    assert log, "the default fixtures' active campaigns make events in a day"
    got = Counter((g.path, g.json["eventType"], g.json["timestamp"]) for g in receiver.received)
    want = Counter(("/every", e["type"], e["occurredAt"]) for e in log)
    want.update(
        ("/first", e["type"], e["occurredAt"])
        for e in log
        if e["campaignId"] == 1 and e["type"] in ("CONNECTION_REQUEST_SENT", "MESSAGE_REPLIED")
    )
    assert got == {k: 2 * v for k, v in want.items()}  # each refused once, then accepted
    assert {g.headers.get("x-webhook-secret") for g in receiver.received if g.path == "/every"} == {
        SECRET
    }
    assert await logs(client, off) == []
    firsts = [e for e in await logs(client, every) if e["attemptNumber"] == 1]
    assert len(firsts) == len(log)
    assert len([e for e in await logs(client, first) if e["attemptNumber"] == 1]) == sum(
        n for k, n in want.items() if k[0] == "/first"
    )


@settings(
    max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cuts=st.lists(st.integers(1, DAY - 1), max_size=6))
async def test_any_split_of_a_day_gives_the_same_deliveries(
    client: httpx.AsyncClient, cuts: list[int]
) -> None:
    with scripted_receiver(by_hash) as receiver:

        async def run(steps: list[int]) -> tuple[list[tuple[Any, ...]], list[bytes]]:
            assert (await client.post("/_emulator/reset")).status_code == 200
            receiver.clear()
            await drop_fixture_webhooks(client)
            hook = await subscribe(
                client,
                f"{receiver.url}/h",
                campaignIds=[1],
                events=[
                    "CONNECTION_REQUEST_ACCEPTED",
                    "MESSAGE_REPLIED",
                    "PROFILE_VISITED",
                ],
            )
            before = 0
            for step in steps:
                await advance(client, step - before)
                before = step
            entries = [
                (e["id"], e["eventType"], e["statusCode"], e["attemptNumber"], e["createdAt"])
                for e in await logs(client, hook)
            ]
            return entries, sorted(g.body for g in receiver.received)

        one = await run([DAY])
        many = await run([*sorted(set(cuts)), DAY])
    assert one[0] and many == one
