"""The CRM's record batches run on the event loop's thread when the store is idle (brief store
calls), not a hop each to the database thread and back; a larger association call hops."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from emulator.crm import service
from emulator.crm.schemas import MAX_BATCH
from tests.conftest import CRM_KEY

pytestmark = pytest.mark.anyio


def noting(
    monkeypatch: pytest.MonkeyPatch, name: str, threads: dict[str, list[threading.Thread]]
) -> None:
    """Note the thread each call of `service.<name>` (a function of the store's thread) runs on."""
    original: Callable[..., Any] = getattr(service, name)

    def noted(conn: sqlite3.Connection, *args: Any) -> Any:
        threads.setdefault(name, []).append(threading.current_thread())
        return original(conn, *args)

    monkeypatch.setattr(service, name, noted)


async def call(client: httpx.AsyncClient, method: str, path: str, body: Any) -> Any:
    response = await client.request(method, f"/crm{path}", json=body, headers=CRM_KEY)
    assert response.status_code in (200, 201), response.text
    return response.json()


def contacts(n: int, tag: str) -> list[dict[str, Any]]:
    return [
        {"externalId": f"{tag}{i}", "email": f"{tag}{i}@brief.example", "firstName": "B"}
        for i in range(n)
    ]


async def test_a_batch_of_the_most_records_runs_on_the_loop(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: dict[str, list[threading.Thread]] = {}
    for name in ("_matches", "insert_records", "update_records", "link"):
        noting(monkeypatch, name, threads)
    items = contacts(MAX_BATCH, "c")
    await call(client, "POST", "/contacts/sync", {"contacts": items})
    created = (await call(client, "POST", "/contacts", {"contacts": items}))["results"]
    assert len(created) == MAX_BATCH
    updates = [{"crmId": c["crmId"], "jobTitle": "Brief"} for c in created]
    await call(client, "PUT", "/contacts", {"contacts": updates})
    company = (await call(client, "POST", "/companies", {"companies": [{"externalId": "k"}]}))[
        "results"
    ][0]["crmId"]
    pairs = [{"contactCRMId": c["crmId"], "companyCRMId": company} for c in created]
    assert (await call(client, "POST", "/associations", {"associations": pairs}))[
        "created"
    ] == MAX_BATCH
    loop = threading.current_thread()
    assert set(threads) == {"_matches", "insert_records", "update_records", "link"}
    assert {t for noted in threads.values() for t in noted} == {loop}


async def test_more_links_than_a_batch_go_to_the_database_thread(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An association call has no cap: past MAX_BATCH links it does not hold the loop."""
    items = contacts(MAX_BATCH, "d")
    created = (await call(client, "POST", "/contacts", {"contacts": items}))["results"]
    company = (await call(client, "POST", "/companies", {"companies": [{"externalId": "m"}]}))[
        "results"
    ][0]["crmId"]
    pairs = [{"contactCRMId": c["crmId"], "companyCRMId": company} for c in created]
    pairs.append({"contactCRMId": "crm-ct-none", "companyCRMId": company})
    threads: dict[str, list[threading.Thread]] = {}
    noting(monkeypatch, "link", threads)
    out = await call(client, "POST", "/associations", {"associations": pairs})
    assert out["created"] == MAX_BATCH and len(out["errors"]) == 1
    assert len(threads["link"]) == 1
    assert threads["link"][0] is not threading.current_thread()
