"""The custom CRM connection's life: its probes and its periodic health check.

Connecting (and testing) probes GET /health and GET /users; the users answer decides owner
selection (2xx: on; 404, 405, 501: off, as the spec says; anything else: unknown, and an
export asks again). While the clock runs, every HEALTH_INTERVAL_SECONDS of virtual time the
platform checks GET /health again (at most once per advance: a long jump makes one check, not
one per interval missed; each call waits at most PERIODIC_TIMEOUT_SECONDS) and, when the users
verdict is older than USERS_FRESH_SECONDS, GET /users too. The outcome lives in `crm_connection.lastHealth` as a ConnectionHealth.
"""

from __future__ import annotations

import logging
import sqlite3
import urllib.request
from datetime import datetime, timedelta

import httpx

from emulator.fixtures.models import CrmConnection
from emulator.outbound import (
    CONNECT_DEADLINE,
    HEALTH_DEADLINE,
    client_headers,
    tls_verify,
    transport_tls,
)
from emulator.outbound.calls import Outcome, call
from emulator.outbound.lane import Lane
from emulator.platform import connection as platform_connection
from emulator.state import Emulator
from emulator.wire import Wire, decode, encode, now_iso, parse_iso

log = logging.getLogger(__name__)

HEALTH_INTERVAL_SECONDS = 300  # virtual time between periodic health checks
USERS_FRESH_SECONDS = 3600  # a users verdict younger than this spares exports the probe
# The periodic check runs inside an advance of the clock: a CRM that hangs must not stall it
# for long (connect and test wait the full 10 s). Both are deadlines of the whole exchange.
PERIODIC_TIMEOUT_SECONDS = HEALTH_DEADLINE
MISSING_USERS = (404, 405, 501)


class UsersProbe(Wire):
    """The last GET /users of the connection and the owner selection it decided."""

    ownerSelection: bool | None  # None: the answer decided nothing (an error, unreachable)
    status: int | None
    checkedAt: str
    message: str


class ConnectionHealth(Wire):
    """`crm_connection.lastHealth`: the last health check, failures in a row, the users probe."""

    ok: bool
    status: int | None
    checkedAt: str
    message: str
    failuresInRow: int = 0
    checks: int = 1
    users: UsersProbe | None = None
    crmUrl: str | None = (
        None  # the CRM checked: another one (PUT /_emulator/connection) starts afresh
    )


def health_message(target: str, outcome: Outcome) -> str:
    if outcome.ok:
        return f"CRM reachable: GET {target} answered {outcome.statusCode}"
    return f"CRM health check failed: GET {target}: {outcome.errorMessage}"


def users_verdict(target: str, outcome: Outcome, at: str) -> UsersProbe:
    """Owner selection from a GET /users outcome (interfaces.md GET /users)."""
    if outcome.ok:
        verdict: bool | None = True
        message = f"GET {target} answered {outcome.statusCode}: owner selection on"
    elif outcome.statusCode in MISSING_USERS:
        verdict, message = False, f"GET {target} answered {outcome.statusCode}: owner selection off"
    else:
        verdict, message = None, f"GET {target}: {outcome.errorMessage}; owner selection unknown"
    return UsersProbe(
        ownerSelection=verdict, status=outcome.statusCode, checkedAt=at, message=message
    )


def next_health(
    previous: ConnectionHealth | None,
    outcome: Outcome,
    message: str,
    at: str,
    users: UsersProbe | None,
    crm_url: str,
) -> ConnectionHealth:
    """The stored health after one check (pure)."""
    failures = 0 if outcome.ok else (previous.failuresInRow if previous else 0) + 1
    return ConnectionHealth(
        ok=outcome.ok,
        status=outcome.statusCode,
        checkedAt=at,
        message=message,
        failuresInRow=failures,
        checks=(previous.checks if previous else 0) + 1,
        users=users or (previous.users if previous else None),
        crmUrl=crm_url,
    )


def health_of(
    health: ConnectionHealth | None, connection: CrmConnection
) -> ConnectionHealth | None:
    """The stored health when it is the connection's CRM's (None: never checked)."""
    if health is None or health.crmUrl not in (None, connection.crmUrl):
        return None
    return health


