"""emulator/asgi_redaction.py: control answers and pages redacted, streamed ones included;
the emulated APIs untouched."""

from __future__ import annotations

import asyncio
import itertools

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Message

from emulator.asgi_redaction import RedactAnswers, Redacting, redacted_path
from emulator.redaction import Redactor

pytestmark = pytest.mark.anyio

SECRET = "stream-secret-value"


def app() -> RedactAnswers:
    async def whole(request: Request) -> Response:
        return Response(
            f'{{"key": "{SECRET}", "again": "{SECRET}"}}', media_type="application/json"
        )

    async def split(request: Request) -> StreamingResponse:
        async def chunks():  # type: ignore[no-untyped-def]
            yield b"before stream-se"
            yield b"cret-val"
            yield b"ue after, then " + SECRET.encode()
            yield b""

        return StreamingResponse(chunks(), media_type="text/plain")

    inner = Starlette(
        routes=[
            Route("/_emulator/whole", whole),
            Route("/_emulator/split", split),
            Route("/v1/whole", whole),
            Route("/contacts", whole),
        ]
    )

    async def redactor(scope: object) -> Redactor:
        return Redactor([SECRET])

    return RedactAnswers(inner, redactor)


async def test_whole_and_streamed_answers() -> None:
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app()), base_url="http://t"
    ) as client:
        whole = await client.get("/_emulator/whole")
        assert whole.json() == {"key": "***", "again": "***"}
        assert whole.headers["content-length"] == str(len(whole.content))
        split = await client.get("/_emulator/split")
        assert split.text == "before *** after, then ***"
        page = await client.get("/contacts")
        assert SECRET not in page.text
        # the emulated APIs are the platform's and the CRM's own: untouched
        assert (await client.get("/v1/whole")).json()["key"] == SECRET


def test_which_paths() -> None:
    for path in ("/_emulator/journal", "/", "/contacts/3", "/crm-ui/contacts", "/runs"):
        assert redacted_path(path), path
    for path in ("/v1/contacts", "/crm/health", "/v1", "/dashboard-assets/x.css"):
        assert not redacted_path(path), path


async def test_the_app_redacts_a_stored_key_and_a_verify_runs_key(
    client: httpx.AsyncClient,
) -> None:
    key = "stored-connection-key"
    conn = {"crmUrl": "http://127.0.0.1:9/crm", "apiKey": key, "autoSync": False}
    assert (await client.put("/_emulator/connection", json=conn)).status_code == 200
    # a verify run against a CRM that is not there: its key stays out of the answers
    body = {"crmUrl": "http://127.0.0.1:9", "apiKey": "verify-run-key-123"}
    started = await client.post("/_emulator/verify", json=body)
    assert started.status_code == 202
    for path in ("/_emulator/connection", f"/_emulator/verify/{started.json()['id']}", "/"):
        answer = await client.get(path)
        assert answer.status_code == 200, path
        assert key not in answer.text and "verify-run-key-123" not in answer.text, path


async def test_a_token_holder_still_reads_the_reference_crms_key() -> None:
    from emulator.app import create_app
    from tests.conftest import make_settings, open_client

    token = "the-control-token-value"
    app = create_app(make_settings(controlToken=token))
    async with open_client(app) as client:
        bearer = {"Authorization": f"Bearer {token}"}
        settings = (await client.get("/_emulator/crm/settings", headers=bearer)).json()
        assert settings["apiKey"] == "crm-demo-key"
        page = await client.get("/crm-ui", headers=bearer)
        assert "crm-demo-key" in page.text and token not in page.text
        # without the token: ***, and the token itself is never in an answer
        assert (await client.get("/crm-ui")).text.count("crm-demo-key") == 0
        conn = {"crmUrl": "http://127.0.0.1:9", "apiKey": token}  # even used as a CRM key
        assert (await client.put("/_emulator/connection", json=conn, headers=bearer)).is_success
        for path in ("/_emulator/connection", "/", "/crm-ui"):
            assert token not in (await client.get(path, headers=bearer)).text, path


@given(
    st.text(alphabet="ab-*xy", min_size=1, max_size=6).filter(lambda s: s.strip("*")),
    st.lists(st.sampled_from(["", "a", "b", "-", "*", "xy", "SECRET"]), max_size=30),
    st.lists(st.integers(min_value=0, max_value=200), max_size=6),
)
def test_a_streamed_answer_never_shows_a_secret_whatever_the_chunks(
    secret: str, pieces: list[str], cuts: list[int]
) -> None:
    body = "".join(secret if p == "SECRET" else p for p in pieces).encode()
    bounds = sorted({min(c, len(body)) for c in cuts} | {0, len(body)})
    chunks = [body[a:b] for a, b in itertools.pairwise(bounds)] or [b""]
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    async def find() -> Redactor:
        return Redactor([secret])

    async def stream() -> None:
        redacting = Redacting(send, find)
        await redacting({"type": "http.response.start", "status": 200, "headers": []})
        for i, chunk in enumerate(chunks):
            more = i < len(chunks) - 1
            await redacting({"type": "http.response.body", "body": chunk, "more_body": more})

    asyncio.run(stream())
    out = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    assert secret.encode() not in out
    assert sent[0]["type"] == "http.response.start" and sent[-1]["more_body"] is False
