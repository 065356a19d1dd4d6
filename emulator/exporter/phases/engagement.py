"""The engagement phase: PUT /{kind} of the mapped engagement fields of exported records."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from operator import itemgetter
from typing import Any

from emulator.exporter import engagement as eng
from emulator.exporter import plan as p
from emulator.exporter import records as rec
from emulator.exporter.context import RunContext
from emulator.exporter.plan import Kind


async def run(
    ctx: RunContext, contacts: Sequence[int] | None = None, companies: Sequence[int] | None = None
) -> None:
    """Engagement PUTs of every exported record, or of the given ones only."""
    with ctx.timed("engagement"):
        kinds: tuple[tuple[Kind, Sequence[int] | None], ...] = (
            ("contacts", contacts),
            ("companies", companies),
        )
        for kind, ids in kinds:
            mapping = getattr(ctx.conn.engagementFields, kind)
            if mapping and (ids is None or ids):
                put = partial(engagement_put, ctx, kind, mapping)
                reader = partial(rec.read_engagement, kind=kind, ids=ids)
                await ctx.bounded(ctx.pages(reader, itemgetter(0), ctx.batch_size), put)
        await ctx.flush_journal()


async def engagement_put(
    ctx: RunContext, kind: Kind, mapping: dict[str, str], rows: Sequence[Any]
) -> None:
    stats = ctx.report.phases["engagement"]
    items, asked = [], []
    for rid, crm_id, members, log in rows:
        if ctx.held_back("engagement", f"engagement of {kind} {rid}", (kind, rid)):
            continue
        item = eng.engagement_item(crm_id, eng.engagement_values(kind, members, log), mapping)
        if item is not None:
            items.append(item)
            asked.append((str(rid), crm_id))
    if not items:
        return
    stats.sent += len(items)
    check = f"PUT /{kind} (engagement)"
    ex = await ctx.call(check, "PUT", f"/{kind}", {kind: items})
    body, reason = ctx.answer(ex, check)
    failed = {rid: reason for rid, _ in asked} if reason is not None else {}
    if reason is None:
        up = p.plan_update(kind, asked, body)
        for f in up.findings:
            ctx.finding(f, ex, check)
        stats.updated += len(up.updated)
        failed = up.failed
    for rid, why in failed.items():
        ctx.fail("engagement", f"engagement {kind}", rid, why)
        ctx.unfinished[kind].add(int(rid))
