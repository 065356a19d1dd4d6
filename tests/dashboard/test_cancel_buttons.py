"""The Cancel buttons of a running export's and verify run's pages, in a real Chromium, with a
CRM that answers one byte a second (the runs would otherwise never end)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from emulator.app import create_app
from tests.conftest import make_settings
from tests.dashboard.browser import Watched, browser_or_skip
from tests.servers import serve_app

KEY = "dribble-key-123"


def dribbling_crm() -> Starlette:
    async def drip(request: Request) -> StreamingResponse:
        async def body() -> AsyncIterator[bytes]:
            while True:
                yield b" "
                await asyncio.sleep(1)

        return StreamingResponse(body(), media_type="application/json")

    methods = ["GET", "POST", "PUT", "PATCH"]
    return Starlette(routes=[Route("/{path:path}", drip, methods=methods)])


@pytest.fixture(scope="module")
def crm() -> Iterator[str]:
    with serve_app(dribbling_crm(), lifespan="off") as url:
        yield url


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    browser_or_skip()
    with serve_app(create_app(make_settings())) as url:
        yield url


def test_the_export_page_cancels_a_running_export(page: Watched, server: str, crm: str) -> None:
    with httpx.Client(base_url=server, timeout=30) as api:
        conn = {"crmUrl": crm, "apiKey": KEY, "retries": 0}
        assert api.put("/_emulator/connection", json=conn).status_code == 200
        export_id = api.post("/_emulator/exports").json()["id"]
        page.goto(f"/runs/exports/{export_id}")
        assert page.page.locator("#export-status").inner_text() == "running"
        page.page.click("#cancel-export button")
        page.page.wait_for_function(
            "document.getElementById('export-status')?.textContent === 'cancelled'"
        )
        assert "cancelled" in page.page.locator("#export-result").inner_text()
        report = api.get(f"/_emulator/exports/{export_id}").json()
        assert (report["status"], report["exitCode"]) == ("cancelled", 2)
        assert page.page.locator("#cancel-export").count() == 0  # not offered once it ended


def test_the_verify_page_cancels_a_running_verify_run(page: Watched, server: str, crm: str) -> None:
    with httpx.Client(base_url=server, timeout=30) as api:
        started = api.post("/_emulator/verify", json={"crmUrl": crm, "apiKey": KEY})
        run_id = started.json()["id"]
        page.goto(f"/runs/verify/{run_id}")
        button = page.page.locator("#cancel-verify button")
        button.wait_for(state="visible")
        button.click()
        page.page.wait_for_function(
            "document.getElementById('verify-status')?.textContent === 'cancelled'"
        )
        assert api.get(f"/_emulator/verify/{run_id}").json()["status"] == "cancelled"
        assert page.page.locator("#cancel-verify").is_hidden()
        frame = page.page.frame_locator("#report-frame")
        assert "CANCELLED" in frame.locator("body").inner_text()
