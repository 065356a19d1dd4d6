"""The export sequence of decisions.md §3: health, users, companies, contacts, associations,
activities, tasks, engagement; real HTTP to any CRM, platform writes one hop per batch."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence

from emulator.exporter import records as rec
from emulator.exporter.client import CrmClient, StopExport
from emulator.exporter.context import RunContext, wall_now
from emulator.exporter.phases import (
    activities,
    associations,
    engagement,
    probes,
    record_batches,
    tasks,
)
from emulator.exporter.report import (
    FailedRecord,
    Report,
    RunStatus,
    exit_code,
    settle_endpoints,
)


class Exporter(RunContext):
    """One export run against one CRM: its phases in sequence; `run()` answers the finished report."""

    full_run = False  # run(): every endpoint had its chance (an unexercised one is a finding)

    async def run(self) -> Report:
        """The whole export sequence of decisions.md §3."""
        self.totals = await self.store.read(
            lambda c: {k: rec.count(c, k) for k in ("companies", "contacts")}  # type: ignore[misc]
        )

        async def sequence() -> None:
            await probes.health(self)
            await probes.users(self)
            await record_batches.run(self, "companies")
            await record_batches.run(self, "contacts")
            await associations.run(self)
            await activities.run(self)
            await tasks.run(self)
            await engagement.run(self)

        self.full_run = True
        return await self._session(sequence)

    async def push_events(
        self,
        contacts: Sequence[int],
        companies: Sequence[int],
        *,
        owner_selection: bool | None = None,
    ) -> Report:
        """The incremental push of auto-sync: activities, tasks and engagement of the given
        platform records only (task completions of every record), no health check, no record
        sync. `owner_selection` carries GET /users' verdict from an earlier run (None: ask).

        Records left with something unsent are in `unfinished`; a CRM that does not answer
        at all aborts the push at once (status "aborted"), so a down CRM costs one call.
        """
        self.stop_when_unreachable = True

        async def sequence() -> None:
            if owner_selection is None:
                await probes.users(self)
            else:
                self.owner_enabled = self.report.ownerSelection = owner_selection
            # the engagement reads overlap the activities' and tasks' calls (the CRM's side)
            ahead = engagement.prefetch(self, contacts, companies)
            try:
                await activities.run(self, contacts)
                await tasks.run(self, contacts)
                await engagement.run(self, contacts, companies, ahead)
            finally:
                if ahead is not None:  # a push stopped early reads no more
                    ahead.cancel()
                    if ahead.done() and not ahead.cancelled():
                        ahead.exception()  # retrieved: the phase that needed it stopped first

        return await self._session(sequence)

    async def export_records(
        self,
        contacts: Sequence[int],
        companies: Sequence[int],
        *,
        owner_selection: bool | None = None,
    ) -> Report:
        """Export only the given platform records (an actions run's EXPORT_TO_CRM): health,
        users (unless `owner_selection` is known), companies, contacts, associations."""
        self.record_ids = {"contacts": contacts, "companies": companies}
        self.totals = {"contacts": len(contacts), "companies": len(companies)}

        async def sequence() -> None:
            await probes.health(self)
            if owner_selection is None:
                await probes.users(self)
            else:
                self.owner_enabled = self.report.ownerSelection = owner_selection
            if companies:
                await record_batches.run(self, "companies")
            if contacts:
                await record_batches.run(self, "contacts")
            await associations.run(self)

        return await self._session(sequence)

    def _client(self) -> CrmClient:
        c = self.conn
        return CrmClient(
            c.crmUrl,
            c.apiKey,
            c.apiKeyHeader,
            verify=c.verify,
            ca_file=c.caFile,
            timeout=c.timeoutSeconds,
            policy=self.policy,
            journal=self.journal.add,
            transport=self.transport,
            max_connections=self.in_flight,
        )

    async def _session(self, sequence: Callable[[], Awaitable[None]]) -> Report:
        """Run `sequence` with a client open; a stop aborts it; the report is finished."""
        report = self.report
        t0 = time.perf_counter()
        status: RunStatus = "ok"
        cancelled: asyncio.CancelledError | None = None
        try:
            async with self._client() as self.client:
                await sequence()
        except StopExport as exc:
            status, report.message = "aborted", str(exc)
            self._not_attempted(str(exc))
        except asyncio.CancelledError as exc:  # cancelled (DELETE, a reset, the server stops)
            cancelled, status = exc, "cancelled"
            report.message = f"export cancelled: {self.cancel_reason or 'the task was cancelled'}"
            self._not_attempted("the export was cancelled")
        finally:
            await self.flush_journal()
            report.finishedAt = wall_now()
            report.virtualFinishedAt = self.now()
            report.seconds = round(time.perf_counter() - t0, 4)
        # A full run that went to its end names every endpoint it never called.
        settle_endpoints(report, name_unexercised=self.full_run and status == "ok")
        # Status and exit code change together, after the last await: a reader polling the
        # report never sees it finished without its exit code.
        report.status = status
        report.exitCode = exit_code(report)
        if report.status == "ok" and report.exitCode:
            report.status = "failed"
        if cancelled is not None:  # the report is whole: the cancellation goes on up
            raise cancelled
        return report

    def _not_attempted(self, why: str) -> None:
        """After a stop, every record no batch reached is failed, so none is lost."""
        for kind in ("companies", "contacts"):
            s = self.report.phases[kind]
            left = self.totals.get(kind, 0) - (s.created + s.updated + s.unchanged + s.failed)
            if left > 0:
                s.failed += left
                self.report.failed.append(
                    FailedRecord(
                        kind=kind,
                        id=None,
                        reason=f"{left} record(s) not exported: {why}",
                        phase=kind,
                    )
                )
