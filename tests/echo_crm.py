"""A CRM that echoes every request header it is sent into every answer: the reference CRM of a
whole emulator app, answering as it would, with the headers (the API key among them) added to
every JSON object of every answer, appended to its text fields (names, titles, task subjects,
messages) and sent back as a header. A sink that keeps what a CRM answered shows the key.

with echoing_crm(api_key) as url: ...   # a CRM at `url` accepting `api_key`
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import msgspec
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from emulator.app import create_app
from tests.conftest import make_settings
from tests.servers import serve_app

TEXT_FIELDS = frozenset(
    {"name", "title", "subject", "description", "message", "body", "note", "content", "error"}
)


def echo_of(scope: Scope) -> str:
    return "; ".join(f"{k.decode('latin-1')}: {v.decode('latin-1')}" for k, v in scope["headers"])


def echoed(value: Any, echo: str) -> Any:
    if isinstance(value, dict):
        out = {k: echoed(v, echo) for k, v in value.items()}
        for k, v in value.items():
            if k in TEXT_FIELDS and isinstance(v, str):
                out[k] = f"{v} [{echo}]"
        out["echo"] = echo
        return out
    if isinstance(value, list):
        return [echoed(v, echo) for v in value]
    return value


class EchoingCrm:
    """ASGI: every path P but /_emulator/* is the inner app's /crm/P, its answer echoed."""

    def __init__(self, inner: ASGIApp) -> None:
        self.inner = inner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith("/_emulator"):
            await self.inner(scope, receive, send)
            return
        echo = echo_of(scope)
        path = "/crm" + scope["path"]
        inner_scope = {**scope, "path": path, "raw_path": path.encode()}
        start: dict[str, Any] = {}
        chunks: list[bytes] = []

        async def keep(message: Message) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self.inner(inner_scope, receive, keep)
        raw = b"".join(chunks)
        try:
            body = msgspec.json.encode(echoed(msgspec.json.decode(raw), echo)) if raw else b""
        except msgspec.DecodeError:
            body = raw + f" [{echo}]".encode()
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        headers += [
            (b"content-length", str(len(body)).encode()),
            (b"x-echo", echo.encode("latin-1")),
        ]
        await send({**start, "headers": headers})
        await send({"type": "http.response.body", "body": body})


@contextmanager
def echoing_crm(api_key: str) -> Iterator[str]:
    """A running echoing CRM that accepts `api_key` (X-API-Key); yields its base URL."""
    inner = create_app(make_settings())
    with serve_app(EchoingCrm(inner), lifespan="on") as url:
        settings = httpx.get(f"{url}/_emulator/crm/settings").json()
        settings["apiKey"] = api_key
        httpx.put(f"{url}/_emulator/crm/settings", json=settings).raise_for_status()
        yield url
