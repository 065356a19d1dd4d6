"""The /v1 route table as templates: what a fault's `route` may name, and the route of a call
a fault answered before the router saw it."""

from __future__ import annotations

import re
from functools import cache

from starlette.routing import Route

_PARAM = re.compile(r"\{\w+\}")


def route_pattern(template: str) -> re.Pattern[str]:
    """/v1/contact/{contactId} -> a pattern of the paths it serves."""
    parts = _PARAM.split(template)
    return re.compile("[^/]+".join(re.escape(p) for p in parts) + r"\Z")


@cache
def table() -> tuple[tuple[str, frozenset[str], re.Pattern[str]], ...]:
    """(template, methods, pattern) of every /v1 route, in the router's order."""
    from emulator.public_api.routes import routes  # the handlers import far more than this

    return tuple(
        ("/v1" + r.path, frozenset(r.methods or ()), route_pattern("/v1" + r.path))
        for r in routes
        if isinstance(r, Route)
    )


def templates() -> frozenset[str]:
    return frozenset(template for template, _, _ in table())


def route_for(method: str, path: str) -> str | None:
    """The template the router would pick for `method path` (None: no route serves it)."""
    fallback = None
    for template, methods, pattern in table():
        if pattern.match(path):
            if method in methods:
                return template
            fallback = fallback or template
    return fallback
