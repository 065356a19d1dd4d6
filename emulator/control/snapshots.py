"""/_emulator/snapshots: save the whole state in memory and put it back later.

A snapshot is `Emulator.capture()`: the serialized database (platform, CRM and exporter
tables, the `meta` table with the clock and consumer cursors), the clock object and the
in-memory parts registered in `emulator.snapshot_parts` (CRM fault call counts). At most
MAX_SNAPSHOTS are kept, holding at most MAX_BYTES of database images together (100,000
contacts make a 170 MB image); taking one more drops the oldest until both hold, but never
the one just taken. Snapshots survive /reset and /fixtures, and are lost when the process stops.
"""

from __future__ import annotations

import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from emulator.errors import BadRequest, NotFound
from emulator.http import decode_body, json_response
from emulator.openapi import BUSY, Param, operation
from emulator.state import Emulator, StateImage
from emulator.wire import Wire
from emulator.workspace_scope import workspace

MAX_SNAPSHOTS = 20
MAX_BYTES = 1 << 30
ID_PARAM = Param(name="snapshotId", where="path", required=True)


class SnapshotIn(Wire):
    label: str | None = None


class SnapshotInfo(Wire):
    id: str
    createdAt: str  # the emulator's (virtual) time when it was taken
    bytes: int  # size of the database image
    label: str | None = None


class SnapshotList(Wire):
    data: list[SnapshotInfo]
    limit: int  # snapshots kept at most; the oldest goes first
    maxBytes: int  # database image bytes kept at most, all snapshots together


class SnapshotRestored(Wire):
    status: str = "ok"
    id: str
    now: str  # the clock after the restore
    durationMs: float


@dataclass(frozen=True)
class Saved:
    info: SnapshotInfo
    state: StateImage


class Shelf:
    """The snapshots of one app, oldest first, bounded to `limit` and `max_bytes`."""

    def __init__(self, limit: int = MAX_SNAPSHOTS, max_bytes: int = MAX_BYTES) -> None:
        self.limit, self.max_bytes = limit, max_bytes
        self.items: OrderedDict[str, Saved] = OrderedDict()

    def put(self, saved: Saved) -> None:
        self.items[saved.info.id] = saved
        while len(self.items) > 1 and (
            len(self.items) > self.limit
            or sum(v.info.bytes for v in self.items.values()) > self.max_bytes
        ):
            self.items.popitem(last=False)

    def get(self, snapshot_id: str) -> Saved:
        saved = self.items.get(snapshot_id)
        if saved is None:
            raise NotFound(f"unknown snapshot {snapshot_id!r}")
        return saved


def shelf(request: Request) -> Shelf:
    return workspace(request).snapshots


def _emulator(request: Request) -> Emulator:
    return workspace(request).emulator


@operation(
    "Save the whole state (database, clock, CRM fault counters) in memory",
    SnapshotInfo,
    status=201,
    body=SnapshotIn,
    errors=(400, BUSY),
    security=None,
)
async def create_snapshot(request: Request) -> Response:
    body = SnapshotIn()
    if (await request.body()).strip():
        body = await decode_body(request, SnapshotIn, BadRequest.field)
    emulator = _emulator(request)
    state = await emulator.capture()
    info = SnapshotInfo(
        id=uuid.uuid4().hex[:12],
        createdAt=emulator.clock.now_iso(),
        bytes=len(state.image),
        label=body.label,
    )
    shelf(request).put(Saved(info, state))
    return json_response(info, 201, {"Location": f"/_emulator/snapshots/{info.id}"})


@operation("The snapshots kept, oldest first", SnapshotList, errors=(), security=None)
async def list_snapshots(request: Request) -> Response:
    s = shelf(request)
    data = [v.info for v in s.items.values()]
    return json_response(SnapshotList(data=data, limit=s.limit, maxBytes=s.max_bytes))


@operation("One snapshot", SnapshotInfo, errors=(404,), params=[ID_PARAM], security=None)
async def get_snapshot(request: Request) -> Response:
    return json_response(shelf(request).get(request.path_params["snapshotId"]).info)


@operation(
    "Put the whole state back as the snapshot saved it",
    SnapshotRestored,
    errors=(404, BUSY),
    params=[ID_PARAM],
    security=None,
)
async def restore_snapshot(request: Request) -> Response:
    saved = shelf(request).get(request.path_params["snapshotId"])
    emulator = _emulator(request)
    started = time.perf_counter()
    await emulator.restore_image(saved.state)
    took = round((time.perf_counter() - started) * 1000, 3)
    return json_response(
        SnapshotRestored(id=saved.info.id, now=emulator.clock.now_iso(), durationMs=took)
    )


@operation("Forget a snapshot", SnapshotInfo, errors=(404,), params=[ID_PARAM], security=None)
async def delete_snapshot(request: Request) -> Response:
    s = shelf(request)
    saved = s.get(request.path_params["snapshotId"])
    del s.items[saved.info.id]
    return json_response(saved.info)


routes: list[BaseRoute] = [
    Route("/snapshots", create_snapshot, methods=["POST"]),
    Route("/snapshots", list_snapshots, methods=["GET"]),
    Route("/snapshots/{snapshotId}", get_snapshot, methods=["GET"]),
    Route("/snapshots/{snapshotId}", delete_snapshot, methods=["DELETE"]),
    Route("/snapshots/{snapshotId}/restore", restore_snapshot, methods=["POST"]),
]
