"""Helpers of the webhook and actions-run delivery tests: a scripted receiver, events, logs."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from emulator.wire import now_iso
from tests.conftest import ALL
from tests.servers import serve_app

T0 = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
SECRET = "whsec-simulation-1234"

# (body, how many times this body came before to the same path) -> status to answer
Policy = Callable[[bytes, int], int]


def always(status: int) -> Policy:
    return lambda body, seen: status


def fail_first(times: int, status: int = 500) -> Policy:
    """Each distinct body is refused `times` times with `status`, then accepted."""
    return lambda body, seen: status if seen < times else 200


def by_hash(body: bytes, seen: int) -> int:
    """A fixed answer per (body, repetition): some bodies fail once, twice or always."""
    h = hashlib.blake2b(body, digest_size=2).digest()[0] % 8
    limit = {0: 1, 1: 2, 2: 9}.get(h, 0)  # 9 > the 4 attempts: fails every time
    return 503 if seen < limit else 200


@dataclass
class Got:
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Scripted:
    url: str = ""
    policy: Policy = field(default=lambda body, seen: 200)
    received: list[Got] = field(default_factory=list)
    seen: dict[tuple[str, bytes], int] = field(default_factory=dict)  # per (path, body)

    def clear(self) -> None:
        self.received.clear()
        self.seen.clear()


@contextmanager
def scripted_receiver(policy: Policy | None = None) -> Iterator[Scripted]:
    """A loopback receiver whose answer to each request the policy decides."""
    receiver = Scripted(policy=policy or always(200))

    async def answer(request: Request) -> Response:
        body = await request.body()
        receiver.received.append(
            Got(
                request.url.path,
                {k.lower(): v for k, v in request.headers.items()},
                body,
            )
        )
        key = (request.url.path, body)
        seen = receiver.seen.get(key, 0)
        receiver.seen[key] = seen + 1
        return Response(b"{}", receiver.policy(body, seen), media_type="application/json")

    app = Starlette(routes=[Route("/{path:path}", answer, methods=["POST"])])
    with serve_app(app, lifespan="off") as url:
        receiver.url = url
        yield receiver


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def iso(seconds: float) -> str:
    return now_iso(at(seconds))


async def subscribe(client: httpx.AsyncClient, url: str, **fields: Any) -> int:
    body = {"name": "Simulation receiver", "url": url, "events": ["MESSAGE_REPLIED"], **fields}
    response = await client.post("/v1/webhooks", json=body, headers=ALL)
    assert response.status_code == 201, response.text
    return int(response.json()["data"]["id"])


async def drop_fixture_webhooks(client: httpx.AsyncClient) -> None:
    """The fixture subscriptions post to a closed port: keep them out of these tests."""
    listed = await client.get("/v1/webhooks", params={"pageSize": "100"}, headers=ALL)
    for hook in listed.json()["data"]:
        assert (await client.delete(f"/v1/webhooks/{hook['id']}", headers=ALL)).status_code < 300


async def logs(client: httpx.AsyncClient, webhook_id: int) -> list[dict[str, Any]]:
    """Every logged attempt of a subscription, oldest first."""
    entries: list[dict[str, Any]] = []
    page = 1
    while True:
        response = await client.get(
            f"/v1/webhooks/{webhook_id}/logs",
            params={"page": str(page), "pageSize": "100"},
            headers=ALL,
        )
        assert response.status_code == 200, response.text
        body = response.json()
        entries.extend(body["data"])
        if page * 100 >= body["meta"]["total"]:
            return sorted(entries, key=lambda e: e["id"])
        page += 1
