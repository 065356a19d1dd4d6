"""/_emulator/workspaces and /w/{id}/: each workspace's own state, the cap, removal, expiry."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from starlette.applications import Starlette

from emulator.app import create_app
from tests.conftest import ALL, CRM_KEY, make_settings, open_client

pytestmark = pytest.mark.anyio


async def new_workspace(client: httpx.AsyncClient, **body: object) -> dict:
    r = await client.post("/_emulator/workspaces", json=body or None)
    assert r.status_code == 201, r.text
    return r.json()


async def test_a_workspace_serves_every_surface_with_its_own_state(
    client: httpx.AsyncClient,
) -> None:
    ws = await new_workspace(client, name="mine")
    prefix = f"/w/{ws['id']}"
    assert ws["baseUrl"].endswith(prefix)
    assert {"name": "Demo: every scope", "key": "demo-all"} in [
        {"name": k["name"], "key": k["key"]} for k in ws["apiKeys"]
    ]
    before = (await client.get("/v1/contacts", headers=ALL)).json()["meta"]
    r = await client.post(
        f"{prefix}/v1/contact", headers=ALL, json={"firstName": "Ada", "email": "a@example.com"}
    )
    assert r.status_code == 201, r.text
    inside = (await client.get(f"{prefix}/v1/contacts", headers=ALL)).json()["meta"]
    outside = (await client.get("/v1/contacts", headers=ALL)).json()["meta"]
    assert inside["total"] == before["total"] + 1
    assert outside["total"] == before["total"]  # the default workspace did not change
    # its own journal of calls: the workspace's path, without the prefix
    calls = (await client.get(f"{prefix}/_emulator/requests")).json()["data"]
    assert [c["path"] for c in calls][:2] == ["/v1/contacts", "/v1/contact"]
    root_calls = (await client.get("/_emulator/requests")).json()["data"]
    assert all(c["path"] != "/v1/contact" for c in root_calls)
    # its own CRM and dashboard
    assert (await client.get(f"{prefix}/crm/health", headers=CRM_KEY)).status_code in (200, 404)
    page = await client.get(f"{prefix}/contacts")
    assert page.status_code == 200
    assert f'href="{prefix}/contacts/' in page.text
    assert 'href="/contacts/' not in page.text


async def test_clock_reset_and_faults_stay_in_their_workspace(client: httpx.AsyncClient) -> None:
    a, b = await new_workspace(client), await new_workspace(client)
    pa, pb = f"/w/{a['id']}", f"/w/{b['id']}"
    now = (await client.get(f"{pb}/_emulator/health")).json()["now"]
    r = await client.post(f"{pa}/_emulator/clock/advance", json={"seconds": 3600})
    assert r.status_code == 200, r.text
    assert (await client.get(f"{pb}/_emulator/health")).json()["now"] == now
    assert (await client.get(f"{pa}/_emulator/health")).json()["now"] != now
    fault = {"method": "GET", "route": "/v1/contacts", "status": 500}
    assert (await client.post(f"{pa}/_emulator/v1-faults", json=fault)).status_code == 201
    assert (await client.get(f"{pa}/v1/contacts", headers=ALL)).status_code == 500
    assert (await client.get(f"{pb}/v1/contacts", headers=ALL)).status_code == 200
    assert (await client.get("/v1/contacts", headers=ALL)).status_code == 200


async def test_operations_in_two_workspaces_never_answer_409(client: httpx.AsyncClient) -> None:
    spaces = [await new_workspace(client) for _ in range(3)]

    async def busy_work(ws: dict) -> list[int]:
        p = f"/w/{ws['id']}/_emulator"
        codes = []
        for _ in range(3):
            codes.append((await client.post(f"{p}/reset")).status_code)
            codes.append(
                (await client.post(f"{p}/clock/advance", json={"seconds": 600})).status_code
            )
        return codes

    results = await asyncio.gather(*(busy_work(ws) for ws in spaces))
    assert {code for codes in results for code in codes} == {200}


async def test_listing_showing_and_removing(client: httpx.AsyncClient) -> None:
    ws = await new_workspace(client, name="listed")
    listed = (await client.get("/_emulator/workspaces")).json()
    assert [w["id"] for w in listed["data"]] == [ws["id"]]
    assert listed["data"][0]["name"] == "listed"
    assert listed["meta"] == {"max": 100, "idleSeconds": 1800.0}
    assert (await client.get(f"/_emulator/workspaces/{ws['id']}")).status_code == 200
    r = await client.delete(f"/_emulator/workspaces/{ws['id']}")
    assert r.status_code == 200 and r.json() == {"id": ws["id"], "cancelledExports": []}
    gone = await client.get(f"/w/{ws['id']}/v1/contacts", headers=ALL)
    assert gone.status_code == 404
    assert gone.json()["status"] == "error"
    gone_crm = await client.get(f"/w/{ws['id']}/crm/contacts", headers=CRM_KEY)
    assert gone_crm.status_code == 404 and gone_crm.json()["error"] == "not_found"
    again = await client.delete(f"/_emulator/workspaces/{ws['id']}")
    assert again.status_code == 404 and again.json()["status"] == "error"


async def test_the_cap_answers_409_in_the_control_error_shape() -> None:
    app = create_app(make_settings(maxWorkspaces=2))
    async with open_client(app) as client:
        await new_workspace(client)
        await new_workspace(client)
        r = await client.post("/_emulator/workspaces")
        assert r.status_code == 409
        assert r.json()["status"] == "error" and "--max-workspaces" in r.json()["message"]


async def test_idle_workspaces_expire(app: Starlette) -> None:
    app = create_app(make_settings(workspaceIdle=1.0))
    async with open_client(app) as client:
        kept, dropped = await new_workspace(client), await new_workspace(client)
        # one used all along (a second between two of its requests would expire it: a
        # margin for a loaded machine), the other idle past the expiry
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            await client.get(f"/w/{kept['id']}/_emulator/health")
            await asyncio.sleep(0.05)
        await client.get(f"/w/{kept['id']}/_emulator/health")
        await app.state.workspaces.expire()
        ids = [w["id"] for w in (await client.get("/_emulator/workspaces")).json()["data"]]
        assert ids == [kept["id"]]
        assert (await client.get(f"/w/{dropped['id']}/_emulator/health")).status_code == 404


async def test_bad_fixtures_are_a_400(client: httpx.AsyncClient) -> None:
    r = await client.post("/_emulator/workspaces", json={"fixtures": "/etc"})
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == "fixtures"
    r = await client.post("/_emulator/workspaces", json={"fixture": "default"})
    assert r.status_code == 400
    ok = await new_workspace(client, fixtures="default")
    assert ok["fixtures"].endswith("fixtures/default")


async def test_removing_a_workspace_cancels_its_export(client: httpx.AsyncClient) -> None:
    ws = await new_workspace(client)
    p = f"/w/{ws['id']}"
    rule = {"endpoint": "*", "latencyMs": 30000}
    settings = (await client.get(f"{p}/_emulator/crm/settings")).json()
    settings["faults"] = [rule]
    r = await client.put(f"{p}/_emulator/crm/settings", json=settings)
    assert r.status_code == 200, r.text
    started = await client.post(f"{p}/_emulator/exports")
    assert started.status_code == 202, started.text
    assert started.headers["location"] == f"{p}/_emulator/exports/{started.json()['id']}"
    assert started.json()["crmUrl"].endswith(f"{p}/crm")  # its own reference CRM
    r = await client.delete(f"/_emulator/workspaces/{ws['id']}")
    assert r.status_code == 200
    assert r.json()["cancelledExports"] == [started.json()["id"]]


async def test_record_links_open_on_the_port_and_workspace_of_the_request(
    client: httpx.AsyncClient,
) -> None:
    ws = await new_workspace(client)
    found = []
    for prefix in ("", f"/w/{ws['id']}"):
        contacts = (await client.get(f"{prefix}/v1/contacts", headers=ALL)).json()["data"]
        found.append(next(c["contactCRMUrl"] for c in contacts if c["contactCRMUrl"]))
    root, inside = found
    # joined to the address the request came in on (the test client's), never a fixed port
    assert root.startswith("http://emulator.localhost/crm-ui/contacts/")
    assert inside.startswith(f"http://emulator.localhost/w/{ws['id']}/crm-ui/contacts/")
    crm_id = inside.rsplit("/", 1)[1]
    page = await client.get(f"/w/{ws['id']}/crm-ui/contacts/{crm_id}")
    assert page.status_code == 200


async def test_a_configured_link_base_wins() -> None:
    app = create_app(make_settings(linkBase="https://emulator.example.test/"))
    async with open_client(app) as client:
        contacts = (await client.get("/v1/contacts", headers=ALL)).json()["data"]
        url = next(c["contactCRMUrl"] for c in contacts if c["contactCRMUrl"])
        assert url.startswith("https://emulator.example.test/crm-ui/contacts/")


async def test_the_openapi_document_of_a_workspace_names_its_prefix(
    client: httpx.AsyncClient,
) -> None:
    ws = await new_workspace(client)
    inside = (await client.get(f"/w/{ws['id']}/openapi.json")).json()
    assert inside["servers"] == [{"url": f"/w/{ws['id']}"}]
    assert "servers" not in (await client.get("/openapi.json")).json()
    assert "/_emulator/workspaces" in inside["paths"]


async def test_the_crm_key_is_shown_to_a_holder_of_the_control_token_only(
    client: httpx.AsyncClient,
) -> None:
    assert (await new_workspace(client))["crmApiKey"] == "***"  # no token: nobody holds it
    app = create_app(make_settings(controlToken="a-long-control-token"))
    async with open_client(app) as tokened:
        bearer = {"Authorization": "Bearer a-long-control-token"}
        r = await tokened.post("/_emulator/workspaces", headers=bearer)
        assert r.status_code == 201 and r.json()["crmApiKey"] == "crm-demo-key"
        assert (await tokened.post("/_emulator/workspaces")).status_code == 401
        ws = r.json()["id"]
        assert (await tokened.get(f"/w/{ws}/_emulator/health")).status_code == 200  # open
        assert (await tokened.post(f"/w/{ws}/_emulator/reset")).status_code == 401
        assert (await tokened.post(f"/w/{ws}/_emulator/reset", headers=bearer)).status_code == 200


async def test_creations_at_once_respect_the_cap() -> None:
    app = create_app(make_settings(maxWorkspaces=3))
    async with open_client(app) as client:
        answers = await asyncio.gather(*(client.post("/_emulator/workspaces") for _ in range(5)))
        assert sorted(r.status_code for r in answers) == [201, 201, 201, 409, 409]
        ids = {r.json()["id"] for r in answers if r.status_code == 201}
        assert len(ids) == 3


async def test_a_workspace_pages_length_is_never_wrong(client: httpx.AsyncClient) -> None:
    ws = await new_workspace(client)
    got = await client.get(f"/w/{ws['id']}/contacts")
    assert got.headers["content-length"] == str(len(got.content))
    head = await client.head(f"/w/{ws['id']}/contacts")
    assert head.status_code == 200 and head.content == b""
    assert "content-length" not in head.headers  # the unprefixed page's would be wrong
