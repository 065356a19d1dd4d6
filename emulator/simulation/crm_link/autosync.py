"""CRM auto-sync: after each advance of the clock, what the new events changed goes to the
configured CRM through the exporter's own code (interfaces.md "Activity events logged to the
CRM"; decisions.md §3): POST /activities for new messages of campaigns with message sync on,
POST /tasks for new task steps and the completion of completed ones, engagement PUT /contacts
and PUT /companies for the records whose engagement changed, each push journaled under its own
exportId ("autosync-<n>").

Bookkeeping lives in the store, so restarts, resets and snapshots carry it: meta
`autosync.cursor` (last event id collected), `autosync.pushes`, `autosync.last` (the last
push's summary) and the table `autosync_pending` (records not fully pushed yet: not in the
CRM yet, or their push failed). A failing CRM never breaks an advance: the push reports it
and its records stay pending for the next one.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal

import httpx
import msgspec

from emulator.exporter import records as rec
from emulator.exporter.report import Report
from emulator.exporter.run import Exporter
from emulator.fixtures.models import CrmConnection
from emulator.outbound import RetryPolicy
from emulator.platform import connection as platform_connection
from emulator.state import Emulator
from emulator.store.db import read_meta, write_meta
from emulator.wire import Wire, decode, encode

log = logging.getLogger(__name__)

PushStatus = Literal["ok", "failed", "aborted", "crashed"]
# Each push is retried by the next one, so within a push retries are few and short: an
# advance must not stall on a CRM that is struggling.
PUSH_POLICY = {"base": 0.05, "cap": 0.5, "retry_after_cap": 2.0}
# Calls of a push in flight at once (and connections kept to the CRM): with 8 the CRM's work
# on its own core overlapped the emulator's more than with 4 (bench: push 3.8-4.3 -> 3.4-3.6 s).
# Once the send log's writes and the reference CRM's creates ran without a hop to the
# database thread, 12 cost both processes less CPU than 8 (more answers handled per wake-up
# of the event loop: bench leg 2.8-2.9 s of the emulator's CPU and 0.75-0.78 of the CRM's,
# against 3.1-3.2 and 0.84-0.88); 16 and 24 measured alike, and each more is one more
# connection to a customer's CRM and one more POST a crash may leave possibly duplicated.
IN_FLIGHT = 12


class AutoSyncCounts(Wire):
    """What one push did, item by item."""

    activities: int = 0  # activities created (one per new message of a synced campaign)
    tasksCreated: int = 0
    tasksCompleted: int = 0
    engagementUpdated: int = 0  # contacts and companies whose engagement fields were PUT
    failed: int = 0  # items the CRM refused or did not answer (retried next push)
    requests: int = 0


class AutoSyncPush(Wire):
    """One push: its journal exportId, when (virtual time), what it sent and what is left."""

    id: str
    at: str
    status: PushStatus
    message: str | None = None
    contacts: int = 0  # contacts in the CRM that the push covered
    companies: int = 0
    retrying: int = 0  # of those, records left pending after failures
    completionError: str | None = None  # why a task completion failed in this push, if one did
    waiting: int = 0  # pending records not in the CRM yet (pushed once they are)
    counts: AutoSyncCounts = msgspec.field(default_factory=AutoSyncCounts)
    seconds: float = 0.0
    report: Report | None = None  # the exporter's report (in memory: the latest push only)


class AutoSyncState(Wire):
    """GET /_emulator/autosync: whether auto-sync is on, its bookkeeping and the last push."""

    enabled: bool
    crmUrl: str | None
    pushes: int
    cursor: int  # the last event id collected
    pending: int  # records with something not pushed yet
    waiting: int  # of those, records not in the CRM yet
    completionsPending: int  # tasks completed on the platform the CRM has not completed yet
    completionError: str | None  # the last push's completion error while completions are pending
    last: AutoSyncPush | None


class InProcessTransport(httpx.AsyncBaseTransport):
    """This emulator's own app as the CRM's transport (crmUrl "/crm"): no socket, no port.

    Like a network, it turns an app exception (the dropConnection fault) into a dropped
    connection and applies the client's read timeout (ASGITransport has none).
    """

    def __init__(self, app: Any) -> None:
        self._asgi = httpx.ASGITransport(app=app)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeout = request.extensions.get("timeout", {}).get("read")
        try:
            async with asyncio.timeout(timeout):
                response = await self._asgi.handle_async_request(request)
                await response.aread()
                return response
        except TimeoutError:
            raise httpx.ReadTimeout("the CRM did not answer in time", request=request) from None
        except httpx.TransportError:
            raise
        except Exception as exc:
            raise httpx.RemoteProtocolError(f"connection dropped ({exc})", request=request) from exc


# ---------------------------------------------------------------------------------------------
# Store bookkeeping (synchronous: run on the store's thread)


_WAITING = (
    "SELECT count(*) FROM autosync_pending p WHERE (p.kind = 'contacts' AND NOT EXISTS ("
    " SELECT 1 FROM contacts c WHERE c.id = p.id AND c.contactCRMId IS NOT NULL))"
    " OR (p.kind = 'companies' AND NOT EXISTS ("
    " SELECT 1 FROM companies co WHERE co.id = p.id AND co.companyCRMId IS NOT NULL))"
)


class Batch(msgspec.Struct):
    """What one push covers: the pending records in the CRM, and the push's number."""

    number: int
    contacts: list[int]
    companies: list[int]
    waiting: int
    completions: bool  # completed tasks whose completion the CRM has not seen


