"""The engagement phase: PUT /{kind} of the mapped engagement fields of exported records."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from functools import partial
from operator import itemgetter
from typing import Any

from emulator.exporter import engagement as eng
from emulator.exporter import listing
from emulator.exporter import plan as p
from emulator.exporter import records as rec
from emulator.exporter.context import RunContext
from emulator.exporter.plan import Kind

# Records of one push whose engagement rows may be read ahead (held in memory together).
PREFETCH_LIMIT = 5_000
# Records per read ahead: ~0.3-2 ms on the event loop's thread, the calls' answers in between.
PREFETCH_PAGE = 25
Pages = dict[Kind, list[list[Any]]]


def _wanted(
    ctx: RunContext, contacts: Sequence[int] | None, companies: Sequence[int] | None
) -> list[tuple[Kind, Sequence[int] | None, dict[str, str]]]:
    kinds: tuple[tuple[Kind, Sequence[int] | None], ...] = (
        ("contacts", contacts),
        ("companies", companies),
    )
    wanted = []
    for kind, ids in kinds:
        mapping = getattr(ctx.conn.engagementFields, kind)
        if mapping and (ids is None or ids):
            wanted.append((kind, ids, mapping))
    return wanted


def prefetch(
    ctx: RunContext, contacts: Sequence[int], companies: Sequence[int]
) -> asyncio.Task[Pages] | None:
    """Start reading the engagement pages of the given records now, while the calls of the
    earlier phases wait on the CRM (auto-sync: the reads cost ~0.3 s of the bench leg's CPU).
    None for a push too large to hold.

    The reads run on the event loop's thread, PREFETCH_PAGE record ids at a time with the loop
    let go in between, not on the database thread: there they held it for a page of
    `batch_size` records at a time, and each POST of the activities phase waits for its
    intent's write behind them (a read there also waits for the GIL at every statement while
    the loop is busy). The rows are then cut into the `batch_size` pages a read of
    `batch_size` would have answered (the same records in id order)."""
    if len(contacts) + len(companies) > PREFETCH_LIMIT:
        return None

    async def read() -> Pages:
        pages: Pages = {}
        for kind, ids, _ in _wanted(ctx, contacts, companies):
            assert ids is not None  # a push names its records
            rows: list[Any] = []
            # PREFETCH_PAGE ids a read, in id order: each read looks up only its own ids
            # (paging by `after` over the whole list went through the rest every time)
            for part in p.chunks(sorted(set(ids)), PREFETCH_PAGE):
                read = partial(rec.read_engagement, kind=kind, ids=part, after=0, limit=len(part))
                rows.extend(await ctx.store.read(read, brief=True))
                await asyncio.sleep(0)  # the loop's other work (the calls) between two reads
            size = ctx.batch_size
            pages[kind] = [rows[i : i + size] for i in range(0, len(rows), size)]
        return pages

    return asyncio.create_task(read())


async def _listed(pages: list[list[Any]]) -> AsyncIterator[list[Any]]:
    for rows in pages:
        yield rows


async def run(
    ctx: RunContext,
    contacts: Sequence[int] | None = None,
    companies: Sequence[int] | None = None,
    read_ahead: asyncio.Task[Pages] | None = None,
) -> None:
    """Engagement PUTs of every exported record, or of the given ones only (their pages from
    `read_ahead` when given, else read page by page)."""
    wanted = _wanted(ctx, contacts, companies)
    if ctx.on_progress is not None:  # a total to show (not counted for auto-sync's pushes)
        counts = [partial(rec.count_engagement, kind=kind, ids=ids) for kind, ids, _ in wanted]
        ctx.totals["engagement"] = sum([await ctx.store.read(count) for count in counts])
    with ctx.timed("engagement"):
        ahead = None if read_ahead is None else await read_ahead
        for kind, ids, mapping in wanted:
            put = partial(engagement_put, ctx, kind, mapping)
            if ahead is not None:
                await ctx.bounded(_listed(ahead.get(kind, [])), put)
                continue
            async with listing.listed(ctx.store, rec.list_records, ids) as listed:
                reader = partial(rec.read_engagement, kind=kind, listing=listed)
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
