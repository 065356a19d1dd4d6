"""One Settings struct, built from command-line flags."""

from __future__ import annotations

from typing import Literal

from emulator.fixtures.loader import DEFAULT_FIXTURES
from emulator.wire import FrozenWire, Wire

RateLimitScope = Literal["contact", "all", "off"]


class RateLimit(FrozenWire):
    """`contact`: only GET /v1/contact/{id} (documented); `all`: every /v1 route; `off`."""

    scope: RateLimitScope = "contact"
    limit: int = 100
    windowSeconds: float = 60.0  # the rolling window, and how long a 429 blocks

    @classmethod
    def parse(cls, text: str) -> RateLimit:
        """`off`, `all`, `contact`, `N`, `all:N`, `contact:N` or `SCOPE:N/SECONDS`."""
        scope, _, figure = text.strip().lower().partition(":")
        if scope.isdigit() and not figure:
            scope, figure = "contact", scope
        if scope not in ("contact", "all", "off"):
            raise ValueError(f"--rate-limit: unknown scope {scope!r} (off, all, contact)")
        limit, window = 100, 60.0
        if figure:
            count, _, seconds = figure.partition("/")
            try:
                limit = int(count)
                window = float(seconds) if seconds else 60.0
            except ValueError:
                raise ValueError(f"--rate-limit: bad figure {figure!r}") from None
            if limit < 1 or window <= 0:
                raise ValueError("--rate-limit: the figure must be positive")
        return cls(scope=scope, limit=limit, windowSeconds=window)  # type: ignore[arg-type]


class Settings(Wire):
    host: str = "127.0.0.1"
    port: int = 8400
    fixtures: str = str(DEFAULT_FIXTURES)
    db: str | None = None
    # KiB of the `db` file's pages SQLite keeps in memory (emulator/store/db.py DISK_CACHE_KIB)
    dbCacheKib: int = 64 * 1024
    # Pages the `db` file's write-ahead log grows to before a commit copies them into the file
    # (PRAGMA wal_autocheckpoint; None: SQLite's 1,000)
    dbCheckpointPages: int | None = None
    rateLimit: RateLimit = RateLimit()
    journalLimit: int = 100_000  # rows kept in export_journal; the oldest go first
    journalBytes: int = 256 * 1024 * 1024  # and bytes of its rows' text; the oldest go first
    requestsLimit: int = 10_000  # incoming /v1 and /crm calls kept in memory; the oldest go first
    requestsBytes: int = 8 * 1024 * 1024  # ... and the bytes they may hold together
    clockSpeed: float | None = None  # None: frozen; else virtual seconds per wall second
    seedCache: str | None = None  # directory of seeded images (fixtures/image_cache.py); None: off
    controlToken: str | None = None  # set: every /_emulator route but health needs it (Bearer)
    maxBody: int = 16 * 1024 * 1024  # request bodies beyond it are answered 413
    allowPaths: list[str] = []  # more roots POST /_emulator/fixtures and scenarios/run may read
    # Seconds of each webhook delivery, test delivery and custom-CRM connect/test exchange
    # (the periodic health check takes at most 3); exports and verify take the connection's
    # timeoutSeconds / verify's timeout instead (docs/outgoing-calls.md).
    outgoingDeadline: float = 10.0
    allowedHosts: list[str] = []  # Host names answered besides loopback and the bound address
    headTimeout: float = 5.0  # seconds a connection has to send a whole request head
    maxConnections: int = 512  # open connections at most; beyond, new ones are closed at once
    linkBase: str | None = None  # what relative CRM link templates join; None: the request's
    maxWorkspaces: int = 100  # live /w/{id}/ workspaces at most (docs/workspaces.md)
    workspaceIdle: float = 1800.0  # seconds without a request before a workspace is removed
