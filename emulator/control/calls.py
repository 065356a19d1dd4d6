"""/_emulator/requests and /_emulator/v1-faults: the journal of incoming calls and /v1 faults.

Both live in memory (`IncomingCalls`, one per emulator): a reset or fixture load clears them,
a snapshot restore keeps them.
"""

from __future__ import annotations

from collections.abc import Collection

from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from emulator.calls.faults import V1Fault, V1FaultIn, problems
from emulator.calls.journal import MAX_PAGE_SIZE, CallFilter, CallPage
from emulator.calls.state import IncomingCalls
from emulator.calls.v1_routes import templates
from emulator.errors import BadRequest, FieldError, NotFound
from emulator.http import decode_body, json_response
from emulator.openapi import Param, operation, query
from emulator.wire import Wire
from emulator.workspace_scope import workspace

FAULT_ID = Param(name="faultId", where="path", required=True)
CALL_FILTERS = (
    query("method", "e.g. POST"),
    query("route", "a route template, e.g. /v1/contact/{contactId}"),
    query("path", "an exact path, e.g. /v1/contact/7"),
    query("status", "an HTTP status, or none for calls that got no answer"),
)


class Cleared(Wire):
    status: str = "ok"
    cleared: int


class V1FaultList(Wire):
    data: list[V1Fault]


def calls_of(request: Request) -> IncomingCalls:
    return workspace(request).calls


def bounded(q: QueryParams, name: str, default: int, low: int, high: int) -> int:
    text = q.get(name, str(default)).strip()
    if not text.isdigit() or not low <= int(text) <= high:
        raise BadRequest.field(name, f"must be an integer between {low} and {high}")
    return int(text)


def call_filter(q: QueryParams) -> CallFilter:
    """The filters of GET /_emulator/requests (and its dashboard page); bad ones are a 400."""
    status, unanswered = None, False
    text = q.get("status", "").strip()
    if text == "none":
        unanswered = True
    elif text:
        if not text.isdigit() or not 100 <= int(text) <= 599:
            raise BadRequest.field("status", "must be an HTTP status or none")
        status = int(text)
    return CallFilter(
        method=q.get("method", "").strip().upper() or None,
        route=q.get("route", "").strip() or None,
        path=q.get("path", "").strip() or None,
        status=status,
        unanswered=unanswered,
    )


@operation(
    "Incoming /v1 and /crm calls, newest first (bodies capped at 16 KiB each)",
    CallPage,
    params=[
        *CALL_FILTERS,
        query("limit", f"calls per page, 1..{MAX_PAGE_SIZE} (default 50)"),
        query("page", "page number, from 1"),
    ],
    security=None,
)
async def list_requests(request: Request) -> Response:
    q = request.query_params
    where = call_filter(q)
    page = bounded(q, "page", 1, 1, 10**9)
    limit = bounded(q, "limit", 50, 1, MAX_PAGE_SIZE)
    return json_response(calls_of(request).journal.page(where, page, limit))


@operation("Forget every recorded call", Cleared, errors=(), security=None)
async def clear_requests(request: Request) -> Response:
    return json_response(Cleared(cleared=calls_of(request).journal.clear()))


def check_fault(fault: V1FaultIn, routes: Collection[str]) -> None:
    found = problems(fault, routes)
    if found:
        message = "; ".join(f"{f}: {m}" if f else m for f, m in found)
        raise BadRequest(message, [FieldError(field=f, message=m) for f, m in found])


@operation(
    "Add a fault or override on /v1 (tried in the order added)",
    V1Fault,
    status=201,
    body=V1FaultIn,
    security=None,
)
async def add_fault(request: Request) -> Response:
    fault = await decode_body(request, V1FaultIn, BadRequest.field)
    check_fault(fault, templates())
    added = calls_of(request).faults.add(fault)
    return json_response(added, 201, {"Location": f"/_emulator/v1-faults/{added.id}"})


@operation("The /v1 faults, with how often each fired", V1FaultList, errors=(), security=None)
async def list_faults(request: Request) -> Response:
    return json_response(V1FaultList(data=calls_of(request).faults.listing()))


@operation("Remove one /v1 fault", V1Fault, errors=(404,), params=[FAULT_ID], security=None)
async def delete_fault(request: Request) -> Response:
    fault_id = request.path_params["faultId"]
    removed = calls_of(request).faults.remove(fault_id)
    if removed is None:
        raise NotFound(f"unknown fault {fault_id!r}")
    return json_response(removed)


@operation("Remove every /v1 fault", Cleared, errors=(), security=None)
async def clear_faults(request: Request) -> Response:
    return json_response(Cleared(cleared=calls_of(request).faults.clear()))


routes: list[BaseRoute] = [
    Route("/requests", list_requests, methods=["GET"]),
    Route("/requests", clear_requests, methods=["DELETE"]),
    Route("/v1-faults", add_fault, methods=["POST"]),
    Route("/v1-faults", list_faults, methods=["GET"]),
    Route("/v1-faults", clear_faults, methods=["DELETE"]),
    Route("/v1-faults/{faultId}", delete_fault, methods=["DELETE"]),
]
