"""Jinja2 rendering and the small helpers every dashboard page shares."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlencode

import msgspec
from markupsafe import Markup, escape
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import BaseRoute, Match, Mount

from emulator import __version__
from emulator.asgi_guards import token_matches
from emulator.errors import ApiError
from emulator.public_api.context import ApiContext
from emulator.state import Emulator
from emulator.workspace_scope import workspace

if TYPE_CHECKING:
    from jinja2 import Environment

HERE = Path(__file__).parent
STATIC = HERE / "static"
PAGE_SIZE = 50

# (path, label) of the navigation bar, in order
NAV = (
    ("/", "Overview"),
    ("/contacts", "Contacts"),
    ("/companies", "Companies"),
    ("/crm-ui", "Reference CRM"),
    ("/journal", "Journal"),
    ("/requests", "Requests"),
    ("/faults", "Faults"),
    ("/runs", "Exports & verify"),
    ("/webhooks", "Webhooks"),
    ("/scenarios", "Scenarios"),
    ("/events", "Events"),
    ("/docs", "API docs"),
)


def pretty(value: Any) -> str:
    """Indented JSON of a value, or of a JSON text; other text as it is."""
    if value is None:
        return ""
    if isinstance(value, str | bytes):
        try:
            value = json.loads(value)
        except ValueError:
            return value if isinstance(value, str) else value.decode(errors="replace")
    return json.dumps(msgspec.to_builtins(value), indent=2, ensure_ascii=False)


# an ISO 8601 date or date-time as the API writes them (2024-05-01, 2024-05-01T09:30:00.000Z)
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?")


def when(value: Any) -> Markup:
    """A date or time in a <time> element, which the style sheet never breaks across lines."""
    if value is None or value == "":
        return Markup("")
    return Markup('<time datetime="{0}">{0}</time>').format(value)


def scalar(value: Any) -> Markup:
    """A value as the API writes it: true, false and null (not Python's True and None),
    numbers and text as they are, dates kept on one line, lists and objects as JSON."""
    if value is None:
        return Markup('<span class="null">null</span>')
    if isinstance(value, bool):
        return Markup("true" if value else "false")
    if isinstance(value, str):
        return when(value) if _ISO_DATE.fullmatch(value) else escape(value)
    if isinstance(value, int | float):
        return escape(json.dumps(value))
    return escape(pretty(value))


def with_query(request: Request, **changes: Any) -> str:
    """This page's URL with some query parameters changed (None removes one)."""
    params = dict(request.query_params)
    for name, value in changes.items():
        if value is None or value == "":
            params.pop(name, None)
        else:
            params[name] = str(value)
    return request.url.path + ("?" + urlencode(params) if params else "")


@cache
def _environment() -> Environment:
    """The templates' environment, built at the first page: jinja2's import is ~0.04 s of
    CPU that a start (and a server never asked for a page) need not pay."""
    from jinja2 import Environment, FileSystemLoader, select_autoescape

    env = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["pretty"] = pretty
    env.filters["builtins"] = msgspec.to_builtins
    env.filters["when"] = when
    env.filters["scalar"] = scalar
    env.globals.update(nav=NAV, version=__version__, page_size=PAGE_SIZE)
    return env


def page(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    """Render one page; `request` gives the navigation its current entry and links their query."""
    token = workspace(request).emulator.settings.controlToken
    html = (
        _environment()
        .get_template(template)
        .render(
            request=request,
            with_query=lambda **c: with_query(request, **c),
            token_missing=token is not None and not token_matches(request.headers.raw, token),
            **context,
        )
    )
    return HTMLResponse(html, status)


def problem(request: Request, status: int, message: str) -> HTMLResponse:
    """An error page in the dashboard's look (unknown record, bad filter)."""
    return page(request, "problem.html", status=status, status_code=status, message=message)


def api_problem(request: Request, exc: ApiError) -> HTMLResponse:
    return problem(request, exc.status_code, exc.message)


def emulator_of(request: Request) -> Emulator:
    return workspace(request).emulator


def api(request: Request) -> ApiContext:
    ctx = workspace(request).public_api
    ctx.note_request(request)  # record links as /v1 shows them to this origin
    return ctx


def int_param(request: Request, name: str, default: int | None = None) -> int | None:
    """A positive integer query parameter; anything else counts as absent."""
    text = request.query_params.get(name, "").strip()
    return int(text) if text.isdigit() and 0 < int(text) < 2**63 else default


def page_number(request: Request) -> int:
    return int_param(request, "page", 1) or 1


def form_fields(body: bytes) -> dict[str, str]:
    """An urlencoded form body as {name: last value} (no multipart parser needed)."""
    return {k: v[-1] for k, v in parse_qs(body.decode(errors="replace")).items()}


def serves(request: Request, method: str, path: str) -> bool:
    """Whether this app has a route for `method path` (interfaces other builds may lack)."""
    return route_exists(request.app.routes, method, path)


def route_exists(routes: Sequence[BaseRoute], method: str, path: str) -> bool:
    """Whether a route of `routes` (mounts searched) takes `method path`."""
    scope = {"type": "http", "method": method, "path": path, "root_path": "", "path_params": {}}
    return _matches(routes, scope)


def _matches(routes: Sequence[BaseRoute], scope: dict[str, Any]) -> bool:
    for route in routes:
        match, child = route.matches(scope)
        if match is Match.NONE:
            continue
        if isinstance(route, Mount):
            if _matches(route.routes, {**scope, **child}):
                return True
        elif match is Match.FULL:
            return True
    return False
