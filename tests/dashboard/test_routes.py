"""Dashboard pages through httpx's ASGI transport: status, HTML, errors as pages; the helpers."""

from __future__ import annotations

import re
import time

import httpx
import pytest
from starlette.routing import Mount, Route

from emulator.app import create_app
from emulator.dashboard.render import pretty, route_exists
from tests.conftest import make_settings
from tests.servers import serve_app

pytestmark = pytest.mark.anyio

PAGES = [
    "/",
    "/contacts",
    "/contacts/1",
    "/companies",
    "/companies/1",
    "/crm-ui",
    "/crm-ui/contacts",
    "/crm-ui/activities",
    "/crm-ui/tasks",
    "/crm-ui/associations",
    "/journal",
    "/events",
    "/events?type=MESSAGE_REPLIED&campaignId=1",
    "/webhooks",
    "/webhooks/1",
    "/runs",
    "/scenarios",
    "/docs",
]


async def test_every_page_is_html(client: httpx.AsyncClient) -> None:
    for path in PAGES:
        response = await client.get(path)
        assert response.status_code == 200, path
        assert response.headers["content-type"].startswith("text/html"), path
        assert "<h1" in response.text or 'id="swagger-ui"' in response.text, path
        # a title is text: markup there (an unclosed block) would show in the browser's tab
        title = re.search(r"<title>(.*?)</title>", response.text, re.S)
        assert title is not None and "<" not in title.group(1), (path, title)
        ids = re.findall(r'\bid="([^"]+)"', response.text)
        assert len(ids) == len(set(ids)), (path, sorted({i for i in ids if ids.count(i) > 1}))


@pytest.mark.parametrize(
    ("path", "status", "text"),
    [
        ("/contacts/999999", 404, "Contact 999999 not found"),
        ("/contacts/abc", 404, "No contact abc"),
        ("/companies/0", 404, "No company 0"),
        ("/crm-ui/nothing", 404, "has no &#39;nothing&#39;"),
        ("/crm-ui/contacts/crm-ct-999999", 404, "holds no contacts record crm-ct-999999"),
        ("/webhooks/999", 404, "Webhook 999 not found"),
        ("/journal?status=teapot", 400, "must be an HTTP status or none"),
        ("/runs/exports/nope", 404, "No export nope"),
    ],
)
async def test_bad_addresses_answer_a_page_saying_why(
    client: httpx.AsyncClient, path: str, status: int, text: str
) -> None:
    response = await client.get(path)
    assert response.status_code == status
    assert response.headers["content-type"].startswith("text/html")
    assert text in response.text


async def test_a_scenario_path_outside_the_roots_is_refused(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/scenarios",
        content="path=/etc/passwd",
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert response.status_code == 400
    assert "no such file or directory under the roots" in response.text


def test_the_journal_filters_by_status() -> None:
    """An export over real HTTP (its CRM is this server's /crm), then the journal by status."""
    with serve_app(create_app(make_settings())) as url, httpx.Client(base_url=url) as client:
        started = client.post("/_emulator/exports").json()
        while client.get(f"/_emulator/exports/{started['id']}").json()["status"] == "running":
            time.sleep(0.05)
        everything = client.get("/_emulator/journal", params={"pageSize": 500}).json()
        assert 200 in {e["status"] for e in everything["data"]}
        ok = client.get("/_emulator/journal", params={"status": "200", "pageSize": 500}).json()
        assert ok["total"] == sum(e["status"] == 200 for e in everything["data"]) > 0
        none = client.get("/_emulator/journal", params={"status": "none"}).json()
        assert none["total"] == sum(e["status"] is None for e in everything["data"])
        bad = client.get("/_emulator/journal", params={"status": "2xx"})
        assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "status"
        page = client.get("/journal", params={"status": "200", "method": "GET"})
        assert "GET /health" in page.text


def test_route_exists_searches_mounts_and_methods() -> None:
    async def endpoint() -> None: ...

    routes = [Mount("/_emulator", routes=[Route("/verify", endpoint, methods=["POST"])])]
    assert route_exists(routes, "POST", "/_emulator/verify")
    assert not route_exists(routes, "GET", "/_emulator/verify")
    assert not route_exists(routes, "POST", "/_emulator/verify/1")
    assert not route_exists(routes, "POST", "/verify")


def test_pretty_indents_json_text_and_leaves_other_text() -> None:
    assert pretty('{"a": [1, 2]}') == '{\n  "a": [\n    1,\n    2\n  ]\n}'
    assert pretty("not json") == "not json"
    assert pretty(None) == ""


async def test_record_links_are_links_only_for_http_urls(client: httpx.AsyncClient) -> None:
    connection = (await client.get("/_emulator/connection")).json()
    page = (await client.get("/contacts/4")).text
    # a relative template joins the address the request came in on: any port, any workspace
    assert 'id="crm-link" href="http://emulator.localhost/crm-ui/contacts/' in page
    odd = {
        **connection,
        "apiKey": "crm-demo-key",
        "contactLinkTemplate": "javascript:alert('{{crmId}}')",
    }
    assert (await client.put("/_emulator/connection", json=odd)).status_code == 200
    page = (await client.get("/contacts/4")).text
    assert 'id="crm-link"' not in page and "javascript:alert(&#39;" in page


async def test_check_health_now_answers_the_overview_with_the_result(
    client: httpx.AsyncClient,
) -> None:
    response = await client.post("/")
    assert response.status_code == 200
    assert 'id="health-now"' in response.text
