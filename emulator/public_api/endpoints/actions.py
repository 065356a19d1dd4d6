"""HTTP handlers of actions runs."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from emulator.errors import BadRequest
from emulator.http import decode_body, json_response
from emulator.openapi import operation
from emulator.public_api import actions as service
from emulator.public_api.auth import guarded
from emulator.public_api.context import ApiContext
from emulator.public_api.envelopes import Success, success
from emulator.public_api.params import path_id
from emulator.public_api.schemas import ActionsIn, ActionsRunCreated, ActionsRunStatus
from emulator.workspace_scope import workspace


@operation("Start an actions run", Success[ActionsRunCreated], body=ActionsIn)
@guarded("ALL")
async def start_run(request: Request) -> Response:
    ctx: ApiContext = workspace(request).public_api
    body = await decode_body(request, ActionsIn, BadRequest.field)
    created = await service.start_run(ctx, body)
    return json_response(success(created, "Actions queued"))


@operation("Status of an actions run", Success[ActionsRunStatus], errors=(400, 404))
@guarded("ALL")
async def run_status(request: Request) -> Response:
    ctx: ApiContext = workspace(request).public_api
    run_id = path_id(request.path_params["actionsId"], "actionsId")
    return json_response(success(await service.run_status(ctx, run_id), "Actions run status"))


routes = [
    Route("/actions", start_run, methods=["POST"]),
    Route("/actions/{actionsId}/status", run_status, methods=["GET"]),
]
