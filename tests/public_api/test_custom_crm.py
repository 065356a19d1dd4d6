"""/v1/custom-crm: test (real GET /health), connect, status (never the key), disconnect."""

from __future__ import annotations

import json
from typing import Any

import httpx
import msgspec
import pytest
from starlette.applications import Starlette

from emulator.app import create_app
from tests.conftest import ALL, CRM_KEY, make_settings
from tests.public_api.checks import assert_bad_bodies, assert_error, assert_guarded
from tests.public_api.paging import fixtures
from tests.servers import recording_server, serve_app, unused_url

pytestmark = pytest.mark.anyio

KEY = "custom-crm-key-never-shown"


def crm_body(url: str, **fields: Any) -> dict[str, Any]:
    return {"baseUrl": url, "apiKey": KEY, "apiKeyHeader": "X-Custom-Key", **fields}


async def post(client: httpx.AsyncClient, path: str, body: Any) -> dict[str, Any]:
    response = await client.post(f"/v1/custom-crm/{path}", json=body, headers=ALL)
    assert response.status_code == 200, response.text
    assert KEY not in response.text
    doc: dict[str, Any] = response.json()
    assert doc["status"] == "success" and doc["message"]
    return doc


async def crm_status(client: httpx.AsyncClient) -> dict[str, Any]:
    response = await client.get("/v1/custom-crm/status", headers=ALL)
    assert response.status_code == 200, response.text
    assert KEY not in response.text and 'apiKey"' not in response.text
    data: dict[str, Any] = response.json()["data"]
    return data


async def test_test_calls_health_with_the_key_in_the_given_header(
    client: httpx.AsyncClient,
) -> None:
    with recording_server() as crm:
        doc = await post(client, "test", crm_body(crm.url + "/api/"))
    assert doc["data"]["success"] is True and doc["data"]["status"] == 200
    assert set(doc["data"]) == {"success", "status", "message", "ownerSelection", "usersStatus"}
    assert doc["data"]["ownerSelection"] is True and doc["data"]["usersStatus"] == 200
    health, users = crm.requests  # the users probe decides owner selection
    assert (health.method, health.path) == ("GET", "/api/health")
    assert (users.method, users.path) == ("GET", "/api/users")
    for request in (health, users):
        assert request.headers["x-custom-key"] == KEY
        assert "x-api-key" not in request.headers  # the emulator's own key never travels


async def test_test_reports_rejections_and_unreachable_crms(client: httpx.AsyncClient) -> None:
    with recording_server(status=401) as crm:
        doc = await post(client, "test", crm_body(crm.url))
    assert doc["data"]["success"] is False and doc["data"]["status"] == 401
    assert "401" in doc["data"]["message"]
    with recording_server(status=500) as crm:
        assert (await post(client, "test", crm_body(crm.url)))["data"]["status"] == 500
    doc = await post(client, "test", crm_body(unused_url()))
    assert doc["data"]["success"] is False and doc["data"]["status"] is None
    assert doc["data"]["message"]


async def test_test_does_not_store_anything(client: httpx.AsyncClient) -> None:
    before = await crm_status(client)
    with recording_server() as crm:
        await post(client, "test", crm_body(crm.url))
    assert await crm_status(client) == before


async def test_relative_base_url_reaches_the_embedded_crm() -> None:
    """Served for real: "/crm" resolves against the emulator's own address."""
    with serve_app(create_app(make_settings())) as base:
        async with httpx.AsyncClient(base_url=base) as client:
            key = CRM_KEY["X-API-Key"]
            good = await post(client, "test", {"baseUrl": "/crm", "apiKey": key})
            assert good["data"] == {
                "success": True,
                "status": 200,
                "ownerSelection": True,
                "usersStatus": 200,
                "message": good["data"]["message"],
            }
            assert f"{base}/crm/health" in good["data"]["message"]
            bad = await post(client, "test", {"baseUrl": "/crm", "apiKey": "wrong"})
            assert bad["data"]["success"] is False and bad["data"]["status"] == 401
            connected = await post(client, "connect", {"baseUrl": "/crm", "apiKey": key})
            assert connected["data"]["baseUrl"] == "/crm"  # stored as given
            assert connected["data"]["lastHealth"]["ok"] is True


