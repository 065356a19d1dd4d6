"""The one way an export is set up, by `emulator export` and by POST /_emulator/exports alike:
the stored connection (with the caller's changes laid over it), its relative crmUrl joined to
the server's base URL, its key known to redaction before anything is logged, and the journal
caps of the settings."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec

from emulator.exporter.report import Progress
from emulator.exporter.run import Exporter
from emulator.fixtures.models import CrmConnection
from emulator.platform import connection as platform_connection
from emulator.redaction import SecretBook
from emulator.settings import Settings
from emulator.store.db import Store


class NoConnection(Exception):
    """No CRM connection is stored and the caller gave none."""


async def prepare_export(
    store: Store,
    now: Callable[[], str],
    settings: Settings,
    secrets: SecretBook,
    server_base: str | None,
    *,
    changes: Callable[[CrmConnection | None], CrmConnection | None] = lambda stored: stored,
    on_progress: Callable[[Progress], None] | None = None,
    strict: bool = False,
    notes: Sequence[str] = (),
) -> Exporter:
    """An export of `store` ready to run: `changes` turns the stored connection into the
    one to use (the CLI's flags; a check that raises); a relative crmUrl is joined to
    `server_base`. Raises NoConnection, or ValueError for a relative crmUrl with no base."""
    conn = changes(await store.read(platform_connection.read))
    if conn is None:
        raise NoConnection("no CRM connection configured: PUT /_emulator/connection first")
    crm = platform_connection.resolve(conn.crmUrl, server_base)
    conn = msgspec.structs.replace(conn, crmUrl=crm.base_url)
    secrets.add(conn.apiKey)  # before the run logs anything
    return Exporter(
        store,
        conn,
        now=now,
        on_progress=on_progress,
        journal_limit=settings.journalLimit,
        journal_bytes=settings.journalBytes,
        strict=strict,
        notes=notes,
    )
