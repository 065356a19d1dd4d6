"""/_emulator: redeliver a logged webhook attempt, and the completion deliveries of a run."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from emulator.errors import NotFound
from emulator.http import json_response
from emulator.openapi import Param, operation
from emulator.public_api.params import path_id
from emulator.simulation.webhooks.delivery import DeliveryAttempt
from emulator.simulation.webhooks.events import redeliver as send_again
from emulator.state import Emulator
from emulator.wire import Wire
from emulator.workspace_scope import workspace


class RunDelivery(Wire):
    """One attempt of an actions run's completion delivery to its webhookUrl."""

    id: int
    contactId: int
    url: str
    statusCode: int | None
    errorMessage: str | None
    attemptNumber: int
    durationMs: int | None
    createdAt: str
    payload: str


class RunDeliveries(Wire):
    data: list[RunDelivery]
    total: int


@operation(
    "Send a logged webhook delivery once more, now (a new attempt in the log)",
    DeliveryAttempt,
    errors=(400, 404),
    params=[Param(name="deliveryId", where="path", required=True)],
    security=None,
)
async def redeliver(request: Request) -> Response:
    emulator: Emulator = workspace(request).emulator
    delivery_id = path_id(request.path_params["deliveryId"], "deliveryId")
    attempt = await send_again(
        emulator.db,
        delivery_id,
        emulator.clock.now_iso,
        timeout=emulator.settings.outgoingDeadline,
    )
    return json_response(attempt)


@operation(
    "Every completion-delivery attempt of an actions run, oldest first",
    RunDeliveries,
    errors=(400, 404),
    params=[Param(name="actionsId", where="path", required=True)],
    security=None,
)
async def run_deliveries(request: Request) -> Response:
    emulator: Emulator = workspace(request).emulator
    run_id = path_id(request.path_params["actionsId"], "actionsId")
    if await emulator.db.fetchone("SELECT 1 FROM actions_runs WHERE id = ?", (run_id,)) is None:
        raise NotFound(f"Actions run {run_id} not found")
    rows = await emulator.db.fetchall(
        f"SELECT {', '.join(RunDelivery.__struct_fields__)} FROM actions_deliveries"
        " WHERE runId = ? ORDER BY id",
        (run_id,),
    )
    fields = RunDelivery.__struct_fields__
    data = [RunDelivery(**dict(zip(fields, row, strict=True))) for row in rows]
    return json_response(RunDeliveries(data=data, total=len(data)))


routes: list[BaseRoute] = [
    Route("/webhooks/deliveries/{deliveryId}/redeliver", redeliver, methods=["POST"]),
    Route("/actions/{actionsId}/deliveries", run_deliveries, methods=["GET"]),
]