async def test_connect_status_disconnect(client: httpx.AsyncClient, app: Starlette) -> None:
    fx = fixtures()
    assert fx.connection is not None
    assert (await crm_status(client))["baseUrl"] == fx.connection.crmUrl
    templates = {
        "contactLinkTemplate": "https://crm.example.com/c/{{crmId}}",
        "companyLinkTemplate": None,
    }
    with recording_server() as crm:
        doc = await post(client, "connect", crm_body(crm.url, **templates))
    data = doc["data"]
    assert data["connected"] is True and data["baseUrl"] == crm.url
    assert data["apiKeyHeader"] == "X-Custom-Key"
    assert data["contactLinkTemplate"] == templates["contactLinkTemplate"]
    assert data["companyLinkTemplate"] is None
    health = data["lastHealth"]
    assert health["ok"] is True and health["status"] == 200 and health["checkedAt"].endswith("Z")
    assert await crm_status(client) == data
    # the exporter's settings: replaced where and how, the rest kept
    row = await app.state.services.emulator.db.fetchone("SELECT settings FROM crm_connection")
    assert row is not None
    stored = json.loads(row[0])
    assert stored["crmUrl"] == crm.url and stored["apiKey"] == KEY
    assert stored["apiKeyHeader"] == "X-Custom-Key"
    assert stored["engagementFields"] == msgspec.to_builtins(fx.connection.engagementFields)
    assert stored["timeoutSeconds"] == fx.connection.timeoutSeconds
    # contacts now link with the new template
    contact = next(c for c in fx.contacts if c.contactCRMId)
    got = await client.get(f"/v1/contact/{contact.id}", headers=ALL)
    assert (
        got.json()["data"]["contactCRMUrl"] == f"https://crm.example.com/c/{contact.contactCRMId}"
    )

    response = await client.delete("/v1/custom-crm/disconnect", headers=ALL)
    assert response.status_code == 200, response.text
    assert response.json()["data"]["connected"] is False
    assert await crm_status(client) == {
        "connected": False,
        "baseUrl": None,
        "apiKeyHeader": None,
        "contactLinkTemplate": None,
        "companyLinkTemplate": None,
        "lastHealth": None,
        "ownerSelection": None,
        "healthCheckIntervalSeconds": 300,
    }
    assert_error(await client.delete("/v1/custom-crm/disconnect", headers=ALL), 404)


async def test_connect_keeps_a_failed_health_result(client: httpx.AsyncClient) -> None:
    assert (await client.delete("/v1/custom-crm/disconnect", headers=ALL)).status_code == 200
    doc = await post(client, "connect", crm_body(unused_url()))
    assert doc["data"]["connected"] is True
    assert doc["data"]["lastHealth"]["ok"] is False
    assert doc["data"]["lastHealth"]["status"] is None
    assert doc["data"]["apiKeyHeader"] == "X-Custom-Key"
    assert (await crm_status(client))["lastHealth"] == doc["data"]["lastHealth"]


async def test_body_validation(client: httpx.AsyncClient) -> None:
    good = crm_body("https://crm.example.com")
    for path in ("test", "connect"):
        for body, field in [
            ({"apiKey": KEY}, "baseUrl"),
            ({"baseUrl": "https://crm.example.com"}, "apiKey"),
            ({**good, "baseUrl": "crm.example.com"}, "baseUrl"),
            ({**good, "baseUrl": "ftp://crm.example.com"}, "baseUrl"),
            ({**good, "baseUrl": "https://"}, "baseUrl"),
            ({**good, "apiKey": ""}, "apiKey"),
            ({**good, "apiKeyHeader": "Bad Header"}, "apiKeyHeader"),
            ({**good, "apiKeyHeader": "X-Kéy"}, "apiKeyHeader"),
            ({**good, "apiKeyHeader": ""}, "apiKeyHeader"),
        ]:
            response = await client.post(f"/v1/custom-crm/{path}", json=body, headers=ALL)
            assert_error(response, 400, field)
        await assert_bad_bodies(
            client,
            "POST",
            f"/v1/custom-crm/{path}",
            [
                ("baseUrl", {**good, "baseUrl": 1}),
                ("apiKey", {**good, "apiKey": None}),
                ("contactLinkTemplate", {**good, "contactLinkTemplate": []}),
            ],
        )
    assert (await crm_status(client))["baseUrl"] == fixtures().connection.crmUrl  # type: ignore[union-attr]


async def test_every_endpoint_needs_scope_all(client: httpx.AsyncClient, app: Starlette) -> None:
    with recording_server() as crm:
        body = crm_body(crm.url)
        await assert_guarded(client, app, "POST", "/v1/custom-crm/test", "ALL", body)
        await assert_guarded(client, app, "POST", "/v1/custom-crm/connect", "ALL", body)
    assert crm.requests == []  # refused requests never reach the CRM
    await assert_guarded(client, app, "GET", "/v1/custom-crm/status", "ALL")
    await assert_guarded(client, app, "DELETE", "/v1/custom-crm/disconnect", "ALL")
