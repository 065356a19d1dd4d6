"""HTTP side of the reference CRM (/crm): faults, API key, parsing; the service does the rest.

Every handler runs behind `endpoint(key)`: first the injected fault for the call (if any),
then the API-key check, then the handler. A fault replaces the handler: the call changes
nothing in the store.
"""

from __future__ import annotations

import asyncio
import functools
import hmac
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from typing import Any, TypeVar, assert_never

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from emulator.crm import schemas as s
from emulator.crm import service, tasks
from emulator.crm.context import CrmContext
from emulator.crm.faults import DropConnection, ErrorStatus, LatencyOnly, MalformedBody, fault_kind
from emulator.crm.records import COMPANIES, CONTACTS, Kind
from emulator.errors import CrmError, CrmErrorBody
from emulator.fixtures.models import CrmSettings, CrmUser, FaultRule
from emulator.http import decode_body, json_response
from emulator.openapi import Error, Security, operation
from emulator.wire import decode, parse_iso
from emulator.workspace_scope import workspace

T = TypeVar("T")
Handler = Callable[[Request, CrmContext, CrmSettings], Awaitable[Response]]
MALFORMED = b'{"results": ['
F = TypeVar("F", bound=Callable[..., Any])

CRM_KEY = Security(
    name="crmApiKey",
    header=CrmSettings().apiKeyHeader,
    description="The reference CRM's API key. The header name and the key are CRM settings "
    "(PUT /_emulator/crm/settings); the header shown is the default.",
)


def crm_operation(
    summary: str,
    response: Any,
    *,
    status: int = 200,
    body: Any = None,
    errors: tuple[Error, ...] = (400,),
) -> Callable[[F], F]:
    """`operation` for /crm: the CRM's error body and key header."""
    return operation(
        summary,
        response,
        status=status,
        body=body,
        errors=errors,
        security=CRM_KEY,
        error_body=CrmErrorBody,
    )


def crm_context(request: Request) -> CrmContext:
    """The app's CrmContext (it hooks itself to the emulator's reset)."""
    return workspace(request).crm


def bad_request(field: str, message: str) -> CrmError:
    return CrmError(400, "bad_request", f"{field}: {message}" if field else message)


def error_name(status: int) -> str:
    try:
        return HTTPStatus(status).phrase.lower().replace(" ", "_").replace("-", "_")
    except ValueError:
        return "error"


class ConnectionDropped(Exception):
    """Raised when the server under the app wrote a response the drop meant to prevent."""


class DroppedConnection(Response):
    """Close the connection without a byte of response.

    uvicorn marks the response started, then validates the header block before writing it;
    a header value with a newline fails that check, so nothing is written, and an app that
    returns after a started but unfinished response makes uvicorn close the socket.
    """

    def __init__(self) -> None:
        super().__init__(b"")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await send(
                {"type": "http.response.start", "status": 200, "headers": [(b"x-drop", b"\n")]}
            )
        except Exception:
            return  # the server refused the headers: it closes the connection, unanswered
        raise ConnectionDropped("dropConnection fault: the server accepted an invalid header")


async def injected(rule: FaultRule) -> Response | None:
    """The answer a fault rule gives instead of the handler's (None: latency only)."""
    if rule.latencyMs:
        await asyncio.sleep(rule.latencyMs / 1000)
    match fault_kind(rule):
        case DropConnection():
            return DroppedConnection()
        case ErrorStatus(status=status, retry_after=retry_after):
            headers = {} if retry_after is None else {"Retry-After": str(retry_after)}
            body = {"error": error_name(status), "message": f"Injected fault: status {status}"}
            return json_response(body, status, headers)
        case MalformedBody():
            return Response(MALFORMED, 200, media_type="application/json")
        case LatencyOnly():
            return None
        case unknown:
            assert_never(unknown)


