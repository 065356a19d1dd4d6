"""Platform records: contacts and companies with search and paging, and one record's page."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from emulator.dashboard.render import PAGE_SIZE, api, api_problem, page, page_number, problem
from emulator.errors import ApiError
from emulator.public_api.companies import CompanyFilter, get_company, list_companies
from emulator.public_api.contacts import ContactFilter, get_contact, list_contacts
from emulator.public_api.conversations import conversation_messages
from emulator.public_api.memberships import contact_memberships


def _search(request: Request) -> str | None:
    return request.query_params.get("search", "").strip() or None


def _record_id(request: Request) -> int | None:
    text = request.path_params["recordId"]
    return int(text) if text.isdigit() and 0 < int(text) < 2**63 else None


async def contacts(request: Request) -> Response:
    number, search = page_number(request), _search(request)
    total, found = await list_contacts(
        api(request), ContactFilter(search=search), number, PAGE_SIZE
    )
    return page(request, "contacts.html", contacts=found, total=total, number=number, search=search)


async def companies(request: Request) -> Response:
    number, search = page_number(request), _search(request)
    total, found = await list_companies(
        api(request), CompanyFilter(search=search), number, PAGE_SIZE
    )
    return page(
        request, "companies.html", companies=found, total=total, number=number, search=search
    )


async def contact(request: Request) -> Response:
    contact_id = _record_id(request)
    if contact_id is None:
        return problem(request, 404, f"No contact {request.path_params['recordId']}")
    ctx = api(request)
    try:
        record = await get_contact(ctx, contact_id)
    except ApiError as exc:
        return api_problem(request, exc)
    memberships = await contact_memberships(ctx, contact_id)
    conversations = {
        m.conversationId: await conversation_messages(ctx, m.conversationId)
        for m in memberships
        if m.conversationId is not None
    }
    return page(
        request,
        "contact.html",
        contact=record,
        memberships=memberships,
        conversations=conversations,
    )


async def company(request: Request) -> Response:
    company_id = _record_id(request)
    if company_id is None:
        return problem(request, 404, f"No company {request.path_params['recordId']}")
    ctx = api(request)
    try:
        record = await get_company(ctx, company_id)
    except ApiError as exc:
        return api_problem(request, exc)
    total, people = await list_contacts(ctx, ContactFilter(company_id=company_id), 1, PAGE_SIZE)
    return page(request, "company.html", company=record, contacts=people, total=total)
