"""The associations phase: POST /associations of the contact-company links the contacts phase made."""

from __future__ import annotations

from emulator.exporter import plan as p
from emulator.exporter.context import RunContext


async def run(ctx: RunContext) -> None:
    """Link the contacts this run exported to their companies, 100 links per call."""
    with ctx.timed("associations") as stats:
        pairs, ctx.pairs = ctx.pairs, []
        for chunk in p.chunks(pairs, 100):
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
        await ctx.flush_journal()
