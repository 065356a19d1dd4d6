"""Webhook subscriptions: list, create, PATCH (limits, secret removal), delete, logs, scopes.

The secret is write-only: no answer ever contains it.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette

from tests.conftest import ALL, READONLY
from tests.public_api.checks import (
    assert_bad_bodies,
    assert_error,
    assert_guarded,
    assert_paging_errors,
)
from tests.public_api.paging import fixtures, walk

pytestmark = pytest.mark.anyio

EVENTS = [
    "CONNECTION_REQUEST_SENT",
    "CONNECTION_REQUEST_ACCEPTED",
    "NETWORK_MESSAGE_SENT",
    "EMAIL_SENT",
    "INMAIL_SENT",
    "MESSAGE_REPLIED",
    "POST_LIKED",
    "PROFILE_VISITED",
]
SECRET = "s3cret-value-never-shown"
NEW = {"name": "Replies", "url": "https://hooks.example.com/in", "events": ["MESSAGE_REPLIED"]}


def drawn(strategy: st.SearchStrategy[Any], examples: int = 50) -> list[Any]:
    """Values drawn by Hypothesis, for an async test to send."""
    values: list[Any] = []

    @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def draw(value: Any) -> None:
        values.append(value)

    draw()
    return values


async def create(client: httpx.AsyncClient, **fields: Any) -> dict[str, Any]:
    response = await client.post("/v1/webhooks", json={**NEW, **fields}, headers=ALL)
    assert response.status_code == 201, response.text
    assert SECRET not in response.text
    data: dict[str, Any] = response.json()["data"]
    return data


async def patch(client: httpx.AsyncClient, webhook_id: int, body: Any) -> httpx.Response:
    response = await client.patch(f"/v1/webhooks/{webhook_id}", json=body, headers=ALL)
    assert SECRET not in response.text
    return response


async def test_lists_fixture_subscriptions_without_secrets(client: httpx.AsyncClient) -> None:
    fx = fixtures()
    ids, total = await walk(client, "/v1/webhooks", 1)
    assert ids == sorted(w.id for w in fx.webhooks) and total == len(fx.webhooks)
    response = await client.get("/v1/webhooks", headers=ALL)
    for item, hook in zip(response.json()["data"], fx.webhooks, strict=True):
        assert item == {
            "id": hook.id,
            "name": hook.name,
            "url": hook.url,
            "events": hook.events,
            "campaignIds": hook.campaignIds,
            "customFields": hook.customFields,
            "enabled": hook.enabled,
            "createdAt": hook.createdAt,
            "updatedAt": hook.updatedAt,
            "hasSecret": hook.secret is not None,
        }
        assert "secret" not in item
    for hook in fx.webhooks:
        if hook.secret:
            assert hook.secret not in response.text


async def test_create_defaults_and_full(client: httpx.AsyncClient) -> None:
    minimal = await create(client)
    assert minimal["enabled"] is True and minimal["hasSecret"] is False
    assert minimal["campaignIds"] == [] and minimal["customFields"] == []
    assert minimal["createdAt"] == minimal["updatedAt"]
    campaign = fixtures().campaigns[0].id
    full = await create(
        client,
        name="Ünïcode ✓",
        events=EVENTS,
        secret=SECRET,
        campaignIds=[campaign],
        customFields=["leadScore"],
        enabled=False,
    )
    assert full["hasSecret"] is True and full["enabled"] is False
    assert full["events"] == EVENTS and full["campaignIds"] == [campaign]
    listing = await client.get("/v1/webhooks", params={"pageSize": "100"}, headers=ALL)
    assert full in listing.json()["data"] and SECRET not in listing.text


async def test_create_validation(client: httpx.AsyncClient) -> None:
    for body, field in [
        ({"url": NEW["url"], "events": NEW["events"]}, "name"),
        ({**NEW, "name": ""}, "name"),
        ({**NEW, "name": "n" * 256}, "name"),
        ({"name": "x", "events": NEW["events"]}, "url"),
        ({**NEW, "url": "not a url"}, "url"),
        ({**NEW, "url": "hooks.example.com"}, "url"),
        ({"name": "x", "url": NEW["url"]}, "events"),
        ({**NEW, "events": []}, "events"),
        ({**NEW, "events": ["MESSAGE_READ"]}, "events[0]"),
        ({**NEW, "secret": "short"}, "secret"),
        ({**NEW, "secret": "s" * 257}, "secret"),
        ({**NEW, "campaignIds": [0]}, "campaignIds[0]"),
        ({**NEW, "campaignIds": [999_999]}, "campaignIds"),
    ]:
        assert_error(await client.post("/v1/webhooks", json=body, headers=ALL), 400, field)
    await assert_bad_bodies(
        client,
        "POST",
        "/v1/webhooks",
        [
            ("name", {**NEW, "name": 1}),
            ("events", {**NEW, "events": "EMAIL_SENT"}),
            ("enabled", {**NEW, "enabled": "yes"}),
            ("campaignIds[0]", {**NEW, "campaignIds": ["1"]}),
        ],
    )
    listing = await client.get("/v1/webhooks", headers=ALL)
    assert listing.json()["meta"]["total"] == len(fixtures().webhooks)  # nothing was written


async def test_patch_changes_only_the_given_fields(client: httpx.AsyncClient) -> None:
    hook = await create(client, secret=SECRET)
    response = await patch(client, hook["id"], {"enabled": False})
    assert response.status_code == 200, response.text
    after = response.json()["data"]
    assert after["enabled"] is False and after["hasSecret"] is True
    unchanged = {k: v for k, v in hook.items() if k not in ("enabled", "updatedAt")}
    assert {k: v for k, v in after.items() if k not in ("enabled", "updatedAt")} == unchanged
    campaign = fixtures().campaigns[-1].id
    change = {
        "name": "Renamed",
        "url": "http://127.0.0.1:1/x",
        "events": EVENTS[:2],
        "campaignIds": [campaign],
        "customFields": ["a", "b"],
        "enabled": True,
    }
    after = (await patch(client, hook["id"], change)).json()["data"]
    assert {k: after[k] for k in change} == change and after["hasSecret"] is True


async def test_empty_patch_changes_nothing_but_updated_at(client: httpx.AsyncClient) -> None:
    hook = fixtures().webhooks[0]
    before = (await client.get("/v1/webhooks", headers=ALL)).json()["data"][0]
    response = await patch(client, hook.id, {})
    assert response.status_code == 200, response.text
    after = response.json()["data"]
    assert after["updatedAt"] != before["updatedAt"]
    assert after["updatedAt"] > before["createdAt"]
    assert {k: v for k, v in after.items() if k != "updatedAt"} == {
        k: v for k, v in before.items() if k != "updatedAt"
    }


async def test_secret_null_removes_it_and_a_new_one_sets_it(client: httpx.AsyncClient) -> None:
    hook = await create(client, secret=SECRET)
    removed = (await patch(client, hook["id"], {"secret": None})).json()["data"]
    assert removed["hasSecret"] is False
    again = (await patch(client, hook["id"], {"secret": SECRET})).json()["data"]
    assert again["hasSecret"] is True


async def test_patch_limits(client: httpx.AsyncClient) -> None:
    hook = await create(client, secret=SECRET)
    for body, field in [
        ({"name": ""}, "name"),
        ({"name": "n" * 256}, "name"),
        ({"secret": "s" * 7}, "secret"),
        ({"secret": "s" * 257}, "secret"),
        ({"events": []}, "events"),
        ({"events": ["EMAIL_SENT", "EMAIL_OPENED"]}, "events[1]"),
        ({"events": "EMAIL_SENT"}, "events"),
        ({"url": "ftp:/x"}, "url"),
        ({"url": None}, "url"),
        ({"enabled": None}, "enabled"),
        ({"campaignIds": [999_999]}, "campaignIds"),
        ({"customFields": [1]}, "customFields[0]"),
        ({"name": None}, "name"),
    ]:
        assert_error(await patch(client, hook["id"], body), 400, field)
    for good in (
        {"name": "n"},
        {"name": "n" * 255},
        {"secret": "s" * 8},
        {"secret": "s" * 256},
        {"events": ["PROFILE_VISITED"]},
    ):
        assert (await patch(client, hook["id"], good)).status_code == 200, good
    await assert_bad_bodies(
        client,
        "PATCH",
        f"/v1/webhooks/{hook['id']}",
        [
            ("enabled", {"enabled": 1}),
            ("name", {"name": ["x"]}),
        ],
    )


async def test_name_and_secret_lengths_property(client: httpx.AsyncClient) -> None:
    """Any name of 1..255 and secret of 8..256 characters is accepted; any other is not."""
    hook = await create(client)
    names = drawn(st.text(max_size=300))
    secrets = drawn(st.text(min_size=0, max_size=300))
    for name in names:
        response = await patch(client, hook["id"], {"name": name})
        assert response.status_code == (200 if 1 <= len(name) <= 255 else 400), name
    for secret in secrets:
        response = await client.patch(
            f"/v1/webhooks/{hook['id']}", json={"secret": secret}, headers=ALL
        )
        assert response.status_code == (200 if 8 <= len(secret) <= 256 else 400), secret
        if 8 <= len(secret) <= 256:
            data = response.json()["data"]
            assert data["hasSecret"] is True and "secret" not in data
            assert secret not in [v for k, v in data.items() if k != "name"]


async def test_unknown_and_malformed_ids(client: httpx.AsyncClient) -> None:
    unknown = max(w.id for w in fixtures().webhooks) + 100
    assert_error(await patch(client, unknown, {"enabled": False}), 404)
    assert_error(await client.delete(f"/v1/webhooks/{unknown}", headers=ALL), 404)
    assert_error(await client.get(f"/v1/webhooks/{unknown}/logs", headers=ALL), 404)
    assert_error(await client.post(f"/v1/webhooks/{unknown}/test", headers=ALL), 404)
    for bad in ("x", "0", "1e3"):
        assert_error(
            await client.patch(f"/v1/webhooks/{bad}", json={}, headers=ALL), 400, "webhookId"
        )
        assert_error(await client.delete(f"/v1/webhooks/{bad}", headers=ALL), 400, "webhookId")
        assert_error(await client.get(f"/v1/webhooks/{bad}/logs", headers=ALL), 400, "webhookId")


async def test_delete_removes_the_subscription(client: httpx.AsyncClient) -> None:
    hook = await create(client)
    response = await client.delete(f"/v1/webhooks/{hook['id']}", headers=ALL)
    assert response.status_code == 200, response.text
    assert response.json()["data"] == {"id": hook["id"]}
    listing = await client.get("/v1/webhooks", params={"pageSize": "100"}, headers=ALL)
    assert hook["id"] not in [w["id"] for w in listing.json()["data"]]
    assert_error(await client.delete(f"/v1/webhooks/{hook['id']}", headers=ALL), 404)
    assert_error(await patch(client, hook["id"], {}), 404)


async def test_logs_of_a_subscription_without_deliveries(client: httpx.AsyncClient) -> None:
    hook = await create(client)
    response = await client.get(f"/v1/webhooks/{hook['id']}/logs", headers=ALL)
    assert response.status_code == 200, response.text
    assert response.json() == {"data": [], "meta": {"page": 1, "pageSize": 25, "total": 0}}
    await assert_paging_errors(client, f"/v1/webhooks/{hook['id']}/logs")


async def test_bad_paging_is_400(client: httpx.AsyncClient) -> None:
    await assert_paging_errors(client, "/v1/webhooks")


async def test_scopes(client: httpx.AsyncClient, app: Starlette) -> None:
    hook = fixtures().webhooks[0].id
    await assert_guarded(client, app, "GET", "/v1/webhooks", "WEBHOOKS_READ")
    await assert_guarded(client, app, "POST", "/v1/webhooks", "WEBHOOKS_WRITE", NEW)
    await assert_guarded(client, app, "PATCH", f"/v1/webhooks/{hook}", "WEBHOOKS_WRITE", {})
    await assert_guarded(client, app, "GET", f"/v1/webhooks/{hook}/logs", "ALL")
    created = await create(client)
    await assert_guarded(client, app, "DELETE", f"/v1/webhooks/{created['id']}", "WEBHOOKS_WRITE")
    for method, path in [
        ("POST", "/v1/webhooks"),
        ("PATCH", f"/v1/webhooks/{hook}"),
        ("DELETE", f"/v1/webhooks/{hook}"),
        ("POST", f"/v1/webhooks/{hook}/test"),
    ]:
        response = await client.request(method, path, json=NEW, headers=READONLY)
        assert_error(response, 403)
