"""Actions runs: starting one over contacts, and its status.

A run started here progresses on the virtual clock (simulation/actions_timeline.py): its
status is computed for the clock's current time on every read. Fixture runs keep the state
their fixture gives them.
"""

from __future__ import annotations

import sqlite3

from emulator.errors import BadRequest, NotFound, refuse_control_target
from emulator.fixtures.models import StatusCounts
from emulator.public_api.context import ApiContext
from emulator.public_api.schemas import ActionsIn, ActionsRunCreated, ActionsRunStatus
from emulator.simulation.actions_runs import schedule, timeline_of
from emulator.wire import decode, encode

ENTITY = "CONTACT"


def progress(counts: StatusCounts, total: int) -> float:
    """Percent of the actions that reached an end (completed, failed or cancelled)."""
    if total <= 0:
        return 0.0
    done = counts.completed + counts.failed + counts.cancelled
    return round(100.0 * done / total, 2)


def _unknown_contacts(conn: sqlite3.Connection, ids: list[int]) -> list[int]:
    wanted = sorted(set(ids))
    known: set[int] = set()
    for start in range(0, len(wanted), 500):  # stay far below SQLite's variable limit
        chunk = wanted[start : start + 500]
        marks = ",".join("?" * len(chunk))
        known.update(r[0] for r in conn.execute(
            f"SELECT id FROM contacts WHERE id IN ({marks})", chunk))
    return [i for i in wanted if i not in known]


async def start_run(ctx: ApiContext, body: ActionsIn) -> ActionsRunCreated:
    """Queue every action for every contact; unknown contact ids are a 400 naming them."""
    if body.webhookUrl is not None:
        refuse_control_target("webhookUrl", body.webhookUrl)
    now = ctx.now()
    total = len(body.actions) * len(body.contactIds)
    counts = StatusCounts(queued=total)

    def insert(conn: sqlite3.Connection) -> int:
        unknown = _unknown_contacts(conn, body.contactIds)
        if unknown:
            shown = ", ".join(map(str, unknown[:20])) + (" ..." if len(unknown) > 20 else "")
            raise BadRequest.field("contactIds", f"unknown contact id(s): {shown}")
        cursor = conn.execute(
            "INSERT INTO actions_runs(entity, actions, contactIds, webhookUrl, overallStatus,"
            " statusCounts, createdAt) VALUES (?, ?, ?, ?, 'QUEUED', ?, ?)",
            (ENTITY, encode(body.actions).decode(), encode(body.contactIds).decode(),
             body.webhookUrl, encode(counts).decode(), now),
        )
        run_id = cursor.lastrowid or 0
        schedule(conn, run_id, now)
        return run_id

    run_id = await ctx.store.write(insert)
    return ActionsRunCreated(actionsId=run_id, createdAt=now)


async def run_status(ctx: ApiContext, run_id: int) -> ActionsRunStatus:
    row = await ctx.store.fetchone(
        "SELECT r.id, r.entity, r.actions, r.contactIds, r.overallStatus, r.statusCounts,"
        " r.createdAt, s.startAt FROM actions_runs r"
        " LEFT JOIN actions_schedule s ON s.runId = r.id WHERE r.id = ?",
        (run_id,),
    )
    if row is None:
        raise NotFound(f"Actions run {run_id} not found")
    total = len(decode(row[2], list)) * len(decode(row[3], list))
    status: str = row[4]
    counts: StatusCounts = decode(row[5], StatusCounts)
    if row[7] is not None:  # progresses on the clock: where it stands now
        state = timeline_of(row[0], row[7], row[2], row[3]).state(ctx.emulator.clock.now())
        status, counts = state.overallStatus, state.counts
    return ActionsRunStatus(
        actionsId=row[0], entity=row[1], overallStatus=status,  # type: ignore[arg-type]
        totalActions=total, statusCounts=counts, progress=progress(counts, total),
        createdAt=row[6],
    )
