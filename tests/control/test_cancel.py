"""Cancelling exports and verify runs (DELETE), and a reset that a hanging CRM cannot block,
against a real `emulator serve` and a CRM that answers one byte a second."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.processes import emulator_process
from tests.raw_http import Server, raw_server, read_request

pytestmark = pytest.mark.anyio

CRM_KEY = "dribble-crm-key-1234"


async def dribble(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, s: Server) -> None:
    """Read a request, then answer a promised 100 000-byte body one byte a second."""
    request = await read_request(reader)
    if request is None:
        return
    s.requests.append(request)
    writer.write(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
    )
    try:
        while True:
            writer.write(b" ")
            await writer.drain()
            await asyncio.sleep(1)
    except (ConnectionError, asyncio.CancelledError):  # the client left, or the test ended
        return


async def until(client: httpx.AsyncClient, path: str, done: Any, timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        body = (await client.get(path)).json()
        if done(body):
            return body
        assert time.monotonic() < deadline, f"{path} still {body.get('status')}"
        await asyncio.sleep(0.1)


async def hanging_export(client: httpx.AsyncClient, crm_url: str, s: Server) -> str:
    """An export started against the dribbling CRM, once the CRM holds its first request."""
    conn = {"crmUrl": crm_url, "apiKey": CRM_KEY, "timeoutSeconds": 10, "retries": 0}
    assert (await client.put("/_emulator/connection", json=conn)).status_code == 200
    started = await client.post("/_emulator/exports")
    assert started.status_code == 202, started.text
    deadline = time.monotonic() + 10
    while not s.requests:
        assert time.monotonic() < deadline, "the export never reached the CRM"
        await asyncio.sleep(0.05)
    return str(started.json()["id"])


@pytest.fixture
async def served() -> AsyncIterator[httpx.AsyncClient]:
    with emulator_process() as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            yield client


async def test_reset_cancels_an_export_hanging_on_a_dribbling_crm(
    served: httpx.AsyncClient,
) -> None:
    async with raw_server(dribble) as (crm_url, s):
        export_id = await hanging_export(served, crm_url, s)
        await asyncio.sleep(1.5)  # a few bytes in: the read timeout never fires
        assert (await served.get(f"/_emulator/exports/{export_id}")).json()["status"] == "running"
        t0 = time.monotonic()
        reset = await served.post("/_emulator/reset")
        took = time.monotonic() - t0
        assert reset.status_code == 200, reset.text
        assert took < 8, f"reset took {took:.1f} s"
        assert reset.json()["cancelled"] == {
            "exports": [export_id],
            "verifyRuns": [],
            "advances": [],
        }
        report = (await served.get(f"/_emulator/exports/{export_id}")).json()
        assert (report["status"], report["exitCode"]) == ("cancelled", 2)
        assert "reset" in report["message"]
        # nothing was exported: every record the run never reached is counted as not exported
        companies = report["phases"]["companies"]
        assert companies["created"] == companies["updated"] == 0
        assert companies["failed"] > 0
        # the state was reset: a second reset has nothing to cancel
        again = await served.post("/_emulator/reset")
        assert again.json()["cancelled"] == {"exports": [], "verifyRuns": [], "advances": []}


async def test_delete_cancels_an_export(served: httpx.AsyncClient) -> None:
    async with raw_server(dribble) as (crm_url, s):
        export_id = await hanging_export(served, crm_url, s)
        t0 = time.monotonic()
        cancelled = await served.delete(f"/_emulator/exports/{export_id}")
        assert time.monotonic() - t0 < 6
        assert cancelled.status_code == 200, cancelled.text
        body = cancelled.json()
        assert (body["status"], body["exitCode"]) == ("cancelled", 2)
        assert f"DELETE /_emulator/exports/{export_id}" in body["message"]
        assert body["finishedAt"]
        # idempotent for a cancelled run; the state is free again
        assert (await served.delete(f"/_emulator/exports/{export_id}")).json() == body
        assert (await served.post("/_emulator/reset")).status_code == 200
    assert (await served.delete("/_emulator/exports/nope")).status_code == 404
    # an export that finished on its own cannot be cancelled: 409
    conn = {"crmUrl": "/crm", "apiKey": "crm-demo-key"}
    assert (await served.put("/_emulator/connection", json=conn)).status_code == 200
    done_id = (await served.post("/_emulator/exports")).json()["id"]
    report = await until(
        served, f"/_emulator/exports/{done_id}", lambda b: b["status"] != "running", 120
    )
    refused = await served.delete(f"/_emulator/exports/{done_id}")
    assert refused.status_code == 409 and report["status"] in refused.json()["message"]
    assert (await served.get(f"/_emulator/exports/{done_id}")).json()["status"] == report["status"]


async def test_delete_and_reset_cancel_verify_runs(served: httpx.AsyncClient) -> None:
    async with raw_server(dribble) as (crm_url, s):
        body = {"crmUrl": crm_url, "apiKey": CRM_KEY}
        run = (await served.post("/_emulator/verify", json=body)).json()
        while not s.requests:
            await asyncio.sleep(0.05)
        cancelled = await served.delete(f"/_emulator/verify/{run['id']}")
        assert cancelled.status_code == 200, cancelled.text
        view = cancelled.json()
        assert view["status"] == "cancelled" and view["report"]["status"] == "cancelled"
        assert view["report"]["exitCode"] == 2
        assert all(c["outcome"] == "skip" for c in view["report"]["checks"])
        assert "cancelled" in view["report"]["checks"][0]["message"]
        assert (await served.delete(f"/_emulator/verify/{run['id']}")).status_code == 200
        html = await served.get(f"/_emulator/verify/{run['id']}/report.html")
        assert html.status_code == 200 and "CANCELLED" in html.text

        second = (await served.post("/_emulator/verify", json=body)).json()
        await asyncio.sleep(0.5)
        reset = await served.post("/_emulator/reset")
        assert reset.json()["cancelled"] == {
            "exports": [],
            "verifyRuns": [second["id"]],
            "advances": [],
        }
        assert (await served.get(f"/_emulator/verify/{second['id']}")).json()[
            "status"
        ] == "cancelled"
    assert (await served.delete("/_emulator/verify/nope")).status_code == 404
    mine = (await served.post("/_emulator/verify", json={})).json()
    finished = await until(
        served, f"/_emulator/verify/{mine['id']}", lambda b: b["status"] != "running", 120
    )
    refused = await served.delete(f"/_emulator/verify/{mine['id']}")
    assert refused.status_code == 409 and finished["status"] in refused.json()["message"]


async def test_a_cancelled_exports_counts_are_what_it_did(served: httpx.AsyncClient) -> None:
    """Cancelled mid-contacts against a slow reference CRM: every contact is counted once
    (exported, or not exported because of the cancel), and the CRM holds what was counted."""
    slow = {"faults": [{"endpoint": "POST /contacts", "latencyMs": 400}]}
    assert (await served.put("/_emulator/crm/settings", json=slow)).status_code == 200
    conn = {"crmUrl": "/crm", "apiKey": "crm-demo-key", "batchSize": 5}
    assert (await served.put("/_emulator/connection", json=conn)).status_code == 200
    crm_contacts = "/_emulator/crm/contacts?pageSize=1"
    before = (await served.get(crm_contacts)).json()["meta"]["total"]  # the CRM's fixtures
    export_id = (await served.post("/_emulator/exports")).json()["id"]
    report = await until(
        served,
        f"/_emulator/exports/{export_id}",
        lambda b: b["status"] != "running" or b["phases"]["contacts"]["created"] >= 5,
    )
    assert report["status"] == "running", report.get("message")
    cancelled = (await served.delete(f"/_emulator/exports/{export_id}")).json()
    assert cancelled["status"] == "cancelled"
    contacts = cancelled["phases"]["contacts"]
    total = (await served.get("/_emulator/health")).json()["counts"]["contacts"]
    done = contacts["created"] + contacts["updated"] + contacts["unchanged"]
    assert contacts["created"] >= 5 and done < total
    assert done + contacts["failed"] == total
    reasons = [f["reason"] for f in cancelled["failed"] if f["phase"] == "contacts"]
    assert any("not exported" in r and "cancelled" in r for r in reasons), reasons
    made = (await served.get(crm_contacts)).json()["meta"]["total"] - before
    in_flight = 4 * 5  # batches on their way when the cancel came may have reached the CRM
    assert contacts["created"] <= made <= contacts["created"] + in_flight
    # the platform and the report agree: the cancelled run released the state
    assert (await served.post("/_emulator/reset")).json()["cancelled"]["exports"] == []
