"""The delivery sender's HTTP path: httpx transports of `outbound.lane`, one connection per
lane, lanes kept per receiver. Raw asyncio servers script what the receiver does on the wire
(keep the connection, close it, reset it, never answer, speak TLS)."""

from __future__ import annotations

import asyncio
import ssl
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from emulator.outbound import lane as outbound_lane
from emulator.outbound.calls import call
from emulator.simulation.webhooks import sender
from tests.raw_http import (
    NO_CONTENT,
    Certificate,
    Server,
    proxy_everything,
    raw_server,
    read_request,
)

pytestmark = pytest.mark.anyio


def lane(ssl_context: ssl.SSLContext | None = None) -> outbound_lane.Transport:
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    return outbound_lane.Transport(
        ssl_context=ssl_context or ssl.create_default_context(), limits=limits
    )


async def test_a_delivery_carries_what_an_httpx_client_sends() -> None:
    headers = {"Content-Type": "application/json", "X-Webhook-Secret": "s3cret"}
    async with raw_server() as (url, server):
        async with httpx.AsyncClient() as client:
            await client.post(url, headers=headers, content=b'{"a": 1}')
        async with sender.Sender() as posts:
            outcome = await posts.post(url, headers, b'{"a": 1}')
    assert outcome.ok and outcome.statusCode == 204
    (by_client, by_sender) = server.requests
    assert by_sender == by_client  # same head (header names, order, values), same body


async def test_one_receiver_reuses_its_lanes_and_concurrent_posts_add_lanes() -> None:
    async with raw_server() as (url, server), sender.Sender() as posts:
        for _ in range(20):
            assert (await posts.post(url, {}, b"x")).ok
        assert server.connections == 1
        outcomes = await asyncio.gather(*(posts.post(url, {}, b"y") for _ in range(8)))
        assert all(o.ok for o in outcomes)
        assert 1 < server.connections <= 8
        before = server.connections
        for _ in range(20):
            assert (await posts.post(url, {}, b"z")).ok
        assert server.connections == before  # the lanes were kept
    assert len(server.requests) == 48


async def test_a_connection_the_receiver_closes_is_replaced() -> None:
    async def one_then_close(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, s: Server
    ) -> None:
        request = await read_request(reader)
        assert request is not None
        s.requests.append(request)
        writer.write(NO_CONTENT)
        await writer.drain()

    async with raw_server(one_then_close) as (url, server), sender.Sender() as posts:
        for _ in range(5):
            assert (await posts.post(url, {}, b"x")).ok
            await asyncio.sleep(0.1)  # the close reaches the idle lane
    assert server.connections == 5


async def test_a_receiver_that_never_answers_times_out() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, s: Server) -> None:
        await asyncio.sleep(5)

    async with raw_server(silent) as (url, _):
        outcome = await call("POST", url, content=b"x", timeout=0.2, client=lane())
    assert not outcome.ok and outcome.errorMessage == "timed out after 0.2 s"


async def test_a_reset_or_an_early_close_is_a_failed_outcome() -> None:
    async def reset(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, s: Server) -> None:
        await read_request(reader)
        writer.transport.abort()

    async with raw_server(reset) as (url, _):
        outcome = await call("POST", url, content=b"x", client=lane())
    assert not outcome.ok and outcome.statusCode is None
    assert outcome.errorMessage is not None and outcome.errorMessage.startswith("request failed")


async def test_nobody_listening_is_a_failed_outcome() -> None:
    async with raw_server() as (url, _):
        pass  # closed: the port is free again
    outcome = await call("POST", url, content=b"x", client=lane())
    assert not outcome.ok and outcome.errorMessage is not None
    assert outcome.errorMessage.startswith("request failed")


async def test_a_large_body_arrives_whole_and_an_error_answer_is_kept() -> None:
    body = bytes(range(256)) * 4096  # 1 MiB, beyond the gathered-write limit

    async def refuse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, s: Server) -> None:
        request = await read_request(reader)
        assert request is not None
        s.requests.append(request)
        writer.write(b"HTTP/1.1 413 Too Large\r\nContent-Length: 8\r\n\r\ntoo big!")
        await writer.drain()

    async with raw_server(refuse) as (url, server):
        outcome = await call("POST", url, content=body, client=lane())
    assert server.requests[0][1] == body
    assert outcome.statusCode == 413 and outcome.errorMessage == "HTTP 413: too big!"


@pytest.fixture
def certificate(tmp_path: Path) -> Certificate:
    return Certificate(tmp_path)


async def test_https_receivers_verify_their_certificate(certificate: Certificate) -> None:
    async with raw_server(tls=certificate.server, path="/hook") as (url, server):
        trusted = ssl.create_default_context(cafile=str(certificate.ca_file))
        transport = lane(trusted)
        for _ in range(3):
            outcome = await call("POST", url, content=b"secret", client=transport)
            assert outcome.ok, outcome
        await transport.aclose()
        untrusted = await call("POST", url, content=b"x", client=lane())
    # one kept-alive connection for three posts (a failed handshake never reaches the handler)
    assert server.connections == 1 and [body for _, body in server.requests] == [b"secret"] * 3
    assert not untrusted.ok and untrusted.errorMessage is not None
    assert "CERTIFICATE_VERIFY_FAILED" in untrusted.errorMessage


async def test_a_proxy_in_the_environment_sends_through_a_client(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with raw_server() as (proxy, server):
        proxy_everything(monkeypatch, proxy.removesuffix("/hook"))
        async with sender.Sender() as posts:
            outcome = await posts.post("http://receiver.invalid/hook", {}, b"x")
    assert outcome.ok
    assert server.requests[0][0].startswith(b"POST http://receiver.invalid/hook HTTP/1.1")


async def test_lanes_are_kept_per_receiver_and_idle_ones_are_capped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sender, "MAX_IDLE", 2)
    async with (
        raw_server() as (first, a),
        raw_server() as (second, b),
        sender.Sender() as posts,
    ):
        for url in (first, second, first, second):
            assert (await posts.post(url, {}, b"x")).ok
        assert (a.connections, b.connections) == (1, 1)  # one lane each, reused
        outcomes = await asyncio.gather(*(posts.post(first, {}, b"y") for _ in range(6)))
        assert all(o.ok for o in outcomes)
        assert len(posts._lanes) <= 2  # the lanes beyond MAX_IDLE were closed on return


def test_the_sender_alone_keeps_httpcore_from_searching_for_sniffio() -> None:
    """Without sniffio installed httpcore would search sys.path on every lock it takes; the
    delivery path sets the guard itself, whatever else the process imported."""
    code = (
        "import importlib.util, sys\n"
        "import emulator.simulation.webhooks.sender\n"
        "assert importlib.util.find_spec('sniffio') is not None or sys.modules['sniffio'] is None\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
