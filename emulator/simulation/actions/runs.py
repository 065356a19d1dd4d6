"""Actions runs on the clock: their stored status follows the timeline, each completed action
changes its record when the record's processing ends (effects.py), EXPORT_TO_CRM
exports the ended records through the exporter, and each record whose actions all ended gets
one completion delivery to the run's `webhookUrl` (retried like webhooks).

Completion payload: {"eventType": "ACTIONS_CONTACT_COMPLETED", "timestamp": <end time>,
"data": {"actionsId", "entity", "contactId" (or "companyId"), "status":
COMPLETED|PARTIAL|FAILED, "actions": [{"type", "status": COMPLETED|FAILED}]}}.

Bookkeeping: `actions_schedule.contactsDone` counts the records whose effects are applied
(and, in a run without an export, whose completion is queued); `actions_exports` holds each
exported record's outcome, and a run with an export queues a record's completion with it.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import Any

from emulator.platform import actions_runs
from emulator.platform.records import Table, apply
from emulator.simulation.actions import types
from emulator.simulation.actions.effects import company_changes, contact_changes
from emulator.simulation.actions.timeline import Timeline
from emulator.simulation.webhooks.queue import ACTIONS, enqueue
from emulator.store.db import Store
from emulator.wire import decode, encode, now_iso, parse_iso

COMPLETION_EVENT = "ACTIONS_CONTACT_COMPLETED"
TABLE: dict[str, Table] = {"CONTACT": "contacts", "COMPANY": "companies"}


def schedule(conn: sqlite3.Connection, run_id: int, start: str) -> None:
    """Make a new run progress on the clock from `start` (POST /v1/actions calls this)."""
    conn.execute("INSERT INTO actions_schedule(runId, startAt) VALUES (?, ?)", (run_id, start))


def read_exports(conn: sqlite3.Connection, run_id: int) -> dict[int, bool]:
    """The answered exports of a run: record position -> exported."""
    return {
        i: bool(ok)
        for i, ok in conn.execute(
            "SELECT recordIndex, ok FROM actions_exports WHERE runId = ?", (run_id,)
        )
    }


def timeline_of(
    run_id: int, start: str, actions: str, record_ids: str, exports: dict[int, bool] | None = None
) -> Timeline:
    entries: list[dict[str, Any]] = decode(actions, list[dict[str, Any]])
    kinds = [str(entry.get("type", "")) for entry in entries]
    return Timeline(run_id, parse_iso(start), decode(record_ids, list[int]), kinds, exports)


def _completion(timeline: Timeline, entity: str, index: int, at: str) -> dict[str, Any]:
    results = timeline.contact_results(index)
    status = "COMPLETED" if all(results) else "FAILED" if not any(results) else "PARTIAL"
    id_field = "companyId" if entity == "COMPANY" else "contactId"
    return {
        "eventType": COMPLETION_EVENT,
        "timestamp": at,
        "data": {
            "actionsId": timeline.run_id,
            "entity": entity,
            id_field: timeline.contact_ids[index],
            "status": status,
            "actions": [
                {"type": kind, "status": "COMPLETED" if ok else "FAILED"}
                for kind, ok in zip(timeline.action_types, results, strict=True)
            ],
        },
    }


def queue_completions(
    conn: sqlite3.Connection, timeline: Timeline, entity: str, url: str | None, indexes: range
) -> None:
    if not url:
        return
    queued = []
    for index in indexes:
        at = now_iso(timeline.ends_at(index))
        payload = encode(_completion(timeline, entity, index, at)).decode()
        queued.append((at, ACTIONS, timeline.run_id, index, 1, COMPLETION_EVENT, url, payload))
    enqueue(conn, queued)


def store_state(conn: sqlite3.Connection, timeline: Timeline, target: datetime) -> None:
    state = timeline.state(target)
    actions_runs.set_status(
        conn, timeline.run_id, state.overallStatus, encode(state.counts).decode()
    )


# ---- effects on the records ---------------------------------------------------------------


def _row(conn: sqlite3.Connection, table: str, record_id: int | None) -> dict[str, Any] | None:
    if record_id is None:
        return None
    cursor = conn.execute(f"SELECT * FROM {table} WHERE id = ?", (record_id,))
    row = cursor.fetchone()
    return None if row is None else dict(zip((d[0] for d in cursor.description), row, strict=True))


def _record_effects(
    conn: sqlite3.Connection,
    timeline: Timeline,
    entity: str,
    options: list[types.Options],
    index: int,
) -> None:
    """Every completed action of record `index` changes its record, in action order."""
    at = now_iso(timeline.ends_at(index))
    table = TABLE[entity]
    record = _row(conn, table, timeline.contact_ids[index])
    if record is None:  # gone since the run started: nothing to change
        return
    company = _row(conn, "companies", record.get("companyId")) if entity == "CONTACT" else None
    for position, (kind, ok) in enumerate(
        zip(timeline.action_types, timeline.contact_results(index), strict=True)
    ):
        if not ok or position == timeline.export_at:
            continue
        if entity == "COMPANY":
            apply(
                conn,
                table,
                record,
                company_changes(kind, options[position], timeline.run_id, position, record),
                at,
            )
            continue
        mine, theirs = contact_changes(
            kind, options[position], timeline.run_id, position, record, company
        )
        apply(conn, table, record, mine, at)
        if company is not None and theirs:
            apply(conn, "companies", company, theirs, at)


def parse_actions(actions: str) -> list[types.Options]:
    """The stored actions' typed options (validated when the run was started)."""
    entries: list[dict[str, Any]] = decode(actions, list[dict[str, Any]])
    return [types.parse_options(str(e.get("type")), e.get("options")) for e in entries]