# Tasks the CRM has not seen although their contact is there (a TASK step, or a task added
# through the control API, which makes no event).
_UNSENT_TASKS = (
    "SELECT t.contactId FROM platform_tasks t JOIN contacts c ON c.id = t.contactId"
    " WHERE t.crmTaskId IS NULL AND c.contactCRMId IS NOT NULL"
)


def has_work(conn: sqlite3.Connection) -> bool:
    """Whether a push has anything to do: events after the cursor, pending records in the CRM,
    tasks or completions to send. A read, so an idle tick writes nothing (caches stay valid).
    One check at a time, cheapest first: an advance with new events answers at the first
    (one OR'ed query ran every scan, ~3-5 ms at the end of the bench's leg)."""
    cursor = int(read_meta(conn, "autosync.cursor") or 0)
    checks = (
        ("SELECT EXISTS (SELECT 1 FROM events WHERE id > ?)", (cursor,)),
        (
            "SELECT EXISTS (SELECT 1 FROM autosync_pending p JOIN contacts c ON c.id = p.id"
            "  WHERE p.kind = 'contacts' AND c.contactCRMId IS NOT NULL)"
            " OR EXISTS (SELECT 1 FROM autosync_pending p JOIN companies co ON co.id = p.id"
            "  WHERE p.kind = 'companies' AND co.companyCRMId IS NOT NULL)",
            (),
        ),
        (f"SELECT EXISTS ({rec.COMPLETIONS_DUE})", ()),
        (f"SELECT EXISTS ({_UNSENT_TASKS})", ()),
    )
    return any(conn.execute(sql, args).fetchone()[0] == 1 for sql, args in checks)


