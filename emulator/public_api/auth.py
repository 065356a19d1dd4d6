"""API keys and scopes of /v1, and the guard that applies them and the rate limit."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import wraps

from starlette.requests import Request
from starlette.responses import Response

from emulator.errors import ApiError, Forbidden, Unauthorized
from emulator.http import scope_header
from emulator.store.db import Store
from emulator.wire import decode
from emulator.workspace_scope import workspace

Handler = Callable[[Request], Awaitable[Response]]


class KeyRing:
    """API key -> scopes, re-read from the store after a write to `api_keys` (keys come from
    fixtures: only a reset, fixture load or restore writes them)."""

    def __init__(self, store_of: Callable[[], Store]) -> None:
        self._store_of = store_of
        self._keys: dict[str, frozenset[str]] = {}
        self._ids: dict[str, str] = {}  # key -> its name in the fixtures (the journal's keyId)
        self._version = -1

    async def scopes(self, key: str) -> frozenset[str] | None:
        store = self._store_of()
        if store.changed("api_keys") > self._version:
            version = store.version  # read from here on: a later write is seen next time
            rows = await store.fetchall("SELECT key, name, scopes FROM api_keys ORDER BY rowid")
            self._keys = {k: frozenset(decode(s, list[str])) for k, _, s in rows}
            self._ids = {k: name or f"apiKeys[{i}]" for i, (k, name, _) in enumerate(rows)}
            self._version = version
        return self._keys.get(key)

    def key_id(self, key: str) -> str | None:
        """The name of a known key as last read (`scopes` reads them), never the key itself;
        a key without a name is named by its place in api_keys.json, e.g. apiKeys[3]."""
        return self._ids.get(key)


def endpoint_of(request: Request) -> str:
    """The rate limit's endpoint: method and route template, e.g. GET /v1/contact/{contactId}."""
    route = request.scope.get("route")
    template = getattr(route, "path", None) or request.url.path
    return f"{request.method} {request.scope.get('root_path', '')}{template}"


def guarded(scope: str, documented_limit: bool = False) -> Callable[[Handler], Handler]:
    """Wrap a /v1 handler: 401 without a known key, 403 without `scope`, then the rate limit.

    `scope` "ALL" means only a key with ALL may call it. `documented_limit` marks the route
    the spec rate-limits (GET /v1/contact/{id}).
    """

    def wrap(handler: Handler) -> Handler:
        @wraps(handler)
        async def inner(request: Request) -> Response:
            api = workspace(request).public_api
            api.note_request(request)  # where its relative record links point
            key = scope_header(request.scope, b"x-api-key")
            if not key:
                raise Unauthorized("Missing API key: send it in the x-api-key header")
            scopes = await api.keys.scopes(key)
            if scopes is None:
                raise Unauthorized("Unknown API key")
            if "ALL" not in scopes and scope not in scopes:
                raise Forbidden(f"API key lacks the scope {scope}")
            headers: dict[str, str] = {}
            if api.limiter.applies(documented_limit):
                headers = api.limiter.check(key, endpoint_of(request))
            try:
                response = await handler(request)
            except ApiError as exc:  # a limited route's 400 or 404 carries the headers too
                exc.headers.update(headers)
                raise
            if headers:
                response.headers.update(headers)
            return response

        inner.required_scope = scope  # type: ignore[attr-defined]
        inner.rate_limited = documented_limit  # type: ignore[attr-defined]
        return inner

    return wrap
