"""When an outgoing call is tried again: the statuses, backoff with jitter, `Retry-After`."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

RETRY_STATUSES = frozenset({429, 502, 503, 504})


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter; `retry_after_cap` bounds a CRM's Retry-After (seconds)."""

    retries: int = 3
    base: float = 0.25
    cap: float = 8.0
    retry_after_cap: float = 60.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.retry_after_cap)
        return min(self.cap, self.base * 2**attempt) * random.uniform(0.5, 1.0)


def retry_after_seconds(value: str | None) -> float | None:
    """Retry-After as seconds or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        # a real CRM's HTTP-date is wall time: the virtual clock does not apply here
        return parsedate_to_datetime(value).timestamp() - time.time()
    except (TypeError, ValueError):
        return None
