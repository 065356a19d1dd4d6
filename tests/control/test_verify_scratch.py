"""POST /_emulator/verify {"scratch": true}: the reference CRM verified on a scratch copy, so the
CRM in use keeps exactly what it held; GET /_emulator/verify lists the runs kept."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.anyio

KINDS = ("contacts", "companies", "activities", "tasks", "associations")


async def held(client: httpx.AsyncClient) -> dict[str, int]:
    """How many records of each kind the reference CRM holds."""
    found = {}
    for kind in KINDS:
        answer = await client.get(f"/_emulator/crm/{kind}", params={"pageSize": 1})
        assert answer.status_code == 200, answer.text
        found[kind] = answer.json()["meta"]["total"]
    return found


async def finished(client: httpx.AsyncClient, run_id: str) -> dict[str, Any]:
    for _ in range(1200):
        body: dict[str, Any] = (await client.get(f"/_emulator/verify/{run_id}")).json()
        if body["status"] != "running":
            return body
        await asyncio.sleep(0.025)
    raise AssertionError("verify run did not finish")


async def test_a_scratch_run_leaves_the_crm_as_it_was_where_a_run_in_place_does_not(
    client: httpx.AsyncClient,
) -> None:
    before = await held(client)
    started = await client.post("/_emulator/verify", json={"scratch": True})
    assert started.status_code == 202 and started.json()["scratch"] is True
    done = await finished(client, started.json()["id"])
    assert done["status"] == "pass" and done["report"]["exitCode"] == 0
    assert await held(client) == before
    # the same run in place leaves its probes behind: what the scratch copy is for
    in_place = (await client.post("/_emulator/verify", json={})).json()
    assert in_place["scratch"] is False
    assert (await finished(client, in_place["id"]))["status"] == "pass"
    after = await held(client)
    assert after["contacts"] > before["contacts"] and after["companies"] > before["companies"]


async def test_the_scratch_copy_has_the_reference_crm_settings(client: httpx.AsyncClient) -> None:
    settings = (await client.get("/_emulator/crm/settings")).json()
    changed = {**settings, "apiKey": "scratch-key-0123", "apiKeyHeader": "X-Other-Key"}
    assert (await client.put("/_emulator/crm/settings", json=changed)).status_code == 200
    run = (await client.post("/_emulator/verify", json={"scratch": True})).json()
    # the prober sends the key and header in force; the copy accepts them only if it has them
    assert (await finished(client, run["id"]))["status"] == "pass"
    # its fault rules too: a CRM failing every sync fails verify, on the copy as in place
    # (Retry-After 0: the prober's retries of a 503 then wait nothing, not 1.5 s a call)
    fails = {"endpoint": "POST /contacts/sync", "status": 503, "retryAfterSeconds": 0}
    faulty = {**changed, "faults": [fails]}
    assert (await client.put("/_emulator/crm/settings", json=faulty)).status_code == 200
    run = (await client.post("/_emulator/verify", json={"scratch": True})).json()
    assert (await finished(client, run["id"]))["status"] == "fail"


async def test_scratch_is_for_the_reference_crm_only(client: httpx.AsyncClient) -> None:
    refused = await client.post(
        "/_emulator/verify",
        json={"scratch": True, "crmUrl": "http://127.0.0.1:9/crm", "apiKey": "k"},
    )
    assert refused.status_code == 400
    assert refused.json()["errors"] == [
        {"field": "scratch", "message": "applies only to this emulator's reference CRM (/crm)"}
    ]


async def test_the_runs_are_listed_newest_first_without_their_reports(
    client: httpx.AsyncClient,
) -> None:
    assert (await client.get("/_emulator/verify")).json() == {"data": []}
    first = (await client.post("/_emulator/verify", json={"scratch": True})).json()
    second = (await client.post("/_emulator/verify", json={"scratch": True})).json()
    await finished(client, first["id"])
    await finished(client, second["id"])
    listed = (await client.get("/_emulator/verify")).json()["data"]
    assert [r["id"] for r in listed] == [second["id"], first["id"]]
    assert all(r["status"] == "pass" and r["scratch"] is True and "report" not in r for r in listed)
    assert listed[1]["startedAt"] <= listed[0]["startedAt"]
