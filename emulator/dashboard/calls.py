"""The journal of incoming /v1 and /crm calls, and the /v1 faults, as dashboard pages."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from emulator.control.calls import call_filter, calls_of
from emulator.dashboard.render import PAGE_SIZE, api_problem, page, page_number
from emulator.errors import ApiError

CALL_FILTERS = ("method", "route", "path", "status")


async def requests(request: Request) -> Response:
    number = page_number(request)
    try:
        where = call_filter(request.query_params)
    except ApiError as exc:
        return api_problem(request, exc)
    found = calls_of(request).journal.page(where, number, PAGE_SIZE)
    filters = {name: request.query_params.get(name, "") for name in CALL_FILTERS}
    return page(
        request,
        "requests.html",
        calls=found.data,
        total=found.meta.total,
        number=number,
        filters=filters,
    )


async def faults(request: Request) -> Response:
    return page(request, "faults.html", faults=calls_of(request).faults.listing())
