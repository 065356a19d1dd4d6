"""The guards against what a web page can make a browser send: Host, Origin, Content-Type.

Rules from the threat model (docs/security.md): names other than localhost are refused unless
allowed (DNS rebinding), a write from another origin is refused, a control-API body must be
JSON. Clients that are not browsers send no Origin: they pass.
"""

from __future__ import annotations

import ipaddress

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from emulator.app import create_app
from emulator.browser_guards import HostRule, foreign_origin, is_json_type
from emulator.testing import EmulatorServer
from tests.conftest import ALL, make_settings, open_client

pytestmark = pytest.mark.anyio

LOCAL = HostRule.of("127.0.0.1", [])
labels = st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True)
names = st.lists(labels, min_size=1, max_size=3).map(".".join)
ports = st.one_of(st.none(), st.integers(1, 65535))


def with_port(host: str, port: int | None) -> str:
    return host if port is None else f"{host}:{port}"


@given(st.integers(0, 2**24 - 1), ports)
def test_every_loopback_v4_address_is_allowed(n: int, port: int | None) -> None:
    address = str(ipaddress.IPv4Address((127 << 24) + n))
    assert LOCAL.allows(with_port(address, port))


@given(st.ip_addresses(v=4).filter(lambda a: not a.is_loopback), ports)
def test_another_address_is_refused_unless_the_server_is_bound_to_every_address(
    address: ipaddress.IPv4Address, port: int | None
) -> None:
    host = with_port(str(address), port)
    assert not LOCAL.allows(host)
    assert HostRule.of("0.0.0.0", []).allows(host)
    assert HostRule.of(str(address), []).allows(host)  # the bound address itself


@given(names.filter(lambda n: n != "localhost" and not n.endswith(".localhost")), ports)
def test_a_name_is_refused_unless_allowed(name: str, port: int | None) -> None:
    host = with_port(name, port)
    assert not LOCAL.allows(host)
    assert not HostRule.of("0.0.0.0", []).allows(host)  # any address, but not any name
    assert HostRule.of("127.0.0.1", [name.upper()]).allows(host)
    assert HostRule.of("127.0.0.1", ["." + name]).allows(with_port("app." + name, port))
    assert not HostRule.of("127.0.0.1", ["." + name]).allows(with_port("x" + name, port))


@pytest.mark.parametrize(
    "host",
    ["localhost", "LOCALHOST:8400", "localhost.", "app.localhost:3000", "[::1]:8400", "[::1]"],
)
def test_loopback_names_are_allowed(host: str) -> None:
    assert LOCAL.allows(host)


@pytest.mark.parametrize(
    "host", ["", "evil.test@127.0.0.1", "127.0.0.1/x", "localhost.evil.test", "[::2]", "a b"]
)
def test_what_is_not_a_loopback_authority_is_refused(host: str) -> None:
    assert not LOCAL.allows(host)


@pytest.mark.parametrize(
    ("origin", "site", "foreign"),
    [
        (None, None, False),  # not a browser
        ("http://127.0.0.1:8400", "same-origin", False),
        (None, "none", False),  # typed in the address bar
        ("http://127.0.0.1:8401", None, True),  # another port is another origin
        ("http://localhost:8400", None, True),  # another name too
        ("https://127.0.0.1:8400", None, True),  # another scheme
        ("null", None, True),  # a sandboxed frame, a file
        ("http://evil.test", "cross-site", True),
        (None, "cross-site", True),
        (None, "same-site", True),  # localhost:3000 is the same site as localhost:8400
        ("garbage", None, True),
    ],
)
def test_foreign_origin(origin: str | None, site: str | None, foreign: bool) -> None:
    headers = {"host": "127.0.0.1:8400"}
    if origin is not None:
        headers["origin"] = origin
    if site is not None:
        headers["sec-fetch-site"] = site
    assert (foreign_origin(headers, "http") is not None) is foreign


def test_an_origin_on_the_default_port_matches_a_host_without_one() -> None:
    assert foreign_origin({"host": "localhost", "origin": "http://localhost:80"}, "http") is None


@pytest.mark.parametrize(
    ("value", "json"),
    [
        ("application/json", True),
        ("Application/JSON; charset=utf-8", True),
        ("application/merge-patch+json", True),
        ("text/plain", False),
        ("text/json", False),
        ("application/x-www-form-urlencoded", False),
        ("multipart/form-data; boundary=x", False),
        ("", False),
        ("application/jsonp", False),
    ],
)
def test_json_content_types(value: str, json: bool) -> None:
    assert is_json_type(value) is json


# ---------------------------------------------------------------------------------------------
# Through the app


