"""The overview page: clock (advances followed with a progress bar), record counts, campaigns by status, CRM connection, auto-sync."""

from __future__ import annotations

from typing import get_args

from starlette.requests import Request
from starlette.responses import Response

from emulator.control.exports import redacted
from emulator.control.routes import counts
from emulator.dashboard.render import api, emulator_of, page
from emulator.fixtures.models import CampaignStatus
from emulator.platform import connection as platform_connection
from emulator.public_api import custom_crm
from emulator.public_api.campaigns import list_campaigns
from emulator.simulation.campaigns.event_log import count_events
from emulator.wire import now_iso
from emulator.workspace_scope import workspace

# the advance buttons: (label, seconds)
ADVANCES = (
    ("+1 hour", 3600),
    ("+1 day", 86400),
    ("+1 week", 604800),
    ("+30 days", 2592000),
)


async def overview(request: Request) -> Response:
    emulator, ctx = emulator_of(request), api(request)
    by_status = {
        status: (await list_campaigns(ctx, 1, 1, status=status))[0]
        for status in get_args(CampaignStatus)
    }
    _, campaigns = await list_campaigns(ctx, 1, 100)
    connection = await emulator.db.read(platform_connection.read)
    health = None
    # "Check health now" is a POST (a form): a GET never makes an outgoing call, and with a
    # control token the check needs it like every other action.
    if connection is not None and request.method == "POST":
        base = platform_connection.resolve(
            connection.crmUrl, platform_connection.own_base(request)
        ).base_url
        health, _ = await custom_crm.check(
            base, connection.apiKey, connection.apiKeyHeader, emulator.clock.now_iso()
        )
    clock = emulator.clock
    return page(
        request,
        "overview.html",
        clock=clock,
        clock_start=now_iso(clock.start),
        advances=ADVANCES,
        running_advance=workspace(request).advances.running(),  # the page follows it
        counts=await counts(emulator),
        events=await count_events(emulator.db),
        by_status=by_status,
        campaigns=campaigns,
        connection=None if connection is None else redacted(connection),
        crm_status=await custom_crm.status(ctx),
        health=health,
        autosync=await workspace(request).autosync.state(),
        fixtures=emulator.fixtures_dir,
    )
