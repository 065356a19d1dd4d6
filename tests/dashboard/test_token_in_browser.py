"""The dashboard of an `emulator serve --control-token` in a real Chromium: it asks for the
token once, keeps it in an HttpOnly, SameSite=Strict cookie, every action works, and a wrong
token says so."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from emulator.asgi_guards import COOKIE
from emulator.testing import EmulatorServer
from tests.dashboard.browser import browser_or_skip

TOKEN = "dashboard-s3cret"


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    browser_or_skip()
    server = EmulatorServer.start(["--no-seed-cache"], token=TOKEN)
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture
def page(browser: Any, server: str) -> Iterator[Any]:
    """A page in a context of its own (its own cookies); fails the test on a script error."""
    context = browser.new_context(base_url=server, viewport={"width": 1366, "height": 768})
    page = context.new_page()
    page.set_default_timeout(30_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("dialog", lambda dialog: dialog.accept())  # the reset button asks first
    yield page
    context.close()
    assert errors == []


def clock(server: str) -> str:
    headers = {"authorization": f"Bearer {TOKEN}"}
    return str(httpx.get(f"{server}/_emulator/clock", headers=headers, timeout=30).json()["now"])


def enter(page: Any, token: str) -> None:
    page.fill("#token-banner input[name=token]", token)
    page.click("#token-banner button[type=submit]")
    page.wait_for_load_state("load")


def flash(page: Any) -> str:
    """The answer to a clock button, shown next to the buttons once it is no longer busy."""
    page.wait_for_selector("#clock-result.ok, #clock-result.error")
    return str(page.inner_text("#clock-result"))


def test_without_the_token_actions_say_401_and_the_page_asks_for_it(page: Any, server: str) -> None:
    before = clock(server)
    page.goto("/")
    assert page.is_visible("#token-banner")
    page.click("#advance-3600")
    assert flash(page).startswith("401") and "/control-token" in flash(page)
    assert clock(server) == before


def test_a_wrong_token_says_so(page: Any, server: str) -> None:
    page.goto("/runs")
    enter(page, "not-the-token")
    assert page.is_visible("#token-wrong") and "Wrong token" in page.inner_text("#token-wrong")
    assert COOKIE not in {c["name"] for c in page.context.cookies()}


def test_the_token_is_asked_once_and_every_action_works(page: Any, server: str) -> None:
    page.goto("/runs")
    enter(page, TOKEN)
    assert page.url.endswith("/runs")  # back where the token was asked
    assert not page.is_visible("#token-banner")
    (cookie,) = [c for c in page.context.cookies() if c["name"] == COOKIE]
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and TOKEN not in cookie["value"]
    assert page.evaluate("document.cookie") == ""  # no script of the page can read it

    page.goto("/")
    before = clock(server)
    page.click("#advance-3600")
    assert flash(page).startswith("advanced")
    assert clock(server) != before
    page.click("#check-health")  # a form POST
    page.wait_for_selector("#health-now")
    assert "ok" in (page.get_attribute("#health-now", "class") or "")
    with page.expect_navigation():  # the reset's answer reloads the page: wait for it, so
        page.click("text=Reset")  # that reload cannot interrupt the next goto
    assert clock(server) == before

    page.goto("/runs")
    page.click("#start-export")
    page.wait_for_url("**/runs/exports/*")
    page.wait_for_function(
        "() => !['running', '…', undefined].includes("
        "document.getElementById('export-status')?.textContent)"
    )
    assert page.inner_text("#export-status") == "ok"

    page.goto("/runs")
    page.click("#start-verify")
    page.wait_for_url("**/runs/verify/*")
    page.wait_for_function(
        "() => !['running', '…', undefined].includes("
        "document.getElementById('verify-status')?.textContent)",
        timeout=120_000,
    )
    assert page.inner_text("#verify-status") == "pass"  # followed with the cookie's token

    page.goto("/scenarios")  # an ordinary form POST: the cookie goes with it
    page.fill("input[name=path]", "no-such-scenario.json")
    page.click("text=Run this path")
    page.wait_for_selector("#scenario-error")  # the page's own answer, not the token's 401
