"""HTTP handlers of the company endpoints: parse, call the service, wrap."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from emulator.errors import BadRequest
from emulator.http import decode_body, json_response
from emulator.openapi import FIELDS, PAGE, SEARCH, UPDATED, operation, query
from emulator.public_api import companies as service
from emulator.public_api.auth import guarded
from emulator.public_api.company_search import parse_conditions
from emulator.public_api.context import ApiContext
from emulator.public_api.endpoints.contacts import select_fields
from emulator.public_api.envelopes import MetaList, Success, meta_list, success
from emulator.public_api.params import (
    date_param,
    fields_param,
    optional_int,
    page_numbers,
    page_params,
    path_id,
    search_term,
)
from emulator.public_api.schemas import Company, CompanyCreated, CompanyIn, CompanySearchIn
from emulator.workspace_scope import workspace


@operation(
    "List companies",
    MetaList[Company],
    params=(*PAGE, SEARCH, query("listId", type="integer"), *UPDATED, FIELDS),
    errors=(400, 404),
)
@guarded("COMPANIES_READ")
async def list_companies(request: Request) -> Response:
    ctx: ApiContext = workspace(request).public_api
    q = request.query_params
    page, page_size = page_params(q)
    fields = fields_param(q, service.COMPANY_FIELDS)
    flt = service.CompanyFilter(
        search=search_term(q),
        list_id=optional_int(q, "listId"),
        updated_from=date_param(q, "updatedAtFrom"),
        updated_to=date_param(q, "updatedAtTo", end=True),
    )
    total, companies = await service.list_companies(ctx, flt, page, page_size)
    return json_response(
        meta_list([select_fields(c, fields) for c in companies], page, page_size, total)
    )


@operation("Get a company", Success[Company], params=(FIELDS,), errors=(400, 404))
@guarded("COMPANIES_READ")
async def get_company(request: Request) -> Response:
    ctx: ApiContext = workspace(request).public_api
    fields = fields_param(request.query_params, service.COMPANY_FIELDS)
    company_id = path_id(request.path_params["companyId"], "companyId")
    company = await service.get_company(ctx, company_id)
    return json_response(success(select_fields(company, fields), "Company retrieved"))


@operation(
    'Create or merge a company (200 "merged" or 201)',
    Success[CompanyCreated],
    status=201,
    body=CompanyIn,
    errors=(400, 404),
)
@guarded("COMPANIES_WRITE")
async def create_company(request: Request) -> Response:
    ctx: ApiContext = workspace(request).public_api
    body = await decode_body(request, CompanyIn, BadRequest.field)
    created, merged = await service.create_company(ctx, body)
    if merged:
        return json_response(success(created, "merged"))
    return json_response(success(created, "Company created"), 201)


@operation("Search companies", MetaList[Company], body=CompanySearchIn)
@guarded("COMPANIES_READ")
async def search_companies(request: Request) -> Response:
    ctx: ApiContext = workspace(request).public_api
    body = await decode_body(request, CompanySearchIn, BadRequest.field)
    page, page_size = page_numbers(body.page, body.pageSize)
    search = body.search.strip() if body.search else None
    flt = service.CompanyFilter(
        search=search or None, conditions=parse_conditions(body.include, body.exclude)
    )
    total, companies = await service.list_companies(ctx, flt, page, page_size)
    return json_response(meta_list(companies, page, page_size, total))


routes = [
    Route("/companies", list_companies, methods=["GET"]),
    Route("/companies/search", search_companies, methods=["POST"]),
    Route("/company", create_company, methods=["POST"]),
    Route("/company/{companyId}", get_company, methods=["GET"]),
]
