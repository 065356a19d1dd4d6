"""EXPORT_TO_CRM of actions runs: the records whose processing ended go to the connected CRM
through the exporter's own code (`Exporter.export_records`), journaled under the exportId
`actions-<runId>`; each record's outcome is its export action's status.

Options (the live actions guide): `CRMOwnerId.value` is the owner sent on creates (and, with
`override`, on updates); `promptLeadFieldsCRMMapping` / `promptCompanyFieldsCRMMapping` add
fields with fixed values to the contacts / companies sent (on updates only with `override`);
`overwriteFields` set to false leaves those fields out of updates; `exportAssociatedObject`
also exports the contacts' companies (for a company run: the companies' contacts).
"""

from __future__ import annotations

import functools
import logging
import sqlite3
from collections.abc import Callable
from datetime import datetime
from typing import Any

import httpx
import msgspec

from emulator.exporter import records as rec
from emulator.exporter.plan import Kind
from emulator.exporter.report import Report
from emulator.exporter.run import Exporter
from emulator.fixtures.models import CrmConnection
from emulator.outbound import RetryPolicy
from emulator.platform import connection as platform_connection
from emulator.simulation.actions import types
from emulator.simulation.actions.runs import (
    TABLE,
    parse_actions,
    queue_completions,
    read_exports,
    store_state,
    timeline_of,
)
from emulator.simulation.crm_link.health import fresh_owner_selection, read_health
from emulator.state import Emulator
from emulator.wire import encode

log = logging.getLogger(__name__)

# Few, short retries: an advance of the clock must not stall on a struggling CRM.
POLICY: dict[str, float] = {"base": 0.05, "cap": 0.5, "retry_after_cap": 2.0}


class Job(msgspec.Struct):
    """The records of one run waiting for their export: positions `first` .. `last` - 1."""

    run_id: int
    entity: str
    record_ids: list[int]
    first: int
    last: int
    options: types.ExportOptions


_ANSWERED = "(SELECT count(*) FROM actions_exports e WHERE e.runId = s.runId)"
_EXPORTING = (
    " FROM actions_schedule s JOIN actions_runs r ON r.id = s.runId"
    " WHERE r.actions LIKE '%\"EXPORT_TO_CRM\"%'"
)


def any_pending(conn: sqlite3.Connection) -> bool:
    """Whether a run that exports has ended records without an export outcome (`pending`
    finds a job)."""
    sql = f"SELECT EXISTS (SELECT 1{_EXPORTING} AND {_ANSWERED} < s.contactsDone)"
    return bool(conn.execute(sql).fetchone()[0])


def pending(
    conn: sqlite3.Connection, now: datetime
) -> tuple[list[Job], CrmConnection | None, bool | None]:
    """Runs with ended records whose export has no outcome yet, the connection, and the owner
    selection the connection's last users probe found (None: not known or stale)."""
    jobs = []
    rows = conn.execute(
        "SELECT s.runId, s.contactsDone, r.actions, r.contactIds, r.entity,"
        f" {_ANSWERED}{_EXPORTING} ORDER BY s.runId"
    ).fetchall()
    for run_id, done, actions, record_ids, entity, answered in rows:
        if answered >= done:
            continue
        options = next(o for o in parse_actions(actions) if isinstance(o, types.ExportOptions))
        ids: list[int] = msgspec.json.decode(record_ids, type=list[int])
        jobs.append(Job(run_id, entity, ids, answered, done, options))
    connection = platform_connection.read(conn)
    health = read_health(conn)
    return jobs, connection, fresh_owner_selection(health, connection, now)


def _shape(
    options: types.ExportOptions, exporter: Exporter
) -> Callable[[Kind, dict[str, Any], bool], dict[str, Any]]:
    """The exporter's item hook that applies the export options."""
    owner = options.CRMOwnerId

    def shape(kind: Kind, item: dict[str, Any], update: bool) -> dict[str, Any]:
        item = dict(item)
        if update:
            for name, keep in options.overwriteFields.items():
                if not keep:
                    item.pop(name, None)
            if owner is not None and owner.override and exporter.owner_enabled:
                item["ownerId"] = owner.value
        mapping = (
            options.promptLeadFieldsCRMMapping
            if kind == "contacts"
            else options.promptCompanyFieldsCRMMapping
        )
        for name, field in mapping.items():
            if field.override or not update:
                item[name] = field.value
        return item

    return shape