async def test_a_foreign_host_is_refused_on_every_surface(client: httpx.AsyncClient) -> None:
    for path in ("/v1/contacts", "/crm/users", "/_emulator/health", "/", "/dashboard-assets/x"):
        r = await client.get(path, headers={**ALL, "host": "rebind.evil.test"})
        assert r.status_code == 421, (path, r.text)
        assert "DNS rebinding" in r.text
    r = await client.get("/crm/users", headers={"host": "rebind.evil.test:8400"})
    assert r.json()["error"] == "misdirected_request"  # the reference CRM's own error shape


async def test_allowed_hosts_are_answered() -> None:
    app = create_app(make_settings(allowedHosts=["emulator.example"]))
    async with open_client(app) as client:
        r = await client.get("/v1/contacts", headers={**ALL, "host": "emulator.example:8400"})
        assert r.status_code == 200


async def test_a_write_from_another_origin_is_refused(client: httpx.AsyncClient) -> None:
    before = (await client.get("/_emulator/clock")).json()["now"]
    attempts = [
        ("/_emulator/clock/advance", {"origin": "http://evil.test"}),
        ("/_emulator/clock/advance", {"sec-fetch-site": "cross-site"}),
        ("/_emulator/clock/advance", {"origin": "null"}),
        ("/_emulator/reset", {"origin": "http://evil.test"}),
        ("/", {"origin": "http://evil.test"}),  # the dashboard's health check
        ("/scenarios", {"sec-fetch-site": "same-site"}),
        ("/v1/lists", {"origin": "http://evil.test", **ALL}),
    ]
    for path, headers in attempts:
        r = await client.post(path, json={"seconds": 604800}, headers=headers)
        assert r.status_code == 403, (path, headers, r.text)
        assert "another origin" in r.text
    assert (await client.get("/_emulator/clock")).json()["now"] == before


async def test_same_origin_and_non_browser_writes_pass(client: httpx.AsyncClient) -> None:
    same = {"origin": "http://emulator.localhost", "sec-fetch-site": "same-origin"}
    r = await client.post("/_emulator/clock/advance", json={"seconds": 60}, headers=same)
    assert r.status_code == 200, r.text
    r = await client.post("/_emulator/clock/advance", json={"seconds": 60})  # curl, httpx
    assert r.status_code == 200, r.text
    assert (await client.post("/_emulator/reset")).status_code == 200  # no body: no type needed


async def test_a_control_body_must_be_json(client: httpx.AsyncClient) -> None:
    before = (await client.get("/_emulator/clock")).json()["now"]
    for content_type in ("text/plain", "application/x-www-form-urlencoded", None):
        headers = {} if content_type is None else {"content-type": content_type}
        r = await client.post(
            "/_emulator/clock/advance", content=b'{"seconds": 604800}', headers=headers
        )
        assert r.status_code == 415, (content_type, r.text)
        assert "application/json" in r.json()["message"]
    assert (await client.get("/_emulator/clock")).json()["now"] == before
    for content_type in ("application/json; charset=utf-8", "application/merge-patch+json"):
        r = await client.post(
            "/_emulator/clock/advance",
            content=b'{"seconds": 60}',
            headers={"content-type": content_type},
        )
        assert r.status_code == 200, (content_type, r.text)


async def test_v1_and_crm_bodies_keep_their_own_rules(client: httpx.AsyncClient) -> None:
    """Only the control API demands a JSON type: /v1 and /crm answer as before."""
    r = await client.post("/v1/lists", content=b'{"name": "x", "type": "contact"}', headers={**ALL})
    assert r.status_code != 415


async def test_two_host_headers_are_refused(client: httpx.AsyncClient) -> None:
    for pair in (["127.0.0.1", "evil.test"], ["evil.test", "127.0.0.1"], ["localhost"] * 2):
        headers = [("host", h) for h in pair] + list(ALL.items())
        r = await client.get("/v1/contacts", headers=headers)
        assert r.status_code == 421, (pair, r.text)


def test_an_allowed_address_is_answered() -> None:
    """`serve --host NAME` allows the address NAME was bound to."""
    rule = HostRule.of("myhost.lan", ["192.0.2.7", "[2001:db8::1]"])
    assert rule.allows("192.0.2.7:8400") and rule.allows("[2001:db8::1]:8400")
    assert rule.allows("myhost.lan:8400") and not rule.allows("192.0.2.8:8400")


def test_serve_answers_the_names_of_allowed_host_and_its_environment_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("EMULATOR_ALLOWED_HOSTS", "env-one.test, .env-two.test")
    server = EmulatorServer.start(["--no-seed-cache", "--allowed-host", "flag.test"])
    try:
        for host, status in [
            ("flag.test", 200),
            ("env-one.test", 200),
            ("api.env-two.test", 200),
            ("other.test", 421),
            ("localhost", 200),
        ]:
            r = httpx.get(f"{server.url}/v1/contacts", headers={**ALL, "host": host}, timeout=30)
            assert r.status_code == status, (host, r.text)
    finally:
        server.stop()
