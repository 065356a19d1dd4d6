"""HTTP handlers of lists and saved views."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from emulator.errors import BadRequest
from emulator.http import decode_body, json_response
from emulator.openapi import PAGE, SEARCH, operation, query
from emulator.public_api import lists as service
from emulator.public_api.auth import guarded
from emulator.public_api.context import ApiContext
from emulator.public_api.envelopes import MetaList, Success, meta_list, success
from emulator.public_api.params import enum_param, page_params, search_term
from emulator.public_api.schemas import ContactList, ListIn, SavedView
from emulator.workspace_scope import workspace


@operation(
    "List lists",
    MetaList[ContactList],
    params=(*PAGE, SEARCH, query("type", "Only lists of this type", enum=list(service.LIST_TYPES))),
)
@guarded("LISTS_READ")
async def list_lists(request: Request) -> Response:
    ctx: ApiContext = workspace(request).public_api
    q = request.query_params
    page, page_size = page_params(q)
    total, data = await service.list_lists(
        ctx, page, page_size, search=search_term(q), type=enum_param(q, "type", service.LIST_TYPES)
    )
    return json_response(meta_list(data, page, page_size, total))


@operation("Create a list", Success[ContactList], status=201, body=ListIn)
@guarded("LISTS_WRITE")
async def create_list(request: Request) -> Response:
    ctx: ApiContext = workspace(request).public_api
    body = await decode_body(request, ListIn, BadRequest.field)
    created = await service.create_list(ctx, body)
    return json_response(success(created, "List created"), 201)


@operation(
    "List saved views",
    MetaList[SavedView],
    params=(*PAGE, query("type", "Only views of this type", enum=list(service.SAVED_VIEW_TYPES))),
)
@guarded("SAVED_VIEWS_READ")
async def list_saved_views(request: Request) -> Response:
    ctx: ApiContext = workspace(request).public_api
    q = request.query_params
    page, page_size = page_params(q)
    total, data = await service.list_saved_views(
        ctx, page, page_size, type=enum_param(q, "type", service.SAVED_VIEW_TYPES)
    )
    return json_response(meta_list(data, page, page_size, total))


routes = [
    Route("/lists", list_lists, methods=["GET"]),
    Route("/lists", create_list, methods=["POST"]),
    Route("/saved-views", list_saved_views, methods=["GET"]),
]
