"""API keys, scopes and the rolling-window rate limit of /v1 (decisions.md §2)."""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Awaitable, Callable
from functools import wraps

from starlette.requests import Request
from starlette.responses import Response

from emulator.errors import ApiError, Forbidden, RateLimited, Unauthorized
from emulator.settings import RateLimit
from emulator.store.db import Store
from emulator.wire import decode

Handler = Callable[[Request], Awaitable[Response]]


class KeyRing:
    """API key -> scopes, re-read from the store after any write (keys come from fixtures)."""

    def __init__(self, store_of: Callable[[], Store]) -> None:
        self._store_of = store_of
        self._keys: dict[str, frozenset[str]] = {}
        self._version = -1

    async def scopes(self, key: str) -> frozenset[str] | None:
        store = self._store_of()
        if self._version != store.version:
            rows = await store.fetchall("SELECT key, scopes FROM api_keys")
            self._keys = {k: frozenset(decode(s, list[str])) for k, s in rows}
            self._version = store.version
        return self._keys.get(key)


class RateLimiter:
    """Rolling window per API key: at most `limit` requests in any `windowSeconds`."""

    def __init__(self, config: RateLimit) -> None:
        self.config = config
        self._hits: dict[str, deque[float]] = {}

    def reset(self) -> None:
        self._hits.clear()

    def applies(self, documented: bool) -> bool:
        scope = self.config.scope
        return scope == "all" or (scope == "contact" and documented)

    def check(self, key: str) -> dict[str, str]:
        """Count one request; answer the X-RateLimit headers or raise RateLimited."""
        # Wall (monotonic) time on purpose, not the virtual clock: the limit protects the
        # server per real minute, and a frozen clock would never let the window roll.
        now = time.monotonic()
        window, limit = self.config.windowSeconds, self.config.limit
        hits = self._hits.setdefault(key, deque())
        while hits and hits[0] <= now - window:
            hits.popleft()
        reset_in = math.ceil(hits[0] + window - now) if hits else math.ceil(window)
        headers = {"X-RateLimit-Limit": str(limit), "X-RateLimit-Reset-Seconds": str(reset_in)}
        if len(hits) >= limit:
            retry = str(max(1, reset_in))
            headers |= {
                "X-RateLimit-Remaining": "0",
                "X-RateLimit-Retry-After-Seconds": retry,
                "Retry-After": retry,
            }
            raise RateLimited(headers=headers)
        hits.append(now)
        headers["X-RateLimit-Remaining"] = str(limit - len(hits))
        return headers


def guarded(scope: str, documented_limit: bool = False) -> Callable[[Handler], Handler]:
    """Wrap a /v1 handler: 401 without a known key, 403 without `scope`, then the rate limit.

    `scope` "ALL" means only a key with ALL may call it. `documented_limit` marks the route
    the spec rate-limits (GET /v1/contact/{id}).
    """

    def wrap(handler: Handler) -> Handler:
        @wraps(handler)
        async def inner(request: Request) -> Response:
            api = request.app.state.public_api
            key = request.headers.get("x-api-key")
            if not key:
                raise Unauthorized("Missing API key: send it in the x-api-key header")
            scopes = await api.keys.scopes(key)
            if scopes is None:
                raise Unauthorized("Unknown API key")
            if "ALL" not in scopes and scope not in scopes:
                raise Forbidden(f"API key lacks the scope {scope}")
            headers: dict[str, str] = {}
            if api.limiter.applies(documented_limit):
                headers = api.limiter.check(key)
            try:
                response = await handler(request)
            except ApiError as exc:  # a limited route's 400 or 404 carries the headers too
                exc.headers.update(headers)
                raise
            response.headers.update(headers)
            return response

        inner.required_scope = scope  # type: ignore[attr-defined]
        return inner

    return wrap
