"""emulator/guard_layer.py: the one layer answers every request exactly as the three layers it
replaced, stacked in their old order (RedactAnswers over BrowserGuard over ControlToken), and
the browser guard's short cut for reads passes exactly the reads `refusal` passes."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from emulator.asgi_guards import ControlToken, cookie_value
from emulator.asgi_redaction import RedactAnswers
from emulator.browser_guards import (
    SAFE_METHODS,
    BrowserGuard,
    HostRule,
    guarded_headers,
    refusal,
    safe_host_passes,
)
from emulator.guard_layer import Guards
from emulator.redaction import Redactor

TOKEN = "guard-layer-token-1234"
SECRET = "guard-layer-secret-5678"
HOSTS = HostRule.of("127.0.0.1", ["emulator.example"])

methods = st.sampled_from(["GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE"])
paths = st.sampled_from(
    [
        "/v1/contacts",
        "/v1/contact",
        "/v1/webhooks/3/test",
        "/v1/custom-crm/connect",
        "/crm/health",
        "/crm",
        "/_emulator",
        "/_emulator/health",
        "/_emulator/requests",
        "/_emulator/crm/settings",
        "/_emulator/workspaces",
        "/control-token",
        "/crm-ui",
        "/contacts",
        "/scenarios",
        "/openapi.json",
        "/docs/assets/x.js",
    ]
)
host_values = st.sampled_from(
    [b"127.0.0.1:8400", b"localhost", b"[::1]:9", b"evil.example", b"emulator.example:80", b""]
)
header = st.one_of(
    st.tuples(st.just(b"host"), host_values),
    st.tuples(
        st.just(b"origin"),
        st.sampled_from(
            [b"http://127.0.0.1:8400", b"http://evil.example", b"null", b"http://localhost"]
        ),
    ),
    st.tuples(st.just(b"sec-fetch-site"), st.sampled_from([b"same-origin", b"cross-site", b""])),
    st.tuples(st.just(b"content-type"), st.sampled_from([b"application/json", b"text/plain"])),
    st.tuples(st.just(b"content-length"), st.sampled_from([b"0", b"12"])),
    st.tuples(st.just(b"transfer-encoding"), st.just(b"chunked")),
    st.tuples(
        st.just(b"authorization"), st.sampled_from([b"Bearer " + TOKEN.encode(), b"Bearer no"])
    ),
    st.tuples(
        st.just(b"cookie"),
        st.sampled_from([b"emulator_control=" + cookie_value(TOKEN).encode(), b"x=1"]),
    ),
    st.tuples(st.just(b"x-api-key"), st.just(b"demo-all")),
)


async def inner(scope: Scope, receive: Receive, send: Send) -> None:
    """An app whose answer holds the secret (so redaction shows), and the path it was sent."""
    body = f'{{"path": "{scope["path"]}", "key": "{SECRET}"}}'.encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"x-inner", b"1")]})
    await send({"type": "http.response.body", "body": body[:20], "more_body": True})
    await send({"type": "http.response.body", "body": body[20:]})


async def redactor(scope: Scope) -> Redactor:
    return Redactor([SECRET, TOKEN])


def stacked(token: str | None) -> ASGIApp:
    return RedactAnswers(
        BrowserGuard(ControlToken(inner, token=token), hosts=HOSTS), redactor, token
    )


def merged(token: str | None) -> ASGIApp:
    return Guards(inner, redactor=redactor, hosts=HOSTS, token=token)


def answer(app: ASGIApp, scope: Scope) -> list[Message]:
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    asyncio.run(app(dict(scope), receive, send))
    # one body (the layers may cut it differently), the start as sent
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return [m for m in sent if m["type"] == "http.response.start"] + [{"body": body}]


@settings(max_examples=300, deadline=None)
@given(
    methods,
    paths,
    st.lists(header, max_size=6),
    st.sampled_from(["http", "https"]),
    st.sampled_from([None, TOKEN]),
)
def test_one_layer_answers_as_the_three_stacked(
    method: str,
    path: str,
    headers: list[tuple[bytes, bytes]],
    scheme: str,
    token: str | None,
) -> None:
    scope = {"type": "http", "method": method, "path": path, "headers": headers, "scheme": scheme}
    assert answer(merged(token), scope) == answer(stacked(token), scope)


def test_it_refuses_and_redacts_as_the_guards_do() -> None:
    """The figures the equivalence above relies on are not all passes: spot checks."""
    base = {"type": "http", "path": "/_emulator/requests", "scheme": "http"}
    rebinding = answer(merged(None), {**base, "method": "GET", "headers": [(b"host", b"evil.x")]})
    assert rebinding[0]["status"] == 421
    no_token = answer(merged(TOKEN), {**base, "method": "GET", "headers": []})
    assert no_token[0]["status"] == 401
    passed = answer(merged(None), {**base, "method": "GET", "headers": [(b"host", b"localhost")]})
    assert passed[0]["status"] == 200
    assert SECRET.encode() not in passed[1]["body"] and b"***" in passed[1]["body"]
    v1 = answer(merged(None), {**base, "path": "/v1/contacts", "method": "GET", "headers": []})
    assert SECRET.encode() in v1[1]["body"]  # the emulated APIs are not redacted


def test_lifespan_passes_to_the_app() -> None:
    seen: list[str] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append(scope["type"])

    async def nothing() -> Message:
        return {}

    async def ignore(message: Message) -> None:
        pass

    asyncio.run(
        Guards(app, redactor=redactor, hosts=HOSTS, token=TOKEN)(
            {"type": "lifespan"}, nothing, ignore
        )
    )
    assert seen == ["lifespan"]


@given(st.sampled_from(sorted(SAFE_METHODS)), st.lists(header, max_size=6))
def test_the_reads_short_cut_passes_what_refusal_passes(
    method: str, headers: list[tuple[bytes, bytes]]
) -> None:
    passes = refusal(method, "/v1/contacts", "http", guarded_headers(headers), HOSTS) is None
    assert safe_host_passes(headers, HOSTS) == passes