def fresh_owner_selection(
    health: ConnectionHealth | None, connection: CrmConnection | None, now: datetime
) -> bool | None:
    """The stored owner selection when a users probe of this CRM decided it recently enough
    (else None: ask)."""
    if connection is None:
        return None
    health = health_of(health, connection)
    if health is None or health.users is None:
        return None
    if now - parse_iso(health.users.checkedAt) > timedelta(seconds=USERS_FRESH_SECONDS):
        return None
    return health.users.ownerSelection


def read_health(conn: sqlite3.Connection) -> ConnectionHealth | None:
    health = platform_connection.read_stored(conn)[1]
    return None if health is None else decode(health, ConnectionHealth)


async def probe(
    base: str,
    api_key: str,
    header: str,
    *,
    client: httpx.AsyncClient | httpx.AsyncBaseTransport | None = None,
    users: bool = True,
    timeout: float = CONNECT_DEADLINE,
) -> tuple[Outcome, str, Outcome | None]:
    """GET {base}/health, then GET {base}/users when asked: (health, its message, users).
    Through a bare transport, the requests carry the headers an `httpx.AsyncClient` adds."""
    headers: dict[str, str] | httpx.Headers = {header: api_key, "Accept": "application/json"}
    if isinstance(client, httpx.AsyncBaseTransport):
        headers = client_headers(headers)
    target = base.rstrip("/") + "/health"
    health = await call("GET", target, headers=headers, client=client, timeout=timeout)
    users_outcome = None
    if users:
        users_outcome = await call(
            "GET", base.rstrip("/") + "/users", headers=headers, client=client, timeout=timeout
        )
    return health, health_message(target, health), users_outcome


class HealthChecker:
    """The simulation listener of periodic health checks (`await checker(target)`)."""

    def __init__(self, emulator: Emulator, transport: httpx.AsyncBaseTransport | None) -> None:
        self.emulator = emulator
        self.transport = transport  # this app in-process, for a relative crmUrl ("/crm")

    async def __call__(self, target: datetime) -> None:
        db = self.emulator.db

        # one row read and one written: on this thread once the store is idle (`brief`), not a
        # hop to the store's thread and back each (most of a check's cost but the probes')
        settings, health_text = await db.read(platform_connection.read_stored, brief=True)
        stored = None if health_text is None else decode(health_text, ConnectionHealth)
        if settings is None:
            return
        connection: CrmConnection = decode(settings, CrmConnection)
        previous = health_of(stored, connection)
        if previous is not None and target - parse_iso(previous.checkedAt) < timedelta(
            seconds=HEALTH_INTERVAL_SECONDS
        ):
            return
        ask_users = previous is None or fresh_owner_selection(previous, connection, target) is None
        at = now_iso(target)
        crm = platform_connection.resolve(connection.crmUrl, in_process=self.transport)
        base, transport = crm.base_url, crm.transport
        # the connection's TLS settings, as the exporter's; an in-process CRM takes no TLS
        # context (building the first one costs ~30 ms)
        client: httpx.AsyncClient | httpx.AsyncBaseTransport
        if transport is not None:
            client = transport
        elif urllib.request.getproxies():  # an httpx client routes by HTTP(S)_PROXY, NO_PROXY
            client = httpx.AsyncClient(verify=tls_verify(connection.verify, connection.caFile))
        else:  # the CRM client's transport: a new httpx.AsyncClient cost ~3 ms an advance
            client = Lane(transport_tls(tls_verify(connection.verify, connection.caFile)))
        try:
            health, message, users = await probe(
                base,
                connection.apiKey,
                connection.apiKeyHeader,
                client=client,
                timeout=min(PERIODIC_TIMEOUT_SECONDS, self.emulator.settings.outgoingDeadline),
                users=ask_users,
            )
        finally:
            await client.aclose()
        verdict = None if users is None else users_verdict(base + "/users", users, at)
        state = next_health(previous, health, message, at, verdict, connection.crmUrl)

        def write(conn: sqlite3.Connection) -> None:
            # a connection replaced meanwhile keeps its own health
            platform_connection.record_health(conn, encode(state).decode(), settings)

        await db.write(write, brief=True)
