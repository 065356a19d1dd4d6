"""CrmClient: a 429 with Retry-After pauses every call to that CRM, not only the one retried."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from emulator.exporter.client import Attempt, CrmClient
from emulator.outbound import RetryPolicy

pytestmark = pytest.mark.anyio
PAUSE = 0.4


async def test_a_429_with_retry_after_pauses_concurrent_calls_too() -> None:
    arrivals: list[tuple[str, float]] = []
    limited = asyncio.Event()

    async def handle(request: httpx.Request) -> httpx.Response:
        arrivals.append((request.url.path, time.monotonic()))
        if request.url.path == "/first" and not limited.is_set():
            limited.set()
            return httpx.Response(
                429, headers={"Retry-After": str(PAUSE)}, json={"error": "slow down"}
            )
        return httpx.Response(200, json={"ok": True})

    policy = RetryPolicy(retries=2, base=0.001, cap=0.01, retry_after_cap=5.0)
    async with CrmClient(
        "http://crm.test", "k", transport=httpx.MockTransport(handle), policy=policy
    ) as client:

        async def later(path: str) -> int:
            await limited.wait()  # these start while the first call is paused
            return (await client.call("GET", path)).status

        results = await asyncio.gather(
            client.call("GET", "/first"), later("/a"), later("/b"), later("/c")
        )
    assert [r if isinstance(r, int) else r.status for r in results] == [200, 200, 200, 200]
    limited_at = arrivals[0][1]
    others = [(p, t - limited_at) for p, t in arrivals[1:]]
    assert len(others) == 4  # the retry of /first and the three others
    assert all(waited >= PAUSE - 0.02 for _, waited in others), others


async def test_a_429_without_retry_after_backs_off_only_the_call_retried() -> None:
    answered = []

    def handle(request: httpx.Request) -> httpx.Response:
        answered.append(request.url.path)
        if request.url.path == "/first" and answered.count("/first") == 1:
            return httpx.Response(429)
        return httpx.Response(200, json={})

    policy = RetryPolicy(retries=1, base=0.001, cap=0.01)
    async with CrmClient(
        "http://crm.test", "k", transport=httpx.MockTransport(handle), policy=policy
    ) as client:
        t0 = time.monotonic()
        await client.call("GET", "/first")
        await client.call("GET", "/second")
        assert time.monotonic() - t0 < PAUSE / 2
    assert answered == ["/first", "/first", "/second"]


async def test_each_body_is_redacted_once_and_every_record_of_it_is_redacted() -> None:
    """The request body is scanned for the key once per call, each answer once per attempt;
    the journal's attempts and the exchange carry those redacted bytes."""
    answers = iter(
        [httpx.Response(503, content=b"busy s3cret"), httpx.Response(200, content=b"ok s3cret")]
    )
    attempts: list[Attempt] = []
    async with CrmClient(
        "http://crm.test",
        "s3cret",
        transport=httpx.MockTransport(lambda request: next(answers)),
        policy=RetryPolicy(retries=1, base=0.001, cap=0.01),
        journal=attempts.append,
    ) as client:
        scanned: list[bytes] = []
        redact = client.redactor.bytes
        client.redactor.bytes = lambda data: scanned.append(data) or redact(data)  # type: ignore[method-assign]
        ex = await client.call("POST", "/contacts", {"token": "s3cret"})
    assert scanned == [b'{"token":"s3cret"}', b"busy s3cret", b"ok s3cret"]
    assert [a.request for a in attempts] == [b'{"token":"***"}'] * 2 == [ex.request] * 2
    assert [a.response for a in attempts] == [b"busy ***", b"ok ***"]
    assert (ex.status, ex.response, ex.attempts) == (200, b"ok ***", 2)
