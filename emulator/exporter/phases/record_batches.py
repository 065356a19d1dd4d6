"""The companies and contacts phases: each batch is synced, then created or updated, and its CRM ids
and sync-back properties stored in one write hop."""

from __future__ import annotations

from functools import partial
from operator import itemgetter
from typing import Any

from emulator.exporter import plan as p
from emulator.exporter import properties as rule
from emulator.exporter import records as rec
from emulator.exporter import shapes
from emulator.exporter.client import Exchange
from emulator.exporter.context import RunContext
from emulator.exporter.plan import Finding, Kind
from emulator.exporter.report import CLEARED_CAP, ClearedField


async def export_kind(ctx: RunContext, kind: Kind) -> None:
    with ctx.timed(kind):
        ctx.progress(kind, 0, ctx.totals.get(kind, 0))
        ids = None if ctx.record_ids is None else ctx.record_ids[kind]
        batches = ctx.pages(partial(rec.read_batch, kind=kind, ids=ids), itemgetter("id"), ctx.batch_size)
        await ctx.bounded(batches, partial(record_batch, ctx, kind))


async def record_batch(ctx: RunContext, kind: Kind, rows: list[dict[str, Any]]) -> None:
    stats = ctx.report.phases[kind]
    by_ext = {str(r["id"]): r for r in rows}
    stats.sent += len(rows)
    sync_check = f"POST /{kind}/sync"
    sent = {ext: as_sent(kind, r) for ext, r in by_ext.items()}
    ex = await ctx.call(sync_check, "POST", f"/{kind}/sync", {kind: list(sent.values())})
    body, reason = ctx.answer(ex, sync_check)
    if reason is not None:
        for ext, row in by_ext.items():
            ctx.fail_record(kind, row, reason)
        await ctx.flush_journal()
        ctx.advance(kind)
        return
    sync = p.plan_sync(kind, list(by_ext), body)
    for f in sync.findings:
        ctx.finding(f, ex)
    failed: dict[str, str] = dict(sync.failed)
    updates: list[rec.RecordUpdate] = []
    put_items, put_asked = [], []
    for ext, match in sync.matched.items():
        row = by_ext[ext]
        update = rec.RecordUpdate(id=row["id"], crm_id=match.crm_id)
        if match.properties is not None:
            change = rule.apply_properties(kind, row, row["customFields"], row["synced"], match.properties)
            update.columns = rec.with_keys(kind, change.columns, row)
            if change.custom != row["customFields"]:
                update.custom = change.custom
            if set(change.synced) != set(row["synced"]):
                update.synced = change.synced
            for c in change.cleared:
                cleared(ctx, kind, row["id"], c, ex)
            row = {**row, **change.columns, "customFields": change.custom}
        updates.append(update)
        item = as_sent(kind, row) if match.properties is not None else sent[ext]
        put_item = shapes.update_item(item, match.crm_id)
        put_items.append(put_item if ctx.shape_item is None else ctx.shape_item(kind, put_item, True))
        put_asked.append((ext, match.crm_id))
    created: dict[str, str] = {}
    if sync.new:
        check = f"POST /{kind}"
        ex2 = await ctx.call(check, "POST", f"/{kind}", {kind: [create_item(ctx, kind, by_ext[e]) for e in sync.new]})
        body2, reason = ctx.answer(ex2, check)
        if reason is not None:
            failed.update({e: reason for e in sync.new})
        else:
            cp = p.plan_create(kind, sync.new, ex2.status, body2)
            for f in cp.findings:
                ctx.finding(f, ex2)
            failed.update(cp.failed)
            created = cp.created
    updated: set[str] = set()
    if put_items:
        check = f"PUT /{kind}"
        ex3 = await ctx.call(check, "PUT", f"/{kind}", {kind: put_items})
        body3, reason = ctx.answer(ex3, check)
        if reason is not None:
            failed.update({e: reason for e, _ in put_asked})
        else:
            up = p.plan_update(kind, put_asked, body3)
            for f in up.findings:
                ctx.finding(f, ex3)
            failed.update(up.failed)
            updated = up.updated
    updates += [rec.RecordUpdate(id=by_ext[e]["id"], crm_id=c) for e, c in created.items()]
    now = ctx.now()
    await ctx.write(lambda conn: rec.write_batch(conn, kind, updates, now))
    stats.created += len(created)
    stats.updated += len(updated)
    if ctx.learned is not None:
        ctx.learned[kind].update(by_ext[e]["id"] for e in (*sync.matched, *created))
    for ext, why in failed.items():
        ctx.fail_record(kind, by_ext[ext], why)
    if kind == "contacts":
        crm_ids = {**{e: m.crm_id for e, m in sync.matched.items()}, **created}
        for ext in (*created, *updated):
            row = by_ext[ext]
            company = row.get("companyCRMId")
            if not company or ext in failed or ctx.held_back(
                "associations", f"association of contact {ext}", ("companies", row["companyId"])
            ):
                continue
            ctx.pairs.append((crm_ids[ext], company))
    ctx.advance(kind)


def as_sent(kind: Kind, row: dict[str, Any]) -> dict[str, Any]:
    if kind == "companies":
        return shapes.company_as_sent(row)
    return shapes.contact_as_sent(row, row.get("companyName"))


def create_item(ctx: RunContext, kind: Kind, row: dict[str, Any]) -> dict[str, Any]:
    if kind == "companies":
        item = shapes.company_create_item(row, ctx.owner_id)
    else:
        item = shapes.with_owner(as_sent(kind, row), ctx.owner_id)
    return item if ctx.shape_item is None else ctx.shape_item(kind, item, False)


def cleared(ctx: RunContext, kind: str, record_id: int, c: rule.Cleared, ex: Exchange) -> None:
    ctx.report.clearedTotal += 1
    if len(ctx.report.cleared) < CLEARED_CAP:
        ctx.report.cleared.append(
            ClearedField(kind=kind, id=record_id, field=c.name, previous=c.previous, core=c.core)
        )
    if c.core:
        ctx.finding(
            Finding("warning", f"POST /{kind}/sync", f"sync-back cleared core field `{c.name}`",
                    f"{kind} {record_id}"),
            ex,
        )