_UNFINISHED = (
    " FROM actions_schedule s JOIN actions_runs r ON r.id = s.runId"
    " WHERE s.contactsDone < json_array_length(r.contactIds)"
)


def any_unfinished(conn: sqlite3.Connection) -> bool:
    """Whether a run has records whose effects are not applied yet (`_step` has work)."""
    return bool(conn.execute(f"SELECT EXISTS (SELECT 1{_UNFINISHED})").fetchone()[0])


def _step(conn: sqlite3.Connection, target: datetime) -> None:
    rows = conn.execute(
        "SELECT s.runId, s.startAt, s.contactsDone, r.actions, r.contactIds, r.webhookUrl,"
        f" r.entity{_UNFINISHED} ORDER BY s.runId"
    ).fetchall()
    due: list[tuple[datetime, int, int]] = []  # (end time, run, record position)
    runs: dict[int, tuple[Timeline, str, list[types.Options]]] = {}
    for run_id, start, done, actions, record_ids, url, entity in rows:
        timeline = timeline_of(run_id, start, actions, record_ids, read_exports(conn, run_id))
        ended = timeline.ended(target)
        runs[run_id] = (timeline, entity, parse_actions(actions))
        due += [(timeline.ends_at(i), run_id, i) for i in range(done, ended)]
        store_state(conn, timeline, target)
        if timeline.export_at is None:  # otherwise queued once the export answered
            queue_completions(conn, timeline, entity, url, range(done, ended))
        if ended != done:
            conn.execute(
                "UPDATE actions_schedule SET contactsDone = ? WHERE runId = ?", (ended, run_id)
            )
    # Global time order: the records' state does not depend on how the clock was advanced.
    for _, run_id, index in sorted(due):
        timeline, entity, options = runs[run_id]
        _record_effects(conn, timeline, entity, options, index)


async def step_runs(store: Store, target: datetime) -> None:
    """Bring every unfinished run to `target`: effects, stored status, completion deliveries
    (exports are `actions_export.export_due`'s). Most advances find every run finished: a
    brief read on this thread tells so, not a write on the database thread."""
    if await store.read(any_unfinished, brief=True):
        await store.write(lambda conn: _step(conn, target))
