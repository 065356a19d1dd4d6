"""Every outgoing call of the emulator goes through this package (docs/outgoing-calls.md).

limits    the bounds of one exchange: a total deadline (connect, send, the whole answer) and a
          response cap (a larger answer fails naming the cap, read no further); `exchange`
          runs one request within both, redirects never followed
retries   which answers are tried again, backoff with jitter, `Retry-After`
tls       the TLS context of a connection's `verify` / `caFile`; httpx's default headers
lane      the transports: a plain-HTTP `Lane` (httptools), httpcore on plain asyncio for https
peer      `Peer`: calls to one server (a CRM): base URL, headers, cookies, connections
calls     `call`: one call made into an `Outcome`, never an exception (webhooks, health checks)
"""

from __future__ import annotations

from emulator.outbound.limits import (
    CONNECT_DEADLINE,
    DELIVERY_DEADLINE,
    EXPORT_DEADLINE,
    HEALTH_DEADLINE,
    RESPONSE_CAP,
    VERIFY_DEADLINE,
    DeadlineExceeded,
    ResponseTooLarge,
    exchange,
    read_capped,
)
from emulator.outbound.peer import Peer
from emulator.outbound.retries import RETRY_STATUSES, RetryPolicy, retry_after_seconds
from emulator.outbound.tls import client_headers, default_tls, tls_verify, transport_tls

__all__ = [
    "CONNECT_DEADLINE",
    "DELIVERY_DEADLINE",
    "EXPORT_DEADLINE",
    "HEALTH_DEADLINE",
    "RESPONSE_CAP",
    "RETRY_STATUSES",
    "VERIFY_DEADLINE",
    "DeadlineExceeded",
    "Peer",
    "ResponseTooLarge",
    "RetryPolicy",
    "client_headers",
    "default_tls",
    "exchange",
    "read_capped",
    "retry_after_seconds",
    "tls_verify",
    "transport_tls",
]
