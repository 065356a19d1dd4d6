"""The overview's clock buttons in a real Chromium at a phone's width (375 px): an advance runs
in the background with a progress bar, the advance buttons disabled until it ends, then its
result; its Stop button stops it; a page opened meanwhile follows it; a refused start says
why. The fixtures make an advance slow enough to watch: 4,000 members in ACTIVE campaigns,
and a webhook receiver that holds its first delivery until the test lets it answer (the
advance runs until its deliveries are made)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from emulator.app import create_app
from tests.conftest import make_settings
from tests.dashboard.browser import Watched, browser_or_skip
from tests.servers import serve_app
from tests.simulation.sim_helpers import small_fixtures

THIRTY_DAYS = 30 * 86400
ADVANCE_BUTTONS = "form[data-follow=advance] button"


class Receiver:
    """A webhook receiver that, while `held`, answers nothing until it is let go."""

    def __init__(self) -> None:
        self.go = threading.Event()
        self.go.set()
        self.waiting = threading.Event()  # a delivery is being held

    async def receive(self, request: Request) -> Response:
        await request.body()
        while not self.go.is_set():
            self.waiting.set()
            await asyncio.sleep(0.02)
        return Response(status_code=204)


@pytest.fixture(scope="module")
def receiver() -> Iterator[tuple[Receiver, str]]:
    hooks = Receiver()
    app = Starlette(routes=[Route("/hooks", hooks.receive, methods=["POST"])])
    with serve_app(app, lifespan="off") as url:
        yield hooks, url


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, receiver: tuple[Receiver, str]
) -> Iterator[str]:
    browser_or_skip()
    fixtures = small_fixtures(tmp_path_factory.mktemp("slow") / "fx", contacts=4000)
    # one subscription, to a rare event type: a few hundred quick deliveries once let go
    hook = {
        "id": 1,
        "name": "Network messages",
        "url": f"{receiver[1]}/hooks",
        "secret": "whsec-progress-test",
        "events": ["NETWORK_MESSAGE_SENT"],
        "campaignIds": [],
        "customFields": [],
        "enabled": True,
        "createdAt": "2026-01-01T00:00:00.000Z",
        "updatedAt": "2026-01-01T00:00:00.000Z",
    }
    (fixtures / "webhooks.json").write_text(json.dumps([hook]))
    with serve_app(create_app(make_settings(fixtures=str(fixtures))), timeout=60) as url:
        yield url


@pytest.fixture
def api(server: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server, timeout=60) as client:
        assert client.post("/_emulator/reset").status_code == 200  # each test from the start
        yield client


def phone(page: Watched) -> None:
    page.page.set_viewport_size({"width": 375, "height": 740})
    page.goto("/")


def sample(page: Watched) -> dict[str, Any]:
    """What the clock card shows now."""
    return dict(
        page.page.evaluate(
            """() => {
            const box = document.getElementById("advance-progress");
            const bar = document.getElementById("advance-bar").getBoundingClientRect();
            return {
              visible: !box.hidden,
              value: document.getElementById("advance-bar").value,
              text: document.getElementById("advance-text").textContent,
              disabled: [...document.querySelectorAll("form[data-follow=advance] button")]
                .map((b) => b.disabled),
              barInside: bar.left >= 0 && bar.right <= window.innerWidth,
              pageFits: document.scrollingElement.scrollWidth <= window.innerWidth,
            };
        }"""
        )
    )


def watch_until_reloaded(page: Watched) -> list[dict[str, Any]]:
    """Samples of the clock card every 20 ms until the page reloads (the advance ended)."""
    seen: list[dict[str, Any]] = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            state = sample(page)
        except Exception:  # the page is reloading under the evaluate: the advance ended
            break
        if state["visible"]:
            seen.append(state)
        elif seen:  # hidden again after being shown: reloaded
            break
        page.page.wait_for_timeout(20)
    page.page.wait_for_selector("#clock-result.ok, #clock-result.error", timeout=60_000)
    return seen


def test_an_advance_shows_a_progress_bar_with_its_buttons_disabled_then_its_result(
    page: Watched, api: httpx.Client
) -> None:
    phone(page)
    before = page.page.inner_text("#clock-now")
    events = int(page.page.inner_text("[data-count=events]"))
    assert not page.page.is_visible("#advance-progress")
    page.page.click(f"#advance-{THIRTY_DAYS}")
    seen = watch_until_reloaded(page)
    assert seen, "the progress bar never showed"
    assert all(all(s["disabled"]) for s in seen), seen  # every advance button, all along
    assert all(s["barInside"] and s["pageFits"] for s in seen), seen
    followed = [s for s in seen if "events so far" in s["text"]]
    assert followed, seen
    # the bar moved with the simulated time (a chunk is at most a week: 30 days are 5)
    assert any(0 < s["value"] < 100 for s in followed), followed
    values = [s["value"] for s in followed]
    assert values == sorted(values)
    # the result, next to the buttons, once the page is back with the new clock and counts
    result = page.page.inner_text("#clock-result")
    assert result.startswith("advanced +30 days:") and "events, now" in result
    after = page.page.inner_text("#clock-now")
    assert datetime.fromisoformat(after) - datetime.fromisoformat(before) == timedelta(days=30)
    assert int(page.page.inner_text("[data-count=events]")) > events
    assert not page.page.is_visible("#advance-progress")
    assert not any(sample(page)["disabled"])
    (last,) = api.get("/_emulator/clock/advances").json()["data"][:1]
    assert last["status"] == "done" and f"{last['result']['events']} events" in result


def test_the_stop_button_stops_the_advance_where_it_got(page: Watched, api: httpx.Client) -> None:
    phone(page)
    page.page.click(f"#advance-{THIRTY_DAYS}")
    page.page.wait_for_function(
        "document.getElementById('advance-text').textContent.includes('events so far')",
        timeout=60_000,
    )
    state = sample(page)
    assert state["visible"] and all(state["disabled"]) and state["value"] < 100, state
    page.page.click("#advance-stop")
    page.page.wait_for_selector("#clock-result.ok", timeout=60_000)
    assert page.page.inner_text("#clock-result").startswith("advance stopped: stopped at")
    (run,) = api.get("/_emulator/clock/advances").json()["data"][:1]
    assert run["status"] == "cancelled" and run["reached"] < run["target"]
    assert page.page.inner_text("#clock-now") == run["reached"]
    assert not page.page.is_visible("#advance-progress") and not any(sample(page)["disabled"])


def test_a_page_opened_during_an_advance_follows_it_to_its_end(
    page: Watched, api: httpx.Client, receiver: tuple[Receiver, str]
) -> None:
    hooks, _ = receiver
    hooks.go.clear()
    hooks.waiting.clear()
    try:
        started = api.post("/_emulator/clock/advances", json={"seconds": THIRTY_DAYS})
        assert started.status_code == 202
        assert hooks.waiting.wait(120), "no delivery reached the receiver"
        phone(page)  # the advance is delivering its webhooks: it runs, at 100 % of its time
        page.page.wait_for_function("document.getElementById('advance-text').textContent !== ''")
        state = sample(page)
        assert state["visible"] and all(state["disabled"]) and state["value"] == 100, state
        assert "events so far" in state["text"]
    finally:
        hooks.go.set()
    page.page.wait_for_selector("#clock-result.ok", timeout=60_000)
    run = api.get(started.headers["location"]).json()
    assert run["status"] == "done"
    assert page.page.inner_text("#clock-result") == (
        f"advanced: {run['result']['events']} events, now {run['result']['now']}"
    )
    assert not any(sample(page)["disabled"])


def test_a_refused_advance_says_why_and_gives_the_buttons_back(
    page: Watched, api: httpx.Client
) -> None:
    phone(page)  # loaded before the advance below starts: the page does not know of it
    started = api.post("/_emulator/clock/advances", json={"seconds": THIRTY_DAYS})
    assert started.status_code == 202
    page.page.click("#advance-3600")
    page.page.wait_for_selector("#clock-result.error")
    message = page.page.inner_text("#clock-result")
    assert message.startswith("409: busy: clock advance") and started.json()["id"] in message
    assert not any(sample(page)["disabled"])
    # the browser logs the refused request itself; nothing else
    assert all("409" in e for e in page.errors), page.errors
    page.errors.clear()
    assert api.delete(started.headers["location"]).status_code == 200
