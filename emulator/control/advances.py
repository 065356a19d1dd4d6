"""/_emulator/clock/advances: clock advances run in the background, followed while they run.

The same shape as export and verify runs: POST starts one (202 and its Location), GET follows
it (state, how far it got, the AdvanceResult once ended), DELETE stops it after its current
chunk. POST /_emulator/clock/advance stays the synchronous way.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from emulator.control.clock import AdvanceIn, advance_target
from emulator.errors import BadRequest, Conflict, NotFound
from emulator.http import decode_body, json_response
from emulator.openapi import BUSY, Param, operation, query
from emulator.simulation.advances import AdvanceRun, AdvanceRunning, AdvanceRuns, AdvanceStatus
from emulator.simulation.campaigns.engine import AdvanceResult
from emulator.wire import Wire, encode
from emulator.workspace_scope import workspace


class AdvanceOut(Wire):
    """A background advance: how far it got while it runs, what it did once it ended."""

    id: str
    status: AdvanceStatus  # running, done, failed (message says why) or cancelled
    previous: str  # the clock when it started
    target: str  # where it is going
    reached: str  # the simulated time done so far
    events: int  # events written so far
    percent: float  # of the simulated span from previous to target
    startedAt: str  # wall clock
    finishedAt: str | None
    message: str | None  # why it failed or was stopped
    result: AdvanceResult | None  # what POST /_emulator/clock/advance would have answered


class AdvanceList(Wire):
    """The advances kept (the last 20 ended ones and the running one), newest first."""

    data: list[AdvanceOut]


ADVANCE_ID = [Param(name="advanceId", where="path", required=True)]


def _runs(request: Request) -> AdvanceRuns:
    return workspace(request).advances


def _run(request: Request) -> AdvanceRun:
    run = _runs(request).get(request.path_params["advanceId"])
    if run is None:
        raise NotFound("unknown clock advance")
    return run


def _view(run: AdvanceRun) -> AdvanceOut:
    return AdvanceOut(
        id=run.id,
        status=run.status,
        previous=run.previous,
        target=run.target,
        reached=run.reached,
        events=run.events,
        percent=run.percent,
        startedAt=run.started_at,
        finishedAt=run.finished_at,
        message=run.message,
        result=run.result,
    )


@operation(
    "Advance the clock by `seconds` or to `until` in the background: 202 with the advance's"
    " id and Location, followed with GET there (one background advance at a time)",
    AdvanceOut,
    status=202,
    body=AdvanceIn,
    errors=(400, BUSY),
    security=None,
)
async def start_advance(request: Request) -> Response:
    body = await decode_body(request, AdvanceIn, BadRequest.field)
    services = workspace(request)
    emulator = services.emulator
    target = advance_target(body, emulator)
    runs = _runs(request)
    if (current := runs.running()) is not None:
        raise Conflict(str(AdvanceRunning(current)), headers={"Retry-After": "1"})
    # Busy (409) now, as the synchronous advance would be, rather than a run that fails: the
    # guard is free once this returns, and the run's task takes it before anything else runs.
    await emulator.operations.acquire("clock advance", wanted="clock advance")
    emulator.operations.release()
    run = runs.start(services.simulation, emulator.clock.now(), target)
    # root-relative: a workspace's dispatcher puts its /w/{id} in front (workspaces/dispatch.py)
    location = f"/_emulator/clock/advances/{run.id}"
    return json_response(_view(run), 202, {"Location": location})


@operation(
    "The background advances kept (the running one and the last 20 ended), newest first",
    AdvanceList,
    errors=(),
    security=None,
)
async def list_advances(request: Request) -> Response:
    return json_response(AdvanceList(data=[_view(r) for r in _runs(request).recent()]))


@operation(
    "A background advance: running (how far it got), then done, failed or cancelled with"
    " its result; format=jsonl streams it, one JSON line now and one after each change,"
    " until it ends",
    AdvanceOut,
    errors=(400, 404),
    params=[*ADVANCE_ID, query("format", "json (default) or jsonl")],
    security=None,
)
async def get_advance(request: Request) -> Response:
    form = request.query_params.get("format", "json")
    if form not in ("json", "jsonl"):
        raise BadRequest.field("format", "must be json or jsonl")
    run = _run(request)
    if form == "json":
        return json_response(_view(run))

    async def lines() -> AsyncIterator[bytes]:
        while True:
            changed = run.changed  # taken first: a change while this line goes out is seen
            yield encode(_view(run)) + b"\n"
            if run.status != "running":
                return
            await changed.wait()

    return StreamingResponse(lines(), media_type="application/x-ndjson")


@operation(
    "Stop a running background advance after its current chunk: what it did so far stands"
    " (the clock stays where it got); 200 with the advance, cancelled. Stopping a cancelled"
    " advance again answers the same; one that ended otherwise answers 409",
    AdvanceOut,
    errors=(404, 409),
    params=ADVANCE_ID,
    security=None,
)
async def stop_advance(request: Request) -> Response:
    run = _run(request)
    reason = f"DELETE /_emulator/clock/advances/{run.id}"
    if not await _runs(request).stop(run, reason) and run.status != "cancelled":
        raise Conflict(f"clock advance {run.id} has already finished: {run.status}")
    return json_response(_view(run))


routes: list[BaseRoute] = [
    Route("/clock/advances", start_advance, methods=["POST"]),
    Route("/clock/advances", list_advances, methods=["GET"]),
    Route("/clock/advances/{advanceId}", get_advance, methods=["GET"]),
    Route("/clock/advances/{advanceId}", stop_advance, methods=["DELETE"]),
]
