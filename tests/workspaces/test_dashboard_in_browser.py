"""A workspace's dashboard in real Chromium: its links, buttons and API docs stay in it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest

from emulator.testing import EmulatorServer
from tests.dashboard.browser import Watched, browser_or_skip, chromium, watch


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    browser_or_skip()
    emulator = EmulatorServer.start([])
    try:
        yield emulator.url
    finally:
        emulator.stop()


@pytest.fixture(scope="module")
def browser(server: str) -> Iterator[Any]:
    with chromium(browser_or_skip()) as b:
        yield b


@pytest.fixture
def page(browser: Any, server: str) -> Iterator[Watched]:
    watched = watch(browser, server)
    yield watched
    watched.page.close()
    watched.assert_clean()


@pytest.fixture
def workspace(server: str) -> Iterator[str]:
    created = httpx.post(f"{server}/_emulator/workspaces").raise_for_status().json()
    yield f"/w/{created['id']}"
    httpx.delete(f"{server}/_emulator/workspaces/{created['id']}")


def test_the_buttons_and_links_of_a_workspace_dashboard_act_on_it(
    page: Watched, server: str, workspace: str
) -> None:
    root_now = httpx.get(f"{server}/_emulator/health").json()["now"]
    page.goto(f"{workspace}/")
    before = page.page.inner_text("#clock-now")
    page.page.click("#advance-86400")
    page.page.wait_for_function(
        "before => document.querySelector('#clock-now').textContent !== before", arg=before
    )
    after = page.page.inner_text("#clock-now")
    assert datetime.fromisoformat(after) - datetime.fromisoformat(before) == timedelta(days=1)
    inside = httpx.get(f"{server}{workspace}/_emulator/health").json()["now"]
    assert datetime.fromisoformat(inside) == datetime.fromisoformat(after)
    assert httpx.get(f"{server}/_emulator/health").json()["now"] == root_now  # not the root's
    page.page.click("a[href$='/contacts']")
    page.page.wait_for_url(re.compile(re.escape(workspace) + r"/contacts$"))
    page.page.locator("table a[href*='/contacts/']").first.click()
    page.page.wait_for_url(re.compile(re.escape(workspace) + r"/contacts/\d+$"))


def test_the_api_docs_of_a_workspace_try_its_own_paths(page: Watched, workspace: str) -> None:
    page.try_in_api_docs(f"{workspace}/docs", "/_emulator/health")
    url = page.page.locator(".opblock.is-open .request-url pre").first
    url.wait_for()
    assert f"{workspace}/_emulator/health" in url.inner_text()
