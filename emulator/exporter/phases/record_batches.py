"""The companies and contacts phases: each batch is synced, then created or updated, and its CRM ids
and sync-back properties stored in one write hop."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from operator import itemgetter
from typing import Any

from emulator.exporter import listing, shapes
from emulator.exporter import plan as p
from emulator.exporter import properties as rule
from emulator.exporter import records as rec
from emulator.exporter.client import Exchange
from emulator.exporter.context import RunContext
from emulator.exporter.idset import IdSet
from emulator.exporter.plan import Finding, Kind
from emulator.exporter.report import CLEARED_CAP, ClearedField, note_cleared
from emulator.platform import crm_sync
from emulator.platform.keys import with_keys


async def run(ctx: RunContext, kind: Kind) -> None:
    """Every record of `kind` (or of `record_ids`), batch by batch, at most `in_flight` batches at once."""
    if ctx.learned is None:  # a run that syncs sends only the CRM ids it learns (decisions.md §3)
        ctx.learned = {"companies": IdSet(), "contacts": IdSet()}
    with ctx.timed(kind):  # says (kind, 0, total) first
        ids = None if ctx.record_ids is None else ctx.record_ids[kind]
        async with listing.listed(ctx.store, rec.list_records, ids) as listed:
            batches = ctx.pages(
                partial(rec.read_batch, kind=kind, listing=listed), itemgetter("id"), ctx.batch_size
            )
            await ctx.bounded(batches, partial(record_batch, ctx, kind))


async def record_batch(ctx: RunContext, kind: Kind, rows: list[dict[str, Any]]) -> None:
    """One batch: sync it, create the new records, update the matched ones (with what the
    sync-back changed), store the CRM ids in one write hop, note the contacts' company links."""
    stats = ctx.report.phases[kind]
    by_ext = {str(r["id"]): r for r in rows}
    stats.sent += len(rows)
    sent = {ext: as_sent(kind, r) for ext, r in by_ext.items()}
    sync = await sync_batch(ctx, kind, by_ext, sent)
    if sync is None:
        await ctx.flush_journal()
        ctx.advance(kind)
        return
    sync_plan, ex = sync
    matched = {
        ext: bookkeep(kind, by_ext[ext], m, sent[ext]) for ext, m in sync_plan.matched.items()
    }
    for one in matched.values():
        for c in one.cleared:
            report_cleared(ctx, kind, one.update.id, c, ex)
    new = [(by_ext[e], sent[e]) for e in sync_plan.new]
    created, create_failed = await create_new(ctx, kind, new)
    put_asked = [(ext, one.update.crm_id) for ext, one in matched.items()]
    put_items = [
        one.item if ctx.shape_item is None else ctx.shape_item(kind, one.item, True)
        for one in matched.values()
    ]
    updated, update_failed = await update_matched(ctx, kind, put_asked, put_items)
    failed = {**sync_plan.failed, **create_failed, **update_failed}
    updates = [one.update for one in matched.values()]
    updates += [crm_sync.RecordUpdate(id=by_ext[e]["id"], crm_id=c) for e, c in created.items()]
    now = ctx.now()
    await ctx.write(lambda conn: crm_sync.write_batch(conn, kind, updates, now))
    stats.created += len(created)
    stats.updated += len(updated)
    if ctx.learned is not None:
        ctx.learned[kind].update(by_ext[e]["id"] for e in (*sync_plan.matched, *created))
    for ext, why in failed.items():
        ctx.fail_record(kind, by_ext[ext], why)
    if kind == "contacts":
        note_links(ctx, [by_ext[e] for e in (*created, *updated) if e not in failed])
    ctx.advance(kind)


async def sync_batch(
    ctx: RunContext, kind: Kind, by_ext: dict[str, dict[str, Any]], sent: dict[str, dict[str, Any]]
) -> tuple[p.SyncPlan, Exchange] | None:
    """POST /{kind}/sync of the batch; None when the call failed (every record failed then)."""
    check = f"POST /{kind}/sync"
    ex = await ctx.call(check, "POST", f"/{kind}/sync", {kind: list(sent.values())})
    body, reason = ctx.answer(ex, check)
    if reason is not None:
        for row in by_ext.values():
            ctx.fail_record(kind, row, reason)
        return None
    plan = p.plan_sync(kind, list(by_ext), body)
    for f in plan.findings:
        ctx.finding(f, ex)
    return plan, ex


@dataclass
class Matched:
    """A record the sync matched: what to store, the PUT item, what the sync-back cleared."""

    update: crm_sync.RecordUpdate
    item: dict[str, Any]
    cleared: list[rule.Cleared]