def collect(conn: sqlite3.Connection) -> Batch:
    """Move the events after the cursor into `autosync_pending` (their contacts and those
    contacts' companies) and the contacts of unsent tasks, advance the cursor, and answer what
    a push would cover."""
    cursor = int(read_meta(conn, "autosync.cursor") or 0)
    last = conn.execute("SELECT max(id) FROM events").fetchone()[0]
    if last is not None and last > cursor:
        conn.execute(
            "INSERT OR IGNORE INTO autosync_pending(kind, id)"
            " SELECT DISTINCT 'contacts', contactId FROM events WHERE id > ? AND id <= ?",
            (cursor, last),
        )
        conn.execute(
            "INSERT OR IGNORE INTO autosync_pending(kind, id)"
            " SELECT DISTINCT 'companies', c.companyId FROM events e JOIN contacts c ON c.id = e.contactId"
            " WHERE e.id > ? AND e.id <= ? AND c.companyId IS NOT NULL",
            (cursor, last),
        )
        write_meta(conn, "autosync.cursor", str(last))
    conn.execute(
        "INSERT OR IGNORE INTO autosync_pending(kind, id)"
        f" SELECT DISTINCT 'contacts', contactId FROM ({_UNSENT_TASKS})"
    )
    contacts = [
        r[0]
        for r in conn.execute(
            "SELECT p.id FROM autosync_pending p JOIN contacts c ON c.id = p.id"
            " WHERE p.kind = 'contacts' AND c.contactCRMId IS NOT NULL ORDER BY p.id"
        )
    ]
    companies = [
        r[0]
        for r in conn.execute(
            "SELECT p.id FROM autosync_pending p JOIN companies co ON co.id = p.id"
            " WHERE p.kind = 'companies' AND co.companyCRMId IS NOT NULL ORDER BY p.id"
        )
    ]
    completions = conn.execute(f"{rec.COMPLETIONS_DUE} LIMIT 1").fetchone() is not None
    number = int(read_meta(conn, "autosync.pushes") or 0) + 1
    # the pending records not among those in the CRM: _WAITING without its second scan
    pending = conn.execute(
        "SELECT count(*) FROM autosync_pending WHERE kind IN ('contacts', 'companies')"
    ).fetchone()[0]
    waiting = int(pending) - len(contacts) - len(companies)
    return Batch(number, contacts, companies, waiting, completions)


def settle(
    conn: sqlite3.Connection, batch: Batch, done: dict[str, list[int]], last: AutoSyncPush
) -> None:
    """After a push: forget the records it sent in full, count it, keep its summary."""
    for kind, ids in done.items():
        conn.executemany(
            "DELETE FROM autosync_pending WHERE kind = ? AND id = ?", [(kind, i) for i in ids]
        )
    write_meta(conn, "autosync.pushes", str(batch.number))
    write_meta(conn, "autosync.last", encode(msgspec.structs.replace(last, report=None)).decode())


def read_state(
    conn: sqlite3.Connection,
) -> tuple[CrmConnection | None, int, int, int, int, int, AutoSyncPush | None]:
    last = read_meta(conn, "autosync.last")
    return (
        platform_connection.read(conn),
        int(read_meta(conn, "autosync.pushes") or 0),
        int(read_meta(conn, "autosync.cursor") or 0),
        int(conn.execute("SELECT count(*) FROM autosync_pending").fetchone()[0]),
        int(conn.execute(_WAITING).fetchone()[0]),
        int(conn.execute(f"SELECT count(*) FROM ({rec.COMPLETIONS_DUE})").fetchone()[0]),
        None if last is None else decode(last, AutoSyncPush),
    )


# ---------------------------------------------------------------------------------------------
# The listener


def summarise(report: Report) -> AutoSyncCounts:
    ph = report.phases
    return AutoSyncCounts(
        activities=ph["activities"].created,
        tasksCreated=ph["tasks"].created,
        tasksCompleted=ph["tasks"].updated,
        engagementUpdated=ph["engagement"].updated,
        failed=sum(ph[k].failed for k in ("activities", "tasks", "engagement")),
        requests=sum(s.requests for s in ph.values()),
    )


