"""/_emulator: the control API beside the emulated ones (health, reset, fixtures)."""

from __future__ import annotations

import asyncio

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from emulator.control import (
    advances,
    autosync,
    calls,
    clock,
    crm,
    deliveries,
    exports,
    file_schemas,
    scenarios,
    snapshots,
    tasks,
)
from emulator.control import verify as verify_runs
from emulator.control.schemas import (
    CancelledRuns,
    ControlHealth,
    Counts,
    FixturesLoaded,
    ResetOut,
)
from emulator.errors import BadRequest
from emulator.fixtures.loader import FixtureError
from emulator.http import decode_body, json_response
from emulator.openapi import BUSY, operation
from emulator.path_roots import PathRefused, PathRoots
from emulator.state import Emulator
from emulator.wire import Wire
from emulator.workspace_scope import workspace


class FixturesIn(Wire):
    directory: str


async def counts(emulator: Emulator) -> Counts:
    tables = Counts.__struct_fields__
    sql = " UNION ALL ".join(f"SELECT '{t}', count(*) FROM {t}" for t in tables)
    return Counts(**dict(await emulator.db.fetchall(sql)))


@operation("Emulator health, clock and row counts", ControlHealth, errors=(), security=None)
async def health(request: Request) -> Response:
    emulator: Emulator = workspace(request).emulator
    return json_response(
        ControlHealth(
            fixtures=emulator.fixtures_dir,
            db=emulator.settings.db,
            now=emulator.clock.now_iso(),
            counts=await counts(emulator),
        )
    )


@operation(
    "Restore the loaded fixtures; running exports, verify runs and background clock advances"
    " are cancelled first",
    ResetOut,
    errors=(BUSY,),
    security=None,
)
async def reset(request: Request) -> Response:
    """A running export, verify run or background advance is cancelled first (what was done
    so far stays in its report): a hanging CRM or a long advance cannot keep the state from
    being reset."""
    services = workspace(request)
    emulator: Emulator = services.emulator
    exports_cancelled = await services.exports.cancel_all("a reset (POST /_emulator/reset)")
    verify_cancelled = await services.verify_runs.cancel_all()
    advances = await services.advances.stop_all("a reset (POST /_emulator/reset) stopped it")
    await emulator.reset()
    cancelled = CancelledRuns(
        exports=exports_cancelled, verifyRuns=verify_cancelled, advances=advances
    )
    return json_response(ResetOut(fixtures=emulator.fixtures_dir, cancelled=cancelled))


@operation(
    "Load another fixture directory and reset onto it",
    FixturesLoaded,
    body=FixturesIn,
    errors=(400, BUSY),
    security=None,
)
async def load_fixtures(request: Request) -> Response:
    emulator: Emulator = workspace(request).emulator
    body = await decode_body(request, FixturesIn, BadRequest.field)
    roots = PathRoots.of_server(emulator.settings.fixtures, emulator.settings.allowPaths)
    try:
        directory = await asyncio.to_thread(roots.fixture_dir, body.directory)
        await emulator.load_fixtures(str(directory))
    except PathRefused as exc:
        raise BadRequest.field("directory", str(exc)) from None
    except FixtureError as exc:
        raise BadRequest.field("directory", str(exc)) from None
    n = msgspec.structs.asdict(await counts(emulator))
    return json_response(FixturesLoaded(fixtures=emulator.fixtures_dir, **n))


routes: list[BaseRoute] = [
    Route("/health", health, methods=["GET"]),
    Route("/reset", reset, methods=["POST"]),
    Route("/fixtures", load_fixtures, methods=["POST"]),
    *crm.routes,
    *exports.routes,
    *clock.routes,
    *advances.routes,
    *deliveries.routes,
    *autosync.routes,
    *snapshots.routes,
    *tasks.routes,
    *scenarios.routes,
    *file_schemas.routes,
    *verify_runs.routes,
    *calls.routes,
]