def bookkeep(kind: Kind, row: dict[str, Any], match: p.Match, sent: dict[str, Any]) -> Matched:
    """The property bookkeeping of one matched record (decisions.md §3): sync-back
    `properties` applied to its columns, custom fields and synced names; the PUT carries
    the record as it is after that (as sent, when the sync answered no `properties`)."""
    update = crm_sync.RecordUpdate(id=row["id"], crm_id=match.crm_id)
    if match.properties is None:
        return Matched(update, shapes.update_item(sent, match.crm_id), [])
    change = rule.apply_properties(kind, row, row["customFields"], row["synced"], match.properties)
    update.columns = with_keys(kind, change.columns, row)
    if change.custom != row["customFields"]:
        update.custom = change.custom
    if set(change.synced) != set(row["synced"]):
        update.synced = change.synced
    row = {**row, **change.columns, "customFields": change.custom}
    return Matched(update, shapes.update_item(as_sent(kind, row), match.crm_id), change.cleared)


async def create_new(
    ctx: RunContext, kind: Kind, rows: list[tuple[dict[str, Any], dict[str, Any]]]
) -> tuple[dict[str, str], dict[str, str]]:
    """POST /{kind} of the records the sync did not match, each (row, its sync item):
    (externalId -> crmId, failed)."""
    if not rows:
        return {}, {}
    asked = [str(r["id"]) for r, _ in rows]
    check = f"POST /{kind}"
    ex = await ctx.call(
        check, "POST", f"/{kind}", {kind: [create_item(ctx, kind, r, s) for r, s in rows]}
    )
    body, reason = ctx.answer(ex, check)
    if reason is not None:
        return {}, dict.fromkeys(asked, reason)
    plan = p.plan_create(kind, asked, ex.status, body)
    for f in plan.findings:
        ctx.finding(f, ex)
    return plan.created, plan.failed


async def update_matched(
    ctx: RunContext, kind: Kind, asked: list[tuple[str, str]], items: list[dict[str, Any]]
) -> tuple[set[str], dict[str, str]]:
    """PUT /{kind} of the matched records ((externalId, crmId) asked): (updated, failed)."""
    if not items:
        return set(), {}
    check = f"PUT /{kind}"
    ex = await ctx.call(check, "PUT", f"/{kind}", {kind: items})
    body, reason = ctx.answer(ex, check)
    if reason is not None:
        return set(), dict.fromkeys((e for e, _ in asked), reason)
    plan = p.plan_update(kind, asked, body)
    for f in plan.findings:
        ctx.finding(f, ex)
    return plan.updated, plan.failed


def note_links(ctx: RunContext, contacts: list[dict[str, Any]]) -> None:
    """Contacts exported (their CRM ids stored) with a company in the CRM get a link for the
    associations phase, unless their company's CRM id was not learnt this run."""
    for row in contacts:
        company = row.get("companyId")
        if company is None or not (
            row.get("companyCRMId") or ("companies", company) in ctx.failed_records
        ):
            continue  # no company in the CRM and none that failed: nothing to link
        if not ctx.held_back(
            "associations", f"association of contact {row['id']}", ("companies", company)
        ):
            ctx.linked.add(row["id"])


def as_sent(kind: Kind, row: dict[str, Any]) -> dict[str, Any]:
    if kind == "companies":
        return shapes.company_as_sent(row)
    return shapes.contact_as_sent(row, row.get("companyName"))


def create_item(
    ctx: RunContext, kind: Kind, row: dict[str, Any], sent: dict[str, Any]
) -> dict[str, Any]:
    """The create item of `row`, from a copy of its sync item `sent` (`as_sent` of the same
    row: built once, not again for the create)."""
    if kind == "companies":
        item = shapes.company_create_item(row, ctx.owner_id, dict(sent))
    else:
        item = shapes.with_owner(dict(sent), ctx.owner_id)
    return item if ctx.shape_item is None else ctx.shape_item(kind, item, False)


def report_cleared(
    ctx: RunContext, kind: str, record_id: int, c: rule.Cleared, ex: Exchange
) -> None:
    note_cleared(ctx.report, kind, c.name, c.cause)
    if len(ctx.report.cleared) < CLEARED_CAP:
        ctx.report.cleared.append(
            ClearedField(
                kind=kind,
                id=record_id,
                field=c.name,
                previous=c.previous,
                core=c.core,
                cause=c.cause,
            )
        )
    if c.core:
        ctx.finding(
            Finding(
                "warning",
                f"POST /{kind}/sync",
                f"sync-back cleared core field `{c.name}`",
                f"{kind} {record_id}",
            ),
            ex,
        )