def check_key(request: Request, settings: CrmSettings) -> None:
    sent = request.headers.get(settings.apiKeyHeader)
    if sent is None:
        raise CrmError(401, "unauthorized", f"Missing API key (header {settings.apiKeyHeader})")
    if not hmac.compare_digest(sent.encode(), settings.apiKey.encode()):
        raise CrmError(401, "unauthorized", "Invalid API key")


def endpoint(key: str) -> Callable[[Handler], Callable[[Request], Awaitable[Response]]]:
    """Wrap a handler of the endpoint `key` ("POST /contacts/sync") with faults and the key check."""

    def wrap(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        @functools.wraps(handler)
        async def run(request: Request) -> Response:
            ctx = crm_context(request)
            settings = await ctx.settings()
            if settings.faults:
                rule = ctx.faults.next(settings.faults, key)
                answer = None if rule is None else await injected(rule)
                if answer is not None:
                    return answer
            check_key(request, settings)
            return await handler(request, ctx, settings)

        run.endpoint_key = key  # type: ignore[attr-defined]
        return run

    return wrap


async def parse(request: Request, typed: type[T]) -> tuple[T, Any]:
    """The body checked as `typed`, and as plain JSON (every field sent, for storage)."""
    checked = await decode_body(request, typed, bad_request)
    return checked, decode(await request.body())


def iso_field(value: str | None, field: str) -> None:
    if value is not None:
        try:
            parse_iso(value)
        except ValueError:
            raise bad_request(field, f"not an ISO 8601 date or time: {value!r}") from None


# --- handlers ---------------------------------------------------------------------------


@crm_operation("Health check", s.Health, errors=())
@endpoint("GET /health")
async def health(request: Request, ctx: CrmContext, settings: CrmSettings) -> Response:
    return json_response(s.Health())


def record_handlers(kind: Kind, typed: type[Any], updates: type[Any]) -> list[BaseRoute]:
    """Sync, create and update of one record kind (the same rules for contacts and companies)."""
    path = f"/{kind.name}"

    @crm_operation(f"Match {kind.name} to existing records", s.SyncOut, body=typed)
    @endpoint(f"POST {path}/sync")
    async def sync(request: Request, ctx: CrmContext, settings: CrmSettings) -> Response:
        _, raw = await parse(request, typed)
        return json_response(await service.sync(ctx.db, kind, raw[kind.name], settings))

    @crm_operation(f"Create {kind.name}", s.CreateOut, status=201, body=typed)
    @endpoint(f"POST {path}")
    async def create(request: Request, ctx: CrmContext, settings: CrmSettings) -> Response:
        _, raw = await parse(request, typed)
        return json_response(await service.create(ctx.db, kind, raw[kind.name], ctx.now()), 201)

    @crm_operation(f"Update {kind.name} by crmId", s.UpdateOut, body=updates)
    @endpoint(f"PUT {path}")
    async def update(request: Request, ctx: CrmContext, settings: CrmSettings) -> Response:
        _, raw = await parse(request, updates)
        out = await service.update(ctx.db, kind, raw[kind.name], settings, ctx.now())
        return json_response(out)

    sync.__name__, create.__name__, update.__name__ = (
        f"sync_{kind.name}",
        f"create_{kind.name}",
        f"update_{kind.name}",
    )
    return [
        Route(f"{path}/sync", sync, methods=["POST"], name=sync.__name__),
        Route(path, create, methods=["POST"], name=create.__name__),
        Route(path, update, methods=["PUT"], name=update.__name__),
    ]


@crm_operation("Link contacts to companies", s.AssociationsOut, body=s.AssociationsIn)
@endpoint("POST /associations")
async def associations(request: Request, ctx: CrmContext, settings: CrmSettings) -> Response:
    body = await decode_body(request, s.AssociationsIn, bad_request)
    return json_response(await service.associate(ctx.db, body.associations, ctx.now()))


@crm_operation("Log an activity", s.Activity, status=201, body=s.ActivityIn)
@endpoint("POST /activities")
async def activities(request: Request, ctx: CrmContext, settings: CrmSettings) -> Response:
    checked, raw = await parse(request, s.ActivityIn)
    iso_field(checked.occurredAt, "occurredAt")
    return json_response(await service.create_activity(ctx.db, raw, ctx.now()), 201)


@crm_operation("Create a task", s.Task, status=201, body=s.TaskIn)
@endpoint("POST /tasks")
async def create_task(request: Request, ctx: CrmContext, settings: CrmSettings) -> Response:
    checked, raw = await parse(request, s.TaskIn)
    iso_field(checked.dueDate, "dueDate")
    return json_response(await tasks.create_task(ctx.db, raw, ctx.now()), 201)


def not_found(task_id: str) -> CrmError:
    return CrmError(404, "not_found", f"Task {task_id} not found")


@crm_operation("Get a task", s.Task, errors=((404, "Unknown task id"),))
@endpoint("GET /tasks/:taskId")
async def get_task(request: Request, ctx: CrmContext, settings: CrmSettings) -> Response:
    task_id = request.path_params["taskId"]
    found = await tasks.get_tasks(ctx.db, [task_id])
    if not found:
        raise not_found(task_id)
    return json_response(found[0])


@crm_operation(
    "Complete or reopen a task", s.Task, body=s.TaskPatch, errors=(400, (404, "Unknown task id"))
)
@endpoint("PATCH /tasks/:taskId")
async def patch_task(request: Request, ctx: CrmContext, settings: CrmSettings) -> Response:
    task_id = request.path_params["taskId"]
    checked, raw = await parse(request, s.TaskPatch)
    iso_field(checked.dueDate, "dueDate")
    found = await tasks.set_completed(ctx.db, [task_id], checked.completed, ctx.now(), raw)
    if not found:
        raise not_found(task_id)
    return json_response(found[0])


@crm_operation("Get tasks by id (unknown ids left out)", list[s.Task], body=s.TaskIds)
@endpoint("POST /tasks/batch")
async def get_tasks(request: Request, ctx: CrmContext, settings: CrmSettings) -> Response:
    body = await decode_body(request, s.TaskIds, bad_request)
    return json_response(await tasks.get_tasks(ctx.db, body.ids))


@crm_operation(
    "Complete or reopen tasks (unknown ids left out)", list[s.Task], body=s.TaskBatchPatch
)
@endpoint("PATCH /tasks/batch")
async def complete_tasks(request: Request, ctx: CrmContext, settings: CrmSettings) -> Response:
    body = await decode_body(request, s.TaskBatchPatch, bad_request)
    return json_response(await tasks.set_completed(ctx.db, body.ids, body.completed, ctx.now()))


@crm_operation(
    "List users (owners)",
    list[CrmUser],
    errors=tuple((code, "Users not listed (the usersStatus setting)") for code in (404, 405, 501)),
)
@endpoint("GET /users")
async def users(request: Request, ctx: CrmContext, settings: CrmSettings) -> Response:
    if settings.usersStatus != 200:
        status = settings.usersStatus
        raise CrmError(status, error_name(status), "This CRM does not list users")
    return json_response(await service.list_users(ctx.db))


routes: list[BaseRoute] = [
    Route("/health", health, methods=["GET"]),
    *record_handlers(CONTACTS, s.ContactsIn, s.ContactUpdatesIn),
    *record_handlers(COMPANIES, s.CompaniesIn, s.CompanyUpdatesIn),
    Route("/associations", associations, methods=["POST"]),
    Route("/activities", activities, methods=["POST"]),
    Route("/tasks", create_task, methods=["POST"]),
    # /tasks/batch before /tasks/{taskId}, or "batch" would be taken for a task id.
    Route("/tasks/batch", get_tasks, methods=["POST"]),
    Route("/tasks/batch", complete_tasks, methods=["PATCH"]),
    Route("/tasks/{taskId}", get_task, methods=["GET"]),
    Route("/tasks/{taskId}", patch_task, methods=["PATCH"]),
    Route("/users", users, methods=["GET"]),
]
