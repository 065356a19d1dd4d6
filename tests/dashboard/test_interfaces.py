"""The runs page once the verify and HTML-report routes exist (stand-ins built to the agreed
interface: POST /_emulator/verify, GET /_emulator/verify/{id}[/report.html],
GET /_emulator/exports/{id}/report.html), in a real Chromium."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from emulator.app import create_app
from emulator.dashboard.render import route_exists
from tests.conftest import make_settings
from tests.dashboard.browser import Watched, browser_or_skip
from tests.servers import serve_app


def stand_in_routes() -> dict[tuple[str, str], Route]:
    """The agreed routes, by (method, an example path) to test whether this build has them."""
    polls: dict[str, int] = {}

    async def start_verify(request: Request) -> Response:
        body = await request.json()
        assert set(body) <= {"crmUrl", "apiKey", "apiKeyHeader"}
        polls["v-1"] = 0
        return JSONResponse({"id": "v-1", "status": "running"}, 202)

    async def get_verify(request: Request) -> Response:
        run_id = request.path_params["id"]
        if run_id not in polls:
            return JSONResponse({"status": "error", "message": "unknown verify run"}, 404)
        polls[run_id] += 1
        if polls[run_id] < 3:  # running for the first polls, as a real run would be
            return JSONResponse({"id": run_id, "status": "running"})
        return JSONResponse({"id": run_id, "status": "fail", "report": {"violations": 1}})

    async def report_html(request: Request) -> Response:
        return HTMLResponse(f"<h1>{request.url.path.split('/')[2]} report</h1>")

    return {
        ("POST", "/_emulator/verify"): Route("/_emulator/verify", start_verify, methods=["POST"]),
        ("GET", "/_emulator/verify/x"): Route(
            "/_emulator/verify/{id}", get_verify, methods=["GET"]
        ),
        ("GET", "/_emulator/verify/x/report.html"): Route(
            "/_emulator/verify/{id}/report.html", report_html, methods=["GET"]
        ),
        ("GET", "/_emulator/exports/x/report.html"): Route(
            "/_emulator/exports/{id}/report.html", report_html, methods=["GET"]
        ),
    }


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    browser_or_skip()
    app = create_app(make_settings())
    missing = [
        route
        for (method, path), route in stand_in_routes().items()
        if not route_exists(app.routes, method, path)  # a build that has it serves its own
    ]
    app.router.routes[:0] = missing  # before the /_emulator mount
    with serve_app(app) as url:
        yield url


def test_a_verify_run_is_followed_to_its_html_report(page: Watched) -> None:
    assert page.run_from_runs_page("verify") in ("pass", "fail")
    frame = page.page.locator("#report-frame")
    frame.wait_for(state="visible")
    assert frame.get_attribute("src").endswith("/report.html")
    assert page.page.frame_locator("#report-frame").locator("body").inner_text().strip()


def test_a_finished_export_embeds_the_html_report(page: Watched) -> None:
    assert page.run_from_runs_page("export") == "ok"
    assert page.page.locator("#report-frame").get_attribute("src").endswith("/report.html")
    assert page.page.frame_locator("#report-frame").locator("body").inner_text().strip()
