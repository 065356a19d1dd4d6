"""create_app(settings): one Starlette app mounting /v1, /crm and /_emulator over one store."""

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

from emulator import __version__
from emulator.asgi_guards import BodyLimit, ControlToken
from emulator.asgi_redaction import RedactAnswers, SecretsInForce
from emulator.browser_guards import BrowserGuard, HostRule
from emulator.calls.recorder import CallRecorder
from emulator.calls.state import IncomingCalls
from emulator.control.routes import routes as control_routes
from emulator.crm.context import CrmContext
from emulator.crm.routes import routes as crm_routes
from emulator.crm.seed import seed as seed_crm
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
from emulator.exporter.runs import ExportRuns
from emulator.fixtures.models import FixtureSet
from emulator.http import json_response
from emulator.openapi import build_document
from emulator.operations import Busy
from emulator.platform.seed import MemberHistories, seed_contacts, seed_records
from emulator.public_api.context import ApiContext
from emulator.public_api.routes import routes as public_routes
from emulator.redaction import SecretBook
from emulator.server import server_opener
from emulator.services import Services
from emulator.settings import Settings
from emulator.simulation.actions_export import ActionsExports
from emulator.simulation.autosync import AutoSync, InProcessTransport
from emulator.simulation.crm_health import HealthChecker
from emulator.simulation.dispatch import DeliveryListener
from emulator.simulation.engine import Simulation
from emulator.simulation.seed import seed as seed_simulation
from emulator.state import Emulator, Seeding
from emulator.verify.runs import VerifyRuns

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


def create_app(settings: Settings | None = None, fixtures: FixtureSet | None = None) -> Starlette:
    """The whole emulator; `fixtures` skips re-reading a directory the caller already loaded."""
    histories = MemberHistories()
    emulator = Emulator(
        settings or Settings(),
        seeders=Seeding(
            before=[seed_records, histories.prepare, seed_crm],
            after=[seed_contacts, histories.write, seed_simulation],
        ),
        fixtures=fixtures,
    )

    simulation = Simulation(emulator)
    secrets = SecretBook([emulator.settings.controlToken])
    redactor = SecretsInForce(secrets, lambda: emulator.db)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await emulator.start()
        await redactor()  # the stored secrets known before any answer or log line
        ticker = None
        if emulator.settings.clockSpeed is not None:  # --clock realtime[:SPEED]
            ticker = asyncio.create_task(simulation.run_realtime())
        try:
            yield
        finally:
            # Stopping must not wait for a long export: cancel it (its report says so).
            await app.state.services.exports.cancel_all("the server stopped")
            await app.state.services.verify_runs.cancel_all()
            running = [t for t in (ticker, *app.state.services.exports.tasks) if t]
            for task in running:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)
            await emulator.close()

    document: dict[str, object] = {}

    async def openapi(request: Request) -> Response:
        if not document:  # built on first use: keeps start-up fast
            document.update(
                build_document(
                    app.routes,
                    "Outreach platform emulator",
                    __version__,
                    control_token=emulator.settings.controlToken is not None,
                )
            )
        return json_response(document)

    app = Starlette(
        routes=[
            Mount("/v1", routes=public_routes),
            Mount("/crm", routes=crm_routes),
            Mount("/_emulator", routes=control_routes),
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
            # outermost: the guards' own answers are redacted too
            Middleware(RedactAnswers, redactor=redactor, token=emulator.settings.controlToken),
            Middleware(
                BrowserGuard,
                hosts=HostRule.of(emulator.settings.host, emulator.settings.allowedHosts),
            ),
            Middleware(ControlToken, token=emulator.settings.controlToken),
            # outside BodyLimit: a 413 is a call the journal shows too
            Middleware(CallRecorder, max_body=emulator.settings.maxBody),
            Middleware(BodyLimit, max_body=emulator.settings.maxBody),
        ],
        lifespan=lifespan,
    )
    crm_transport = InProcessTransport(app)  # a relative crmUrl ("/crm") is this app
    services = Services(
        emulator=emulator,
        simulation=simulation,
        public_api=ApiContext(emulator),
        crm=CrmContext(emulator),
        autosync=AutoSync(emulator, crm_transport),
        deliveries=DeliveryListener(emulator, ActionsExports(emulator, crm_transport)),
        exports=ExportRuns(),
        verify_runs=VerifyRuns(),
        open_server=server_opener(create_app),
        calls=IncomingCalls(emulator.settings.requestsLimit, emulator.settings.requestsBytes),
        secrets=secrets,
    )
    app.state.services = services
    simulation.listeners.append(services.autosync)  # CRM auto-sync after each advance
    simulation.listeners.append(services.deliveries)  # webhooks and actions runs
    simulation.listeners.append(HealthChecker(emulator, crm_transport))  # the CRM's health
    return app
