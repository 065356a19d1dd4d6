"""The Requests and Faults pages in a real headless Chromium against a real `emulator serve`."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from emulator.testing import EmulatorServer
from tests.dashboard.browser import Watched, browser_or_skip

ALL = {"x-api-key": "demo-all"}


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    browser_or_skip()
    emulator = EmulatorServer.start([])
    try:
        yield emulator.url
    finally:
        emulator.stop()


@pytest.fixture(autouse=True)
def fresh(server: str) -> None:
    httpx.post(f"{server}/_emulator/reset").raise_for_status()


def test_requests_page_lists_calls_filters_and_marks_faults(page: Watched, server: str) -> None:
    fault = httpx.post(
        f"{server}/_emulator/v1-faults",
        json={"route": "/v1/contact/{contactId}", "status": 503, "times": 1},
    ).json()
    assert httpx.get(f"{server}/v1/contact/1", headers=ALL).status_code == 503
    assert httpx.get(f"{server}/v1/contact/2", headers=ALL).status_code == 200
    assert httpx.get(f"{server}/v1/contacts", headers=ALL).status_code == 200
    page.goto("/requests")
    rows = page.page.locator("table.requests tbody tr")
    assert rows.count() == 3
    newest, middle, oldest = (rows.nth(i).inner_text() for i in range(3))
    assert "GET /v1/contacts" in newest and "Demo: every scope" in newest
    assert "/v1/contact/2" in middle and "200" in middle
    assert "/v1/contact/1" in oldest and "503" in oldest and "status 503" in oldest
    marked = rows.nth(2).locator(".badge")
    assert marked.get_attribute("title") == f"fault {fault['id']}"
    # the same filters as the API: a route from the form
    page.page.fill("input[name=route]", "/v1/contact/{contactId}")
    page.page.click("form.filters button")
    page.page.wait_for_url("**/requests?*")
    assert rows.count() == 2
    page.page.fill("input[name=status]", "503")
    page.page.click("form.filters button")
    page.page.wait_for_url("**status=503*")
    assert rows.count() == 1
    rows.first.locator("summary").click()
    assert "Injected fault: status 503" in rows.first.locator("pre").first.inner_text()
    # a bad filter is the dashboard's error page, naming it
    assert page.goto("/requests?status=abc").status == 400
    assert "status" in page.page.inner_text("main")
    page.errors.clear()  # Chromium logs the 400 document as a failed load


def test_faults_page_lists_faults_with_their_counts(page: Watched, server: str) -> None:
    page.goto("/faults")
    assert "No fault" in page.page.inner_text("table.faults")
    httpx.post(
        f"{server}/_emulator/v1-faults",
        json={"method": "GET", "route": "/v1/contacts", "latencyMs": 10, "times": 5},
    ).raise_for_status()
    httpx.post(
        f"{server}/_emulator/v1-faults", json={"path": "/v1/contact/9", "drop": True}
    ).raise_for_status()
    httpx.get(f"{server}/v1/contacts", headers=ALL).raise_for_status()
    page.goto("/faults")
    rows = page.page.locator("table.faults tbody tr")
    assert rows.count() == 2
    first, second = rows.nth(0).inner_text(), rows.nth(1).inner_text()
    assert "GET /v1/contacts" in first and "latency 10 ms" in first and "first 5" in first
    cells = rows.nth(0).locator("td")
    assert (cells.nth(4).inner_text(), cells.nth(5).inner_text()) == ("1", "1")
    assert "/v1/contact/9" in second and "drop the connection" in second
    page.page.click("text=Requests")
    page.page.wait_for_url("**/requests")
    assert "latency 10 ms" in page.page.inner_text("table.requests")
