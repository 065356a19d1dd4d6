"""OpenAPI 3.1 generated from the route table and the msgspec structs the handlers use.

Handlers declare what they decode and encode with `@operation(...)`; the schemas come from
`msgspec.json.schema_components` over those very types, so the document cannot drift from
the code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import msgspec
from starlette.routing import BaseRoute, Mount, Route

from emulator.errors import ErrorBody
from emulator.wire import Wire

F = TypeVar("F", bound=Callable[..., Any])


class Param(Wire, frozen=True):
    name: str
    where: str = "query"  # query | path
    schema: dict[str, Any] = msgspec.field(default_factory=lambda: {"type": "string"})
    description: str = ""
    required: bool = False


class Operation(Wire):
    summary: str
    response: Any
    status: int = 200
    body: Any = None
    params: tuple[Param, ...] = ()
    errors: tuple[int, ...] = (400,)
    security: bool = True


def operation(
    summary: str,
    response: Any,
    *,
    status: int = 200,
    body: Any = None,
    params: Sequence[Param] = (),
    errors: Sequence[int] = (400,),
    security: bool = True,
) -> Callable[[F], F]:
    """Attach the OpenAPI description of a handler to it."""

    def wrap(handler: F) -> F:
        handler.__openapi__ = Operation(  # type: ignore[attr-defined]
            summary=summary, response=response, status=status, body=body,
            params=tuple(params), errors=tuple(errors), security=security,
        )
        return handler

    return wrap


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
    409: "Conflict",
    429: "Rate limited",
}


def _walk(routes: Iterable[BaseRoute], prefix: str = "") -> Iterable[tuple[str, Route]]:
    for route in routes:
        if isinstance(route, Mount):
            yield from _walk(route.routes, prefix + route.path)
        elif isinstance(route, Route):
            yield prefix + route.path, route


def _path_params(path: str) -> list[str]:
    return [part[1:-1].split(":")[0] for part in path.split("/") if part.startswith("{")]


def build_document(routes: Iterable[BaseRoute], title: str, version: str) -> dict[str, Any]:
    """The OpenAPI document of every documented route below `routes`."""
    found = [(p, r, getattr(r.endpoint, "__openapi__", None)) for p, r in _walk(routes)]
    documented = [(p, r, op) for p, r, op in found if op is not None]
    types: list[Any] = [ErrorBody]
    for _, _, op in documented:
        types.append(op.response)
        if op.body is not None:
            types.append(op.body)
    refs, components = msgspec.json.schema_components(
        types, ref_template="#/components/schemas/{name}"
    )
    ref_of = dict(zip(map(id, types), refs, strict=True))
    error_ref = ref_of[id(ErrorBody)]
    paths: dict[str, dict[str, Any]] = {}
    for path, route, op in documented:
        methods = sorted((route.methods or set()) - {"HEAD"})
        params = [
            {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
            for name in _path_params(path)
        ] + [
            {"name": p.name, "in": p.where, "required": p.required, "schema": p.schema,
             **({"description": p.description} if p.description else {})}
            for p in op.params
        ]
        responses: dict[str, Any] = {
            str(op.status): {
                "description": "Success",
                "content": {"application/json": {"schema": ref_of[id(op.response)]}},
            }
        }
        codes = set(op.errors) | ({401, 403} if op.security else set())
        for code in sorted(codes):
            responses[str(code)] = {
                "description": _ERROR_TEXT.get(code, "Error"),
                "content": {"application/json": {"schema": error_ref}},
            }
        for method in methods:
            entry: dict[str, Any] = {
                "summary": op.summary,
                "operationId": f"{method.lower()}_{route.name}",
                "parameters": params,
                "responses": responses,
            }
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
            if not op.security:
                entry["security"] = []
            paths.setdefault(path, {})[method.lower()] = entry
    return {
        "openapi": "3.1.0",
        "info": {"title": title, "version": version},
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {"apiKey": {"type": "apiKey", "in": "header", "name": "x-api-key"}},
        },
        "security": [{"apiKey": []}],
    }
