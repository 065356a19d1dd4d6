"""/_emulator/autosync: the CRM auto-sync's state and last push, and a push on demand."""

from __future__ import annotations

from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from emulator.errors import BadRequest, NotFound
from emulator.http import decode_body, json_response
from emulator.openapi import BUSY, operation
from emulator.platform import connection as platform_connection
from emulator.simulation.crm_link.autosync import AutoSync, AutoSyncState
from emulator.wire import Wire
from emulator.workspace_scope import workspace


class AutoSyncSwitch(Wire):
    enabled: bool


def _autosync(request: Request) -> AutoSync:
    return workspace(request).autosync


@operation(
    "CRM auto-sync: on or off, records still to push, and the last push's report",
    AutoSyncState,
    errors=(),
    security=None,
)
async def get_autosync(request: Request) -> Response:
    return json_response(await _autosync(request).state())


@operation(
    "Turn auto-sync on or off (the connection's `autoSync`, the rest of it unchanged)",
    AutoSyncState,
    body=AutoSyncSwitch,
    errors=(400, (404, "No CRM connection configured")),
    security=None,
)
async def switch(request: Request) -> Response:
    body = await decode_body(request, AutoSyncSwitch, BadRequest.field)
    autosync = _autosync(request)

    def write(conn: Any) -> bool:
        current = platform_connection.read(conn)
        if current is None:
            return False
        platform_connection.write(conn, msgspec.structs.replace(current, autoSync=body.enabled))
        return True

    if not await autosync.emulator.db.write(write):
        raise NotFound("no CRM connection configured: PUT /_emulator/connection first")
    return json_response(await autosync.state())


@operation(
    "Push what changed since the last push now (also when autoSync is off); answers the state",
    AutoSyncState,
    errors=((404, "No CRM connection configured"), BUSY),
    security=None,
)
async def push_now(request: Request) -> Response:
    autosync = _autosync(request)
    state = await autosync.state()
    if state.crmUrl is None:
        raise NotFound("no CRM connection configured: PUT /_emulator/connection first")
    async with autosync.emulator.operations.exclusive("auto-sync push"):  # an export, too
        await autosync.push(force=True)
    return json_response(await autosync.state())


routes: list[BaseRoute] = [
    Route("/autosync", get_autosync, methods=["GET"]),
    Route("/autosync", switch, methods=["PUT"]),
    Route("/autosync/push", push_now, methods=["POST"]),
]
