"""Webhook deliveries on the virtual clock: payload, secret, matching, retries, redelivery.

The listener is called directly with its target time (as the simulation does after each
advance); events are inserted as the campaign simulation writes them.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from emulator.simulation.dispatch import DeliveryListener
from tests.conftest import ALL
from tests.public_api.paging import fixtures
from tests.simulation.webhooks.delivery_harness import (
    SECRET,
    always,
    at,
    drop_fixture_webhooks,
    fail_first,
    iso,
    logs,
    scripted_receiver,
    subscribe,
)

pytestmark = pytest.mark.anyio


@pytest.fixture
async def listener(client: httpx.AsyncClient, app: Starlette) -> DeliveryListener:
    """The delivery listener, called directly; the fixture subscriptions are dropped first."""
    await drop_fixture_webhooks(client)
    return DeliveryListener(app.state.services.emulator)


async def add_event(
    app: Starlette,
    kind: str,
    contact: int,
    campaign: int,
    seconds: float,
    data: dict[str, Any] | None = None,
) -> int:
    return await app.state.services.emulator.db.execute(
        "INSERT INTO events(type, contactId, campaignId, occurredAt, data) VALUES (?, ?, ?, ?, ?)",
        (kind, contact, campaign, iso(seconds), json.dumps(data or {})),
    )


async def test_an_event_reaches_its_subscription_with_payload_and_secret(
    client: httpx.AsyncClient, app: Starlette, listener: DeliveryListener
) -> None:
    fx = fixtures()
    contact = next(
        c for c in fx.contacts if c.campaignIds and "score" in c.customFields and c.companyId
    )
    campaign = next(c for c in fx.campaigns if c.id == contact.campaignIds[0])
    company = next(co for co in fx.companies if co.id == contact.companyId)
    with scripted_receiver() as receiver:
        hook = await subscribe(
            client,
            f"{receiver.url}/in",
            secret=SECRET,
            customFields=["score", "industry", "company.name"],  # the company's fields too
            events=["MESSAGE_REPLIED", "EMAIL_SENT"],
        )
        fields = {"messageId": 7, "content": "Sounds good", "sentAt": iso(10)}
        await add_event(app, "MESSAGE_REPLIED", contact.id, campaign.id, 10, fields)
        await add_event(app, "EMAIL_OPENED", contact.id, campaign.id, 11)  # not a webhook type
        await add_event(app, "POST_LIKED", contact.id, campaign.id, 12)  # not subscribed
        await listener(at(5))
        assert receiver.received == []  # the event lies in the future
        await listener(at(60))
        await listener(at(120))  # nothing twice
    [got] = receiver.received
    assert got.path == "/in" and got.headers["x-webhook-secret"] == SECRET
    assert got.json == {
        "eventType": "MESSAGE_REPLIED",
        "timestamp": iso(10),
        "data": {
            "contact": {
                "id": contact.id,
                "firstName": contact.firstName,
                "lastName": contact.lastName,
                "professionalEmail": contact.professionalEmail,
                "networkProfileUrl": contact.networkProfileUrl,
                "jobTitle": contact.jobTitle,
                "companyId": contact.companyId,
                "score": contact.customFields["score"],
                "industry": company.industry,
                "company.name": company.name,
            },
            "campaign": {"id": campaign.id, "name": campaign.name, "status": campaign.status},
            **fields,
        },
    }
    [entry] = await logs(client, hook)
    assert entry["createdAt"] == iso(10) and entry["statusCode"] == 200
    assert entry["attemptNumber"] == 1 and entry["eventType"] == "MESSAGE_REPLIED"


async def test_matching_enabled_types_and_campaigns(
    client: httpx.AsyncClient, app: Starlette, listener: DeliveryListener
) -> None:
    with scripted_receiver() as receiver:
        every = await subscribe(client, f"{receiver.url}/every", events=["EMAIL_SENT"])
        only_1 = await subscribe(
            client, f"{receiver.url}/only1", events=["EMAIL_SENT"], campaignIds=[1]
        )
        off = await subscribe(client, f"{receiver.url}/off", events=["EMAIL_SENT"], enabled=False)
        await add_event(app, "EMAIL_SENT", 1, 1, 0)
        await add_event(app, "EMAIL_SENT", 2, 5, 1)
        await listener(at(10))
    paths = sorted(g.path for g in receiver.received)
    assert paths == ["/every", "/every", "/only1"]
    assert [len(await logs(client, h)) for h in (every, only_1, off)] == [2, 1, 0]


async def test_failures_are_retried_after_30_s_5_min_and_50_min(
    client: httpx.AsyncClient, app: Starlette, listener: DeliveryListener
) -> None:
    with scripted_receiver(always(500)) as receiver:
        hook = await subscribe(client, receiver.url, secret=SECRET)
        await add_event(app, "MESSAGE_REPLIED", 1, 1, 0)
        seen = []
        for seconds in (0, 29.999, 30, 329.999, 330, 3329.999, 3330, 86_400):
            await listener(at(seconds))
            seen.append(len(receiver.received))
    assert seen == [1, 1, 2, 2, 3, 3, 4, 4]
    assert {g.headers["x-webhook-secret"] for g in receiver.received} == {SECRET}
    assert len({g.body for g in receiver.received}) == 1  # every attempt carries the same body
    entries = await logs(client, hook)
    assert [(e["attemptNumber"], e["createdAt"], e["statusCode"]) for e in entries] == [
        (1, iso(0), 500),
        (2, iso(30), 500),
        (3, iso(330), 500),
        (4, iso(3330), 500),
    ]
    assert all("500" in e["errorMessage"] for e in entries)


async def test_a_success_stops_the_retries_and_unreachable_targets_are_retried(
    client: httpx.AsyncClient, app: Starlette, listener: DeliveryListener
) -> None:
    with scripted_receiver(fail_first(1)) as receiver:
        hook = await subscribe(client, receiver.url)
        dead = await subscribe(client, "http://127.0.0.1:9/closed")
        await add_event(app, "MESSAGE_REPLIED", 1, 1, 0)
        await listener(at(7200))
    assert [e["statusCode"] for e in await logs(client, hook)] == [500, 200]
    refused = await logs(client, dead)
    assert [e["attemptNumber"] for e in refused] == [1, 2, 3, 4]
    assert all(e["statusCode"] is None and e["errorMessage"] for e in refused)


async def test_a_disabled_subscription_gets_no_more_retries(
    client: httpx.AsyncClient, app: Starlette, listener: DeliveryListener
) -> None:
    with scripted_receiver(always(500)) as receiver:
        hook = await subscribe(client, receiver.url)
        await add_event(app, "MESSAGE_REPLIED", 1, 1, 0)
        await listener(at(0))
        patched = await client.patch(f"/v1/webhooks/{hook}", json={"enabled": False}, headers=ALL)
        assert patched.status_code == 200
        await listener(at(7200))
    assert len(receiver.received) == 1


async def test_redeliver_sends_a_logged_payload_again(
    client: httpx.AsyncClient, app: Starlette, listener: DeliveryListener
) -> None:
    with scripted_receiver(fail_first(1)) as receiver:
        hook = await subscribe(client, receiver.url, secret=SECRET)
        await add_event(app, "MESSAGE_REPLIED", 1, 1, 0)
        await listener(at(0))
        [first] = await logs(client, hook)
        response = await client.post(f"/_emulator/webhooks/deliveries/{first['id']}/redeliver")
        assert response.status_code == 200, response.text
        answer = response.json()
        missing = await client.post("/_emulator/webhooks/deliveries/999999/redeliver")
        bad = await client.post("/_emulator/webhooks/deliveries/abc/redeliver")
    assert missing.status_code == 404 and bad.status_code in (400, 404)
    assert answer["success"] is True and answer["statusCode"] == 200
    assert answer["attemptNumber"] == 2 and answer["webhookId"] == hook
    assert receiver.received[0].body == receiver.received[1].body
    assert receiver.received[1].headers["x-webhook-secret"] == SECRET
    entries = await logs(client, hook)
    assert [e["id"] for e in entries] == [first["id"], answer["id"]]


async def test_events_before_a_subscription_exists_are_not_sent_to_it(
    client: httpx.AsyncClient, app: Starlette, listener: DeliveryListener
) -> None:
    await add_event(app, "MESSAGE_REPLIED", 1, 1, 0)
    await add_event(app, "MESSAGE_REPLIED", 2, 1, 100)  # not yet happened at 50
    await listener(at(50))
    with scripted_receiver() as receiver:
        await subscribe(client, receiver.url)
        await listener(at(200))
    assert [g.json["data"]["contact"]["id"] for g in receiver.received] == [2]
