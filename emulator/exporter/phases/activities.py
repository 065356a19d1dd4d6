"""Rows posted one by one: the activities phase (a conversation's messages) and the tasks the
tasks phase creates; each new CRM id is stored at once."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from emulator.exporter import listing, shapes
from emulator.exporter import records as rec
from emulator.exporter import task_checks as tc
from emulator.exporter.client import Exchange, StopExport
from emulator.exporter.context import RunContext, wall_now
from emulator.exporter.plan import Finding
from emulator.exporter.report import PossibleDuplicate
from emulator.exporter.sends import SendKind, SendLog, read_leftovers
from emulator.platform import campaign_tables

STREAM_PAGE = 500  # activity and task rows per read hop


async def crm_id_writer(
    ctx: RunContext,
    phase: str,
    store: Callable[[sqlite3.Connection, list[tuple[str, int]]], object],
) -> SendLog:
    """The send log of `phase` (sends.py): intents committed before each POST, then the
    (crm id, platform id) rows stored with `store` and the intents dropped, several per write
    hop; each CRM id stored counts as created in `phase`. The intents an earlier run left
    (it stopped with those POSTs in flight) are read first."""
    stats = ctx.report.phases[phase]
    kind: SendKind = "activity" if phase == "activities" else "task"

    def stored(n: int) -> None:
        stats.created += n

    leftovers = await ctx.store.read(partial(read_leftovers, kind=kind))
    # brief writes: each POST waits for its intent's commit (sends.py)
    write = partial(ctx.write, brief=True)
    return SendLog(kind, ctx.id, wall_now, write, store, stored, leftovers)


async def send_all(
    ctx: RunContext, rows: Any, work: Any, crm_ids: SendLog, row_id: Callable[[Any], int]
) -> None:
    """work(row) for each row, `in_flight` at once; the intents of the rows that start
    together are committed in one write (`row_id`: a row's platform id); every CRM id
    answered is stored before this returns, also when the phase stops early (a stored id is
    never sent again)."""

    async def starting(together: list[Any]) -> None:
        await crm_ids.ahead([row_id(row) for row in together])

    try:
        await ctx.bounded(rows, work, starting)
    finally:
        await crm_ids.flush()


async def run(ctx: RunContext, contacts: Sequence[int] | None = None) -> None:
    """POST /activities for each conversation message not in the CRM yet (of `contacts` only, if given)."""
    if ctx.on_progress is not None:  # a total to show (not read for auto-sync's pushes)
        count = partial(rec.count_messages, contacts=contacts)
        ctx.totals["activities"] = await ctx.store.read(count)
    with ctx.timed("activities"):
        async with listing.listed(ctx.store, rec.list_messages, contacts) as listed:
            reader = partial(rec.read_messages, listing=listed)
            rows = sendable(
                ctx,
                "activities",
                reader,
                message_id,
                lambda row: (row[0].id, row[1], row[2]),
            )
            crm_ids = await crm_id_writer(
                ctx,
                "activities",
                campaign_tables.set_crm_activity_ids,
            )
            await send_all(ctx, rows, partial(activity, ctx, crm_ids), crm_ids, message_id)


def message_id(row: rec.MessageRow) -> int:
    return row[0].id


async def sendable(
    ctx: RunContext,
    phase: str,
    reader: Callable[..., list[Any]],
    key: Callable[[Any], int],
    ids: Callable[[Any], tuple[int, str | None, str | None]],
) -> Any:
    """Rows of `reader` in id order, STREAM_PAGE per read hop, less those that must wait
    (a later run sends them): those whose contact is not in the CRM yet (counted skipped),
    and those held back (counted so, and named under the record's failure): whose contact
    failed this run, or, in a full run, that would carry a CRM id of their contact or
    company (platform ids last in the row) that this run did not learn. `ids(row)` answers
    the row's own id and the contact and company CRM ids it would carry."""
    stats = ctx.report.phases[phase]
    dependent = "activity" if phase == "activities" else "task"
    async for rows in ctx.pages(reader, key, STREAM_PAGE):
        for row in rows:
            own, contact_crm, company_crm = ids(row)
            contact_id, company_id = row[-2], row[-1]
            if contact_crm is None:
                if ("contacts", contact_id) in ctx.failed_records:
                    ctx.held_back(phase, f"{dependent} {own}", ("contacts", contact_id))
                else:
                    stats.skipped += 1
            elif not ctx.held_back(
                phase,
                f"{dependent} {own}",
                ("contacts", contact_id),
                ("companies", company_id if company_crm is not None else None),
            ):
                yield row


async def activity(ctx: RunContext, crm_ids: SendLog, row: rec.MessageRow) -> None:
    view, contact, company, campaign_owner, contact_id, _ = row
    body = shapes.activity_body(view, contact, company, ctx.owner_for(campaign_owner))
    await post_one(ctx, "activities", body, view.id, contact_id, crm_ids)


async def post_one(
    ctx: RunContext,
    phase: str,
    body: dict[str, Any],
    record_id: int,
    contact_id: int,
    crm_ids: SendLog,
) -> str | None:
    """POST /activities or /tasks for one platform row: the CRM id it answered (None: the row
    failed, and its contact is left unfinished).

    The intent to send is committed first and the answer's CRM id stored after (with the
    next intents, or when the phase ends): once stored, the row is never sent again; after a
    crash, only rows between the two are sent again, each named as possibly duplicated."""
    stats = ctx.report.phases[phase]
    stats.sent += 1
    check = f"POST /{phase}"
    again = crm_ids.resent(record_id)
    if again is not None:
        note_possible_duplicate(ctx, check, again)
    await crm_ids.before(record_id)
    try:
        ex = await ctx.call(check, "POST", f"/{phase}", body)
    except StopExport:  # a push stops at a CRM that did not answer: the POST was not logged
        crm_ids.after(record_id, None)
        raise
    crm_id = created(ctx, check, ex, phase, record_id)
    crm_ids.after(record_id, crm_id)
    if crm_id is None:
        ctx.unfinished["contacts"].add(contact_id)
    return crm_id


def note_possible_duplicate(ctx: RunContext, check: str, dup: PossibleDuplicate) -> None:
    """A row an earlier, stopped run was sending: the CRM may hold it already (a warning)."""
    ctx.report.possiblyDuplicated.append(dup)
    ctx.finding(
        Finding(
            "warning",
            check,
            "possibly logged twice: its POST was in flight when an earlier run stopped",
            f"{dup.kind} {dup.id} (export {dup.exportId})",
        ),
        None,
    )


def created(ctx: RunContext, check: str, ex: Exchange, phase: str, record_id: int) -> str | None:
    """The CRM id a POST answered; None (the row failed) when there is none."""
    body, reason = ctx.answer(ex, check)
    if reason is not None:
        ctx.fail(phase, phase, str(record_id), reason)
        return None
    plan = tc.plan_created(check, body)
    for f in plan.findings:
        ctx.finding(f, ex)
    if plan.failed is not None:
        ctx.fail(phase, phase, str(record_id), plan.failed)
    return plan.crm_id
