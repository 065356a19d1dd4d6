"""IndexedRouter answers every request as Starlette's Router does: the same route, the same
scope, the same 404, 405 and redirect, over a table built to trip a look-up (a route with a
parameter before a fixed one, a catch-all mount, a mount with middleware, a method a route
refuses), and over the emulator's own routes."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from emulator.app import create_app
from emulator.route_index import IndexedRouter, fixed_paths
from tests.conftest import make_settings

SEEN = ("root_path", "app_root_path", "path_params")


def endpoint(name: str) -> Any:
    async def answer(request: Request) -> Response:
        scope = request.scope
        route = scope["route"]
        return JSONResponse(
            {
                "name": name,
                "route": [type(route).__name__, route.path],
                "endpoint": scope["endpoint"] is answer,
                "router": scope["router"] is request.app.router,
                **{key: scope.get(key) for key in SEEN},
            }
        )

    answer.__name__ = name
    return answer


class Tagging:
    """Middleware of a mount: its answers say they went through it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def tagged(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message["headers"], (b"x-tagged", b"1")]}
            await send(message)

        await self.app(scope, receive, tagged)


def tricky_routes() -> list[BaseRoute]:
    return [
        Route("/items/{item}", endpoint("item"), methods=["GET"]),
        Route("/items/new", endpoint("new item"), methods=["GET", "POST"]),  # shadowed on GET
        Route("/only-post", endpoint("only post"), methods=["POST"]),
        Mount(
            "/api",
            routes=[
                Route("/things", endpoint("things"), methods=["GET"]),
                Route("/things", endpoint("things post"), methods=["POST"]),
                Route("/things/{id:int}", endpoint("thing"), methods=["GET"]),
                Route("/things/count", endpoint("count"), methods=["GET"]),  # shadowed? no: int
                Route("/", endpoint("api root"), methods=["GET"]),
            ],
        ),
        Mount(
            "/wrapped",
            routes=[Route("/x", endpoint("wrapped x"))],
            middleware=[Middleware(Tagging)],
        ),
        Route("/api/late", endpoint("late"), methods=["GET"]),  # reached only if /api has none
        Route("/after/{rest:path}", endpoint("after"), methods=["GET"]),
        Mount("/after", routes=[Route("/fixed", endpoint("never"), methods=["GET"])]),
        Route("/plain", endpoint("plain"), methods=["GET", "PUT"]),
    ]


def apps(routes: list[BaseRoute]) -> tuple[Starlette, Starlette]:
    walked, indexed = Starlette(routes=routes), Starlette(routes=routes)
    indexed.router = IndexedRouter(indexed.router.routes)
    return walked, indexed


PATHS = [
    "/items/new",
    "/items/7",
    "/only-post",
    "/api/things",
    "/api/things/",
    "/api/things/3",
    "/api/things/count",
    "/api/",
    "/api",
    "/api/late",
    "/wrapped/x",
    "/after/fixed",
    "/plain",
    "/plain/",
    "/nowhere",
    "/",
]
METHODS = ["GET", "POST", "PUT", "HEAD", "DELETE"]


async def answers(app: Starlette, method: str, path: str) -> tuple[int, str, dict[str, str]]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        r = await client.request(method, path)
    kept = {k: v for k, v in r.headers.items() if k in ("allow", "location", "x-tagged")}
    return r.status_code, r.text, kept


@pytest.mark.anyio
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("path", PATHS)
async def test_a_tricky_table_is_answered_as_the_walk_answers(method: str, path: str) -> None:
    walked, indexed = apps(tricky_routes())
    assert await answers(indexed, method, path) == await answers(walked, method, path)


def test_the_table_holds_only_what_the_walk_finds() -> None:
    table = fixed_paths(tricky_routes())
    found = {key: (m.path if m else None, r.path) for key, (m, r) in table.items()}
    assert found[("POST", "/items/new")] == (None, "/items/new")
    assert ("GET", "/items/new") not in found  # /items/{item} comes first
    assert found[("GET", "/api/things")] == ("/api", "/things")
    assert found[("POST", "/api/things")] == ("/api", "/things")
    assert found[("GET", "/api/things/count")] == ("/api", "/things/count")
    assert ("GET", "/api/late") not in found  # the /api mount takes it (and answers 404)
    assert ("GET", "/wrapped/x") not in found  # a mount with middleware: walked
    assert ("GET", "/after/fixed") not in found  # /after/{rest:path} comes first
    assert ("DELETE", "/plain") not in found


@settings(max_examples=150, deadline=None)
@given(
    method=st.sampled_from(METHODS),
    path=st.lists(
        st.sampled_from(["api", "things", "items", "new", "3", "count", "plain", "x", "after", ""]),
        max_size=3,
    ).map(lambda parts: "/" + "/".join(parts)),
)
def test_any_request_is_answered_as_the_walk_answers(method: str, path: str) -> None:
    walked, indexed = apps(tricky_routes())
    assert asyncio.run(answers(indexed, method, path)) == asyncio.run(answers(walked, method, path))


@pytest.mark.anyio
async def test_the_emulators_fixed_paths_reach_the_walks_routes() -> None:
    """Every fixed path of the emulator's table: the route the look-up picks is the one a
    plain Router over the same routes picks (checked with Starlette's own matching)."""
    app = create_app(make_settings())
    table = fixed_paths(app.router.routes)
    assert ("GET", "/v1/contacts") in table and ("POST", "/v1/contact") in table
    for (method, path), (mount, route) in table.items():
        scope = {"type": "http", "path": path, "root_path": "", "method": method}
        outer = next(r for r in app.router.routes if r.matches(scope)[0].name == "FULL")
        if mount is None:
            assert outer is route
            continue
        assert outer is mount
        inner_scope = {**scope, **mount.matches(scope)[1]}
        assert next(r for r in mount.routes if r.matches(inner_scope)[0].name == "FULL") is route
