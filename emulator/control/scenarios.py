"""POST /_emulator/scenarios/run: replay scenarios in fresh emulators of their own.

The serving emulator's state is never touched: each scenario gets its own store and server.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from emulator.errors import BadRequest, FieldError
from emulator.http import json_response
from emulator.openapi import operation
from emulator.path_roots import PathRefused, PathRoots
from emulator.scenarios import models as sm
from emulator.scenarios.fixtures import build_fixtures, fixture_directory, scenario_base
from emulator.scenarios.runner import load_or_error, run_loaded, run_scenario, summarise
from emulator.settings import Settings
from emulator.wire import decode
from emulator.workspace_scope import workspace


@operation(
    'Replay a scenario in an isolated emulator: the scenario object inline, or {"path": FILE'
    " or DIRECTORY} under the server's path roots",
    sm.ReplayResult,
    body=sm.Scenario,
    security=None,
)
async def run_scenarios(request: Request) -> Response:
    settings = workspace(request).emulator.settings
    roots = PathRoots.of_server(settings.fixtures, settings.allowPaths)
    raw = await request.body()
    try:
        body: Any = decode(raw) if raw else None
    except msgspec.DecodeError:
        raise BadRequest("Body is not valid JSON") from None
    if not isinstance(body, dict):
        raise BadRequest('Body must be a scenario object or {"path": ...}')
    if "name" not in body and isinstance(body.get("path"), str):
        try:
            loaded = await read_allowed(settings, body["path"])
        except PathRefused as exc:
            raise BadRequest.field("path", str(exc)) from None
        invalid = [str(s) for _, s in loaded if isinstance(s, sm.ScenarioError)]
        if invalid:  # a file the runner cannot read is refused, as inline bodies are
            raise BadRequest(
                f"invalid scenario file: {invalid[0]}",
                [FieldError(field="path", message=text) for text in invalid],
            )
        return json_response(await run_loaded(loaded, workspace(request).open_server))
    try:
        scenario = sm.parse_scenario(body, "scenario")
    except sm.ScenarioError as exc:
        where, _, message = str(exc).removeprefix("scenario: ").partition(": ")
        raise BadRequest.field(where, message or where) from None
    try:
        await asyncio.to_thread(_check_fixtures, roots, scenario)
        # its fixtures as the run builds them: a bad inline record is this body's 400
        await asyncio.to_thread(build_fixtures, scenario, scenario_base(scenario), "scenario")
    except PathRefused as exc:
        raise BadRequest.field("fixtures.directory", str(exc)) from None
    except sm.ScenarioError as exc:
        where, _, message = str(exc).removeprefix("scenario: ").partition(": ")
        raise BadRequest.field(where, message or where) from None
    return json_response(
        summarise([await run_scenario(scenario, workspace(request).open_server)], 0.0)
    )


def _check_fixtures(roots: PathRoots, scenario: sm.Scenario) -> None:
    """A scenario's fixture directory is read by the server too: the same roots hold."""
    roots.fixture_dir(fixture_directory(scenario, scenario_base(scenario)))


async def read_allowed(
    settings: Settings, raw: str, extra_roots: Sequence[Path] = ()
) -> list[tuple[Path, sm.Scenario | sm.ScenarioError]]:
    """The scenarios of `raw` under the server's roots (and `extra_roots`: the dashboard's
    working directory), read in a worker thread."""
    roots = PathRoots.of_server(settings.fixtures, [*settings.allowPaths, *map(str, extra_roots)])
    return await asyncio.to_thread(_read_allowed, roots, raw)


def _read_allowed(roots: PathRoots, raw: str) -> list[tuple[Path, sm.Scenario | sm.ScenarioError]]:
    """The scenarios of `raw`, read in a worker thread; PathRefused if any file is not allowed."""
    loaded = [(path, load_or_error(path)) for path in roots.scenario_files(raw)]
    for _, scenario in loaded:
        if not isinstance(scenario, sm.ScenarioError):
            _check_fixtures(roots, scenario)
    return loaded


routes: list[BaseRoute] = [Route("/scenarios/run", run_scenarios, methods=["POST"])]
