"""A Router that finds a request to a fixed path (no `{param}`) by one dict look-up.

Starlette's Router tries its routes in order: a GET /v1/contacts matches the /v1 Mount's
regex, builds its child scope, then walks the mount's own routes, every one a regex, for
each request (~5 % of a cached page read's time). Here the routes a fixed path reaches are
found once, by the router's own walk, so a look-up can never pick a route the walk would
not: the first route, in order, that fully matches that path and method, and, for a Mount,
the first of its routes that does. The scope then gets what the walk would have set. Any
other request (a path with parameters, a method a route refuses, a root path) takes the
walk, as before.

A route Starlette made of an async endpoint (its `request_response`) is run by
`exception_layer.endpoint_app` here: the same request, handlers and answers, one wrapper
fewer.
"""

from __future__ import annotations

from typing import Any

from starlette._utils import is_async_callable
from starlette.routing import BaseRoute, Match, Mount, Route, Router
from starlette.types import ASGIApp, Receive, Scope, Send

from emulator.exception_layer import endpoint_app

# (the Mount, or None for a route of the router itself; the route the request ends at)
Found = tuple[Mount | None, Route]


def route_app(route: Route) -> ASGIApp:
    """`endpoint_app` of the route's endpoint when Starlette's `request_response` made its
    app (an async function or method, no middleware of the route's own); else its app."""
    app = route.app
    made = (
        getattr(app, "__module__", None) == "starlette.routing"
        and getattr(app, "__qualname__", None) == "request_response.<locals>.app"
    )
    if made and is_async_callable(route.endpoint):
        return endpoint_app(route.endpoint)
    return app


def first_full_match(routes: list[BaseRoute], scope: Scope) -> tuple[BaseRoute | None, Scope]:
    """The route Starlette's walk hands `scope` to (a full match only) and its child scope."""
    for route in routes:
        match, child = route.matches(scope)
        if match is Match.FULL:
            return route, child
    return None, {}


def plain_router(app: Any) -> bool:
    """A Router without middleware of its own: its walk is all it does to a request."""
    return type(app) is Router and app.middleware_stack == app.app


def fixed_paths(routes: list[BaseRoute]) -> dict[tuple[str, str], Found]:
    """(method, path) -> where the walk of `routes` ends, for every path of a route without
    parameters (directly, or in a Mount of a plain Router), as the walk itself finds it."""
    candidates: list[tuple[Mount | None, Route, str]] = []
    for route in routes:
        if isinstance(route, Route) and not route.param_convertors:
            candidates.append((None, route, route.path))
        elif (
            isinstance(route, Mount)
            and set(route.param_convertors) == {"path"}  # the mount's own path is fixed
            and plain_router(route.app)
        ):
            for inner in route.routes:
                if isinstance(inner, Route) and not inner.param_convertors:
                    candidates.append((route, inner, route.path + inner.path))
    table: dict[tuple[str, str], Found] = {}
    for mount, route, path in candidates:
        for method in route.methods or ():
            scope: Scope = {"type": "http", "path": path, "root_path": "", "method": method}
            first, child = first_full_match(routes, scope)
            if mount is None:
                if first is route:
                    table.setdefault((method, path), (None, route))
                continue
            if first is not mount:
                continue
            inner_scope = {**scope, **child}
            if first_full_match(mount.routes, inner_scope)[0] is route:
                table.setdefault((method, path), (mount, route))
    return table


class IndexedRouter(Router):
    """Router.app with `fixed_paths` looked up first (built on the first request: the route
    list is complete by then)."""

    # `fixed_paths`, each with the ASGI app that runs its route (`route_app`)
    _fixed: dict[tuple[str, str], tuple[Mount | None, Route, ASGIApp]] | None = None

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not scope.get("root_path") and not scope.get("path_params"):
            fixed = self._fixed
            if fixed is None:
                fixed = self._fixed = {
                    key: (mount, route, route_app(route))
                    for key, (mount, route) in fixed_paths(self.routes).items()
                }
            found = fixed.get((scope["method"], scope["path"]))
            if found is not None:
                mount, route, app = found
                if "router" not in scope:
                    scope["router"] = self
                # what Mount.matches, then Route.matches set (the mount's root path, the route)
                if mount is not None:
                    scope["app_root_path"] = scope.get("app_root_path", "")
                    scope["root_path"] = mount.path
                scope["route"] = route
                scope["endpoint"] = route.endpoint
                scope["path_params"] = {}
                await app(scope, receive, send)
                return
        await super().app(scope, receive, send)
