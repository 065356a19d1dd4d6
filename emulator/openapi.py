"""OpenAPI 3.1 generated from the route table and the msgspec structs the handlers use.

Handlers declare what they decode and encode with `@operation(...)`; the schemas come from
`msgspec.json.schema_components` over those very types, so the document cannot drift from
the code. Each surface (/v1, /crm, /_emulator) gets its tag, its error body and its auth.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import msgspec
from starlette.routing import BaseRoute, Mount, Route

from emulator.asgi_guards import OUTGOING_V1
from emulator.errors import ErrorBody
from emulator.wire import FrozenWire, Wire

F = TypeVar("F", bound=Callable[..., Any])


class Param(FrozenWire):
    name: str
    where: str = "query"  # query | path
    schema: dict[str, Any] = msgspec.field(default_factory=lambda: {"type": "string"})
    description: str = ""
    required: bool = False


class Security(FrozenWire):
    """An API-key header scheme and the error codes a request without the key gets."""

    name: str  # its key in components.securitySchemes
    header: str
    codes: tuple[int, ...] = (401,)
    description: str = ""


API_KEY = Security(name="apiKey", header="x-api-key", codes=(401, 403))

# An error: its status code, or (code, description) where the usual text would mislead.
Error = int | tuple[int, str]


class Operation(Wire):
    summary: str
    response: Any  # a type, or a tuple of types: the body is one of them (anyOf)
    status: int = 200
    body: Any = None
    params: tuple[Param, ...] = ()
    errors: tuple[Error, ...] = (400,)
    security: Security | None = API_KEY
    error_body: Any = ErrorBody
    media: str = "application/json"  # of the success body (JSON Lines: one `response` a line)


def operation(
    summary: str,
    response: Any,
    *,
    status: int = 200,
    body: Any = None,
    params: Sequence[Param] = (),
    errors: Sequence[Error] = (400,),
    security: Security | None = API_KEY,
    error_body: Any = ErrorBody,
    media: str = "application/json",
) -> Callable[[F], F]:
    """Attach the OpenAPI description of a handler to it."""

    def wrap(handler: F) -> F:
        handler.__openapi__ = Operation(  # type: ignore[attr-defined]
            summary=summary,
            response=response,
            status=status,
            body=body,
            params=tuple(params),
            errors=tuple(errors),
            security=security,
            error_body=error_body,
            media=media,
        )
        return handler

    return wrap


class Surface(FrozenWire):
    prefix: str
    tag: str
    description: str
    operation_prefix: str  # keeps operationIds unique across surfaces (GET /health twice)


SURFACES = (
    Surface(
        prefix="/v1",
        tag="Public API",
        operation_prefix="",
        description="The outreach platform's public API (Part B)",
    ),
    Surface(
        prefix="/crm",
        tag="Reference CRM",
        operation_prefix="crm_",
        description="The embedded reference CRM: every CRM-side endpoint of Part A",
    ),
    Surface(
        prefix="/_emulator",
        tag="Control",
        operation_prefix="control_",
        description="The emulator's control API: reset, fixtures, CRM settings and contents",
    ),
)


def surface_of(path: str) -> Surface | None:
    return next((s for s in SURFACES if path.startswith(s.prefix + "/")), None)


def query(name: str, description: str = "", **schema: Any) -> Param:
    return Param(name=name, description=description, schema=schema or {"type": "string"})


PAGE = (
    query("page", "Page number, an integer >= 1 (default 1)"),
    query("pageSize", "Items per page, an integer 1..100 (default 25)"),
)
SEARCH = query("search", "Case-insensitive search term")
FIELDS = Param(
    name="fields",
    description="Only these fields (plus id): comma-separated or repeated",
    schema={"type": "array", "items": {"type": "string"}},
)
UPDATED = (
    query("updatedAtFrom", "Inclusive ISO 8601 lower bound of updatedAt", format="date-time"),
    query("updatedAtTo", "Inclusive ISO 8601 upper bound of updatedAt", format="date-time"),
)

_ERROR_TEXT = {
    400: "Invalid input",
    401: "Missing or unknown API key",
    403: "The API key lacks the scope",
    404: "Unknown id",
    405: "Method not allowed",
    409: "Conflict",
    413: "Request body too large",
    429: "Rate limited",
    501: "Not implemented",
}


_ONLY_UNDER_LIMIT_ALL = "Rate limited (only when the server runs with --rate-limit all)"
# A state-changing control operation refused while another holds the store (operations.Busy).
BUSY: Error = (409, "Another control operation (advance, export, push, reset, snapshot) runs")


def _walk(routes: Iterable[BaseRoute], prefix: str = "") -> Iterable[tuple[str, Route]]:
    for route in routes:
        if isinstance(route, Mount):
            yield from _walk(route.routes, prefix + route.path)
        elif isinstance(route, Route):
            yield prefix + route.path, route


def _path_params(path: str) -> list[str]:
    return [part[1:-1].split(":")[0] for part in path.split("/") if part.startswith("{")]


def _any_object(t: Any) -> dict[str, Any]:
    """A field typed `object` holds any JSON value (msgspec itself only knows `Any` as such)."""
    if t is object:
        return {"description": "Any JSON value"}
    raise NotImplementedError


CONTROL_TOKEN = "controlToken"  # the bearer scheme of /_emulator under --control-token
OPEN_CONTROL = frozenset({"/_emulator/health"})


def build_document(
    routes: Iterable[BaseRoute], title: str, version: str, control_token: bool = False
) -> dict[str, Any]:
    """The OpenAPI document of every documented route below `routes`; `control_token`: the
    server requires the control token on /_emulator (all but health)."""
    found = [(p, r, getattr(r.endpoint, "__openapi__", None)) for p, r in _walk(routes)]
    documented = [(p, r, op) for p, r, op in found if op is not None]
    types: list[Any] = [ErrorBody]
    schemes = {API_KEY.name: API_KEY}
    for _, _, op in documented:
        types.extend(op.response if isinstance(op.response, tuple) else (op.response,))
        types.append(op.error_body)
        if op.body is not None:
            types.append(op.body)
        if op.security is not None:
            schemes[op.security.name] = op.security
    refs, components = msgspec.json.schema_components(
        types, schema_hook=_any_object, ref_template="#/components/schemas/{name}"
    )
    ref_of = dict(zip(map(id, types), refs, strict=True))
    paths: dict[str, dict[str, Any]] = {}
    used: set[str] = set()
    for path, route, op in documented:
        methods = sorted((route.methods or set()) - {"HEAD"})
        error_ref = ref_of[id(op.error_body)]
        if isinstance(op.response, tuple):
            schema = {"anyOf": [ref_of[id(t)] for t in op.response]}
        else:
            schema = ref_of[id(op.response)]
        declared = {p.name: p for p in op.params if p.where == "path"}
        params = [
            {
                "name": p.name,
                "in": p.where,
                "required": p.required,
                "schema": p.schema,
                **({"description": p.description} if p.description else {}),
            }
            for p in (
                *(
                    declared.get(name, Param(name=name, where="path", required=True))
                    for name in _path_params(path)
                ),
                *(p for p in op.params if p.where != "path"),
            )
        ]
        responses: dict[str, Any] = {
            str(op.status): {
                "description": "Success",
                "content": {op.media: {"schema": schema}},
            }
        }
        texts: dict[int, str] = dict(
            e if isinstance(e, tuple) else (e, _ERROR_TEXT.get(e, "Error")) for e in op.errors
        )
        for code in op.security.codes if op.security else ():
            texts.setdefault(code, _ERROR_TEXT[code])
        if op.body is not None:  # asgi_guards.BodyLimit, before any handler
            texts.setdefault(413, "Request body larger than the server's limit (serve --max-body)")
        limited = getattr(route.endpoint, "rate_limited", None)  # public_api.auth.guarded
        if limited is not None:
            texts.setdefault(429, _ERROR_TEXT[429] if limited else _ONLY_UNDER_LIMIT_ALL)
        for code in sorted(texts):
            responses[str(code)] = {
                "description": texts[code],
                "content": {"application/json": {"schema": error_ref}},
            }
        surface = surface_of(path)
        if surface is not None:
            used.add(surface.tag)
        guarded = control_token and path.startswith("/_emulator/") and path not in OPEN_CONTROL
        if guarded:
            responses["401"] = {
                "description": "Missing or wrong control token",
                "content": {"application/json": {"schema": error_ref}},
            }
        for method in methods:
            entry: dict[str, Any] = {
                "summary": op.summary,
                "operationId": f"{surface.operation_prefix if surface else ''}"
                f"{method.lower()}_{route.name}",
                "parameters": params,
                "responses": responses,
            }
            if surface is not None:
                entry["tags"] = [surface.tag]
            scope = getattr(route.endpoint, "required_scope", None)
            if scope == "ALL":
                entry["description"] = "Requires an API key with the scope ALL."
            elif scope:
                entry["description"] = f"Requires the scope {scope} (or ALL)."
            if op.body is not None:
                entry["requestBody"] = {
                    "required": True,
                    "content": {"application/json": {"schema": ref_of[id(op.body)]}},
                }
            if guarded:
                entry["security"] = [{CONTROL_TOKEN: []}]
            elif control_token and method == "POST" and OUTGOING_V1.match(path):
                # a /v1 route that calls out: its API key and the control token
                entry["security"] = [{API_KEY.name: [], CONTROL_TOKEN: []}]
                entry["description"] = (
                    entry.get("description", "") + " With --control-token, needs the token too."
                ).strip()
            elif op.security is None:
                entry["security"] = []
            elif op.security != API_KEY:
                entry["security"] = [{op.security.name: []}]
            paths.setdefault(path, {})[method.lower()] = entry
    return {
        "openapi": "3.1.0",
        "info": {"title": title, "version": version},
        "tags": [{"name": s.tag, "description": s.description} for s in SURFACES if s.tag in used],
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {
                s.name: {
                    "type": "apiKey",
                    "in": "header",
                    "name": s.header,
                    **({"description": s.description} if s.description else {}),
                }
                for s in schemes.values()
            }
            | (
                {
                    CONTROL_TOKEN: {
                        "type": "http",
                        "scheme": "bearer",
                        "description": "emulator serve --control-token: Authorization: Bearer TOKEN",
                    }
                }
                if control_token
                else {}
            ),
        },
        "security": [{API_KEY.name: []}],
    }
