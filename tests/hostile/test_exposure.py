"""The control token and the body-size limit (issue 11 items 1 and 6), on a real serve."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest

from emulator.testing import EmulatorServer, free_port
from tests.hostile.harness import ALL, CRM_KEY

TOKEN = "s3cret-token"
MAX_BODY = 4096


@pytest.fixture(scope="module")
def server() -> Iterator[EmulatorServer]:
    server = EmulatorServer.start(["--max-body", str(MAX_BODY)], token=TOKEN)
    try:
        yield server
    finally:
        server.stop()


def control_paths(server: EmulatorServer) -> list[tuple[str, str]]:
    """Every /_emulator operation of the served OpenAPI document, ids filled in."""
    document = httpx.get(f"{server.url}/openapi.json", timeout=30).json()
    return [
        (method.upper(), path.replace("{", "").replace("}", ""))
        for path, item in document["paths"].items()
        if path.startswith("/_emulator")
        for method in item
    ]


def test_every_control_route_but_health_needs_the_token(server: EmulatorServer) -> None:
    paths = control_paths(server)
    assert len(paths) > 20
    # one client for the hundreds of calls: a new one each (its TLS context) cost ~40 s
    with httpx.Client(timeout=30) as client:
        for method, path in paths:
            for headers in (
                {},
                {"Authorization": "Bearer wrong"},
                {"Authorization": TOKEN},
                {"Authorization": f"Basic {TOKEN}"},
            ):
                r = client.request(method, server.url + path, headers=headers)
                if path == "/_emulator/health":
                    assert r.status_code == 200
                    continue
                assert r.status_code == 401, (method, path, headers, r.text)
                assert r.json()["status"] == "error" and "Bearer" in r.json()["message"]
                assert r.headers["www-authenticate"] == "Bearer"
    # routes nobody documented (added later, or mistyped) are behind the same door
    assert httpx.get(f"{server.url}/_emulator/not-yet-a-route").status_code == 401
    ok = httpx.post(f"{server.url}/_emulator/reset", headers=server.headers, timeout=30)
    assert ok.status_code == 200
    lower = httpx.post(
        f"{server.url}/_emulator/reset", timeout=30, headers={"authorization": f"bearer {TOKEN}"}
    )
    assert lower.status_code == 200


def test_the_other_surfaces_need_no_token(server: EmulatorServer) -> None:
    assert httpx.get(f"{server.url}/v1/contacts", headers=ALL).status_code == 200
    assert httpx.get(f"{server.url}/crm/health", headers=CRM_KEY).status_code == 200
    assert httpx.get(f"{server.url}/openapi.json").status_code == 200


def test_the_crm_key_is_shown_only_with_the_token(server: EmulatorServer) -> None:
    shown = httpx.get(f"{server.url}/_emulator/crm/settings", headers=server.headers).json()
    assert shown["apiKey"] == "crm-demo-key"
    open_server = EmulatorServer.start([])
    try:
        hidden = httpx.get(f"{open_server.url}/_emulator/crm/settings").json()
        assert hidden["apiKey"] == "***"
        put = httpx.put(f"{open_server.url}/_emulator/crm/settings", json=hidden)
        assert put.status_code == 200 and put.json()["apiKey"] == "***"
        # the redacted answer sent back kept the key: the CRM still takes it
        assert httpx.get(f"{open_server.url}/crm/health", headers=CRM_KEY).status_code == 200
    finally:
        open_server.stop()


def test_the_token_comes_from_the_environment_too() -> None:
    port = free_port()
    env = {**os.environ, "EMULATOR_CONTROL_TOKEN": "from-env"}
    with subprocess.Popen(
        [sys.executable, "-m", "emulator", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        try:
            assert process.stdout is not None and "listening" in process.stdout.readline()
            base = f"http://127.0.0.1:{port}"
            assert httpx.post(f"{base}/_emulator/reset").status_code == 401
            good = {"Authorization": "Bearer from-env"}
            assert (
                httpx.post(f"{base}/_emulator/reset", headers=good, timeout=30).status_code == 200
            )
        finally:
            process.terminate()
            process.wait(10)


@pytest.mark.parametrize(
    ("method", "path", "shape"),
    [
        ("POST", "/v1/contact", "status"),
        ("POST", "/crm/contacts/sync", "error"),
        ("PUT", "/_emulator/crm/settings", "status"),
        ("POST", "/_emulator/scenarios/run", "status"),
    ],
)
def test_a_body_over_the_limit_is_413_in_the_surface_shape(
    server: EmulatorServer, method: str, path: str, shape: str
) -> None:
    key = CRM_KEY if path.startswith("/crm") else ALL
    headers = {**key, **server.headers, "content-type": "application/json"}
    big = b'{"x": "' + b"a" * (MAX_BODY + 10) + b'"}'
    r = httpx.request(method, server.url + path, content=big, headers=headers, timeout=30)
    assert r.status_code == 413, r.text
    assert shape in r.json() and "--max-body" in r.json()["message"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: the limit counts what arrives
        yield b'{"x": "'
        for _ in range(MAX_BODY // 512 + 2):
            yield b"a" * 512
        yield b'"}'

    r = httpx.request(method, server.url + path, content=chunks(), headers=headers, timeout=30)
    assert r.status_code == 413, r.text
    assert shape in r.json()


def test_a_body_under_the_limit_is_read(server: EmulatorServer) -> None:
    small = {"firstName": "Ada", "lastName": "L", "professionalEmail": "ada@example.com"}
    r = httpx.post(f"{server.url}/v1/contact", json=small, headers=ALL, timeout=30)
    assert r.status_code in (200, 201), r.text


def test_the_default_limit_takes_a_100_item_batch_of_long_records() -> None:
    from emulator.settings import Settings

    record = {"externalId": "1", "firstName": "x" * 2000, "notes": "y" * 10_000}
    batch = httpx.Request("POST", "/", json={"contacts": [record] * 100}).content
    assert len(batch) * 4 < Settings().maxBody


def test_the_dashboard_forms_need_the_token_and_its_pages_hide_the_key(
    server: EmulatorServer,
) -> None:
    """Pages are reads; a form that acts (POST /scenarios reads files) is behind the token."""
    refused = httpx.post(f"{server.url}/scenarios", data={"path": "/etc/passwd"})
    assert refused.status_code == 401
    page = httpx.get(f"{server.url}/crm-ui", timeout=30)
    assert page.status_code == 200 and "crm-demo-key" not in page.text
    shown = httpx.get(f"{server.url}/crm-ui", headers=server.headers, timeout=30)
    assert "crm-demo-key" in shown.text
    assert httpx.get(f"{server.url}/", timeout=30).status_code == 200
