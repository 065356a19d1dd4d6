"""The custom CRM connection's life: the /users probe on connect and test, periodic health
checks on the clock, failures in a row, and exports that trust a fresh users verdict."""

from __future__ import annotations

import sqlite3
import threading
from datetime import timedelta
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from emulator.platform import connection as platform_connection
from emulator.simulation.crm_link.health import HEALTH_INTERVAL_SECONDS, HealthChecker
from tests.conftest import ALL
from tests.public_api.paging import fixtures
from tests.servers import recording_server

pytestmark = pytest.mark.anyio


async def status(client: httpx.AsyncClient) -> dict[str, Any]:
    response = await client.get("/v1/custom-crm/status", headers=ALL)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()["data"]
    return data


async def advance(client: httpx.AsyncClient, seconds: float) -> None:
    response = await client.post("/_emulator/clock/advance", json={"seconds": seconds})
    assert response.status_code == 200, response.text


async def crm_settings(client: httpx.AsyncClient, **changes: Any) -> None:
    current = (await client.get("/_emulator/crm/settings")).json()
    response = await client.put("/_emulator/crm/settings", json={**current, **changes})
    assert response.status_code == 200, response.text


@pytest.mark.parametrize(
    ("users_status", "owner"), [(200, True), (404, False), (501, False), (500, None)]
)
async def test_connect_and_test_probe_users_for_owner_selection(
    client: httpx.AsyncClient, users_status: int, owner: bool | None
) -> None:
    with recording_server() as crm:
        crm.status_for = {"/users": users_status}
        body = {"baseUrl": crm.url, "apiKey": "k"}
        tested = await client.post("/v1/custom-crm/test", json=body, headers=ALL)
        connected = await client.post("/v1/custom-crm/connect", json=body, headers=ALL)
    assert tested.json()["data"]["ownerSelection"] is owner
    assert tested.json()["data"]["usersStatus"] == users_status
    data = connected.json()["data"]
    assert data["ownerSelection"] is owner
    assert data["lastHealth"]["users"]["status"] == users_status
    assert data["lastHealth"]["failuresInRow"] == 0 and data["lastHealth"]["checks"] == 1
    assert [r.path for r in crm.requests] == ["/health", "/users"] * 2


async def test_health_is_checked_on_the_virtual_interval_with_failures_in_a_row(
    client: httpx.AsyncClient,
) -> None:
    assert (await status(client))["lastHealth"] is None  # the fixtures' connection: unchecked
    await advance(client, 1)
    first = (await status(client))["lastHealth"]
    assert first["ok"] is True and first["checks"] == 1 and first["failuresInRow"] == 0
    assert first["users"]["ownerSelection"] is True
    assert (await status(client))["ownerSelection"] is True
    await advance(client, HEALTH_INTERVAL_SECONDS - 1)  # not due yet
    assert (await status(client))["lastHealth"] == first
    await advance(client, 1)  # due: one interval after the first check
    second = (await status(client))["lastHealth"]
    assert second["checks"] == 2 and second["checkedAt"] > first["checkedAt"]
    await crm_settings(client, faults=[{"endpoint": "GET /health", "status": 503}])
    for failures in (1, 2):
        await advance(client, HEALTH_INTERVAL_SECONDS)
        health = (await status(client))["lastHealth"]
        assert health["ok"] is False and health["status"] == 503
        assert health["failuresInRow"] == failures
    await crm_settings(client, faults=[])
    await advance(client, 10 * HEALTH_INTERVAL_SECONDS)  # a long jump: one check, not ten
    health = (await status(client))["lastHealth"]
    assert health["ok"] is True and health["failuresInRow"] == 0 and health["checks"] == 5


async def test_exports_use_a_fresh_users_verdict_instead_of_probing(
    client: httpx.AsyncClient,
) -> None:
    await crm_settings(client, usersStatus=404)
    await advance(client, 1)  # the periodic check probes /users: owner selection off
    assert (await status(client))["ownerSelection"] is False
    ids = [c.id for c in fixtures().contacts if not c.contactCRMId][:2]
    response = await client.post(
        "/v1/actions",
        headers=ALL,
        json={
            "actions": [
                {
                    "type": "EXPORT_TO_CRM",
                    "options": {"CRMOwnerId": {"value": "crm-user-1", "override": True}},
                }
            ],
            "contactIds": ids,
        },
    )
    run_id = response.json()["data"]["actionsId"]
    await advance(client, 60)
    journal = (
        await client.get("/_emulator/journal", params={"exportId": f"actions-{run_id}"})
    ).json()["data"]
    paths = [(e["method"], e["path"]) for e in journal]
    assert ("GET", "/users") not in paths and ("POST", "/contacts") in paths
    created = next(e for e in journal if (e["method"], e["path"]) == ("POST", "/contacts"))
    assert "ownerId" not in created["requestBody"]  # owner selection off: never sent


async def test_a_realtime_clock_checks_by_itself() -> None:
    """`--clock realtime:SPEED`: the ticker's advances run the checks, no call needed."""
    import asyncio

    from emulator.app import create_app
    from tests.conftest import make_settings, open_client

    app = create_app(make_settings(clockSpeed=1200.0))  # 600 virtual s per 0.5 s tick
    async with open_client(app) as client:
        for _ in range(40):
            await asyncio.sleep(0.25)
            health = (await status(client))["lastHealth"]
            if health is not None and health["checks"] >= 2:
                break
        assert health is not None and health["checks"] >= 2 and health["ok"] is True


async def test_another_crm_starts_its_own_health_history(client: httpx.AsyncClient) -> None:
    await advance(client, 1)
    assert (await status(client))["ownerSelection"] is True  # the reference CRM's /users
    connection = (await client.get("/_emulator/connection")).json()
    with recording_server() as crm:
        crm.status_for = {"/users": 501}
        changed = await client.put("/_emulator/connection", json={**connection, "crmUrl": crm.url})
        assert changed.status_code == 200, changed.text
        await advance(client, 1)  # not an interval later: checked at once, being another CRM
        health = (await status(client))["lastHealth"]
    assert health["crmUrl"] == crm.url and health["checks"] == 1
    assert health["users"]["ownerSelection"] is False
    assert [r.path for r in crm.requests] == ["/health", "/users"]


async def test_a_check_reads_and_writes_its_row_without_a_hop_to_the_store_thread(
    app: Starlette, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the store idle (as after an advance's chunks), the check's read of the
    connection and its write of the health run on the event loop's own thread (brief store
    calls), not a hop each to the database thread and back."""
    threads: dict[str, list[threading.Thread]] = {"read": [], "write": []}
    read, record = platform_connection.read_stored, platform_connection.record_health

    def read_noted(conn: sqlite3.Connection) -> tuple[str | None, str | None]:
        threads["read"].append(threading.current_thread())
        return read(conn)

    def record_noted(conn: sqlite3.Connection, health: str, settings: str) -> None:
        threads["write"].append(threading.current_thread())
        record(conn, health, settings)

    monkeypatch.setattr(platform_connection, "read_stored", read_noted)
    monkeypatch.setattr(platform_connection, "record_health", record_noted)
    services = app.state.services
    checker = next(c for c in services.simulation.listeners if isinstance(c, HealthChecker))
    await checker(services.emulator.clock.now() + timedelta(seconds=1))
    loop = threading.current_thread()
    assert threads["read"] and threads["write"]
    assert set(threads["read"]) == set(threads["write"]) == {loop}
    assert (await status(client))["lastHealth"]["checks"] == 1  # checked and written
