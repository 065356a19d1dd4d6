"""/_emulator/schemas: the JSON Schemas of the scenario file and of each fixture file, as the
package ships them (emulator/schemas), for editors and CI checks."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from emulator import file_schemas
from emulator.errors import NotFound
from emulator.http import json_response
from emulator.openapi import Param, operation
from emulator.wire import Wire


class SchemaInfo(Wire):
    name: str
    file: str  # the file it describes: "scenario" for a scenario file (any name, .json/.toml)
    url: str


class SchemaList(Wire):
    data: list[SchemaInfo]


@operation(
    "The JSON Schemas of the scenario file and of each fixture file",
    SchemaList,
    errors=(),
    security=None,
)
async def list_schemas(request: Request) -> Response:
    return json_response(
        SchemaList(
            data=[
                SchemaInfo(
                    name=name,
                    file="scenario" if name == "scenario" else f"{name}.json",
                    url=f"/_emulator/schemas/{name}.json",
                )
                for name in file_schemas.names()
            ]
        )
    )


@operation(
    "One JSON Schema, by file name: scenario.json, contacts.json... (GET /_emulator/schemas)",
    dict[str, Any],
    errors=(404,),
    params=[Param(name="file", where="path", required=True)],
    security=None,
    media="application/schema+json",
)
async def get_schema(request: Request) -> Response:
    file = request.path_params["file"]  # NAME.json
    body = file_schemas.shipped(file.removesuffix(".json")) if file.endswith(".json") else None
    if body is None:
        raise NotFound(f"no schema {file!r} (see GET /_emulator/schemas)")
    return Response(body, media_type="application/schema+json")


routes: list[BaseRoute] = [
    Route("/schemas", list_schemas, methods=["GET"]),
    Route("/schemas/{file}", get_schema, methods=["GET"]),
]
