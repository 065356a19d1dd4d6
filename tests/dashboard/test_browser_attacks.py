"""What a web page can do to an emulator on loopback, tried in a real Chromium against a real
`emulator serve` without a control token (the default): nothing.

- A page on another origin sends `no-cors` POSTs with `text/plain` JSON (no preflight) and an
  auto-submitted form: before, they advanced the clock a week, planted a snapshot, started an
  export and a verify run against a URL the page chose.
- A page on a name that rebinds to 127.0.0.1 (Chromium's --host-resolver-rules stands in for
  the attacker's DNS) makes same-origin requests: before, it read /v1 and wrote snapshots.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from emulator.testing import EmulatorServer
from tests.dashboard.browser import LAUNCH_FLAGS, browser_or_skip
from tests.servers import serve_app

REBIND = "rebind.test"


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    browser_or_skip()
    server = EmulatorServer.start(["--no-seed-cache"])
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="module")
def browser(server: str) -> Iterator[Any]:
    """Chromium resolving rebind.test to 127.0.0.1, as a rebinding DNS answer would."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        b = playwright.chromium.launch(
            executable_path=browser_or_skip(),
            args=[*LAUNCH_FLAGS, f"--host-resolver-rules=MAP {REBIND} 127.0.0.1"],
        )
        try:
            yield b
        finally:
            b.close()


def attacker_page(emulator: str, crm_calls: list[str]) -> Starlette:
    """The attacker's site: a page that tries every write it can without CORS, and a fake CRM
    that counts the calls a verify run started by the page would make."""
    attempts = [
        ("/_emulator/clock/advance", {"seconds": 604800}),
        ("/_emulator/snapshots", {"label": "planted"}),
        ("/_emulator/exports", None),
        ("/_emulator/verify", {"crmUrl": "ATTACKER/crm", "apiKey": "k"}),
        ("/_emulator/crm/settings", None),
    ]

    async def page(request: Request) -> Response:
        own = str(request.base_url).rstrip("/")
        script = f"""
        const E = {json.dumps(emulator)};
        const attempts = {json.dumps(attempts).replace("ATTACKER", own)};
        (async () => {{
          for (const [path, body] of attempts) {{
            try {{
              await fetch(E + path, {{method: "POST", mode: "no-cors",
                headers: {{"content-type": "text/plain"}},
                body: body === null ? "" : JSON.stringify(body)}});
            }} catch (e) {{}}
            try {{  // with a JSON type the browser must ask first (a preflight): it fails
              await fetch(E + path, {{method: "POST", headers: {{"content-type": "application/json"}},
                body: JSON.stringify(body || {{}})}});
            }} catch (e) {{}}
          }}
          navigator.sendBeacon(E + "/_emulator/reset", "{{}}");
          document.getElementById("form").submit();  // the dashboard's health check, a form POST
          document.title = "sent";
        }})();
        """
        return HTMLResponse(
            f'<form id="form" method="post" action="{emulator}/" target="sink"></form>'
            f'<iframe name="sink"></iframe><script>{script}</script>'
        )

    async def crm(request: Request) -> Response:
        crm_calls.append(request.url.path)
        return JSONResponse({"status": "ok"})

    return Starlette(
        routes=[
            Route("/", page),
            Route("/crm/{path:path}", crm, methods=["GET", "POST", "PUT", "PATCH", "DELETE"]),
        ]
    )


def state(server: str) -> dict[str, Any]:
    with httpx.Client(base_url=server, timeout=30) as c:
        return {
            "now": c.get("/_emulator/clock").json()["now"],
            "snapshots": c.get("/_emulator/snapshots").json()["data"],
            "journal": c.get("/_emulator/journal").json().get("total"),
        }


def test_a_page_on_another_origin_cannot_drive_the_emulator(browser: Any, server: str) -> None:
    before = state(server)
    crm_calls: list[str] = []
    with serve_app(attacker_page(server, crm_calls), lifespan="off") as attacker:
        page = browser.new_page()
        try:
            answers: list[tuple[str, int]] = []
            page.on(
                "response",
                lambda r: (
                    answers.append((r.request.method + " " + r.url, r.status))
                    if r.url.startswith(server)
                    else None
                ),
            )
            page.goto(attacker)
            page.wait_for_function("document.title === 'sent'")
            page.wait_for_timeout(1000)  # the beacon and the form post, which nobody awaits
        finally:
            page.close()
    assert state(server) == before
    assert crm_calls == []  # no verify run reached the URL the page chose
    refused = {status for _, status in answers}
    assert refused and refused <= {403, 405}, answers  # 405: a preflight (OPTIONS) refused


def test_a_rebinding_name_reaches_nothing(browser: Any, server: str) -> None:
    before = state(server)
    port = server.rsplit(":", 1)[1]
    page = browser.new_page()
    try:
        response = page.goto(f"http://{REBIND}:{port}/")
        assert response is not None and response.status == 421
        assert "DNS rebinding" in page.content()
        statuses = page.evaluate(
            """async () => [
              (await fetch("/v1/contacts", {headers: {"x-api-key": "demo-all"}})).status,
              (await fetch("/_emulator/journal")).status,
              (await fetch("/_emulator/snapshots", {method: "POST",
                 headers: {"content-type": "application/json"}, body: "{}"})).status,
              (await fetch("/_emulator/crm/settings", {method: "PUT",
                 headers: {"content-type": "application/json"}, body: "{}"})).status,
            ]"""
        )
        assert statuses == [421, 421, 421, 421]
    finally:
        page.close()
    assert state(server) == before
    # the same server under its own name still answers the browser
    page = browser.new_page()
    try:
        assert page.goto(f"{server}/").status == 200
    finally:
        page.close()
