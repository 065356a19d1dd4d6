"""Every answer of the control API and the dashboard leaves with its secrets as `***`.

A pure ASGI layer over the app, like the guards: it covers every route mounted under
/_emulator and every dashboard page, whoever adds them, and whatever the route put in its
answer (a CRM's echo in a verify report, a journal entry, a synced property on a record
page). The emulated APIs (/v1, /crm) and static assets pass untouched: /v1 is the platform's
customer's own data, /crm is the CRM itself.

The secrets in force are the app's `SecretBook` (the control token, keys given to verify
runs) plus what the store holds at the moment of the answer: the export connection's key,
the reference CRM's key and every webhook secret (read again whenever the store changed).
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Awaitable, Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from emulator.asgi_guards import token_matches
from emulator.fixtures.models import CrmSettings
from emulator.redaction import Redactor, SecretBook
from emulator.store.db import Store

log = logging.getLogger(__name__)

# The JSON Schemas are documents generated from the code (a default such as the demo CRM key is
# part of the code, not a secret of this run).
UNTOUCHED = ("/v1/", "/crm/", "/docs/assets/", "/dashboard-assets/", "/_emulator/schemas/")
# The reference CRM's own key is shown to a holder of the control token (control/crm.py
# `shown`): its settings route, the dashboard's CRM page, which edits them, and a new
# workspace's answer (its `crmApiKey`).
KEY_TO_TOKEN_HOLDER = frozenset({"/_emulator/crm/settings", "/crm-ui", "/_emulator/workspaces"})

STORED_SECRETS = (
    "SELECT json_extract(settings, '$.apiKey') FROM crm_connection"
    " UNION ALL SELECT json_extract(settings, '$.apiKey') FROM crm_settings"
    " UNION ALL SELECT secret FROM webhooks WHERE secret IS NOT NULL"
)


def redacted_path(path: str) -> bool:
    """Whether answers to `path` are redacted: everything but the emulated APIs and assets."""
    return path not in ("/v1", "/crm", "/openapi.json") and not path.startswith(UNTOUCHED)


def stored_secrets(conn: sqlite3.Connection) -> list[str]:
    found = [row[0] for row in conn.execute(STORED_SECRETS) if isinstance(row[0], str)]
    if conn.execute("SELECT 1 FROM crm_settings").fetchone() is None:
        found.append(CrmSettings().apiKey)  # no row: the reference CRM answers to its default
    return found


class SecretsInForce:
    """The book, plus what the store holds: read again only after the store changed (its
    `version` grows with every write and restore), so most answers cost no read."""

    def __init__(self, book: SecretBook, store: Callable[[], Store]) -> None:
        self.book, self.store = book, store
        self._read_at: tuple[int, int] | None = None  # (id of the store, its version)

    async def __call__(self, scope: Scope | None = None) -> Redactor:
        try:
            store = self.store()
            seen = (id(store), store.version)
            if seen != self._read_at:
                self.book.add(*await store.read(stored_secrets))
                self._read_at = seen
        except Exception:  # a store not open yet, or closed: what the book knows still applies
            log.debug("stored secrets unreadable; redacting with the known ones", exc_info=True)
        return self.book.redactor


class RedactAnswers:
    """Redacts the body of every answer `redacted_path` names (streamed ones chunk by chunk,
    a secret split across two chunks included); Content-Length follows the new body."""

    def __init__(
        self,
        app: ASGIApp,
        redactor: Callable[[Scope], Awaitable[Redactor]],
        token: str | None = None,
    ) -> None:
        self.app, self.redactor, self.token = app, redactor, token

    def send_for(self, scope: Scope, send: Send) -> Send:
        """The `send` an http request's answer goes out through: `send` itself, or a
        Redacting over it."""
        # HEAD: no body goes out, and Content-Length must stay the GET's
        if scope["method"] == "HEAD" or not redacted_path(scope["path"]):
            return send
        if scope["path"] in KEY_TO_TOKEN_HOLDER and token_matches(scope["headers"], self.token):
            return send
        return Redacting(send, lambda: self.redactor(scope))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            send = self.send_for(scope, send)
        await self.app(scope, receive, send)


class Redacting:
    """The `send` of one answer: holds the start until the body (or its first chunk) is known."""

    def __init__(self, send: Send, redactor: Callable[[], Awaitable[Redactor]]) -> None:
        self.send, self.find = send, redactor
        self.start: Message | None = None
        self.redactor: Redactor | None = None
        self.streaming = False
        self.carry = b""

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.redactor = await self.find()
            if not self.redactor:
                await self.send(message)
            else:
                self.start = message
            return
        if message["type"] != "http.response.body" or not self.redactor:
            await self.send(message)
            return
        r = self.redactor
        body = r.bytes(self.carry + message.get("body", b""))
        more = bool(message.get("more_body", False))
        if self.start is not None:
            await self.send(self._start(self.start, None if more else len(body)))
            self.start, self.streaming = None, more
        if more:  # keep back what could be the start of a secret the next chunk ends
            keep = min(len(body), r.longest - 1)
            self.carry, body = body[len(body) - keep :], body[: len(body) - keep]
        else:
            self.carry = b""
        await self.send({"type": "http.response.body", "body": body, "more_body": more})

    @staticmethod
    def _start(start: Message, length: int | None) -> Message:
        """The start message with Content-Length set to `length` (None: dropped, streamed)."""
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        if length is not None:
            headers.append((b"content-length", str(length).encode()))
        return {**start, "headers": headers}
