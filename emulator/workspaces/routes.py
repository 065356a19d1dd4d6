"""/_emulator/workspaces: create, list and remove isolated workspaces (docs/workspaces.md)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from emulator.asgi_guards import token_matches
from emulator.errors import BadRequest, Conflict, NotFound
from emulator.fixtures.loader import FixtureError
from emulator.http import decode_body, json_response
from emulator.openapi import Param, operation
from emulator.path_roots import PathRefused
from emulator.platform.connection import served_base
from emulator.redaction import REDACTED
from emulator.services import Services
from emulator.wire import Wire, decode, now_iso
from emulator.workspace_scope import registry
from emulator.workspaces.registry import TooManyWorkspaces, fixture_dir_named

WORKSPACE_ID = Param(name="workspaceId", where="path", required=True)


class WorkspaceIn(Wire, forbid_unknown_fields=True):
    fixtures: str | None = None  # a bundled name ("default") or a directory; None: the server's
    name: str | None = None


class ApiKeyOut(Wire):
    name: str | None
    key: str
    scopes: list[str]


class WorkspaceCreated(Wire):
    id: str
    name: str | None
    baseUrl: str
    fixtures: str
    apiKeys: list[ApiKeyOut]
    crmApiKey: str  # shown to a holder of the control token, else "***"


class WorkspaceOut(Wire):
    id: str
    name: str | None
    baseUrl: str
    fixtures: str
    now: str  # its virtual clock
    createdAt: str
    idleSeconds: float  # since its last request
    runningExports: int


class WorkspaceList(Wire):
    data: list[WorkspaceOut]
    meta: dict[str, float]  # max (the cap), idleSeconds (the expiry)


class WorkspaceRemoved(Wire):
    id: str
    cancelledExports: list[str]


def base_url(request: Request, services: Services) -> str:
    settings = services.emulator.settings
    return served_base(request.scope, (settings.host, settings.port)) + services.prefix


def summary(request: Request, services: Services) -> WorkspaceOut:
    reg = registry(request)
    return WorkspaceOut(
        id=services.id,
        name=services.name,
        baseUrl=base_url(request, services),
        fixtures=services.emulator.fixtures_dir,
        now=services.emulator.clock.now_iso(),
        createdAt=now_iso(datetime.fromtimestamp(services.created_at, UTC)),
        idleSeconds=round(reg.idle(services), 3),
        runningExports=len(services.exports.tasks),
    )


async def api_keys(services: Services) -> list[ApiKeyOut]:
    rows = await services.emulator.db.fetchall(
        "SELECT key, name, scopes FROM api_keys ORDER BY rowid"
    )
    return [ApiKeyOut(name=n, key=k, scopes=decode(s, list[str])) for k, n, s in rows]


@operation(
    "Create a workspace: every surface again under /w/{id}/, with its own state",
    WorkspaceCreated,
    status=201,
    body=WorkspaceIn,
    errors=(400, (409, "The cap on workspaces is reached")),
    security=None,
)
async def create(request: Request) -> Response:
    raw = await request.body()
    body = await decode_body(request, WorkspaceIn, BadRequest.field) if raw.strip() else None
    body = body or WorkspaceIn()
    reg = registry(request)
    directory = None
    if body.fixtures is not None:
        try:
            found = await asyncio.to_thread(fixture_dir_named, body.fixtures, reg.roots())
        except PathRefused as exc:
            raise BadRequest.field("fixtures", str(exc)) from None
        directory = str(found)
    try:
        services = await reg.create(directory, body.name)
    except TooManyWorkspaces as exc:
        raise Conflict(str(exc)) from None
    except FixtureError as exc:
        raise BadRequest.field("fixtures", str(exc)) from None
    crm = await services.crm.settings()
    token = services.emulator.settings.controlToken
    shown_key = crm.apiKey if token_matches(request.headers.raw, token) else REDACTED
    created = WorkspaceCreated(
        id=services.id,
        name=services.name,
        baseUrl=base_url(request, services),
        fixtures=services.emulator.fixtures_dir,
        apiKeys=await api_keys(services),
        crmApiKey=shown_key,
    )
    return json_response(created, 201)


@operation(
    "The workspaces (the default one, on the root paths, is not listed)",
    WorkspaceList,
    errors=(),
    security=None,
)
async def listing(request: Request) -> Response:
    reg = registry(request)
    return json_response(
        WorkspaceList(
            data=[summary(request, s) for s in reg.all()],
            meta={"max": reg.max_count, "idleSeconds": reg.idle_seconds},
        )
    )


@operation("One workspace", WorkspaceOut, params=(WORKSPACE_ID,), errors=(404,), security=None)
async def show(request: Request) -> Response:
    services = registry(request).get(request.path_params["workspaceId"])
    if services is None:
        raise NotFound("no such workspace")
    return json_response(summary(request, services))


@operation(
    "Remove a workspace, cancelling the exports and verify runs running in it",
    WorkspaceRemoved,
    params=(WORKSPACE_ID,),
    errors=(404,),
    security=None,
)
async def remove(request: Request) -> Response:
    workspace_id = request.path_params["workspaceId"]
    cancelled = await registry(request).delete(workspace_id)
    if cancelled is None:
        raise NotFound("no such workspace")
    return json_response(WorkspaceRemoved(id=workspace_id, cancelledExports=cancelled))


routes: list[BaseRoute] = [
    Route("/workspaces", create, methods=["POST"]),
    Route("/workspaces", listing, methods=["GET"]),
    Route("/workspaces/{workspaceId}", show, methods=["GET"]),
    Route("/workspaces/{workspaceId}", remove, methods=["DELETE"]),
]
