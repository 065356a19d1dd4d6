"""The associations phase: POST /associations of the contact-company links the contacts phase made."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import partial
from itertools import islice

from emulator.exporter import plan as p
from emulator.exporter import records as rec
from emulator.exporter.context import RunContext
from emulator.exporter.idset import IdSet


async def run(ctx: RunContext) -> None:
    """Link the contacts this run exported to their companies, 100 links per call, in contact
    id order; their CRM ids are read back 100 at a time (the contacts phase stored them)."""
    linked, ctx.linked = ctx.linked, IdSet()
    ctx.totals["associations"] = len(linked)
    with ctx.timed("associations") as stats:
        for ids in _batched(linked, 100):
            chunk = await ctx.store.read(partial(rec.read_links, ids=ids))
            if not chunk:
                continue
            items = [{"contactCRMId": a, "companyCRMId": b} for a, b in chunk]
            stats.sent += len(items)
            ex = await ctx.call(
                "POST /associations", "POST", "/associations", {"associations": items}
            )
            body, reason = ctx.answer(ex, "POST /associations")
            if reason is not None:
                for a, _ in chunk:
                    ctx.fail("associations", "associations", a, reason)
                continue
            links = p.plan_associations([a for a, _ in chunk], body)
            for f in links.findings:
                ctx.finding(f, ex)
            for contact, why in links.failed:
                ctx.fail("associations", "associations", contact, why)
            stats.created += links.created
            stats.alreadyLinked += links.already_linked
            stats.linkedUncounted += links.uncounted
        await ctx.flush_journal()


def _batched(ids: Iterable[int], size: int) -> Iterator[list[int]]:
    it = iter(ids)
    while chunk := list(islice(it, size)):
        yield chunk
