"""HTTP handlers of campaigns and sender identities (pagination envelope)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from emulator.http import json_response
from emulator.openapi import PAGE, SEARCH, operation, query
from emulator.public_api import campaigns as service
from emulator.public_api.auth import guarded
from emulator.public_api.context import ApiContext
from emulator.public_api.envelopes import PaginatedList, paginated
from emulator.public_api.params import enum_param, optional_int, page_params, search_term
from emulator.public_api.schemas import Campaign, Identity
from emulator.workspace_scope import workspace


@operation(
    "List campaigns",
    PaginatedList[Campaign],
    params=(
        *PAGE,
        SEARCH,
        query("identitySenderId", "Only campaigns of this sender identity", type="integer"),
        query("status", "Only campaigns in this status", enum=list(service.CAMPAIGN_STATUSES)),
    ),
)
@guarded("CAMPAIGNS_READ")
async def list_campaigns(request: Request) -> Response:
    ctx: ApiContext = workspace(request).public_api
    q = request.query_params
    page, page_size = page_params(q)
    total, data = await service.list_campaigns(
        ctx,
        page,
        page_size,
        search=search_term(q),
        identity_id=optional_int(q, "identitySenderId"),
        status=enum_param(q, "status", service.CAMPAIGN_STATUSES),
    )
    return json_response(paginated(data, page, page_size, total))


@operation("List sender identities", PaginatedList[Identity], params=(*PAGE, SEARCH))
@guarded("IDENTITIES_READ")
async def list_identities(request: Request) -> Response:
    ctx: ApiContext = workspace(request).public_api
    q = request.query_params
    page, page_size = page_params(q)
    total, data = await service.list_identities(ctx, page, page_size, search=search_term(q))
    return json_response(paginated(data, page, page_size, total))


routes = [
    Route("/campaigns", list_campaigns, methods=["GET"]),
    Route("/identities", list_identities, methods=["GET"]),
]
