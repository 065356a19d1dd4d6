"""The state one export run shares between its phases, and the plumbing they all use."""

from __future__ import annotations

import asyncio
import sqlite3
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import partial
from typing import Any

import httpx

from emulator.exporter import plan as p
from emulator.exporter.client import CrmClient, Exchange, MalformedBody, RetryPolicy, StopExport
from emulator.exporter.endpoints import count_call, count_unreadable
from emulator.exporter.idset import IdSet
from emulator.exporter.journal import JOURNAL_BUFFER, JOURNAL_BYTES, Journal
from emulator.exporter.plan import Finding, Kind
from emulator.exporter.report import (
    FAILED_CAP,
    FailedRecord,
    Progress,
    add_finding,
    hold_back,
    new_report,
)
from emulator.fixtures.models import CrmConnection
from emulator.redaction import Redactor
from emulator.store.db import Store

# Journal bodies (characters) a brief write may carry: more is stored by a hop, off the loop.
BRIEF_JOURNAL = 64 * 1024


def wall_now() -> str:
    """The wall clock in UTC, ISO 8601 with milliseconds (reports' start and end times)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def json_or_none(ex: Exchange) -> Any:
    """The decoded answer, or None when it is not JSON (the checks treat both alike)."""
    try:
        return ex.json()
    except MalformedBody:
        return None


# Phases whose progress counts records answered (`advance`); every other phase's counts the
# records it has sent so far, after each call, against its total when it knows one.
RECORD_PHASES = frozenset({"companies", "contacts"})


class RunContext:
    """What the phases of one export run share: its settings, report, journal, client and the
    bookkeeping between phases; and the plumbing every phase uses (calls, failures, write hops)."""

    client: CrmClient  # open while a sequence runs (Exporter._session)

    def __init__(
        self,
        store: Store,
        connection: CrmConnection,
        *,
        now: Callable[[], str],
        export_id: str | None = None,
        policy: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        in_flight: int = 4,
        journal_limit: int = 10_000,
        journal_bytes: int = JOURNAL_BYTES,
        on_progress: Callable[[Progress], None] | None = None,
        strict: bool = False,
        notes: Sequence[str] = (),
    ) -> None:
        self.store, self.conn, self.now = store, connection, now
        self.batch_size = max(1, min(connection.batchSize, 100))
        self.policy = policy or RetryPolicy(retries=connection.retries)
        self.transport, self.in_flight = transport, max(1, in_flight)
        self.id = export_id or uuid.uuid4().hex[:12]
        self.report = new_report(self.id, connection.crmUrl, wall_now(), now())
        self.report.strict = strict
        self.report.notes = list(notes)
        self.journal = Journal(
            self.id, now, journal_limit, journal_bytes, redactor=Redactor([connection.apiKey])
        )
        self.on_progress = on_progress
        self.owner_enabled = True
        self.totals: dict[str, int] = {}
        # Contacts exported this run with a company in the CRM: their links are the
        # associations phase's (their CRM ids are read back then: a compact set, not strings).
        self.linked = IdSet()
        # Platform ids of the records a push left something unsent for (retried next push).
        self.unfinished: dict[str, set[int]] = {"contacts": set(), "companies": set()}
        self.stop_when_unreachable = False  # a push gives up at once on a CRM that is down
        # export_records: the platform ids to export per kind (None: every record)
        self.record_ids: dict[str, Sequence[int]] | None = None
        # Reshapes each create (False) and update (True) item before it is sent (actions runs'
        # field-mapping options); None: items as planned.
        self.shape_item: Callable[[Kind, dict[str, Any], bool], dict[str, Any]] | None = None
        # Platform ids whose CRM id this run learnt (sync match or create), per kind, set by
        # the records phase: a run that syncs sends no CRM id it did not learn (decisions.md
        # §3); a push (None) has no sync and trusts the stored ids.
        self.learned: dict[str, IdSet] | None = None
        # The failure entry of each record that failed in the companies or contacts phase:
        # what it holds back is noted on it.
        self.record_failures: dict[tuple[str, int], FailedRecord] = {}
        # Every company and contact that failed this run (also past the report's cap): what
        # depends on one is held back.
        self.failed_records: set[tuple[str, int]] = set()
        self._phase = "health"
        self.cancel_reason: str | None = None  # set by whoever cancels the run (its report says)

    # -- plumbing ------------------------------------------------------------------------------

    @property
    def phase(self) -> str:
        """The phase running now: health, users, companies, contacts, ... (report.phases keys)."""
        return self._phase

    @property
    def owner_id(self) -> str | None:
        return self.conn.ownerId if self.owner_enabled else None

    @contextmanager
    def timed(self, phase: str) -> Any:
        self._phase = phase
        self.progress(phase, 0, self.totals.get(phase, 0))
        t0, cpu0 = time.perf_counter(), time.process_time()
        try:
            yield self.report.phases[phase]
        finally:
            stats = self.report.phases[phase]
            stats.seconds = round(stats.seconds + time.perf_counter() - t0, 4)
            stats.cpuSeconds = round(stats.cpuSeconds + time.process_time() - cpu0, 4)

    def progress(self, phase: str, done: int, total: int) -> None:
        self.report.progress = Progress(phase=phase, done=done, total=total)
        if self.on_progress is not None:
            self.on_progress(self.report.progress)

    async def call(self, check: str, method: str, path: str, body: Any = None) -> Exchange:
        try:
            ex = await self.client.call(method, path, body)
        except StopExport:  # the key was rejected (401): a call answered all the same
            count_call(self.report.endpoints, check, 401, None, 1)
            raise
        count_call(self.report.endpoints, check, ex.status, ex.error, ex.attempts)
        if ex.status == 0 and self.stop_when_unreachable:
            raise StopExport(f"CRM unreachable at {self.conn.crmUrl}: {ex.error}")
        stats = self.report.phases[self._phase]
        stats.requests += 1
        if self._phase not in RECORD_PHASES:  # those count records done (`advance`)
            self.progress(self._phase, stats.sent, self.totals.get(self._phase, 0))
        self.report.checks[check].calls += 1
        if self.journal.buffered >= JOURNAL_BUFFER:  # phases without write hops of their own
            await self.flush_journal()
        return ex

    def finding(self, f: Finding, ex: Exchange | None, check: str | None = None) -> None:
        add_finding(self.report, f, ex, check)

    def answer(self, ex: Exchange, check: str) -> tuple[Any, str | None]:
        """The decoded body of a 2xx answer, or why the records it was for failed."""
        if not ex.ok:
            if ex.status in p.MISSING_ENDPOINT:
                self.finding(
                    Finding("violation", check, f"endpoint missing: answered {ex.status}"), ex
                )
            return None, ex.describe()
        try:
            return ex.json(), None
        except MalformedBody as exc:
            count_unreadable(self.report.endpoints, check)
            self.finding(
                Finding("violation", check, "answered a body that is not JSON", str(exc)), ex
            )
            return None, str(exc)

    def fail(
        self, phase: str, kind: str, record_id: str | None, reason: str
    ) -> FailedRecord | None:
        self.report.phases[phase].failed += 1
        if len(self.report.failed) >= FAILED_CAP:
            return None
        failed = FailedRecord(kind=kind, id=record_id, reason=reason, phase=phase)
        self.report.failed.append(failed)
        return failed

    def fail_record(self, kind: Kind, row: dict[str, Any], reason: str) -> None:
        """A company or contact failed: once in the report, where its dependents get noted."""
        failure = self.fail(kind, kind, str(row["id"]), reason)
        self.failed_records.add((kind, row["id"]))
        if failure is not None:
            self.record_failures[(kind, row["id"])] = failure

    def unlearnt(self, kind: str, record_id: int | None) -> bool:
        """Whether a full run must not send this record's stored CRM id: it did not learn it."""
        return (
            self.learned is not None
            and record_id is not None
            and record_id not in self.learned[kind]
        )

    def held_back(self, phase: str, dependent: str, *records: tuple[str, int | None]) -> bool:
        """Whether `dependent` waits because one of `records` (kind, platform id) has no CRM id
        this run learnt (a record that failed before its id was learnt among them); if so it
        is counted held back and noted on those records' failures."""
        blocking = [(k, i) for k, i in records if self.unlearnt(k, i)]
        if not blocking:
            return False
        self.report.phases[phase].heldBack += 1
        for key in blocking:
            failure = self.record_failures.get(key)  # type: ignore[arg-type]
            if failure is not None:
                hold_back(failure, dependent)
        return True

    async def write(self, fn: Callable[[sqlite3.Connection], Any], *, brief: bool = False) -> Any:
        """One write hop carrying `fn` and the journal's buffered attempts. `brief`: `fn` is a
        few statements (the send log's intents and CRM ids), run on the event loop's thread
        when the database thread is idle (`Store.write`), unless the journal holds more than
        BRIEF_JOURNAL bytes of bodies: a POST waits for its intent's commit, and the hop to
        the database thread and back (~75 us of CPU) costs more than such a write."""
        brief = brief and self.journal.buffered <= BRIEF_JOURNAL
        rows = self.journal.take()
        ran = False

        def both(conn: sqlite3.Connection) -> Any:
            nonlocal ran
            ran = True
            result = fn(conn)
            self.journal.store(conn, rows)
            return result

        if brief:
            # Awaited directly: with the database thread idle it runs at once, and the caller
            # (a POST waiting for its intent) goes on in the same turn of the event loop. A
            # cancel can only come while it waits for that thread, before anything is written.
            try:
                return await self.store.write(both, brief=True)
            except asyncio.CancelledError:
                if not ran:
                    self.journal.put_back(rows)
                raise
        hop = asyncio.ensure_future(self.store.write(both))
        try:
            return await asyncio.shield(hop)
        except asyncio.CancelledError:
            # Cancelled mid-hop: the database thread commits it anyway, so wait for it and let
            # the caller count what it wrote (the report stays true), then stop at the next
            # await instead.
            result = await hop
            task = asyncio.current_task()
            if task is not None:
                task.cancel()
            return result

    async def flush_journal(self) -> None:
        """Store the journal's buffered attempts now: a write hop carrying nothing else."""
        await self.store.write(partial(self.journal.store, rows=self.journal.take()))

    async def bounded(
        self,
        jobs: Any,
        work: Callable[[Any], Coroutine[Any, Any, None]],
        starting: Callable[[list[Any]], Awaitable[None]] | None = None,
    ) -> None:
        """Run work(job) for each job of an async iterator, at most `in_flight` at once.

        `starting(jobs)`, when given, is awaited before the jobs that start together (as many
        as there are free slots, taken in one turn of the event loop) begin their work.
        The first error (a StopExport, say) cancels the jobs still running and is raised.
        """
        sem = asyncio.Semaphore(self.in_flight)
        pending: set[asyncio.Task[None]] = set()
        errors: list[BaseException] = []
        together: list[Any] = []

        def finished(task: asyncio.Task[None]) -> None:
            pending.discard(task)
            sem.release()
            if not task.cancelled() and task.exception() is not None:
                errors.append(task.exception())  # type: ignore[arg-type]

        async def start() -> None:
            if starting is not None:
                await starting(together)
            for job in together:
                task = asyncio.create_task(work(job))
                pending.add(task)
                task.add_done_callback(finished)
            together.clear()

        try:
            async for job in jobs:
                await sem.acquire()
                if errors:
                    sem.release()
                    break
                together.append(job)
                if starting is None or sem.locked():
                    await start()
            if together and not errors:
                await start()
            while pending and not errors:
                await asyncio.wait(set(pending), return_when=asyncio.FIRST_EXCEPTION)
        finally:
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)
        if errors:
            raise errors[0]

    async def pages(
        self,
        reader: Callable[..., list[Any]],
        key: Callable[[Any], int],
        limit: int,
    ) -> Any:
        """Pages of `reader(conn, after=, limit=)` in id order, one read hop each; `key` of a
        page's last row is where the next page starts."""
        after = 0
        while rows := await self.store.read(partial(reader, after=after, limit=limit)):
            after = key(rows[-1])
            yield rows

    def owner_for(self, campaign_owner: str | None) -> str | None:
        """An activity's or task's owner: its campaign's, else the connection's (if selecting)."""
        return (campaign_owner or self.conn.ownerId) if self.owner_enabled else None

    def advance(self, kind: str) -> None:
        s = self.report.phases[kind]
        self.progress(
            kind, s.created + s.updated + s.unchanged + s.failed, self.totals.get(kind, 0)
        )
