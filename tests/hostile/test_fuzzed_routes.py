"""No 5xx from any input on any route of the route table (/v1, /crm, /_emulator and the
document), against a real `emulator serve`: hostile bodies, query values and path ids."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.routing import BaseRoute, Mount, Route

from emulator.app import create_app
from emulator.testing import EmulatorServer
from tests.hostile.harness import ALL, CRM_KEY

# More for a deeper hunt (EMULATOR_FUZZ_EXAMPLES=200); small by default to keep `make test` short.
EXAMPLES = int(os.environ.get("EMULATOR_FUZZ_EXAMPLES", "12"))
TOKEN = "fuzz"
MAX_BODY = 256 * 1024


def walk(routes: Iterable[BaseRoute], prefix: str = "") -> Iterator[tuple[str, str]]:
    for route in routes:
        if isinstance(route, Mount):
            yield from walk(route.routes, prefix + route.path)
        elif isinstance(route, Route):
            for method in sorted((route.methods or {"GET"}) - {"HEAD"}):
                yield method, prefix + route.path


OPERATIONS = sorted(set(walk(create_app().routes)))
# These call out to the URL in the body; a generated one may wait on the network.
OUTGOING = ("/custom-crm/test", "/custom-crm/connect", "/webhooks/{webhookId}/test")

BIG = 2**64 + 7
HOSTILE_BODIES = [
    b"",
    b"{",
    b"null",
    b"[]",
    b'"x"',
    b"\xff\xfe\xfd",
    b'{"a": "\xff"}',
    b'{"a": "\x00"}',
    b'{"a": "\\u0000"}',
    b"[" * 1000 + b"]" * 1000,
    b'{"a":' * 1000 + b"1" + b"}" * 1000,
    b"[" * 100_000,
    f'{{"ids": [{BIG}], "id": {BIG}, "page": {BIG}, "seconds": {BIG}}}'.encode(),
    f'{{"campaignId": {BIG}, "contactId": {BIG}, "type": "EMAIL_OPENED"}}'.encode(),
    f'{{"contactId": {BIG}, "campaignId": 1}}'.encode(),
    b'{"page": 1e400, "x": -1e400}',
    b'{"directory": "/dev/zero", "path": "/dev/zero"}',
    b'{"label": "' + b"x" * 100_000 + b'"}',
]
HOSTILE_QUERIES: list[dict[str, str]] = [
    {"page": "9223372036854775807"},
    {"page": "9223372036854775808"},
    {"page": str(BIG)},
    {"pageSize": str(BIG)},
    {"page": "-1"},
    {"page": "1e3"},
    {"page": "\u0661"},
    {"afterId": str(BIG), "limit": str(BIG)},
    {"contactId": str(BIG), "campaignId": "-0"},
    {"search": "\x00"},
    {"search": "%" * 1000},
    {"fields": ",,,"},
    {"format": "jsonl"},
    {"updatedAtFrom": "9999-12-31T23:59:59+14:00"},
    {"externalId": "\ud800".encode("utf-8", "surrogatepass").decode("latin-1")},
]
PATH_IDS = [
    "0",
    "-1",
    str(BIG),
    "9223372036854775807",
    "abc",
    "%00",
    "%ff",
    "..",
    "%2e%2e",
    "contacts",
    "\u00fc",
]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=10,
)
names = st.sampled_from(
    [
        "page",
        "pageSize",
        "ids",
        "all",
        "seconds",
        "until",
        "campaignId",
        "contactId",
        "type",
        "directory",
        "path",
        "name",
        "steps",
        "url",
        "events",
        "crmUrl",
        "apiKey",
        "faults",
        "contacts",
        "companies",
        "label",
        "time",
        "enabled",
        "include",
        "actions",
        "baseUrl",
    ]
) | st.text(max_size=8)
bodies = st.dictionaries(names, json_values, max_size=5).map(
    lambda d: httpx.Request("POST", "/", json=d).content
) | st.binary(max_size=40)
queries = st.dictionaries(
    st.sampled_from(
        [
            "page",
            "pageSize",
            "afterId",
            "limit",
            "search",
            "fields",
            "type",
            "completed",
            "contactId",
            "externalId",
            "format",
            "method",
            "path",
        ]
    ),
    st.text(max_size=10) | st.integers(min_value=-(2**70), max_value=2**70).map(str),
    max_size=3,
)


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    server = EmulatorServer.start(["--rate-limit", "off", "--max-body", str(MAX_BODY)], token=TOKEN)
    try:
        with httpx.Client(base_url=server.url, headers=server.headers, timeout=60) as client:
            yield client
    finally:
        server.stop()


def fill(path: str, value: str) -> str:
    return "/".join(value if part.startswith("{") else part for part in path.split("/"))


def send(
    client: httpx.Client,
    method: str,
    path: str,
    body: bytes | None,
    query: dict[str, Any],
    ident: str,
) -> None:
    key = CRM_KEY if path.startswith("/crm") else ALL
    response = client.request(
        method,
        fill(path, ident),
        params=query,
        content=body if method != "GET" else None,
        headers={**key, "content-type": "application/json"},
    )
    assert response.status_code < 500, (
        method,
        path,
        body[:80] if body else body,
        query,
        ident,
        response.text[:300],
    )
    if response.status_code >= 400 and path.startswith(("/v1/", "/crm/", "/_emulator/")):
        error = response.json()  # every API error is the surface's JSON body (pages: HTML)
        assert ("error" in error) if path.startswith("/crm") else error["status"] == "error"


@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_route_never_answers_5xx(client: httpx.Client, method: str, path: str) -> None:
    if path.endswith(OUTGOING):
        pytest.skip("calls the URL it is given; its own tests cover bad input")
    for body in HOSTILE_BODIES:
        send(client, method, path, body, {}, "1")
    for query in HOSTILE_QUERIES:
        send(client, method, path, None, query, "1")
    for ident in PATH_IDS if "{" in path else []:
        send(client, method, path, b"{}", {}, ident)

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(body=bodies, query=queries, ident=st.sampled_from(PATH_IDS))
    def fuzzed(body: bytes, query: dict[str, Any], ident: str) -> None:
        send(client, method, path, body, query, ident)

    fuzzed()


def test_a_scenario_whose_fixtures_cannot_seed_is_a_400(client: httpx.Client) -> None:
    """Found by schemathesis: duplicate CRM user ids failed the scenario emulator's start-up on
    the store's UNIQUE constraint, and uvicorn's SystemExit escaped as a bare 500. The loader
    now names them, and the body's fixtures are checked before anything runs: a 400 naming
    them; the server stays up."""
    users = [{"id": "u", "name": "a"}, {"id": "u", "name": "b"}]
    scenario = {"name": "dup", "crm": {"users": users}, "expect": {"report": {"status": "ok"}}}
    r = client.post("/_emulator/scenarios/run", json=scenario)
    assert r.status_code == 400, r.text
    assert "crm.json: users[1].id: duplicate id 'u'" in r.json()["errors"][0]["message"]
    assert client.get("/_emulator/health").status_code == 200


def test_a_scenario_cannot_make_the_server_call_elsewhere(client: httpx.Client) -> None:
    """Found by schemathesis: a scenario path with control characters crashed the run; an
    absolute URL would have made the server fetch it."""
    from tests.servers import recording_server

    with recording_server() as receiver:
        for path in (f"{receiver.url}/steal", "//127.0.0.1/x", "\u0016x", "v1/contacts"):
            scenario = {"name": "out", "steps": [{"step": "call", "method": "GET", "path": path}]}
            r = client.post("/_emulator/scenarios/run", json=scenario)
            assert r.status_code in (200, 400), r.text
            if r.status_code == 200:
                assert r.json()["results"][0]["outcome"] != "pass", path
        assert receiver.requests == []
