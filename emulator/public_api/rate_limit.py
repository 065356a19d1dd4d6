"""The /v1 rate limit as the live platform documents it (decisions.md §2).

Counted per API key **and** endpoint (route template): at most `limit` requests in any
rolling window of `windowSeconds`; the request over the limit is refused with 429 and blocks
that key and endpoint for `windowSeconds` (60 s by default) from that moment; refused requests
are not counted. Every answer carries the X-RateLimit headers; the reset is a Unix timestamp.

Wall time on purpose, not the virtual clock: the limit protects the server per real minute,
and a frozen clock would never let a window roll. The time source is injected for tests.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from emulator.errors import RateLimited
from emulator.settings import RateLimit


@dataclass
class _Bucket:
    hits: deque[float] = field(default_factory=deque)
    blocked_until: float = 0.0


class RateLimiter:
    """One bucket per (API key, endpoint); `check` counts a request or raises RateLimited."""

    def __init__(self, config: RateLimit, now: Callable[[], float] = time.time) -> None:
        self.config = config
        self._now = now
        self._buckets: dict[tuple[str, str], _Bucket] = {}

    def reset(self) -> None:
        self._buckets.clear()

    def applies(self, documented: bool) -> bool:
        scope = self.config.scope
        return scope == "all" or (scope == "contact" and documented)

    def check(self, key: str, endpoint: str) -> dict[str, str]:
        """Count one request of `key` on `endpoint`: the headers of its answer, or RateLimited
        (carrying the headers of the 429)."""
        now = self._now()
        window, limit = self.config.windowSeconds, self.config.limit
        bucket = self._buckets.setdefault((key, endpoint), _Bucket())
        hits = bucket.hits
        while hits and hits[0] <= now - window:
            hits.popleft()
        if now < bucket.blocked_until or len(hits) >= limit:
            if now >= bucket.blocked_until:  # this request exceeds the limit: block from now
                bucket.blocked_until = now + window
            retry = max(1, math.ceil(bucket.blocked_until - now))
            headers = _headers(limit, 0, bucket.blocked_until, retry)
            raise RateLimited(headers=headers | {"Retry-After": str(retry)})
        hits.append(now)
        remaining = limit - len(hits)
        # The window frees a slot when its oldest hit expires: the reset moment.
        reset_at = hits[0] + window
        retry = 0 if remaining > 0 else max(1, math.ceil(reset_at - now))
        return _headers(limit, remaining, reset_at, retry)


def _headers(limit: int, remaining: int, reset_at: float, retry: int) -> dict[str, str]:
    return {
        "X-RateLimit-Limit": str(limit),
        "X-RateLimit-Remaining": str(remaining),
        "X-RateLimit-Reset-Seconds": str(math.ceil(reset_at)),
        "X-RateLimit-Retry-After-Seconds": str(retry),
    }
