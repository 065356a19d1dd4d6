"""GET/DELETE /_emulator/requests: every /v1 and /crm call, newest first, filtered and paged."""

from __future__ import annotations

from datetime import datetime

import httpx
import pytest

from emulator.app import create_app
from tests.conftest import ALL, CRM_KEY, make_settings, open_client

pytestmark = pytest.mark.anyio


async def test_a_v1_call_is_recorded_with_route_key_name_and_bodies(
    client: httpx.AsyncClient,
) -> None:
    r = await client.get("/v1/contact/1", headers=ALL, params={"x": "1"})
    assert r.status_code == 200
    page = (await client.get("/_emulator/requests")).json()
    assert page["meta"] == {"page": 1, "pageSize": 50, "total": 1}
    call = page["data"][0]
    assert call["method"] == "GET"
    assert call["path"] == "/v1/contact/1"
    assert call["route"] == "/v1/contact/{contactId}"
    assert call["query"] == "x=1"
    assert call["status"] == 200
    assert call["keyId"] == "Demo: every scope"
    assert "demo-all" not in r.request.headers.get("x", "") and "demo-all" not in str(call)
    assert call["responseBody"] == r.json()
    assert call["requestBody"] is None
    assert call["requestTruncated"] is False and call["responseTruncated"] is False
    assert call["durationMs"] > 0
    datetime.fromisoformat(call["at"].replace("Z", "+00:00"))
    health = (await client.get("/_emulator/health")).json()
    assert call["virtualAt"] == health["now"]
    assert call["fault"] is None


async def test_control_and_dashboard_calls_are_not_recorded(client: httpx.AsyncClient) -> None:
    await client.get("/_emulator/health")
    await client.get("/")
    assert (await client.get("/_emulator/requests")).json()["meta"]["total"] == 0


async def test_unknown_key_unknown_route_and_crm_key(client: httpx.AsyncClient) -> None:
    await client.get("/v1/contacts", headers={"x-api-key": "nope"})
    await client.get("/v1/no-such-thing", headers=ALL)
    await client.get("/crm/health", headers=CRM_KEY)
    await client.get("/crm/health", headers={"X-API-Key": "wrong"})
    data = (await client.get("/_emulator/requests")).json()["data"]
    wrong_crm, crm, unknown_route, unknown_key = data
    assert (unknown_key["status"], unknown_key["keyId"]) == (401, None)
    assert unknown_key["route"] == "/v1/contacts"
    assert (unknown_route["status"], unknown_route["route"]) == (404, None)
    assert (crm["route"], crm["keyId"], crm["status"]) == ("/crm/health", "crm", 200)
    assert wrong_crm["keyId"] is None


async def test_bodies_are_capped_and_marked_truncated(client: httpx.AsyncClient) -> None:
    big = {"firstName": "x" * 40_000, "email": "big@example.com"}
    await client.post("/v1/contact", headers=ALL, json=big)
    await client.get("/v1/contacts", headers=ALL, params={"pageSize": 100})
    listing, created = (await client.get("/_emulator/requests")).json()["data"]
    assert created["requestTruncated"] is True
    assert isinstance(created["requestBody"], str) and len(created["requestBody"]) == 16 * 1024
    assert created["requestBody"].startswith('{"firstName":"xxx')
    # text cut at 16 KiB of bytes: a character split at the end shows as U+FFFD
    assert listing["responseTruncated"] is True
    assert 16 * 1024 - 8 <= len(listing["responseBody"]) <= 16 * 1024


async def test_filters_paging_and_newest_first(client: httpx.AsyncClient) -> None:
    for n in (1, 2, 3):
        await client.get(f"/v1/contact/{n}", headers=ALL)
    await client.get("/v1/contacts", headers=ALL)
    await client.get("/v1/contact/999999", headers=ALL)
    q = await client.get(
        "/_emulator/requests", params={"route": "/v1/contact/{contactId}", "limit": 2, "page": 1}
    )
    body = q.json()
    assert body["meta"] == {"page": 1, "pageSize": 2, "total": 4}
    assert [c["path"] for c in body["data"]] == ["/v1/contact/999999", "/v1/contact/3"]
    second = (
        await client.get(
            "/_emulator/requests",
            params={"route": "/v1/contact/{contactId}", "limit": 2, "page": 2},
        )
    ).json()
    assert [c["path"] for c in second["data"]] == ["/v1/contact/2", "/v1/contact/1"]
    by_status = (await client.get("/_emulator/requests", params={"status": "404"})).json()
    assert [c["path"] for c in by_status["data"]] == ["/v1/contact/999999"]
    by_path = (await client.get("/_emulator/requests", params={"path": "/v1/contacts"})).json()
    assert by_path["meta"]["total"] == 1
    by_method = (await client.get("/_emulator/requests", params={"method": "post"})).json()
    assert by_method["meta"]["total"] == 0


@pytest.mark.parametrize(
    "params", [{"limit": "0"}, {"limit": "1001"}, {"page": "x"}, {"status": "abc"}]
)
async def test_bad_filters_are_400_in_the_control_error_shape(
    client: httpx.AsyncClient, params: dict[str, str]
) -> None:
    r = await client.get("/_emulator/requests", params=params)
    assert r.status_code == 400
    assert r.json()["status"] == "error" and r.json()["errors"]


async def test_delete_and_reset_clear_the_journal(client: httpx.AsyncClient) -> None:
    await client.get("/v1/contacts", headers=ALL)
    r = await client.delete("/_emulator/requests")
    assert r.json() == {"status": "ok", "cleared": 1}
    await client.get("/v1/contacts", headers=ALL)
    assert (await client.post("/_emulator/reset")).status_code == 200
    assert (await client.get("/_emulator/requests")).json()["meta"]["total"] == 0


async def test_snapshot_restore_keeps_the_journal(client: httpx.AsyncClient) -> None:
    snap = (await client.post("/_emulator/snapshots")).json()["id"]
    await client.get("/v1/contacts", headers=ALL)
    await client.post(f"/_emulator/snapshots/{snap}/restore")
    assert (await client.get("/_emulator/requests")).json()["meta"]["total"] == 1


async def test_row_cap_drops_the_oldest() -> None:
    app = create_app(make_settings(requestsLimit=3))
    async with open_client(app) as client:
        for n in range(1, 6):
            await client.get(f"/v1/contact/{n}", headers=ALL)
        data = (await client.get("/_emulator/requests")).json()["data"]
        assert [c["path"] for c in data] == ["/v1/contact/5", "/v1/contact/4", "/v1/contact/3"]


async def test_crm_calls_of_an_export_are_recorded(client: httpx.AsyncClient) -> None:
    r = await client.post("/crm/contacts/sync", headers=CRM_KEY, json={"contacts": []})
    call = (await client.get("/_emulator/requests")).json()["data"][0]
    assert call["route"] == "/crm/contacts/sync"
    assert call["status"] == r.status_code
    assert call["requestBody"] == {"contacts": []}


async def test_a_webhook_secret_never_reaches_the_journal(client: httpx.AsyncClient) -> None:
    body = {
        "name": "hook",
        "url": "https://example.com/hook",
        "events": ["MESSAGE_REPLIED"],
        "secret": "whsec-do-not-show",
    }
    r = await client.post("/v1/webhooks", headers=ALL, json=body)
    assert r.status_code in (200, 201), r.text
    answer = await client.get("/_emulator/requests")
    assert "whsec-do-not-show" not in answer.text
    assert answer.json()["data"][0]["requestBody"]["secret"] == "***"
