"""GET /_emulator/journal as JSON Lines (same filters as the JSON pages) and the journal's cap."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from emulator.app import create_app
from emulator.cli import build_parser
from emulator.control.exports import JSONL_CHUNK
from tests.conftest import make_settings
from tests.servers import serve_app

pytestmark = pytest.mark.anyio

PATHS = ("/health", "/contacts/sync", "/contacts", "/companies/sync")


async def fill_journal(app: Starlette, n: int) -> None:
    """n exchanges of two exports, as the exporter's Journal stores them."""
    rows = [
        (
            f"exp{i % 2}",
            f"2026-01-01T00:00:{i % 60:02d}.000Z",
            "POST" if i % 4 else "GET",
            PATHS[i % 4],
            200 if i % 5 else 500,
            1.5,
            1,
            '{"a":1}',
            '{"b":"é"}',
            None,
        )
        for i in range(n)
    ]
    await app.state.services.emulator.db.executemany(
        "INSERT INTO export_journal(exportId, at, method, path, status, durationMs, attempt,"
        " requestBody, responseBody, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )


def lines(r: httpx.Response) -> list[dict[str, Any]]:
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/x-ndjson")
    assert r.text == "" or r.text.endswith("\n")
    return [json.loads(line) for line in r.text.splitlines()]


async def test_jsonl_streams_every_entry_in_chunks(
    client: httpx.AsyncClient, app: Starlette
) -> None:
    n = JSONL_CHUNK * 2 + 7
    await fill_journal(app, n)
    entries = lines(await client.get("/_emulator/journal.jsonl"))
    assert len(entries) == n and [e["id"] for e in entries] == sorted(e["id"] for e in entries)
    page = (await client.get("/_emulator/journal", params={"pageSize": 3})).json()
    assert entries[:3] == page["data"]  # the same entries, the same shape
    assert entries[0]["responseBody"] == '{"b":"é"}'


@pytest.mark.parametrize(
    "filters",
    [
        {"method": "get"},
        {"path": "/contacts"},
        {"exportId": "exp1"},
        {"method": "POST", "path": "/companies", "exportId": "exp1"},
        {"path": "/nothing"},
    ],
)
async def test_jsonl_applies_the_json_filters(
    client: httpx.AsyncClient, app: Starlette, filters: dict[str, str]
) -> None:
    await fill_journal(app, 40)
    page = (await client.get("/_emulator/journal", params={**filters, "pageSize": 500})).json()
    assert lines(await client.get("/_emulator/journal.jsonl", params=filters)) == page["data"]
    by_format = await client.get("/_emulator/journal", params={**filters, "format": "jsonl"})
    assert lines(by_format) == page["data"]


async def test_bad_journal_queries_are_400(client: httpx.AsyncClient) -> None:
    for params in ({"format": "xml"}, {"pageSize": "0"}, {"page": "x"}):
        r = await client.get("/_emulator/journal", params=params)
        assert r.status_code == 400 and r.json()["status"] == "error", params
    assert lines(await client.get("/_emulator/journal.jsonl")) == []


async def test_the_journal_keeps_the_newest_entries_up_to_its_size() -> None:
    with serve_app(create_app(make_settings(journalLimit=5))) as base:
        async with httpx.AsyncClient(base_url=f"{base}/_emulator") as client:
            r = await client.put("/connection", json={"crmUrl": "/crm", "apiKey": "crm-demo-key"})
            assert r.status_code == 200, r.text
            export_id = (await client.post("/exports")).json()["id"]
            for _ in range(200):
                report = (await client.get(f"/exports/{export_id}")).json()
                if report["status"] != "running":
                    break
                await asyncio.sleep(0.05)
            assert report["status"] == "ok", report
            requests = sum(p["requests"] for p in report["phases"].values())
            assert requests > 5
            kept = lines(await client.get("/journal.jsonl"))
            assert len(kept) == 5
            assert kept[-1]["id"] - kept[0]["id"] == 4  # the last five: the oldest were dropped


def test_journal_size_flag() -> None:
    parser = build_parser()
    assert parser.parse_args(["serve"]).journal_size == 100_000
    assert parser.parse_args(["serve", "--journal-size", "7"]).journal_size == 7
    for bad in ("0", "-3", "many"):
        with pytest.raises(SystemExit):
            parser.parse_args(["serve", "--journal-size", bad])
