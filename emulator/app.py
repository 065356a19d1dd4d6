"""create_app(settings): one Starlette app mounting /v1, /crm and /_emulator over the default
workspace's store at the root paths, and every workspace's under /w/{id}/."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.types import Scope

from emulator import __version__
from emulator.browser_guards import HostRule
from emulator.calls.recorder import CallRecorder
from emulator.control.routes import routes as control_routes
from emulator.crm.routes import routes as crm_routes
from emulator.dashboard.routes import routes as dashboard_routes
from emulator.errors import (
    ApiError,
    BadRequest,
    Conflict,
    CrmError,
    api_error_handler,
    crm_error_handler,
    surface_response,
)
from emulator.exception_layer import EmulatorStarlette
from emulator.fixtures.models import FixtureSet
from emulator.guard_layer import Guards
from emulator.http import json_response
from emulator.openapi import build_document
from emulator.operations import Busy
from emulator.public_api.routes import routes as public_routes
from emulator.redaction import Redactor, SecretBook
from emulator.route_index import IndexedRouter
from emulator.settings import Settings
from emulator.state import Emulator
from emulator.workspace_scope import prefix_of, services_of
from emulator.workspaces.bundle import build_services
from emulator.workspaces.dispatch import WorkspaceDispatch
from emulator.workspaces.registry import Workspaces
from emulator.workspaces.routes import routes as workspace_routes

log = logging.getLogger(__name__)


async def http_error(request: Request, exc: Exception) -> Response:
    """Unknown routes and methods, in the error shape of the surface they were sent to."""
    assert isinstance(exc, HTTPException)
    if request.url.path.startswith("/crm"):
        error = "not_found" if exc.status_code == 404 else "method_not_allowed"
        return json_response({"error": error, "message": exc.detail}, exc.status_code, exc.headers)
    return json_response({"status": "error", "message": exc.detail}, exc.status_code, exc.headers)


async def internal_error(request: Request, exc: Exception) -> Response:
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    if request.url.path.startswith("/crm"):
        return json_response({"error": "internal_error", "message": "Internal error"}, 500)
    return json_response({"status": "error", "message": "Internal error"}, 500)


async def busy(request: Request, exc: Exception) -> Response:
    """A control operation while another runs: 409 naming the one that runs."""
    return surface_response(
        request.url.path, Conflict(str(exc), headers={"Retry-After": "1"}), "conflict"
    )


async def undecodable(request: Request, exc: Exception) -> Response:
    """Input no decoder or the store can take (JSON nested too deep, invalid UTF-8, an integer
    beyond 64 bits) is the caller's 400, whichever handler met it first."""
    match exc:
        case RecursionError():
            message = "malformed JSON: nested too deep"
        case UnicodeDecodeError():
            message = "malformed input: not valid UTF-8"
        case _:
            message = "a number is out of range (integers must fit in 64 bits)"
    log.info("400 for %s %s: %r", request.method, request.url.path, exc)
    return surface_response(request.url.path, BadRequest(message), "bad_request")


def create_app(
    settings: Settings | None = None,
    fixtures: FixtureSet | None = None,
    *,
    emulator: Emulator | None = None,
    secrets: SecretBook | None = None,
) -> Starlette:
    """The whole emulator; `fixtures` skips re-reading a directory the caller already loaded.
    `emulator` and `secrets`: the state and the secrets' book, built before the app (`emulator
    serve` seeds the state, its log lines redacted with the book, before it imports the app)."""
    settings = settings or Settings()
    workspaces = Workspaces(create_app, settings.maxWorkspaces, settings.workspaceIdle)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        default = app.state.services
        await default.emulator.start()
        await default.start()
        sweeper = asyncio.create_task(workspaces.sweep_forever())
        try:
            yield
        finally:
            # Stopping must not wait for a long export: cancel it (its report says so).
            sweeper.cancel()
            await asyncio.gather(sweeper, return_exceptions=True)
            await workspaces.close_all()
            await default.stop("the server stopped")

    document: dict[str, object] = {}

    async def openapi(request: Request) -> Response:
        if not document:  # built on first use: keeps start-up fast
            document.update(
                build_document(
                    app.routes,
                    "Outreach platform emulator",
                    __version__,
                    control_token=settings.controlToken is not None,
                )
            )
        prefix = prefix_of(request.scope)
        if prefix:  # in a workspace, "try it" calls go to its own paths
            return json_response({**document, "servers": [{"url": prefix}]})
        return json_response(document)

    async def redactor(scope: Scope) -> Redactor:
        """The secrets in force in the workspace the answer comes from."""
        in_force = services_of(scope).redactor
        assert in_force is not None
        return await in_force(scope)

    app = EmulatorStarlette(
        routes=[
            Mount("/v1", routes=public_routes),
            Mount("/crm", routes=crm_routes),
            Mount("/_emulator", routes=[*control_routes, *workspace_routes]),
            Route("/openapi.json", openapi, methods=["GET"]),
            *dashboard_routes,  # /, the record pages and /docs
        ],
        exception_handlers={
            ApiError: api_error_handler,
            CrmError: crm_error_handler,
            HTTPException: http_error,
            Busy: busy,
            RecursionError: undecodable,
            UnicodeDecodeError: undecodable,
            OverflowError: undecodable,
            Exception: internal_error,
        },
        middleware=[
            # outermost: /w/{id}/... is served as /... in workspace {id} by every layer inside
            Middleware(WorkspaceDispatch, workspaces=workspaces),
            # redaction, the browser guard and the control token, in that order, as one
            # layer (guard_layer.py): the guards' own answers are redacted too
            Middleware(
                Guards,
                redactor=redactor,
                hosts=HostRule.of(settings.host, settings.allowedHosts),
                token=settings.controlToken,
            ),
            # the journal, and inside it the body limit (a 413 is a call the journal shows too)
            Middleware(CallRecorder, max_body=settings.maxBody),
        ],
        lifespan=lifespan,
    )
    # the same routes, a fixed path found by one look-up (route_index.py)
    app.router = IndexedRouter(app.router.routes, lifespan=lifespan)
    app.state.workspaces = workspaces
    app.state.services = build_services(
        app, settings, fixtures, create_app, secrets=secrets, emulator=emulator
    )
    workspaces.attach(app, app.state.services)
    return app
