"""One workspace's services built and wired together: the root paths' (by `create_app`) and
each `/w/{id}/` one's (by the registry)."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from emulator.calls.state import IncomingCalls
from emulator.crm.context import CrmContext
from emulator.exporter.runs import ExportRuns
from emulator.fixtures.models import FixtureSet
from emulator.public_api.context import ApiContext
from emulator.redaction import SecretBook
from emulator.server import AppFactory, server_opener
from emulator.services import DEFAULT_ID, Services
from emulator.settings import Settings
from emulator.simulation.actions.export import ActionsExports
from emulator.simulation.campaigns.engine import Simulation
from emulator.simulation.crm_link.autosync import AutoSync, InProcessTransport
from emulator.simulation.crm_link.health import HealthChecker
from emulator.simulation.dispatch import DeliveryListener
from emulator.state import Emulator
from emulator.verify.runs import VerifyRuns
from emulator.workspace_scope import PREFIX, WORKSPACE
from emulator.workspaces.seeders import emulator_with_seeders


class Pinned:
    """The app with every call put in one workspace: what its in-process calls to "/crm"
    (exports, auto-sync, actions, health checks) go through, so they reach its own CRM."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.services: Services | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        assert self.services is not None
        pinned = {**scope, WORKSPACE: self.services, PREFIX: self.services.prefix}
        await self.app(pinned, receive, send)


def build_services(
    app: ASGIApp,
    settings: Settings,
    fixtures: FixtureSet | None,
    factory: AppFactory,
    workspace_id: str = DEFAULT_ID,
    name: str | None = None,
    secrets: SecretBook | None = None,
    emulator: Emulator | None = None,
) -> Services:
    """Every long-lived object of one workspace over `app` (the whole emulator), its store
    not open yet (`emulator.start()` or `start_from_image` opens it). `secrets`: the book
    it shares (a workspace shares the default one's, which the log lines are redacted with,
    so a secret any workspace knows is hidden everywhere). `emulator`: its state when built
    beforehand (`emulator_with_seeders`: a cold start seeds it before the server imports)."""
    emulator = emulator or emulator_with_seeders(settings, fixtures)
    simulation = Simulation(emulator)
    pinned = Pinned(app) if workspace_id else None
    crm_transport = InProcessTransport(pinned or app)  # a relative crmUrl ("/crm") is this app
    services = Services(
        emulator=emulator,
        simulation=simulation,
        public_api=ApiContext(emulator),
        crm=CrmContext(emulator),
        autosync=AutoSync(emulator, crm_transport),
        deliveries=DeliveryListener(emulator, ActionsExports(emulator, crm_transport)),
        exports=ExportRuns(),
        verify_runs=VerifyRuns(),
        open_server=server_opener(factory),
        calls=IncomingCalls(settings.requestsLimit, settings.requestsBytes),
        secrets=secrets or SecretBook([settings.controlToken]),
        id=workspace_id,
        name=name,
    )
    if pinned is not None:
        pinned.services = services
    simulation.listeners.append(services.autosync)  # CRM auto-sync after each advance
    simulation.listeners.append(services.deliveries)  # webhooks and actions runs
    simulation.listeners.append(HealthChecker(emulator, crm_transport))  # the CRM's health
    return services
