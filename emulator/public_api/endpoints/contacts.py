"""HTTP handlers of the contact endpoints: parse, call the service, wrap."""

from __future__ import annotations

from functools import partial

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from emulator.errors import BadRequest
from emulator.http import PiecesResponse, decode_body, json_response
from emulator.openapi import FIELDS, PAGE, SEARCH, UPDATED, operation, query
from emulator.public_api import contacts as service
from emulator.public_api.auth import guarded
from emulator.public_api.context import ApiContext
from emulator.public_api.envelopes import (
    MetaList,
    Success,
    meta_list,
    success,
    success_json,
)
from emulator.public_api.params import (
    date_param,
    fields_param,
    optional_int,
    page_params,
    path_id,
    search_term,
)
from emulator.public_api.schemas import Contact, ContactCreated, ContactIn
from emulator.wire import Wire
from emulator.workspace_scope import workspace

JSON = "application/json"


def select_fields(record: Wire, fields: list[str] | None) -> object:
    """The record, or only `id` and the asked fields (in the asked order)."""
    if fields is None:
        return record
    return {"id": record.id, **{f: getattr(record, f) for f in fields}}  # type: ignore[attr-defined]


@operation(
    "List contacts",
    MetaList[Contact],
    params=(
        *PAGE,
        SEARCH,
        query("companyId", type="integer"),
        query("listId", type="integer"),
        *UPDATED,
        FIELDS,
    ),
)
@guarded("CONTACTS_READ")
async def list_contacts(request: Request) -> Response:
    ctx: ApiContext = workspace(request).public_api
    asked: bytes = request.scope["query_string"]
    cached = service.cached_contact_page(ctx, asked)
    if cached is not None:
        return PiecesResponse(cached)
    q = request.query_params
    page, page_size = page_params(q)
    fields = fields_param(q, service.CONTACT_FIELDS)
    flt = service.ContactFilter(
        search=search_term(q),
        company_id=optional_int(q, "companyId"),
        list_id=optional_int(q, "listId"),
        updated_from=date_param(q, "updatedAtFrom"),
        updated_to=date_param(q, "updatedAtTo", end=True),
    )
    if fields is None:  # the whole records: JSON straight from the store
        read = partial(service.contact_page_json, ctx, flt, page, page_size, asked)
        body = await ctx.bodies.read_once(("contacts", asked), read)
        return Response(body, media_type=JSON)
    total, contacts = await service.list_contacts(ctx, flt, page, page_size)
    data = [select_fields(c, fields) for c in contacts]
    return json_response(meta_list(data, page, page_size, total))


@operation("Get a contact", Success[Contact], params=(FIELDS,), errors=(400, 404))
@guarded("CONTACTS_READ", documented_limit=True)
async def get_contact(request: Request) -> Response:
    ctx: ApiContext = workspace(request).public_api
    fields = fields_param(request.query_params, service.CONTACT_FIELDS)
    contact_id = path_id(request.path_params["contactId"], "contactId")
    if fields is None:
        doc = await service.get_contact_document(ctx, contact_id)
        return Response(success_json(doc, "Contact retrieved"), media_type=JSON)
    contact = await service.get_contact(ctx, contact_id)
    return json_response(success(select_fields(contact, fields), "Contact retrieved"))


@operation(
    'Create or merge a contact (200 "merged" or 201)',
    Success[ContactCreated],
    status=201,
    body=ContactIn,
    errors=(400, 404),
)
@guarded("CONTACTS_WRITE")
async def create_contact(request: Request) -> Response:
    ctx: ApiContext = workspace(request).public_api
    body = await decode_body(request, ContactIn, BadRequest.field)
    created, merged = await service.create_contact(ctx, body)
    if merged:
        return json_response(success(created, "merged"))
    return json_response(success(created, "Contact created"), 201)


routes = [
    Route("/contacts", list_contacts, methods=["GET"]),
    Route("/contact", create_contact, methods=["POST"]),
    Route("/contact/{contactId}", get_contact, methods=["GET"]),
]
