"""The dashboard in a real headless Chromium against a real `emulator serve` (one per module)."""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import time
from collections.abc import Iterator
from datetime import datetime, timedelta

import httpx
import pytest

from emulator.testing import EmulatorServer
from tests.dashboard.browser import Watched, browser_or_skip
from tests.processes import ROOT

SMALL = ROOT / "fixtures" / "scenarios" / "_small"
SHOTS = ROOT / "build" / "dashboard-screenshots"

# a scenario whose expectation is wrong on purpose: the page must show expected and actual
WRONG_LINK = {
    "name": "wrong-link",
    "fixtures": {"directory": str(SMALL)},
    "connection": {"contactLinkTemplate": "https://crm.example/people/{{crmId}}"},
    "steps": [{"step": "export"}],
    "expect": {
        "platform": [
            {
                "path": "/v1/contact/1",
                "fields": {"contactCRMUrl": "https://crm.example/WRONG/crm-ct-000001"},
            }
        ]
    },
}

PAGES = [
    "/",
    "/contacts",
    "/contacts?search=a&page=2",
    "/contacts/1",
    "/companies",
    "/companies/1",
    "/crm-ui",
    "/crm-ui/contacts",
    "/crm-ui/tasks",
    "/journal",
    "/runs",
    "/webhooks",
    "/webhooks/1",
    "/scenarios",
    "/events",
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`emulator serve` started in a directory holding one failing scenario (a scenario root)."""
    browser_or_skip()
    workdir = tmp_path_factory.mktemp("serve")
    (workdir / "wrong-link.json").write_text(json.dumps(WRONG_LINK))
    with contextlib.chdir(workdir):
        emulator = EmulatorServer.start([])
    try:
        yield emulator.url
    finally:
        emulator.stop()


def test_every_page_loads_without_errors_or_foreign_requests(page: Watched) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    for path in PAGES:
        response = page.goto(path)
        assert response.status == 200, path
        assert page.page.locator("h1").first.inner_text(), path
        # a look at each page for humans (build/ is ignored by git: never committed)
        page.page.screenshot(
            path=SHOTS / f"{re.sub(r'[^a-z0-9]+', '-', path).strip('-') or 'overview'}.png"
        )
    assert page.goto("/contacts/999999").status == 404
    assert "Contact 999999 not found" in page.page.inner_text("main")
    page.errors.clear()  # the 404 document itself is logged by Chromium as a failed load


def test_advance_a_day_moves_the_clock_and_the_counts_and_webhooks_redeliver(
    page: Watched, server: str
) -> None:
    page.goto("/")
    before = page.page.inner_text("#clock-now")
    events = int(page.page.inner_text("[data-count=events]"))
    page.page.click("#advance-86400")
    page.page.wait_for_function(
        "before => document.querySelector('#clock-now').textContent !== before", arg=before
    )
    after = page.page.inner_text("#clock-now")
    assert datetime.fromisoformat(after) - datetime.fromisoformat(before) == timedelta(days=1)
    assert int(page.page.inner_text("[data-count=events]")) > events
    assert "advanced +1 day:" in page.page.inner_text("#clock-result")
    # the day's events went to the fixture subscriptions (127.0.0.1:9: failures, retried)
    page.goto("/webhooks/1")
    assert page.page.locator("#queued tbody tr").count() > 0  # retries wait for their due time
    attempts = page.page.locator("#attempts tbody tr.attempt")
    before = attempts.count()
    assert before > 0 and "no answer" in attempts.first.inner_text()
    form = attempts.first.locator("form")
    form_id = form.get_attribute("id")
    form.locator("button").click()
    # the confirmation is next to the button that was clicked, once the page is back
    page.page.wait_for_selector(f"#{form_id} .result.ok")
    assert "redelivered attempt" in page.page.inner_text(f"#{form_id} .result")
    assert page.page.locator("#attempts tbody tr.attempt").count() == min(before + 1, 50)
    httpx.post(f"{server}/_emulator/reset").raise_for_status()


def test_an_export_from_the_page_shows_its_report(page: Watched) -> None:
    assert page.run_from_runs_page("export") == "ok"
    if page.page.locator("#report-frame").count():  # the HTML report of `emulator export --html`
        frame = page.page.frame_locator("#report-frame")
        text = frame.locator("body").inner_text()
        assert "Endpoints" in text and "PATCH /tasks/batch" in text and "not exercised" not in text
    else:  # a build without it: the JSON report rendered
        assert "Exit code 0" in page.page.inner_text("#report")
        statuses = page.page.locator("#export-endpoints [data-endpoint-status]").all_inner_texts()
        assert statuses == ["exercised"] * 15
    page.page.click("text=its exchanges in the journal")
    assert page.page.locator("table.journal tbody tr").count() > 1
    page.page.locator("table.journal summary").first.click()
    assert page.page.locator("table.journal pre").first.is_visible()


def test_a_contact_links_to_its_crm_record_and_back(page: Watched, server: str) -> None:
    connection = httpx.get(f"{server}/_emulator/connection").json()
    # the defaults point at the dashboard of the default port; this server has another one
    assert connection["contactLinkTemplate"] == "/crm-ui/contacts/{{crmId}}"
    assert connection["companyLinkTemplate"] == "/crm-ui/companies/{{crmId}}"
    ours = {
        **connection,
        "apiKey": "crm-demo-key",
        "contactLinkTemplate": f"{server}/crm-ui/contacts/{{{{crmId}}}}",
    }
    httpx.put(f"{server}/_emulator/connection", json=ours).raise_for_status()
    if not httpx.get(f"{server}/v1/contact/1", headers={"x-api-key": "demo-all"}).json()["data"][
        "contactCRMId"
    ]:
        started = httpx.post(f"{server}/_emulator/exports").json()
        while (
            httpx.get(f"{server}/_emulator/exports/{started['id']}").json()["status"] == "running"
        ):
            time.sleep(0.1)
    page.goto("/contacts")
    page.page.click("table.list tbody tr:first-child td:nth-child(2) a")
    page.page.click("#crm-link")
    page.page.wait_for_url(re.compile(r"/crm-ui/contacts/crm-ct-\d+$"))
    stored = json.loads(page.page.inner_text("#stored"))
    assert stored["externalId"] == "1"
    page.page.click("#platform-link")
    page.page.wait_for_url(re.compile(r"/contacts/1$"))


def test_a_bundled_scenario_passes_and_a_wrong_one_shows_the_difference(page: Watched) -> None:
    page.goto("/scenarios")
    bundled = page.page.locator("select[name=path] option", has_text="link-templates.json")
    page.page.select_option("select[name=path]", bundled.get_attribute("value"))
    page.page.click("#run-scenario")
    page.page.wait_for_selector("#scenario-summary", timeout=60_000)
    assert page.page.inner_text("#scenario-results .badge") == "PASS"
    page.page.fill("input[name=path]", "wrong-link.json")
    page.page.click("text=Run this path")
    page.page.wait_for_selector("#scenario-summary", timeout=60_000)
    results = page.page.inner_text("#scenario-results")
    assert (
        "FAIL" in results and "WRONG" in results and "crm.example/people/crm-ct-000001" in results
    )
    page.page.fill("input[name=path]", "/etc/passwd")
    page.page.click("text=Run this path")
    assert "no such file or directory under the roots" in page.page.inner_text("#scenario-error")
    page.errors.clear()  # that answer is a 400 document, which Chromium logs


def test_crm_settings_are_editable_and_a_bad_one_is_refused(page: Watched, server: str) -> None:
    page.goto("/crm-ui")
    settings = json.loads(page.page.input_value("textarea[name=json]"))
    assert settings["syncBack"] == "complete"
    assert "clears nothing" in page.page.inner_text("[data-sync-back]")
    faulty = {
        **settings,
        "faults": [{"endpoint": "POST /contacts/sync", "status": 503, "times": 2}],
    }
    page.page.fill("textarea[name=json]", json.dumps(faulty))
    page.page.click("#crm-settings button")
    # The saved page reloads with its flash; the textarea already held the text before that.
    page.page.wait_for_selector("#crm-settings-result.ok")
    assert "settings saved" in page.page.inner_text("#crm-settings-result")
    assert "POST /contacts/sync" in page.page.input_value("textarea[name=json]")
    page.page.fill("textarea[name=json]", json.dumps({**settings, "syncBack": "sometimes"}))
    page.page.click("#crm-settings button")
    page.page.wait_for_selector("#crm-settings-result.error")
    refused = page.page.inner_text("#crm-settings-result")
    assert "400" in refused and "syncBack" in refused
    page.errors.clear()  # the refused PUT is logged by Chromium as a failed load
    httpx.put(f"{server}/_emulator/crm/settings", json=settings).raise_for_status()


def test_verify_runs_from_the_page_or_says_it_is_not_in_this_build(page: Watched) -> None:
    page.goto("/runs")
    if page.page.locator("#verify-missing").count():
        assert page.page.inner_text("#verify-missing") == "verify is not available in this build"
        return
    assert page.run_from_runs_page("verify") in ("pass", "fail")
    assert page.page.locator("#report-frame:visible, #verify-report:visible").count() == 1


def test_a_deep_verify_run_starts_from_the_page_with_its_sequences_and_seed(
    page: Watched,
) -> None:
    page.goto("/runs")
    page.page.check("#verify-deep")
    page.page.fill("input[name=examples]", "2")
    page.page.fill("input[name=seed]", "11")
    page.page.click("#start-verify")
    page.page.wait_for_url(re.compile(r"/runs/verify/[^/]+$"))
    verify_id = page.page.url.rsplit("/", 1)[1]
    page.page.wait_for_function(
        "() => document.getElementById('verify-status')?.textContent === 'pass'", timeout=120_000
    )
    frame = page.page.frame_locator("#report-frame")
    assert "verify --deep: PASS" in frame.locator("#deep").inner_text()
    run = httpx.get(f"{page.origin}/_emulator/verify/{verify_id}").json()
    assert (run["report"]["deep"]["examples"], run["report"]["deep"]["seed"]) == (2, 11)


def test_api_docs_render_the_openapi_document_and_try_it_calls_the_emulator(page: Watched) -> None:
    page.try_in_api_docs("/docs", "/_emulator/health")
    status = page.page.locator(
        ".opblock.is-open .live-responses-table tbody .response-col_status"
    ).first
    status.wait_for()
    assert status.inner_text().strip().startswith("200")
    assert (
        '"counts"'
        in page.page.locator(".opblock.is-open .live-responses-table pre").first.inner_text()
    )


def test_screenshots_are_not_committed() -> None:
    shot = SHOTS / "overview.png"
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", str(shot)], cwd=ROOT, check=False, capture_output=True
    )
    if ignored.returncode == 128:
        pytest.skip("not a git checkout")
    assert ignored.returncode == 0, f"{shot} would be committed"
