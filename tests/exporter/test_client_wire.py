"""CrmClient on the wire: its requests go straight to an httpx transport of `outbound.lane`,
and are the ones an `httpx.AsyncClient` set up as the client was before would send (same head,
header order, body); TLS with a CA file, cookies and an environment proxy still work. Raw
asyncio servers record what arrives."""

from __future__ import annotations

import asyncio
import ssl
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import httpx
import pytest

from emulator.exporter.client import CrmClient
from emulator.outbound import RetryPolicy, tls_verify
from emulator.wire import encode
from tests.raw_http import Certificate, Server, answer, proxy_everything, raw_server

pytestmark = pytest.mark.anyio

HEADERS = {"X-API-Key": "k-123", "Content-Type": "application/json", "Accept": "application/json"}


REPLY = answer(b'{"id": "a-1"}')


def crm(
    reply: bytes = REPLY, tls: ssl.SSLContext | None = None
) -> AbstractAsyncContextManager[tuple[str, Server]]:
    """A raw server standing for a CRM at /crm."""
    return raw_server(reply=reply, tls=tls, path="/crm")


async def test_each_call_sends_what_the_httpx_client_sent() -> None:
    calls = [
        ("GET", "/health", None),
        ("POST", "/activities", {"type": "EMAIL", "subject": "[1/3] é"}),
        ("PUT", "/contacts", {"contacts": [{"crmId": "c 1"}]}),
        ("GET", "/tasks/t 1?x", None),
        ("POST", "/tasks/batch", {"ids": []}),
    ]
    async with crm() as (url, server):
        async with httpx.AsyncClient(base_url=url, headers=HEADERS, timeout=10.0) as before:
            for method, path, body in calls:
                content = None if body is None else encode(body)  # as the client did
                await before.request(method, path, content=content)
        expected = list(server.requests)
        server.requests.clear()
        async with CrmClient(url, "k-123") as client:
            for method, path, body in calls:
                ex = await client.call(method, path, body)
                assert ex.status == 200 and ex.json() == {"id": "a-1"}
    assert len(expected) == len(server.requests) == len(calls)
    for (head, body), (got_head, got_body) in zip(expected, server.requests, strict=True):
        assert (got_head, got_body) == (head, body)  # same line, header order, values, body
    assert server.connections == 2  # one kept-alive connection each


async def test_a_cookie_the_crm_sets_is_sent_back() -> None:
    reply = answer(b"{}", b"Set-Cookie: session=s1; Path=/")
    async with crm(reply=reply) as (url, server), CrmClient(url, "k") as client:
        await client.call("GET", "/health")
        await client.call("GET", "/users")
    first, second = (head for head, _ in server.requests)
    assert b"cookie:" not in first.lower()
    assert b"\r\nCookie: session=s1\r\n" in second


async def test_no_answer_is_an_exchange_without_status() -> None:
    async with crm() as (url, _):
        pass  # closed: nobody listens any more
    async with CrmClient(url, "k", policy=RetryPolicy(retries=0)) as client:
        ex = await client.call("GET", "/health")
    assert ex.status == 0 and ex.error is not None and ex.error.startswith("ConnectError")


@pytest.fixture
def certificate(tmp_path: Path) -> Certificate:
    return Certificate(tmp_path)


async def test_https_with_a_ca_file_verifies_the_crm(certificate: Certificate) -> None:
    async with crm(tls=certificate.server) as (url, server):
        async with CrmClient(url, "k", ca_file=str(certificate.ca_file)) as client:
            for _ in range(3):
                assert (await client.call("POST", "/activities", {"type": "EMAIL"})).status == 200
        async with CrmClient(url, "k", verify=False) as client:
            assert (await client.call("GET", "/health")).status == 200
        # the system's CAs do not know this one
        async with CrmClient(url, "k", policy=RetryPolicy(retries=0)) as client:
            untrusted = await client.call("GET", "/health")
    assert untrusted.status == 0 and "CERTIFICATE_VERIFY_FAILED" in (untrusted.error or "")
    assert server.connections == 2  # three calls on one connection, then the unverified one
    assert len(server.requests) == 4
    assert isinstance(tls_verify(True, str(certificate.ca_file)), ssl.SSLContext)


async def test_a_proxy_in_the_environment_sends_through_an_httpx_client(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with crm() as (proxy, server):
        proxy_everything(monkeypatch, proxy.removesuffix("/crm"))
        async with CrmClient("http://crm.invalid/crm", "k") as client:
            assert (await client.call("GET", "/health")).status == 200
    assert server.requests[0][0].startswith(b"GET http://crm.invalid/crm/health HTTP/1.1")


async def test_concurrent_calls_share_at_most_max_connections() -> None:
    async with crm() as (url, server), CrmClient(url, "k", max_connections=2) as client:
        exchanges = await asyncio.gather(
            *(client.call("POST", "/activities", {"n": i}) for i in range(12))
        )
        assert all(ex.status == 200 for ex in exchanges)
        for _ in range(5):  # one at a time: a kept lane each time
            assert (await client.call("GET", "/health")).status == 200
    assert server.connections == 2
    assert sorted(body for _, body in server.requests if body) == sorted(
        encode({"n": i}) for i in range(12)
    )


async def test_a_caller_waiting_for_a_connection_times_out_as_a_pool_timeout() -> None:
    done = asyncio.Event()
    handlers: list[asyncio.Task[None]] = []

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        handlers.append(asyncio.current_task())  # type: ignore[arg-type]
        try:
            await done.wait()
        finally:
            writer.close()
            await writer.wait_closed()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    async with server:
        policy = RetryPolicy(retries=0)
        async with CrmClient(url, "k", timeout=0.3, max_connections=1, policy=policy) as client:
            first, second = await asyncio.gather(client.call("GET", "/a"), client.call("GET", "/b"))
        done.set()
        await asyncio.gather(*handlers, return_exceptions=True)
    assert first.error == "DeadlineExceeded: no whole answer within the 0.3 s deadline"
    # The second call's wait for the one connection is bounded by the same 0.3 s as the first
    # call's exchange: which of the two timers fires first is up to the scheduler. Either way
    # the second call fails by its deadline instead of waiting for the silent server.
    assert second.error is not None
    assert second.error.startswith(("PoolTimeout", "DeadlineExceeded")), second.error
