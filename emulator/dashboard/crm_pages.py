"""The reference CRM's side: what it holds per kind, each record as stored, its settings."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from emulator.control.crm import shown
from emulator.crm import inspect
from emulator.crm.routes import crm_context
from emulator.dashboard.render import PAGE_SIZE, page, page_number, problem


async def crm_home(request: Request) -> Response:
    ctx = crm_context(request)
    held = {
        kind: (await inspect.list_stored(ctx.db, kind, 1, 1))[0] for kind in inspect.INSPECTABLE
    }
    settings = shown(request, await ctx.settings())  # the key only to a token holder
    return page(request, "crm_home.html", held=held, settings=settings)


async def crm_list(request: Request) -> Response:
    kind = request.path_params["kind"]
    if kind not in inspect.INSPECTABLE:
        return problem(request, 404, f"The reference CRM has no {kind!r}")
    number = page_number(request)
    external_id = request.query_params.get("externalId", "").strip() or None
    total, records = await inspect.list_stored(
        crm_context(request).db, kind, number, PAGE_SIZE, external_id
    )
    return page(
        request,
        "crm_list.html",
        kind=kind,
        records=records,
        total=total,
        number=number,
        external_id=external_id,
    )


async def crm_record(request: Request) -> Response:
    kind, record_id = request.path_params["kind"], request.path_params["recordId"]
    if kind not in inspect.INSPECTABLE:
        return problem(request, 404, f"The reference CRM has no {kind!r}")
    found = await inspect.get_stored(crm_context(request).db, kind, record_id)
    if found is None or found == []:
        return problem(request, 404, f"The reference CRM holds no {kind} record {record_id}")
    return page(request, "crm_record.html", kind=kind, record_id=record_id, record=found)
