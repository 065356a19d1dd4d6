"""Checks every /v1 endpoint test repeats: keys and scopes, paging parameters, hostile bodies."""

from __future__ import annotations

import json
from typing import Any

import httpx
from starlette.applications import Starlette

from tests.conftest import ALL, READONLY

EVERY_SCOPE = [
    "CONTACTS_READ",
    "CONTACTS_WRITE",
    "COMPANIES_READ",
    "COMPANIES_WRITE",
    "CAMPAIGNS_READ",
    "IDENTITIES_READ",
    "LISTS_READ",
    "LISTS_WRITE",
    "CONVERSATIONS_READ",
    "ACTIONS_READ",
    "SAVED_VIEWS_READ",
    "WEBHOOKS_READ",
    "WEBHOOKS_WRITE",
]


async def add_key(app: Starlette, key: str, scopes: list[str]) -> dict[str, str]:
    """Store one more API key; answers its request headers."""
    await app.state.services.emulator.db.execute(
        "INSERT OR REPLACE INTO api_keys(key, name, scopes) VALUES (?, ?, ?)",
        (key, key, json.dumps(scopes)),
    )
    return {"x-api-key": key}


async def get_ok(client: httpx.AsyncClient, path: str, **params: str) -> dict[str, Any]:
    """GET `path` with the ALL key: a 200, answered as its JSON body."""
    response = await client.get(path, params=params, headers=ALL)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def assert_error(response: httpx.Response, status: int, field: str | None = None) -> None:
    """`status` in the /v1 error shape; with `field`, the validation error names it."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert body["status"] == "error" and body["message"], body
    if field is not None:
        assert field in [e["field"] for e in body["errors"]], body


async def assert_guarded(
    client: httpx.AsyncClient,
    app: Starlette,
    method: str,
    path: str,
    scope: str,
    json_body: Any = None,
) -> None:
    """401 without a key or with an unknown one; 403 without `scope`; passes with only it.

    `scope` "ALL" means only an ALL key passes: a key holding every named scope is refused.
    """
    send: dict[str, Any] = {} if json_body is None else {"json": json_body}
    assert_error(await client.request(method, path, **send), 401)
    assert_error(await client.request(method, path, headers={"x-api-key": "nope"}, **send), 401)
    if scope == "ALL":
        every = await add_key(app, "every-named-scope", EVERY_SCOPE)
        assert_error(await client.request(method, path, headers=every, **send), 403)
        assert_error(await client.request(method, path, headers=READONLY, **send), 403)
        return
    others = await add_key(app, f"all-but-{scope}", [s for s in EVERY_SCOPE if s != scope])
    assert_error(await client.request(method, path, headers=others, **send), 403)
    only = await add_key(app, f"only-{scope}", [scope])
    response = await client.request(method, path, headers=only, **send)
    assert response.status_code < 300, response.text
    if scope.endswith("_WRITE"):
        assert_error(await client.request(method, path, headers=READONLY, **send), 403)


async def assert_paging_errors(
    client: httpx.AsyncClient, path: str, headers: dict[str, str] = ALL
) -> None:
    """Bad page and pageSize values are 400s naming the parameter, never clamped."""
    for name, value in [
        ("page", "0"),
        ("page", "-1"),
        ("page", "abc"),
        ("page", "1.5"),
        ("page", "٣"),
        ("pageSize", "0"),
        ("pageSize", "101"),
        ("pageSize", "x"),
    ]:
        response = await client.get(path, params={name: value}, headers=headers)
        assert_error(response, 400, name)


HOSTILE_BODIES: list[bytes] = [
    b"",
    b"{",
    b"[]",
    b"null",
    b'"text"',
    b"\xff\xfe\x00",
    '{"name": "\ud800"}'.encode("utf-8", "surrogatepass"),  # a raw lone surrogate
    b'{"name": "\\udfff", "type": "x"}',  # an escaped lone surrogate
    b'{"a":' * 200,
]


async def assert_bad_bodies(
    client: httpx.AsyncClient,
    method: str,
    path: str,
    wrong: list[tuple[str, dict[str, Any]]],
    headers: dict[str, str] = ALL,
) -> None:
    """Malformed JSON, non-objects, invalid UTF-8 are 400s; so is each (field, body) of `wrong`."""
    for raw in HOSTILE_BODIES:
        response = await client.request(
            method, path, content=raw, headers={**headers, "content-type": "application/json"}
        )
        assert_error(response, 400)
    for field, body in wrong:
        response = await client.request(method, path, json=body, headers=headers)
        assert_error(response, 400, field)
