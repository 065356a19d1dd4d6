"""The app's services in one container, built by `create_app` and reset with the state."""

from __future__ import annotations

from dataclasses import dataclass, field

from emulator.calls.state import IncomingCalls
from emulator.control.snapshots import Shelf
from emulator.crm.context import CrmContext
from emulator.exporter.runs import ExportRuns
from emulator.public_api.context import ApiContext
from emulator.redaction import SecretBook
from emulator.server import ServerOpener
from emulator.simulation.autosync import AutoSync
from emulator.simulation.dispatch import DeliveryListener
from emulator.simulation.engine import Simulation
from emulator.state import Emulator
from emulator.verify.runs import VerifyRuns


@dataclass
class Services:
    """Every long-lived object of one app; handlers reach them as `request.app.state.services`."""

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
    # secrets seen by this app (control token, keys given to verify runs...): kept out of
    # every control answer, dashboard page and log line
    secrets: SecretBook = field(default_factory=SecretBook)

    def __post_init__(self) -> None:
        self.emulator.on_reset.append(self.exports.clear)
        self.emulator.on_fixtures_reset.append(self.calls.clear)