def _scope(conn: sqlite3.Connection, job: Job) -> tuple[list[int], list[int]]:
    """(contacts, companies) to export for the job's records."""
    ids = job.record_ids[job.first : job.last]
    marks = encode(ids).decode()
    if job.entity == "COMPANY":
        contacts = (
            []
            if not job.options.exportAssociatedObject
            else [
                r[0]
                for r in conn.execute(
                    "SELECT id FROM contacts WHERE companyId IN (SELECT value FROM json_each(?))"
                    " ORDER BY id",
                    (marks,),
                )
            ]
        )
        return contacts, sorted(set(ids))
    companies = (
        []
        if not job.options.exportAssociatedObject
        else [
            r[0]
            for r in conn.execute(
                "SELECT DISTINCT companyId FROM contacts WHERE id IN (SELECT value FROM json_each(?))"
                " AND companyId IS NOT NULL ORDER BY companyId",
                (marks,),
            )
        ]
    )
    return sorted(set(ids)), companies


def outcomes(conn: sqlite3.Connection, job: Job, report: Report | None) -> list[bool]:
    """Per record of the job: exported (in the CRM now, not among the report's failures)."""
    ids = job.record_ids[job.first : job.last]
    kind = TABLE[job.entity]
    if report is None or report.status == "aborted":
        return [False] * len(ids)
    listed = [f for f in report.failed if f.kind == kind]
    if any(f.id is None for f in listed) or report.phases[kind].failed > len(listed):
        return [False] * len(ids)  # failures not listed one by one: none is sure
    failed = {f.id for f in listed}
    column = rec.CRM_ID_COLUMN[kind]
    in_crm = {
        r[0]
        for r in conn.execute(
            f"SELECT id FROM {kind} WHERE {column} IS NOT NULL AND id IN"
            " (SELECT value FROM json_each(?))",
            (encode(ids).decode(),),
        )
    }
    return [i in in_crm and str(i) not in failed for i in ids]


def _settle(conn: sqlite3.Connection, job: Job, report: Report | None, target: datetime) -> None:
    """Store the job's outcomes, the run's status, and queue the completions they settle."""
    results = outcomes(conn, job, report)
    conn.executemany(
        "INSERT OR IGNORE INTO actions_exports(runId, recordIndex, ok, exportId) VALUES (?, ?, ?, ?)",
        [
            (job.run_id, job.first + i, int(ok), f"actions-{job.run_id}")
            for i, ok in enumerate(results)
        ],
    )
    start, actions, record_ids, url = conn.execute(
        "SELECT s.startAt, r.actions, r.contactIds, r.webhookUrl FROM actions_schedule s"
        " JOIN actions_runs r ON r.id = s.runId WHERE s.runId = ?",
        (job.run_id,),
    ).fetchone()
    timeline = timeline_of(job.run_id, start, actions, record_ids, read_exports(conn, job.run_id))
    store_state(conn, timeline, target)
    queue_completions(conn, timeline, job.entity, url, range(job.first, job.last))


class ActionsExports:
    """Runs the pending exports of actions runs after each advance (DeliveryListener calls it
    before delivering, so completions go out in the same tick)."""

    def __init__(self, emulator: Emulator, transport: httpx.AsyncBaseTransport | None) -> None:
        self.emulator = emulator
        self.transport = transport  # this app in-process, for a relative crmUrl ("/crm")

    def _exporter(self, conn: CrmConnection, run_id: int) -> Exporter:
        crm = platform_connection.resolve(conn.crmUrl, in_process=self.transport)
        conn, transport = msgspec.structs.replace(conn, crmUrl=crm.base_url), crm.transport
        clock = self.emulator.clock
        return Exporter(
            self.emulator.db,
            conn,
            now=clock.now_iso,
            export_id=f"actions-{run_id}",
            policy=RetryPolicy(retries=min(conn.retries, 2), **POLICY),  # type: ignore[arg-type]
            transport=transport,
            journal_limit=self.emulator.settings.journalLimit,
            journal_bytes=self.emulator.settings.journalBytes,
        )

    async def __call__(self, target: datetime) -> None:
        db = self.emulator.db
        # most advances find no export to make: a brief read on this thread tells so, not a
        # hop to the database thread
        if not await db.read(any_pending, brief=True):
            return
        jobs, connection, owner_selection = await db.read(lambda conn: pending(conn, target))
        for job in jobs:
            report = None
            if connection is not None:
                report = await self._export(job, connection, owner_selection)
            await db.write(functools.partial(_settle, job=job, report=report, target=target))

    async def _export(
        self, job: Job, connection: CrmConnection, owner_selection: bool | None
    ) -> Report | None:
        owner = job.options.CRMOwnerId
        if owner is not None:
            connection = msgspec.structs.replace(connection, ownerId=owner.value)
        exporter = self._exporter(connection, job.run_id)
        exporter.shape_item = _shape(job.options, exporter)
        contacts, companies = await self.emulator.db.read(lambda conn: _scope(conn, job))
        try:
            return await exporter.export_records(
                contacts, companies, owner_selection=owner_selection
            )
        except Exception:  # the records' export failed; the run goes on
            log.exception("export of actions run %s crashed", job.run_id)
            return None