class AutoSync:
    """The simulation listener of auto-sync; `await autosync(target)` after each advance."""

    def __init__(
        self, emulator: Emulator, transport: httpx.AsyncBaseTransport, *, in_flight: int = IN_FLIGHT
    ) -> None:
        self.emulator = emulator
        self.transport = transport  # how a relative crmUrl ("/crm") reaches this app
        self.in_flight = in_flight
        self.last: AutoSyncPush | None = None  # with the exporter's report
        self._lock = asyncio.Lock()
        # GET /users' verdict per (crmUrl, apiKey): asked once, not on every push.
        self._owner: dict[tuple[str, str], bool] = {}
        emulator.on_reset.append(self._forget)

    def _forget(self) -> None:
        self.last = None
        self._owner.clear()

    async def __call__(self, target: datetime) -> None:
        """Listener entry: never raises (a failure is the push's report, not the advance's)."""
        try:
            await self.push()
        except Exception:
            log.exception("auto-sync failed")

    async def push(self, *, force: bool = False) -> AutoSyncPush | None:
        """Push what the events since the last push changed; None when auto-sync is off
        (and `force` is not given) or there is nothing to send."""
        async with self._lock:
            db = self.emulator.db
            # one row: on this thread once the store is idle, not a hop (every advance asks)
            conn = await db.read(platform_connection.read, brief=True)
            if conn is None or not (conn.autoSync or force) or not await db.read(has_work):
                return None
            batch = await db.write(collect)
            if not (batch.contacts or batch.companies or batch.completions):
                return None
            return await self._push(conn, batch)

    def _exporter(self, conn: CrmConnection, number: int) -> Exporter:
        crm = platform_connection.resolve(conn.crmUrl, in_process=self.transport)
        conn, transport = msgspec.structs.replace(conn, crmUrl=crm.base_url), crm.transport
        policy = RetryPolicy(retries=min(conn.retries, 2), **PUSH_POLICY)  # type: ignore[arg-type]
        clock = self.emulator.clock
        return Exporter(
            self.emulator.db,
            conn,
            now=clock.now_iso,
            export_id=f"autosync-{number}",
            policy=policy,
            transport=transport,
            in_flight=self.in_flight,
            journal_limit=self.emulator.settings.journalLimit,
            journal_bytes=self.emulator.settings.journalBytes,
        )

    async def _push(self, conn: CrmConnection, batch: Batch) -> AutoSyncPush:
        exporter = self._exporter(conn, batch.number)
        key = (conn.crmUrl, conn.apiKey)
        push = AutoSyncPush(
            id=exporter.id,
            at=self.emulator.clock.now_iso(),
            status="ok",
            contacts=len(batch.contacts),
            companies=len(batch.companies),
            waiting=batch.waiting,
        )
        done: dict[str, list[int]] = {}
        try:
            report = await exporter.push_events(
                batch.contacts, batch.companies, owner_selection=self._owner.get(key)
            )
        except Exception as exc:
            log.exception("auto-sync push %s crashed", exporter.id)
            push.status, push.message = "crashed", f"push crashed: {exc}"
            report = exporter.report
        else:
            push.status, push.message = report.status, report.message  # type: ignore[assignment]
            if report.status != "aborted":
                users = report.checks["GET /users"]
                if users.calls and not (users.violations or users.warnings):
                    # a clear answer (users, or no such endpoint): keep it for later pushes
                    self._owner[key] = bool(report.ownerSelection)
                left = exporter.unfinished
                done = {
                    "contacts": [i for i in batch.contacts if i not in left["contacts"]],
                    "companies": [i for i in batch.companies if i not in left["companies"]],
                }
        push.counts = summarise(report)
        push.completionError = next(
            (f.reason for f in report.failed if f.kind == "task completion"), None
        )
        push.retrying = len(batch.contacts) + len(batch.companies) - sum(map(len, done.values()))
        push.seconds = report.seconds
        push.report = report
        await self.emulator.db.write(lambda c: settle(c, batch, done, push))
        self.last = push
        return push

    async def state(self) -> AutoSyncState:
        conn, pushes, cursor, pending, waiting, completions, last = await self.emulator.db.read(
            read_state
        )
        if self.last is not None and last is not None and self.last.id == last.id:
            last = self.last  # the stored summary, plus the exporter's report
        return AutoSyncState(
            enabled=bool(conn and conn.autoSync),
            crmUrl=conn.crmUrl if conn else None,
            pushes=pushes,
            cursor=cursor,
            pending=pending,
            waiting=waiting,
            completionsPending=completions,
            completionError=last.completionError if completions and last else None,
            last=last,
        )


Listener = Callable[[datetime], Any]
__all__ = ["AutoSync", "AutoSyncPush", "AutoSyncState", "InProcessTransport", "Listener"]
