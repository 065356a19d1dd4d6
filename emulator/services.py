"""One workspace's services in one container: what `create_app` builds for the root paths and
the workspace registry builds for each `/w/{id}/` (emulator/workspaces/)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from emulator.asgi_redaction import SecretsInForce
from emulator.calls.state import IncomingCalls
from emulator.control.snapshots import Shelf
from emulator.crm.context import CrmContext
from emulator.exporter.runs import ExportRuns
from emulator.public_api.context import ApiContext
from emulator.redaction import SecretBook
from emulator.server import ServerOpener
from emulator.simulation.advances import AdvanceRuns
from emulator.simulation.campaigns.engine import Simulation
from emulator.simulation.crm_link.autosync import AutoSync
from emulator.simulation.dispatch import DeliveryListener
from emulator.state import Emulator
from emulator.verify.runs import VerifyRuns

DEFAULT_ID = ""  # the root paths' workspace


@dataclass
class Services:
    """Every long-lived object of one workspace (the root paths' one, or a `/w/{id}/` one);
    handlers reach them through `emulator.workspace_scope.services(request)`."""

    emulator: Emulator  # the store, the fixtures and the clock: the resettable state
    simulation: Simulation
    public_api: ApiContext
    crm: CrmContext
    autosync: AutoSync
    deliveries: DeliveryListener
    exports: ExportRuns
    verify_runs: VerifyRuns
    open_server: ServerOpener  # starts a scenario's own emulator (this app's factory)
    snapshots: Shelf = field(default_factory=Shelf)  # saved states; they survive a reset
    calls: IncomingCalls = field(default_factory=IncomingCalls)  # journal of calls, /v1 faults
    advances: AdvanceRuns = field(default_factory=AdvanceRuns)  # background clock advances
    # secrets seen by this workspace (control token, keys given to verify runs...): kept out
    # of every control answer, dashboard page and log line
    secrets: SecretBook = field(default_factory=SecretBook)
    redactor: SecretsInForce | None = None  # the book plus the secrets the store holds
    id: str = DEFAULT_ID  # "" for the root paths, else the `{id}` of `/w/{id}/`
    name: str | None = None
    created_at: float = field(default_factory=time.time)  # wall clock
    last_used: float = field(default_factory=time.monotonic)  # the last request to it
    background: list[asyncio.Task[Any]] = field(default_factory=list)  # e.g. a realtime clock

    def __post_init__(self) -> None:
        self.emulator.on_reset.append(self.exports.clear)
        self.emulator.on_fixtures_reset.append(self.calls.clear)
        if self.redactor is None:
            self.redactor = SecretsInForce(self.secrets, lambda: self.emulator.db)

    @property
    def prefix(self) -> str:
        """The path its surfaces are served under: "" or `/w/{id}`."""
        return f"/w/{self.id}" if self.id else ""

    def touch(self) -> None:
        self.last_used = time.monotonic()

    async def start(self) -> None:
        """Background work once the store is open: the realtime clock (`--clock realtime`)."""
        await self.redactor_in_force()
        if self.emulator.settings.clockSpeed is not None:
            self.background.append(asyncio.create_task(self.simulation.run_realtime()))

    async def redactor_in_force(self) -> None:
        assert self.redactor is not None
        await self.redactor()  # the stored secrets known before any answer or log line

    async def stop(self, reason: str) -> list[str]:
        """Cancel what runs in it (exports, verify runs, advances, background work) and close its
        store; answers the cancelled exports' ids."""
        cancelled = await self.exports.cancel_all(reason)
        await self.verify_runs.cancel_all()
        running = [*self.background, *self.exports.tasks, *self.advances.tasks()]
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        self.background.clear()
        await self.emulator.close()
        return cancelled
