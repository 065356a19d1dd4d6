"""GET /openapi.json: a valid OpenAPI 3.1 document of every /v1 route, from the msgspec structs."""

from __future__ import annotations

import httpx
import pytest
from openapi_spec_validator import validate
from starlette.applications import Starlette
from starlette.routing import Mount, Route

pytestmark = pytest.mark.anyio


def v1_operations(app: Starlette) -> set[tuple[str, str]]:
    ops = set()
    for mount in app.routes:
        if isinstance(mount, Mount) and mount.path == "/v1":
            for route in mount.routes:
                assert isinstance(route, Route)
                ops |= {(m.lower(), "/v1" + route.path) for m in route.methods or () if m != "HEAD"}
    return ops


async def test_document_is_valid_openapi_3_1(client: httpx.AsyncClient) -> None:
    response = await client.get("/openapi.json")
    assert response.status_code == 200
    document = response.json()
    assert document["openapi"] == "3.1.0"
    validate(document)


async def test_every_v1_route_is_documented_with_schemas(
    client: httpx.AsyncClient, app: Starlette
) -> None:
    document = (await client.get("/openapi.json")).json()
    documented = {(m, p) for p, item in document["paths"].items() for m in item}
    assert v1_operations(app) <= documented
    schemas = document["components"]["schemas"]
    for path, item in document["paths"].items():
        if not path.startswith("/v1"):
            continue
        for method, op in item.items():
            ok = next(code for code in op["responses"] if code.startswith("2"))
            ref = op["responses"][ok]["content"]["application/json"]["schema"]["$ref"]
            assert ref.rsplit("/", 1)[1] in schemas, (method, path)
            assert {"401", "403"} <= set(op["responses"]), (method, path)
    assert document["components"]["securitySchemes"]["apiKey"]["name"] == "x-api-key"


async def test_request_schema_is_the_struct_the_handler_decodes(client: httpx.AsyncClient) -> None:
    document = (await client.get("/openapi.json")).json()
    patch = document["paths"]["/v1/webhooks/{webhookId}"]["patch"]
    ref = patch["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    schema = document["components"]["schemas"][ref.rsplit("/", 1)[1]]
    assert schema["properties"]["name"] == {"type": "string", "minLength": 1, "maxLength": 255}
    secret = schema["properties"]["secret"]["anyOf"]
    assert {"type": "string", "minLength": 8, "maxLength": 256} in secret
    assert {"type": "null"} in secret
