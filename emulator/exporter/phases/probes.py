"""The first two phases: GET /health (the run stops on a CRM that is down) and GET /users (owner
selection)."""

from __future__ import annotations

from emulator.exporter import plan as p
from emulator.exporter.client import MalformedBody, StopExport
from emulator.exporter.context import RunContext, json_or_none
from emulator.exporter.plan import Finding


async def health(ctx: RunContext) -> None:
    """GET /health: no answer or a failure stops the run; a body that is not {status} is a warning."""
    with ctx.timed("health"):
        ex = await ctx.call("GET /health", "GET", "/health")
        if ex.status == 0:
            raise StopExport(f"CRM unreachable at {ctx.conn.crmUrl}: {ex.error}")
        if not ex.ok:
            raise StopExport(f"CRM health check failed: GET /health answered {ex.status}")
        try:
            body = ex.json()
        except MalformedBody as exc:
            body = None
            ctx.finding(
                Finding("warning", "GET /health", "answered a body that is not JSON", str(exc)), ex
            )
        for f in p.check_health(body):
            ctx.finding(f, ex)


async def users(ctx: RunContext) -> None:
    """GET /users decides owner selection for the whole run."""
    with ctx.timed("users") as stats:
        ex = await ctx.call("GET /users", "GET", "/users")
        users = p.plan_users(
            ex.status, json_or_none(ex) if ex.ok else None, ctx.conn.ownerId, ex.error
        )
        for f in users.findings:
            ctx.finding(f, ex)
        ctx.owner_enabled = users.owner_selection
        if users.users is not None:
            ctx.report.users = stats.received = users.users
        ctx.report.ownerSelection = ctx.owner_enabled
