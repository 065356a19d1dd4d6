"""POST/GET/DELETE /_emulator/snapshots and restore: the whole state back, fast, bounded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from emulator.app import create_app
from emulator.control.snapshots import MAX_BYTES, MAX_SNAPSHOTS, Shelf
from tests.conftest import ALL, CRM_KEY, make_settings, open_client

pytestmark = pytest.mark.anyio


async def crm_contacts(client: httpx.AsyncClient) -> int:
    return int((await client.get("/_emulator/crm/contacts")).json()["meta"]["total"])


async def platform_contacts(client: httpx.AsyncClient) -> int:
    return int((await client.get("/v1/contacts", headers=ALL)).json()["meta"]["total"])


async def take(client: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    r = (
        await client.post("/_emulator/snapshots", json=body)
        if body
        else await client.post("/_emulator/snapshots")
    )
    assert r.status_code == 201, r.text
    return r.json()  # type: ignore[no-any-return]


async def events(client: httpx.AsyncClient) -> list[dict[str, Any]]:
    return (await client.get("/_emulator/events", params={"limit": 1000})).json()["data"]  # type: ignore[no-any-return]


async def test_restore_puts_back_platform_crm_clock_and_events(client: httpx.AsyncClient) -> None:
    before_crm, before_platform = await crm_contacts(client), await platform_contacts(client)
    before_now = (await client.get("/_emulator/clock")).json()["now"]
    before_events = await events(client)
    snap = await take(client, label="clean")
    assert snap["bytes"] > 100_000 and snap["label"] == "clean" and snap["createdAt"] == before_now
    assert (await client.get(f"/_emulator/snapshots/{snap['id']}")).json() == snap

    # Change every part: a CRM record, a platform record, the clock and what the simulation did.
    made = await client.post(
        "/crm/contacts",
        headers=CRM_KEY,
        json={"contacts": [{"externalId": "x", "email": "n@x.test"}]},
    )
    assert made.status_code < 300, made.text
    created = await client.post("/v1/contact", headers=ALL, json={"firstName": "New"})
    assert created.status_code == 201, created.text
    moved = await client.post("/_emulator/clock/advance", json={"seconds": 3 * 86400})
    assert moved.status_code == 200, moved.text
    assert await crm_contacts(client) == before_crm + 1
    assert await platform_contacts(client) == before_platform + 1
    after_events = await events(client)

    r = await client.post(f"/_emulator/snapshots/{snap['id']}/restore")
    assert r.status_code == 200, r.text
    assert r.json()["now"] == before_now and r.json()["durationMs"] < 1000
    assert (await client.get("/_emulator/clock")).json()["now"] == before_now
    assert await crm_contacts(client) == before_crm
    assert await platform_contacts(client) == before_platform
    assert await events(client) == before_events
    # The same advance from the restored state does the same again (the state is whole).
    await client.post("/_emulator/clock/advance", json={"seconds": 3 * 86400})
    assert await events(client) == after_events
    again = await client.post(f"/_emulator/snapshots/{snap['id']}/restore")
    assert again.json()["now"] == before_now


async def test_fault_call_counts_travel_with_the_snapshot(client: httpx.AsyncClient) -> None:
    rule = {"endpoint": "GET /health", "status": 503, "times": 2}
    assert (await client.put("/_emulator/crm/settings", json={"faults": [rule]})).status_code == 200

    async def health() -> int:
        return (await client.get("/crm/health", headers=CRM_KEY)).status_code

    assert await health() == 503  # first of two failing calls
    snap = await take(client)
    assert [await health() for _ in range(3)] == [503, 200, 200]
    await client.post(f"/_emulator/snapshots/{snap['id']}/restore")
    assert [await health() for _ in range(2)] == [503, 200]  # counting went on from 1, not 0
    # Settings travel too: a snapshot from before the rule knows no faults.
    await client.post("/_emulator/reset")
    clean = await take(client)
    await client.put("/_emulator/crm/settings", json={"faults": [{**rule, "times": None}]})
    assert await health() == 503
    await client.post(f"/_emulator/snapshots/{clean['id']}/restore")
    assert await health() == 200


async def test_list_delete_and_the_bound(client: httpx.AsyncClient) -> None:
    first = await take(client)
    listed = (await client.get("/_emulator/snapshots")).json()
    assert listed == {"data": [first], "limit": MAX_SNAPSHOTS, "maxBytes": MAX_BYTES}
    later = [await take(client) for _ in range(MAX_SNAPSHOTS)]
    ids = [s["id"] for s in (await client.get("/_emulator/snapshots")).json()["data"]]
    assert ids == [s["id"] for s in later]  # the oldest went first
    assert (await client.post(f"/_emulator/snapshots/{first['id']}/restore")).status_code == 404
    gone = await client.delete(f"/_emulator/snapshots/{later[0]['id']}")
    assert gone.status_code == 200 and gone.json() == later[0]
    assert (await client.get(f"/_emulator/snapshots/{later[0]['id']}")).status_code == 404
    assert (await client.delete(f"/_emulator/snapshots/{later[0]['id']}")).status_code == 404
    # Snapshots survive a reset: they are how a test suite gets back to a prepared state.
    await client.post("/_emulator/reset")
    assert len((await client.get("/_emulator/snapshots")).json()["data"]) == MAX_SNAPSHOTS - 1


@pytest.mark.parametrize(
    "request_args",
    [
        ("post", "/_emulator/snapshots/nope/restore", None),
        ("get", "/_emulator/snapshots/nope", None),
        ("delete", "/_emulator/snapshots/nope", None),
        ("post", "/_emulator/snapshots", b"{not json"),
        ("post", "/_emulator/snapshots", b'{"label": 3}'),
        ("post", "/_emulator/snapshots", b"[]"),
        ("put", "/_emulator/snapshots", None),
    ],
)
async def test_bad_requests(
    client: httpx.AsyncClient, request_args: tuple[str, str, bytes | None]
) -> None:
    method, path, body = request_args
    headers = {} if body is None else {"content-type": "application/json"}
    r = await client.request(method, path, content=body, headers=headers)
    assert r.status_code in (400, 404, 405), r.text
    assert r.json()["status"] == "error"
    if body is not None and method == "post":
        assert r.status_code == 400


async def test_no_restore_while_an_export_runs(client: httpx.AsyncClient, app: Starlette) -> None:
    snap = await take(client)
    operations = app.state.services.emulator.operations
    operations.wait_seconds = 0.05
    await operations.acquire("export run x")  # what a running export holds
    try:
        r = await client.post(f"/_emulator/snapshots/{snap['id']}/restore")
    finally:
        operations.release()
    assert r.status_code == 409 and "export run x is running" in r.json()["message"]


async def test_snapshot_taken_before_the_crm_was_first_called(client: httpx.AsyncClient) -> None:
    snap = await take(client)  # the CRM's in-memory context does not exist yet
    await client.put("/_emulator/crm/settings", json={"faults": [{"endpoint": "*", "status": 500}]})
    assert (await client.get("/crm/health", headers=CRM_KEY)).status_code == 500
    assert (await client.post(f"/_emulator/snapshots/{snap['id']}/restore")).status_code == 200
    assert (await client.get("/crm/health", headers=CRM_KEY)).status_code == 200


async def test_the_byte_budget_drops_the_oldest_but_never_the_newest(
    client: httpx.AsyncClient, app: Starlette
) -> None:
    size = (await take(client))["bytes"]
    app.state.services.snapshots = Shelf(limit=10, max_bytes=2 * size + size // 2)
    ids = [(await take(client))["id"] for _ in range(4)]
    kept = [s["id"] for s in (await client.get("/_emulator/snapshots")).json()["data"]]
    assert kept == ids[-2:]
    app.state.services.snapshots = Shelf(limit=10, max_bytes=1)  # smaller than any image
    newest = await take(client)
    assert [s["id"] for s in (await client.get("/_emulator/snapshots")).json()["data"]] == [
        newest["id"]
    ]
    assert (await client.post(f"/_emulator/snapshots/{newest['id']}/restore")).status_code == 200


async def test_snapshots_of_a_db_file(tmp_path: Path) -> None:
    app = create_app(make_settings(db=str(tmp_path / "state.db")))
    async with open_client(app) as client:
        before = await platform_contacts(client)
        snap = await take(client)
        await client.post("/v1/contact", headers=ALL, json={"firstName": "New"})
        assert (await client.post(f"/_emulator/snapshots/{snap['id']}/restore")).status_code == 200
        assert await platform_contacts(client) == before
    # The restored state is what the file keeps.
    async with open_client(create_app(make_settings(db=str(tmp_path / "state.db")))) as client:
        assert await platform_contacts(client) == before
