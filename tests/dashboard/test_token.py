"""The control token in the dashboard: asked once through a form, kept in an HttpOnly,
SameSite=Strict cookie that the guard accepts like `Authorization: Bearer`."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from emulator.app import create_app
from emulator.asgi_guards import COOKIE
from tests.conftest import ALL, make_settings, open_client
from tests.servers import unused_url

pytestmark = pytest.mark.anyio
TOKEN = "s3cret-token"


@pytest.fixture
async def guarded() -> AsyncIterator[httpx.AsyncClient]:
    async with open_client(create_app(make_settings(controlToken=TOKEN))) as client:
        yield client


async def test_the_pages_ask_for_the_token_until_it_is_given(guarded: httpx.AsyncClient) -> None:
    page = await guarded.get("/")
    assert page.status_code == 200 and 'id="token-banner"' in page.text
    advance = await guarded.post("/_emulator/clock/advance", json={"seconds": 60})
    assert advance.status_code == 401 and "/control-token" in advance.json()["message"]


async def test_a_wrong_token_says_so_and_sets_nothing(guarded: httpx.AsyncClient) -> None:
    r = await guarded.post("/control-token", data={"token": "nope", "next": "/runs"})
    assert r.status_code == 401 and "Wrong token" in r.text
    assert "set-cookie" not in r.headers and COOKIE not in guarded.cookies
    assert (await guarded.post("/_emulator/reset")).status_code == 401


async def test_the_right_token_sets_a_strict_http_only_cookie(guarded: httpx.AsyncClient) -> None:
    r = await guarded.post("/control-token", data={"token": TOKEN, "next": "/runs?x=1"})
    assert r.status_code == 303 and r.headers["location"] == "/runs?x=1"
    cookie = r.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE}=")
    attributes = {a.strip().lower() for a in cookie.split(";")[1:]}
    assert {"httponly", "samesite=strict", "path=/"} <= attributes
    assert TOKEN not in cookie  # a value derived from the token, not the token
    # every action now works with the cookie alone (httpx sends it back, as a browser does)
    assert (await guarded.post("/_emulator/clock/advance", json={"seconds": 60})).status_code == 200
    assert (await guarded.post("/_emulator/reset")).status_code == 200
    assert 'id="token-banner"' not in (await guarded.get("/")).text


async def test_a_cookie_from_another_token_is_refused(guarded: httpx.AsyncClient) -> None:
    guarded.cookies.set(COOKIE, "0" * 64)
    assert (await guarded.post("/_emulator/reset")).status_code == 401


@pytest.mark.parametrize("target", ["//evil.test/x", "https://evil.test", "/\\evil.test", "x"])
async def test_the_form_goes_back_only_to_a_page_of_this_server(
    guarded: httpx.AsyncClient, target: str
) -> None:
    r = await guarded.post("/control-token", data={"token": TOKEN, "next": target})
    assert r.status_code == 303 and r.headers["location"] == "/"


async def test_without_a_token_the_form_says_none_is_needed(client: httpx.AsyncClient) -> None:
    page = await client.get("/control-token")
    assert "without <code>--control-token</code>" in page.text
    assert 'id="token-banner"' not in (await client.get("/")).text
    assert (await client.post("/control-token", data={"token": "x"})).status_code == 400


async def test_v1_routes_that_call_out_need_the_token(guarded: httpx.AsyncClient) -> None:
    """With a token set, no route without it makes an outgoing call, /v1's included."""
    target = {"baseUrl": unused_url(), "apiKey": "k"}
    for path, body in [
        ("/v1/custom-crm/test", target),
        ("/v1/custom-crm/connect", target),
        ("/v1/webhooks/1/test", None),
    ]:
        r = await guarded.post(path, json=body, headers=ALL)
        assert r.status_code == 401, (path, r.text)
        allowed = await guarded.post(
            path, json=body, headers={**ALL, "authorization": f"Bearer {TOKEN}"}
        )
        assert allowed.status_code != 401, (path, allowed.text)
    # the rest of /v1 needs only its API key
    assert (await guarded.get("/v1/contacts", headers=ALL)).status_code == 200
