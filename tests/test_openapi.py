"""GET /openapi.json: a valid OpenAPI 3.1 document of /v1, /crm and /_emulator, from the structs."""

from __future__ import annotations

import contextlib
from typing import Any

import httpx
import msgspec
import pytest
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate
from starlette.applications import Starlette
from starlette.routing import Mount, Route

from tests.conftest import CRM_KEY

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


# --- /crm and /_emulator ----------------------------------------------------------------


def operations(app: Starlette, prefix: str) -> dict[tuple[str, str], Route]:
    """(method, path) -> route of every mounted route below `prefix` (mounts are one deep)."""
    found: dict[tuple[str, str], Route] = {}
    for mount in app.routes:
        if isinstance(mount, Mount) and mount.path.startswith(prefix):
            for route in mount.routes:
                assert isinstance(route, Route)
                path = mount.path + route.path
                found |= {(m.lower(), path): route for m in route.methods or () if m != "HEAD"}
    return found


def error_refs(op: dict[str, Any]) -> set[str]:
    return {
        r["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
        for code, r in op["responses"].items()
        if code.startswith(("4", "5"))
    }


@pytest.mark.parametrize("prefix", ["/crm", "/_emulator"])
async def test_every_crm_and_control_route_is_documented(
    client: httpx.AsyncClient, app: Starlette, prefix: str
) -> None:
    document = (await client.get("/openapi.json")).json()
    documented = {(m, p) for p, item in document["paths"].items() for m in item}
    routes = operations(app, prefix)
    assert routes, prefix
    assert set(routes) <= documented
    assert {(m, p) for m, p in documented if p.startswith(prefix + "/")} == set(routes)
    tag = {"/crm": "Reference CRM", "/_emulator": "Control"}[prefix]
    for method, path in routes:
        assert document["paths"][path][method]["tags"] == [tag]
    assert [t["name"] for t in document["tags"]] == ["Public API", "Reference CRM", "Control"]
    ids = [op["operationId"] for item in document["paths"].values() for op in item.values()]
    assert len(ids) == len(set(ids))


async def test_crm_operations_use_the_crm_error_body_and_key(client: httpx.AsyncClient) -> None:
    document = (await client.get("/openapi.json")).json()
    scheme = document["components"]["securitySchemes"]["crmApiKey"]
    assert (scheme["type"], scheme["in"], scheme["name"]) == ("apiKey", "header", "X-API-Key")
    body = document["components"]["schemas"]["CrmErrorBody"]
    assert set(body["required"]) == {"error", "message"}
    for path, item in document["paths"].items():
        if path.startswith("/crm/"):
            for method, op in item.items():
                assert op["security"] == [{"crmApiKey": []}], (method, path)
                assert "401" in op["responses"] and "403" not in op["responses"], (method, path)
                assert error_refs(op) == {"CrmErrorBody"}, (method, path)
    assert "400" not in document["paths"]["/crm/health"]["get"]["responses"]
    assert {"404", "405", "501"} <= set(document["paths"]["/crm/users"]["get"]["responses"])
    assert "201" in document["paths"]["/crm/companies"]["post"]["responses"]


async def test_control_operations_have_no_auth(client: httpx.AsyncClient) -> None:
    document = (await client.get("/openapi.json")).json()
    for path, item in document["paths"].items():
        if path.startswith("/_emulator/"):
            for method, op in item.items():
                assert op["security"] == [], (method, path)
                assert "401" not in op["responses"], (method, path)
                assert error_refs(op) <= {"ErrorBody"}, (method, path)
    kind = document["paths"]["/_emulator/crm/{kind}"]["get"]["parameters"][0]
    assert kind["in"] == "path" and "tasks" in kind["schema"]["enum"]


class Answers:
    """Checks real answers against the document and against the structs it was made from."""

    def __init__(self, app: Starlette, document: dict[str, Any]) -> None:
        self.document = document
        self.routes = operations(app, "")

    def check(self, method: str, path: str, response: httpx.Response) -> Any:
        op = self.document["paths"][path][method]
        answer = op["responses"][str(response.status_code)]  # the status is documented
        schema = answer["content"]["application/json"]["schema"]
        Draft202012Validator({**schema, "components": self.document["components"]}).validate(
            response.json()
        )
        if response.is_success:  # decoded strictly into the very struct documented
            endpoint: Any = self.routes[method, path].endpoint
            declared = endpoint.__openapi__.response
            types = declared if isinstance(declared, tuple) else (declared,)
            decoded = []
            for typed in types:
                with contextlib.suppress(msgspec.ValidationError):
                    decoded.append(msgspec.json.decode(response.content, type=typed, strict=True))
            assert decoded, (method, path, response.text)
        return response.json()


async def test_crm_answers_match_their_documented_schemas(
    client: httpx.AsyncClient, app: Starlette
) -> None:
    answers = Answers(app, (await client.get("/openapi.json")).json())
    check = answers.check

    company = {"externalId": "oa-1", "name": "Acme", "domain": "acme-openapi.example", "x": 1}
    r = await client.post("/crm/companies", headers=CRM_KEY, json={"companies": [company]})
    assert r.status_code == 201
    crm_id = check("post", "/crm/companies", r)["results"][0]["crmId"]
    r = await client.post("/crm/companies/sync", headers=CRM_KEY, json={"companies": [company]})
    assert check("post", "/crm/companies/sync", r)["results"][0]["crmId"] == crm_id
    r = await client.put(
        "/crm/companies",
        headers=CRM_KEY,
        json={"companies": [{"crmId": crm_id, "name": "Acme 2"}, {"crmId": "nope"}]},
    )
    assert [x["success"] for x in check("put", "/crm/companies", r)["results"]] == [True, False]
    r = await client.post(
        "/crm/activities",
        headers=CRM_KEY,
        json={"type": "EMAIL", "subject": "Hi", "companyId": crm_id, "extra": [1]},
    )
    assert r.status_code == 201
    check("post", "/crm/activities", r)
    r = await client.post("/crm/tasks", headers=CRM_KEY, json={"subject": "Call", "custom": "k"})
    assert r.status_code == 201
    task_id = check("post", "/crm/tasks", r)["id"]
    r = await client.patch(f"/crm/tasks/{task_id}", headers=CRM_KEY, json={"completed": True})
    assert check("patch", "/crm/tasks/{taskId}", r)["completedAt"] is not None
    r = await client.post("/crm/tasks/batch", headers=CRM_KEY, json={"ids": [task_id, "nope"]})
    assert len(check("post", "/crm/tasks/batch", r)) == 1
    check("get", "/crm/users", await client.get("/crm/users", headers=CRM_KEY))
    check("get", "/crm/health", await client.get("/crm/health", headers=CRM_KEY))
    # errors, in the CRM's body
    r = await client.post("/crm/companies", headers=CRM_KEY, json={"companies": [{}]})
    assert r.status_code == 400
    check("post", "/crm/companies", r)
    r = await client.get("/crm/tasks/nope", headers=CRM_KEY)
    assert r.status_code == 404
    check("get", "/crm/tasks/{taskId}", r)
    assert check("get", "/crm/users", await client.get("/crm/users")).keys() == {"error", "message"}


async def test_control_answers_match_their_documented_schemas(
    client: httpx.AsyncClient, app: Starlette
) -> None:
    answers = Answers(app, (await client.get("/openapi.json")).json())
    check = answers.check
    check("get", "/_emulator/health", await client.get("/_emulator/health"))
    check("get", "/_emulator/crm/settings", await client.get("/_emulator/crm/settings"))
    r = await client.post("/crm/tasks", headers=CRM_KEY, json={"subject": "Call"})
    await client.post("/crm/activities", headers=CRM_KEY, json={"type": "EMAIL"})
    for kind in ("contacts", "companies", "activities", "tasks", "associations"):
        page = check("get", "/_emulator/crm/{kind}", await client.get(f"/_emulator/crm/{kind}"))
        if page["data"]:
            record_id = page["data"][0].get("crmId") or page["data"][0].get("id")
            if kind == "associations":
                record_id = page["data"][0]["contactCRMId"]
            r = await client.get(f"/_emulator/crm/{kind}/{record_id}")
            assert r.status_code == 200
            check("get", "/_emulator/crm/{kind}/{recordId}", r)
    r = await client.get("/_emulator/crm/nope")
    assert r.status_code == 404
    check("get", "/_emulator/crm/{kind}", r)
    check("post", "/_emulator/reset", await client.post("/_emulator/reset"))


async def test_control_operations_refused_while_another_runs_document_their_409(
    client: httpx.AsyncClient, app: Starlette
) -> None:
    answers = Answers(app, (await client.get("/openapi.json")).json())
    snapshot = (await client.post("/_emulator/snapshots", json={})).json()["id"]
    calls = [
        ("/_emulator/reset", None, "/_emulator/reset"),
        ("/_emulator/fixtures", {"directory": "fixtures/default"}, "/_emulator/fixtures"),
        ("/_emulator/snapshots", {}, "/_emulator/snapshots"),
        (
            f"/_emulator/snapshots/{snapshot}/restore",
            None,
            "/_emulator/snapshots/{snapshotId}/restore",
        ),
        ("/_emulator/clock/advance", {"seconds": 60}, "/_emulator/clock/advance"),
        ("/_emulator/autosync/push", None, "/_emulator/autosync/push"),
        ("/_emulator/exports", None, "/_emulator/exports"),
    ]
    operations = app.state.services.emulator.operations
    operations.wait_seconds = 0.0
    async with operations.exclusive("a test's operation"):
        for url, body, path in calls:
            r = await client.post(url, json=body)
            assert r.status_code == 409, (url, r.text)
            assert "a test's operation is running" in answers.check("post", path, r)["message"]


async def test_bodies_over_the_limit_and_rate_limits_are_documented(
    client: httpx.AsyncClient,
) -> None:
    paths = (await client.get("/openapi.json")).json()["paths"]
    for path, item in paths.items():
        for method, op in item.items():
            assert ("413" in op["responses"]) == ("requestBody" in op), (method, path)
            assert ("429" in op["responses"]) == path.startswith("/v1/"), (method, path)
    limited = paths["/v1/contact/{contactId}"]["get"]["responses"]["429"]["description"]
    assert limited == "Rate limited"
    assert "--rate-limit all" in paths["/v1/contacts"]["get"]["responses"]["429"]["description"]
