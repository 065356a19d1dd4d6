"""POST /_emulator/scenarios/run: replay scenarios in fresh emulators of their own.

The serving emulator's state is never touched: each scenario gets its own store and server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from emulator.errors import BadRequest
from emulator.http import json_response
from emulator.openapi import operation
from emulator.scenarios import models as sm


@operation(
    "Replay a scenario in an isolated emulator: the scenario object inline, or {\"path\": FILE"
    " or DIRECTORY}", sm.ReplayResult, body=sm.Scenario, security=None,
)
async def run_scenarios(request: Request) -> Response:
    from emulator.scenarios.runner import replay, run_scenario, summarise

    raw = await request.body()
    try:
        body: Any = msgspec.json.decode(raw) if raw else None
    except msgspec.DecodeError:
        raise BadRequest("Body is not valid JSON") from None
    if not isinstance(body, dict):
        raise BadRequest("Body must be a scenario object or {\"path\": ...}")
    if "name" not in body and isinstance(body.get("path"), str):
        path = Path(body["path"])
        if not path.exists():
            raise BadRequest.field("path", f"no such file or directory: {path}")
        if path.is_file():
            try:
                sm.load_scenario(path)  # an unreadable file is the caller's 400
            except sm.ScenarioError as exc:
                raise BadRequest.field("path", str(exc)) from None
        return json_response(await replay([str(path)]))
    try:
        scenario = sm.parse_scenario(body, "scenario")
    except sm.ScenarioError as exc:
        where, _, message = str(exc).removeprefix("scenario: ").partition(": ")
        raise BadRequest.field(where, message or where) from None
    return json_response(summarise([await run_scenario(scenario)], 0.0))


routes: list[BaseRoute] = [Route("/scenarios/run", run_scenarios, methods=["POST"])]
