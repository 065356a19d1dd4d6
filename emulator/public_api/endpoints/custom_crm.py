"""HTTP handlers of the custom CRM connection."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from emulator.errors import BadRequest, refuse_control_target
from emulator.http import decode_body, json_response
from emulator.openapi import operation
from emulator.platform import connection as platform_connection
from emulator.public_api import custom_crm as service
from emulator.public_api.auth import guarded
from emulator.public_api.context import ApiContext
from emulator.public_api.envelopes import Success, success
from emulator.public_api.schemas import CustomCrmHealth, CustomCrmIn, CustomCrmStatus
from emulator.simulation.crm_link.health import UsersProbe
from emulator.workspace_scope import workspace


async def _checked(request: Request) -> tuple[CustomCrmIn, CustomCrmHealth, UsersProbe]:
    """The decoded body and the probes (health, users) of the CRM it names."""
    ctx: ApiContext = workspace(request).public_api
    body = await decode_body(request, CustomCrmIn, BadRequest.field)
    refuse_control_target("baseUrl", body.baseUrl)
    url = platform_connection.resolve(body.baseUrl, platform_connection.own_base(request)).base_url
    health, users = await service.check(
        url,
        body.apiKey,
        body.apiKeyHeader,
        ctx.now(),
        timeout=ctx.emulator.settings.outgoingDeadline,
    )
    return body, health, users


@operation("Test a custom CRM connection", Success[CustomCrmHealth], body=CustomCrmIn)
@guarded("ALL")
async def test_crm(request: Request) -> Response:
    _, health, _ = await _checked(request)
    return json_response(success(health, health.message))


@operation("Connect a custom CRM", Success[CustomCrmStatus], body=CustomCrmIn)
@guarded("ALL")
async def connect_crm(request: Request) -> Response:
    ctx: ApiContext = workspace(request).public_api
    body, health, users = await _checked(request)
    status = await service.connect(ctx, body, health, users)
    message = "Connected" if health.success else f"Connected, but {health.message}"
    return json_response(success(status, message))


@operation("Custom CRM connection status", Success[CustomCrmStatus], errors=())
@guarded("ALL")
async def crm_status(request: Request) -> Response:
    ctx: ApiContext = workspace(request).public_api
    return json_response(success(await service.status(ctx), "Custom CRM status"))


@operation("Disconnect the custom CRM", Success[CustomCrmStatus], errors=(404,))
@guarded("ALL")
async def disconnect_crm(request: Request) -> Response:
    ctx: ApiContext = workspace(request).public_api
    return json_response(success(await service.disconnect(ctx), "Disconnected"))


routes = [
    Route("/custom-crm/test", test_crm, methods=["POST"]),
    Route("/custom-crm/connect", connect_crm, methods=["POST"]),
    Route("/custom-crm/status", crm_status, methods=["GET"]),
    Route("/custom-crm/disconnect", disconnect_crm, methods=["DELETE"]),
]
