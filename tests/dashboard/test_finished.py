"""The dashboard finished (issue 25 item 5), in a real headless Chromium against a served
emulator: every page at 1280 and 375 px (screenshots under build/screenshots/, no horizontal
overflow at 375), answers next to their controls, busy buttons, confirmations, verify runs
listed and never leaving probes in the CRM shown, webhook payloads and headers with the
secret redacted, CRM activities as a table, dates on one line, JSON's true/false/null."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from emulator.app import create_app
from tests.conftest import make_settings
from tests.dashboard.browser import Watched, browser_or_skip
from tests.processes import ROOT
from tests.servers import serve_app

SHOTS = ROOT / "build" / "screenshots"
SECRET = "whsec-browser-secret-0042"
V1 = {"x-api-key": "demo-all"}
CRM_KINDS = ("contacts", "companies", "activities", "tasks", "associations")


@dataclass
class Prepared:
    """What the pages show once the emulator has done a little of everything."""

    export_id: str
    verify_id: str
    webhook_id: int
    crm_contact: str
    activity_id: str


def wait_until_done(api: httpx.Client, path: str) -> dict[str, Any]:
    for _ in range(600):
        body: dict[str, Any] = api.get(path).json()
        if body["status"] != "running":
            return body
        time.sleep(0.1)
    raise AssertionError(f"{path} did not finish")


def crm_counts(api: httpx.Client) -> dict[str, int]:
    return {
        kind: api.get(f"/_emulator/crm/{kind}", params={"pageSize": 1}).json()["meta"]["total"]
        for kind in CRM_KINDS
    }


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    browser_or_skip()
    with serve_app(create_app(make_settings())) as url:
        yield url


@pytest.fixture(scope="module")
def prepared(server: str) -> Prepared:
    """A webhook with a secret that fails (attempts and retries), a few days of simulation, an
    export (CRM records, activities), a verify run on a scratch copy."""
    with httpx.Client(base_url=server, timeout=60) as api:
        hook = {
            "name": "secret hook",
            "url": "http://127.0.0.1:9/hook",
            "events": ["CONNECTION_REQUEST_SENT", "MESSAGE_REPLIED"],
            "secret": SECRET,
        }
        created = api.post("/v1/webhooks", json=hook, headers=V1)
        assert created.status_code == 201, created.text
        api.post("/_emulator/clock/advance", json={"seconds": 3 * 86400}).raise_for_status()
        export = api.post("/_emulator/exports").json()
        assert wait_until_done(api, f"/_emulator/exports/{export['id']}")["status"] == "ok"
        api.post("/_emulator/clock/advance", json={"seconds": 86400}).raise_for_status()
        again = api.post("/_emulator/exports").json()  # the day's messages as activities
        assert wait_until_done(api, f"/_emulator/exports/{again['id']}")["status"] == "ok"
        verify = api.post("/_emulator/verify", json={"scratch": True}).json()
        assert wait_until_done(api, f"/_emulator/verify/{verify['id']}")["status"] == "pass"
        contact = api.get("/_emulator/crm/contacts", params={"pageSize": 1}).json()["data"][0]
        activities = api.get("/_emulator/crm/activities", params={"pageSize": 1}).json()
        assert activities["meta"]["total"] > 0, "the export logged no activity"
        return Prepared(
            export_id=again["id"],
            verify_id=verify["id"],
            webhook_id=created.json()["data"]["id"],
            crm_contact=contact["crmId"],
            activity_id=activities["data"][0]["id"],
        )


def every_page(p: Prepared) -> list[tuple[str, str]]:
    """(screenshot name, path) of every page of the dashboard."""
    paths = {
        "overview": "/",
        "contacts": "/contacts",
        "contact": "/contacts/1",
        "companies": "/companies",
        "company": "/companies/1",
        "crm": "/crm-ui",
        "crm-contacts": "/crm-ui/contacts",
        "crm-contact": f"/crm-ui/contacts/{p.crm_contact}",
        "crm-companies": "/crm-ui/companies",
        "crm-activities": "/crm-ui/activities",
        "crm-activity": f"/crm-ui/activities/{p.activity_id}",
        "crm-tasks": "/crm-ui/tasks",
        "crm-associations": "/crm-ui/associations",
        "journal": "/journal",
        "requests": "/requests",
        "faults": "/faults",
        "runs": "/runs",
        "export-run": f"/runs/exports/{p.export_id}",
        "verify-run": f"/runs/verify/{p.verify_id}",
        "webhooks": "/webhooks",
        "webhook": f"/webhooks/{p.webhook_id}",
        "scenarios": "/scenarios",
        "events": "/events",
        "control-token": "/control-token",
        "api-docs": "/docs",
    }
    return list(paths.items())


def settled(page: Watched, path: str) -> None:
    """Wait for what a page fills in after loading (a verify run's report, Swagger UI)."""
    if path.startswith("/runs/verify/"):
        page.page.wait_for_function(
            "() => !['running', '…'].includes(document.getElementById('verify-status').textContent)"
        )
        page.page.wait_for_selector("#report-frame:visible, #verify-report:visible")
    if path == "/docs":
        page.page.wait_for_selector(".opblock-summary-path")


def test_every_page_at_1280_and_375_px_wide_and_none_overflows_a_phone(
    page: Watched, prepared: Prepared
) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    overflowing = {}
    for width in (1280, 375):
        page.page.set_viewport_size({"width": width, "height": 800})
        for name, path in every_page(prepared):
            assert page.goto(path).status == 200, path
            settled(page, path)
            page.page.screenshot(path=SHOTS / f"{name}-{width}.png", full_page=True)
            if width == 1280:  # no value written in Python's spelling (a company may be
                # called "True Byte": whole cells are compared)
                python = page.page.evaluate(
                    "[...document.querySelectorAll('main td')].map((t) => t.textContent.trim())"
                    ".filter((t) => ['True', 'False', 'None'].includes(t))"
                )
                assert python == [], f"{path} shows {python}"
            scroll = page.page.evaluate("document.documentElement.scrollWidth")
            if width == 375 and scroll > 375:
                overflowing[path] = scroll
    assert overflowing == {}, f"pages wider than the 375 px screen: {overflowing}"


def test_dates_are_never_broken_across_lines(page: Watched, prepared: Prepared) -> None:
    page.page.set_viewport_size({"width": 375, "height": 800})
    for path in (
        "/contacts",
        "/crm-ui/contacts",
        f"/crm-ui/contacts/{prepared.crm_contact}",
        "/crm-ui/activities",
        "/contacts/1",
        "/events",
        "/journal",
    ):
        page.goto(path)
        times = page.page.locator("main time")
        assert times.count() > 0, f"{path} shows no date in a <time>"
        # one line box per date: a date broken across two lines has two
        broken = page.page.evaluate(
            "[...document.querySelectorAll('main time')]"
            ".filter(t => t.getClientRects().length !== 1).map(t => t.textContent)"
        )
        assert broken == [], f"{path}: dates broken across lines: {broken}"
    page.goto("/contacts")  # the updatedAt column: each date whole, as the API writes it
    first = page.page.locator("table.list tbody tr").first.locator("time")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", first.inner_text())


def test_booleans_and_nulls_are_written_as_the_api_writes_them(
    page: Watched, server: str, prepared: Prepared
) -> None:
    for path in (
        "/contacts/1",
        "/companies/1",
        "/crm-ui",
        f"/crm-ui/contacts/{prepared.crm_contact}",
        "/crm-ui/activities",
        "/crm-ui/tasks",
        "/webhooks",
    ):
        page.goto(path)
        cells = [c.strip() for c in page.page.locator("main td").all_inner_texts()]
        assert not {"True", "False", "None"} & set(cells), f"{path} shows Python's spelling"
    page.goto("/contacts/1")
    contact = httpx.get(f"{server}/v1/contact/1", headers=V1).json()["data"]
    rows = dict(
        zip(
            page.page.locator("table.fields > tbody > tr > th").all_inner_texts(),
            page.page.locator("table.fields > tbody > tr > td").all_inner_texts(),
            strict=True,
        )
    )
    written = {
        name: json.dumps(value)
        for name, value in contact.items()
        if value is None or isinstance(value, bool)
    }
    assert written, "the contact has no boolean or null field to compare"
    for name, value in written.items():
        assert rows[name].strip() == value, (name, rows[name], value)


def test_crm_activities_are_a_table_with_each_record_expandable_as_json(
    page: Watched, server: str
) -> None:
    page.page.set_viewport_size({"width": 1280, "height": 800})
    page.goto("/crm-ui/activities")
    headers = page.page.locator("#crm-records thead th").all_inner_texts()
    assert headers[:4] == ["id", "type", "direction", "occurred"]
    rows = page.page.locator("#crm-records tbody tr")
    stored = httpx.get(f"{server}/_emulator/crm/activities", params={"pageSize": 50}).json()
    assert rows.count() == len(stored["data"]) > 0
    first = rows.first
    assert first.locator("td").nth(1).inner_text() == stored["data"][0]["type"]
    assert page.page.locator("#crm-records pre:visible").count() == 0  # JSON folded away
    # a row a line or two high, not a box of raw JSON each: 50 activities fit a few screens
    height = page.page.evaluate("document.documentElement.scrollHeight")
    assert height < 200 + 60 * rows.count(), height
    first.locator("details summary").click()
    shown = json.loads(first.locator("details pre").inner_text())
    assert shown == stored["data"][0]  # the record exactly as the CRM holds it


def test_a_refused_crm_setting_and_bad_json_are_told_next_to_save(page: Watched) -> None:
    page.page.set_viewport_size({"width": 1280, "height": 800})
    page.goto("/crm-ui")
    settings = json.loads(page.page.input_value("textarea[name=json]"))
    save = page.page.locator("#crm-settings button")
    page.page.fill("textarea[name=json]", json.dumps({**settings, "syncBack": "sometimes"}))
    save.click()
    result = page.page.locator("#crm-settings-result")
    page.page.wait_for_selector("#crm-settings-result.error")
    assert result.inner_text() == "400: syncBack: Invalid enum value 'sometimes'"
    near(save, result)
    assert page.page.locator("#flash").is_hidden()  # not at the top of the page
    page.errors.clear()  # the refused PUT is logged by Chromium as a failed load
    bad = '{"syncBack": '
    puts: list[str] = []
    page.page.on("request", lambda r: puts.append(r.url) if r.method == "PUT" else None)
    page.page.fill("textarea[name=json]", bad)
    save.click()
    parse_error = page.page.evaluate(
        "t => { try { JSON.parse(t) } catch (e) { return e.message } }", bad
    )
    page.page.wait_for_function(
        "() => document.getElementById('crm-settings-result').textContent.startsWith('not valid')"
    )
    assert result.inner_text() == f"not valid JSON: {parse_error}"  # said once, by the page
    assert puts == []  # nothing sent
    # the server's answer to a malformed body, as the page words it: said once
    answer = httpx.put(
        f"{page.origin}/_emulator/crm/settings",
        content=b"{x",
        headers={"content-type": "application/json"},
    )
    worded = page.page.evaluate(
        "([s, d]) => problemText(s, d)", [answer.status_code, answer.json()]
    )
    assert worded == f"400: {answer.json()['message']}"


def near(control: Any, result: Any) -> None:
    """`result` is shown beside or just below `control` (not elsewhere on the page)."""
    a, b = control.bounding_box(), result.bounding_box()
    assert a and b
    assert abs(b["y"] - a["y"]) < 3 * a["height"], (a, b)


def held_up(page: Watched, pattern: str) -> list[Any]:
    """Hold every request matching `pattern` until released (to see a page while it waits)."""
    held: list[Any] = []

    def hold(route: Any) -> None:  # Playwright takes Python functions, not builtin methods
        held.append(route)

    page.page.route(pattern, hold)
    return held


def release(page: Watched, held: list[Any], pattern: str) -> None:
    page.page.wait_for_timeout(50)
    for route in held:
        route.continue_()
    page.page.unroute(pattern)


@pytest.mark.parametrize(
    ("path", "button", "pattern", "busy"),
    [
        ("/", "#advance-3600", "**/_emulator/clock/advances", "Advancing the clock"),
        ("/", "#autosync-push button", "**/_emulator/autosync/push", "Pushing to the CRM"),
        ("/", "#check-health", re.compile(r".*/$"), "Checking the CRM's health"),
        ("/runs", "#start-export", "**/_emulator/exports", "Starting the export"),
        ("/runs", "#start-verify", "**/_emulator/verify", "Starting the verify run"),
        ("/scenarios", "#run-scenario", "**/scenarios", "Running…"),
    ],
)
def test_a_long_operation_shows_progress_and_disables_its_button(
    page: Watched, prepared: Prepared, path: str, button: str, pattern: Any, busy: str
) -> None:
    page.page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(path)
    if path == "/scenarios":  # one short scenario, not all of them
        choice = page.page.locator("select[name=path] option", has_text="link-templates.json")
        page.page.select_option("select[name=path]", choice.get_attribute("value"))
    seen: list[dict[str, Any]] = []
    # The page reports what it shows a moment after the click, through a binding: a held
    # form post keeps a navigation pending, which locators and evaluate would wait for.

    def report(state: dict[str, Any]) -> None:
        seen.append(state)

    page.page.expose_function("reportBusy", report)
    page.page.evaluate(
        """selector => document.addEventListener("submit", () => setTimeout(() => {
            const button = document.querySelector(selector);
            const busy = [...document.querySelectorAll('.result.busy')].find((e) => !e.hidden);
            const a = button.getBoundingClientRect(), b = busy && busy.getBoundingClientRect();
            window.reportBusy({disabled: button.disabled, text: busy ? busy.textContent : null,
                               apart: b ? Math.abs(b.top - a.top) / a.height : null});
        }, 100))""",
        button,
    )
    held = held_up(page, pattern)
    page.page.locator(button).click(no_wait_after=True)  # a form post would wait for its page
    for _ in range(250):
        if held and seen:
            break
        page.page.wait_for_timeout(20)
    assert held, "the request never left"
    assert seen, "the page never reported"
    assert seen[0]["disabled"], seen
    assert seen[0]["text"] and busy in seen[0]["text"], seen
    assert seen[0]["apart"] is not None and seen[0]["apart"] < 3, seen  # next to the button
    release(page, held, pattern)
    page.page.wait_for_load_state("load")
    if path == "/runs":  # both lead to the run's page: wait for it, then for the run to end
        page.page.wait_for_url(re.compile(r"/runs/(exports|verify)/[^/]+$"))
        kind = "export" if "exports" in page.page.url else "verify"
        page.page.wait_for_function(
            "id => !['running', '…'].includes(document.getElementById(id)?.textContent)",
            arg=f"{kind}-status",
            timeout=120_000,
        )


def test_start_stop_and_push_say_what_they_did(page: Watched, server: str) -> None:
    page.page.set_viewport_size({"width": 1280, "height": 800})
    page.goto("/")
    stop = page.page.locator("[id^=stop-campaign-]").first
    campaign = stop.get_attribute("id").rsplit("-", 1)[1]
    stop.click()
    result = page.page.locator(f"#campaign-{campaign}-result")
    page.page.wait_for_selector(f"#campaign-{campaign}-result.ok")
    assert result.inner_text() == f"campaign {campaign} stopped: PENDING"
    assert page.page.inner_text(f"[data-campaign-status='{campaign}']") == "PENDING"
    page.page.click(f"#start-campaign-{campaign}")
    page.page.wait_for_selector(f"#campaign-{campaign}-result.ok")
    assert re.fullmatch(
        rf"campaign {campaign} started: ACTIVE, \d+ members scheduled", result.inner_text()
    )
    page.page.click("#autosync-push button")
    page.page.wait_for_selector("#autosync-result.ok")
    state = httpx.get(f"{server}/_emulator/autosync").json()
    assert page.page.inner_text("#autosync-result") == (
        f"pushed: {state['pushes']} pushes in all, {state['pending']} records still pending"
    )


def test_verify_from_the_page_is_listed_and_leaves_the_crm_as_it_was(
    page: Watched, server: str, prepared: Prepared
) -> None:
    with httpx.Client(base_url=server, timeout=30) as api:
        before = crm_counts(api)
        page.page.set_viewport_size({"width": 1280, "height": 800})
        page.goto("/crm-ui")
        shown_before = {k: page.page.inner_text(f"[data-held={k}]") for k in CRM_KINDS}
        assert page.run_from_runs_page("verify") == "pass"
        verify_id = page.page.url.rsplit("/", 1)[1]
        assert "a scratch copy" in page.page.inner_text("main")
        assert crm_counts(api) == before  # no probe company, contact, activity or task left
        page.goto("/crm-ui")
        assert {k: page.page.inner_text(f"[data-held={k}]") for k in CRM_KINDS} == shown_before
        page.goto("/runs")
        listed = page.page.locator("#verify-runs tbody tr")
        assert listed.first.locator("a").inner_text() == verify_id  # newest first
        assert listed.first.locator(".badge").inner_text() == "pass"
        ids = page.page.locator("#verify-runs tbody tr td:first-child a").all_inner_texts()
        assert prepared.verify_id in ids
        assert [r["id"] for r in api.get("/_emulator/verify").json()["data"]] == ids


def test_each_webhook_attempt_shows_its_payload_and_headers_without_the_secret(
    page: Watched, server: str, prepared: Prepared
) -> None:
    page.page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"/webhooks/{prepared.webhook_id}")
    attempts = page.page.locator("#attempts tbody tr.attempt")
    assert attempts.count() > 0
    sent = page.page.locator("#attempts tbody tr.attempt details.sent")
    assert sent.count() == attempts.count()
    assert sent.first.locator("pre.payload").is_hidden()  # folded until asked for
    event_type = sent.first.locator("summary").inner_text()
    sent.first.locator("summary").click()
    headers = sent.first.locator("pre.headers").inner_text()
    assert "X-Webhook-Secret: ***" in headers and "Content-Type: application/json" in headers
    payload = json.loads(sent.first.locator("pre.payload").inner_text())
    assert payload["eventType"] == event_type and {"timestamp", "data"} <= payload.keys()
    assert SECRET not in page.page.content()
