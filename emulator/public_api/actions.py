"""Actions runs: starting one over contacts or companies (given, or the members of lists),
and its status.

A run started here progresses on the virtual clock (simulation/actions/timeline.py): its
status is computed for the clock's current time (and its exports' outcomes) on every read.
Fixture runs keep the state their fixture gives them.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from emulator.errors import BadRequest, NotFound, refuse_control_target
from emulator.fixtures.models import StatusCounts
from emulator.platform import actions_runs
from emulator.public_api.context import ApiContext
from emulator.public_api.schemas import ActionIn, ActionsIn, ActionsRunCreated, ActionsRunStatus
from emulator.simulation.actions import types
from emulator.simulation.actions.runs import read_exports, schedule, timeline_of
from emulator.wire import decode, encode

TARGETS = {  # body field -> (entity, list type or None for record ids)
    "contactIds": ("CONTACT", None),
    "companyIds": ("COMPANY", None),
    "contactGroupIds": ("CONTACT", "CONTACTS"),
    "companyGroupIds": ("COMPANY", "COMPANIES"),
}


def progress(counts: StatusCounts, total: int) -> float:
    """Percent of the actions that reached an end (completed, failed or cancelled)."""
    if total <= 0:
        return 0.0
    done = counts.completed + counts.failed + counts.cancelled
    return round(100.0 * done / total, 2)


def check_actions(actions: list[ActionIn]) -> list[dict[str, Any]]:
    """Each action's type and options as documented; answers them as stored."""
    stored = []
    for i, action in enumerate(actions):
        try:
            types.parse_options(action.type, action.options)
        except types.OptionsError as exc:
            raise BadRequest.field(f"actions[{i}].{exc.field}", exc.message) from None
        entry: dict[str, Any] = {"type": action.type}
        if action.options:
            entry["options"] = action.options
        stored.append(entry)
    if [a.type for a in actions].count(types.EXPORT) > 1:
        raise BadRequest.field("actions", "at most one EXPORT_TO_CRM per run")
    return stored


def target_of(body: ActionsIn) -> tuple[str, list[int]]:
    """The one target field given, and its ids."""
    given = [name for name in TARGETS if getattr(body, name) is not None]
    if len(given) != 1:
        names = ", ".join(TARGETS)
        raise BadRequest.field(
            given[1] if given else "contactIds",
            f"give exactly one of {names} (got {', '.join(given) or 'none'})",
        )
    return given[0], getattr(body, given[0])


def _shown(ids: list[int]) -> str:
    return ", ".join(map(str, ids[:20])) + (" ..." if len(ids) > 20 else "")


def _unknown(conn: sqlite3.Connection, table: str, ids: list[int], where: str = "") -> list[int]:
    wanted = sorted(set(ids))
    known = {
        r[0]
        for r in conn.execute(
            f"SELECT id FROM {table} WHERE id IN (SELECT value FROM json_each(?)){where}",
            (encode(wanted).decode(),),
        )
    }
    return [i for i in wanted if i not in known]


def resolve_records(conn: sqlite3.Connection, field: str, ids: list[int]) -> tuple[str, list[int]]:
    """The run's entity and record ids: the given ones, or the members of the given lists (in
    list order, then member id; each record once). Unknown ids are a 400 naming them."""
    entity, list_type = TARGETS[field]
    table = "contacts" if entity == "CONTACT" else "companies"
    if list_type is None:
        unknown = _unknown(conn, table, ids)
        if unknown:
            raise BadRequest.field(field, f"unknown {entity.lower()} id(s): {_shown(unknown)}")
        return entity, ids
    unknown = _unknown(conn, "lists", ids, f" AND type = '{list_type}'")
    if unknown:
        raise BadRequest.field(field, f"unknown {list_type.lower()} list id(s): {_shown(unknown)}")
    members: dict[int, None] = {}
    for list_id in ids:
        for (member,) in conn.execute(
            f"SELECT m.entityId FROM list_members m JOIN {table} r ON r.id = m.entityId"
            " WHERE m.listId = ? ORDER BY m.entityId",
            (list_id,),
        ):
            members.setdefault(member, None)
    if not members:
        raise BadRequest.field(field, "the lists have no members: nothing to run")
    return entity, list(members)


async def start_run(ctx: ApiContext, body: ActionsIn) -> ActionsRunCreated:
    """Queue every action for every record of the target; a bad action, target or id is a
    400 naming it, and nothing is started."""
    if body.webhookUrl is not None:
        refuse_control_target("webhookUrl", body.webhookUrl)
    now = ctx.now()
    field, ids = target_of(body)
    actions = check_actions(body.actions)

    def insert(conn: sqlite3.Connection) -> int:
        entity, records = resolve_records(conn, field, ids)
        counts = StatusCounts(queued=len(actions) * len(records))
        run_id = actions_runs.create_run(
            conn,
            entity,
            encode(actions).decode(),
            encode(records).decode(),
            body.webhookUrl,
            encode(counts).decode(),
            now,
        )
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
        exports = await ctx.store.read(lambda conn: read_exports(conn, run_id))
        timeline = timeline_of(row[0], row[7], row[2], row[3], exports)
        state = timeline.state(ctx.emulator.clock.now())
        status, counts = state.overallStatus, state.counts
    return ActionsRunStatus(
        actionsId=row[0],
        entity=row[1],
        overallStatus=status,  # type: ignore[arg-type]
        totalActions=total,
        statusCounts=counts,
        progress=progress(counts, total),
        createdAt=row[6],
    )
