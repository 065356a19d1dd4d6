"""POST /v1/webhooks/{id}/test delivers for real over HTTP; every attempt shows in /logs."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from emulator.simulation.webhooks import delivery
from tests.conftest import ALL
from tests.public_api.checks import assert_guarded
from tests.public_api.paging import fixtures
from tests.servers import recording_server, unused_url

pytestmark = pytest.mark.anyio

SECRET = "whsec-test-secret-123"


async def subscribe(client: httpx.AsyncClient, url: str, **fields: Any) -> int:
    body = {"name": "Receiver", "url": url, "events": ["MESSAGE_REPLIED"], **fields}
    response = await client.post("/v1/webhooks", json=body, headers=ALL)
    assert response.status_code == 201, response.text
    return int(response.json()["data"]["id"])


async def send_test(client: httpx.AsyncClient, webhook_id: int) -> dict[str, Any]:
    response = await client.post(f"/v1/webhooks/{webhook_id}/test", headers=ALL)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert body["status"] == "success" and set(body["data"]) == {"success"}
    assert SECRET not in response.text
    return body


async def logs(client: httpx.AsyncClient, webhook_id: int, **params: str) -> dict[str, Any]:
    response = await client.get(f"/v1/webhooks/{webhook_id}/logs", params=params, headers=ALL)
    assert response.status_code == 200, response.text
    assert SECRET not in response.text
    body: dict[str, Any] = response.json()
    return body


async def test_delivers_the_documented_shape_with_the_secret(client: httpx.AsyncClient) -> None:
    with recording_server() as receiver:
        hook = await subscribe(client, f"{receiver.url}/hooks/in", secret=SECRET)
        assert (await send_test(client, hook))["data"] == {"success": True}
    [request] = receiver.requests
    assert request.method == "POST" and request.path == "/hooks/in"
    assert request.headers["x-webhook-secret"] == SECRET
    assert request.headers["content-type"] == "application/json"
    payload = json.loads(request.body)
    # a sample of an event type the subscription lists
    assert payload["eventType"] == "MESSAGE_REPLIED" and payload["timestamp"].endswith("Z")
    data = payload["data"]
    fx = fixtures()
    campaign = next(c for c in fx.campaigns if c.id == data["campaign"]["id"])
    assert data["campaign"] == {"id": campaign.id, "name": campaign.name, "status": campaign.status}
    contact = next(c for c in fx.contacts if c.id == data["contact"]["id"])
    assert data["contact"] == {
        "id": contact.id,
        "firstName": contact.firstName,
        "lastName": contact.lastName,
        "professionalEmail": contact.professionalEmail,
        "networkProfileUrl": contact.networkProfileUrl,
        "jobTitle": contact.jobTitle,
        "companyId": contact.companyId,
    }
    [entry] = (await logs(client, hook))["data"]
    assert entry["eventType"] == "MESSAGE_REPLIED" and entry["statusCode"] == 200
    assert entry["attemptNumber"] == 1 and entry["errorMessage"] is None
    assert isinstance(entry["durationMs"], int) and entry["durationMs"] >= 0
    assert set(entry) == {
        "id",
        "eventType",
        "statusCode",
        "errorMessage",
        "attemptNumber",
        "durationMs",
        "createdAt",
    }


async def test_no_secret_no_header(client: httpx.AsyncClient) -> None:
    with recording_server() as receiver:
        hook = await subscribe(client, receiver.url + "/")
        assert (await send_test(client, hook))["data"]["success"] is True
    assert "x-webhook-secret" not in receiver.requests[0].headers


async def test_custom_fields_and_campaign_filter_shape_the_sample(
    client: httpx.AsyncClient,
) -> None:
    fx = fixtures()
    scored = next(c for c in fx.contacts if "score" in c.customFields and c.campaignIds)
    campaign = min(scored.campaignIds)
    members = sorted(c.id for c in fx.contacts if campaign in c.campaignIds)
    with recording_server() as receiver:
        hook = await subscribe(
            client,
            receiver.url,
            campaignIds=[campaign],
            customFields=["score", "contactCountry", "noSuchField", "emailKey"],
        )
        await send_test(client, hook)
    data = json.loads(receiver.requests[0].body)["data"]
    assert data["campaign"]["id"] == campaign
    contact = next(c for c in fx.contacts if c.id == data["contact"]["id"])
    assert contact.id == members[0]
    assert data["contact"]["score"] == contact.customFields.get("score")
    assert data["contact"]["contactCountry"] == contact.contactCountry
    assert data["contact"]["noSuchField"] is None
    assert data["contact"]["emailKey"] is None  # internal columns never leak


async def test_custom_fields_name_fields_of_the_contacts_company(
    client: httpx.AsyncClient,
) -> None:
    fx = fixtures()
    members = sorted(
        (c for c in fx.contacts if c.campaignIds and c.companyId is not None), key=lambda c: c.id
    )
    contact = members[0]
    campaign = min(contact.campaignIds)
    first = min(c.id for c in fx.contacts if campaign in c.campaignIds)
    assert first == contact.id, "the sample takes the campaign's first member"
    company = next(co for co in fx.companies if co.id == contact.companyId)
    with recording_server() as receiver:
        hook = await subscribe(
            client,
            receiver.url,
            campaignIds=[campaign],
            events=["EMAIL_SENT", "MESSAGE_REPLIED"],
            customFields=[
                "industry",
                "domain",
                "company.name",
                "company.id",
                "firstName",
                "domainKey",
                "company.noSuchField",
            ],
        )
        await send_test(client, hook)
    payload = json.loads(receiver.requests[0].body)
    assert payload["eventType"] == "EMAIL_SENT"
    data = payload["data"]["contact"]
    assert data["id"] == contact.id
    assert data["industry"] == company.industry
    assert data["domain"] == company.domain
    assert data["company.name"] == company.name and data["company.id"] == company.id
    assert data["firstName"] == contact.firstName  # the contact's own field comes first
    assert data["domainKey"] is None and data["company.noSuchField"] is None


async def test_receiver_error_is_a_failed_attempt(client: httpx.AsyncClient) -> None:
    with recording_server(status=500) as receiver:
        hook = await subscribe(client, receiver.url, secret=SECRET)
        assert (await send_test(client, hook))["data"] == {"success": False}
        receiver.status = 204
        assert (await send_test(client, hook))["data"] == {"success": True}
        receiver.status = 302
        assert (await send_test(client, hook))["data"] == {"success": False}
    assert len(receiver.requests) == 3
    body = await logs(client, hook)
    assert body["meta"]["total"] == 3
    newest_first = [e["statusCode"] for e in body["data"]]
    assert newest_first == [302, 204, 500]
    assert "500" in body["data"][2]["errorMessage"]
    assert body["data"][1]["errorMessage"] is None
    page2 = await logs(client, hook, page="2", pageSize="2")
    assert [e["statusCode"] for e in page2["data"]] == [500]


async def test_unreachable_target_is_a_failed_attempt(client: httpx.AsyncClient) -> None:
    hook = await subscribe(client, unused_url() + "/hook", secret=SECRET)
    assert (await send_test(client, hook))["data"] == {"success": False}
    [entry] = (await logs(client, hook))["data"]
    assert entry["statusCode"] is None and entry["errorMessage"]
    for url in ("ftp://127.0.0.1/x", "http://:0/"):
        other = await subscribe(client, url)
        assert (await send_test(client, other))["data"] == {"success": False}
        assert (await logs(client, other))["data"][0]["errorMessage"]


async def test_logs_do_not_mix_subscriptions(client: httpx.AsyncClient) -> None:
    with recording_server() as receiver:
        first = await subscribe(client, receiver.url)
        second = await subscribe(client, receiver.url)
        await send_test(client, first)
        await send_test(client, first)
        await send_test(client, second)
    assert (await logs(client, first))["meta"]["total"] == 2
    assert (await logs(client, second))["meta"]["total"] == 1


async def test_deleting_a_subscription_drops_its_log(client: httpx.AsyncClient) -> None:
    with recording_server() as receiver:
        hook = await subscribe(client, receiver.url)
        await send_test(client, hook)
    assert (await client.delete(f"/v1/webhooks/{hook}", headers=ALL)).status_code == 200
    assert (await client.get(f"/v1/webhooks/{hook}/logs", headers=ALL)).status_code == 404


async def test_deliver_once_times_out_and_records_the_retry_mark(
    app: Starlette, client: httpx.AsyncClient
) -> None:
    """The single-attempt function the retry schedule will call: attempt number, timeout."""
    store = app.state.services.emulator.db
    with recording_server() as receiver:
        receiver.delay = 0.5
        hook = await subscribe(client, receiver.url, secret=SECRET)
        sub = await delivery.load_subscription(store, hook)
        assert sub is not None and sub.secret == SECRET
        payload = await store.read(
            lambda conn: delivery.event_payload(
                conn,
                sub.customFields,
                "MESSAGE_REPLIED",
                "2026-01-01T00:00:00.000Z",
                fixtures().contacts[0].id,
                fixtures().campaigns[0].id,
                {"content": "Thanks!"},
            )
        )
        attempt = await delivery.deliver_once(
            store,
            sub,
            payload,
            3,
            lambda: "2026-01-01T00:00:01.000Z",
            next_attempt_at="2026-01-01T00:50:01.000Z",
            timeout=0.1,
        )
    assert attempt.success is False and attempt.attemptNumber == 3
    assert attempt.errorMessage is not None and "timed out" in attempt.errorMessage
    row = await store.fetchone(
        "SELECT eventType, attemptNumber, nextAttemptAt, payload FROM webhook_deliveries"
        " WHERE id = ?",
        (attempt.id,),
    )
    assert row is not None and row[:3] == ("MESSAGE_REPLIED", 3, "2026-01-01T00:50:01.000Z")
    stored = json.loads(row[3])
    assert stored["data"]["content"] == "Thanks!"
    assert stored["data"]["contact"]["id"] == fixtures().contacts[0].id
    [entry] = (await logs(client, hook))["data"]
    assert entry["attemptNumber"] == 3 and entry["createdAt"] == "2026-01-01T00:00:01.000Z"


async def test_test_delivery_needs_webhooks_write(
    client: httpx.AsyncClient, app: Starlette
) -> None:
    with recording_server() as receiver:
        hook = await subscribe(client, receiver.url)
        await assert_guarded(client, app, "POST", f"/v1/webhooks/{hook}/test", "WEBHOOKS_WRITE")
    assert len(receiver.requests) == 1  # only the key holding the scope got through
