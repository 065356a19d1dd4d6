"""/_emulator/autosync: the CRM auto-sync's state and last push, and a push on demand."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from emulator.errors import NotFound
from emulator.http import json_response
from emulator.openapi import operation
from emulator.simulation.autosync import AutoSync, AutoSyncState


def _autosync(request: Request) -> AutoSync:
    return request.app.state.autosync  # type: ignore[no-any-return]


@operation(
    "CRM auto-sync: on or off, records still to push, and the last push's report",
    AutoSyncState, errors=(), security=None,
)
async def get_autosync(request: Request) -> Response:
    return json_response(await _autosync(request).state())


@operation(
    "Push what changed since the last push now (also when autoSync is off); answers the state",
    AutoSyncState, errors=((404, "No CRM connection configured"),), security=None,
)
async def push_now(request: Request) -> Response:
    autosync = _autosync(request)
    state = await autosync.state()
    if state.crmUrl is None:
        raise NotFound("no CRM connection configured: PUT /_emulator/connection first")
    await autosync.push(force=True)
    return json_response(await autosync.state())


routes: list[BaseRoute] = [
    Route("/autosync", get_autosync, methods=["GET"]),
    Route("/autosync/push", push_now, methods=["POST"]),
]
