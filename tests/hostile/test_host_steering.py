"""A request's `Host` never chooses where the server calls out (issue 22 item 2), on a real serve.

The forged Host here is a loopback address (so the Host guard lets it in) whose port is a
recording server's: before, a relative crmUrl ("/crm") was joined to the Host, and the export,
the health check and the custom-CRM test went to the recorder with the CRM's key.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from emulator.testing import EmulatorServer
from tests.hostile.harness import ALL
from tests.servers import Receiver, recording_server


@pytest.fixture(scope="module")
def server() -> Iterator[EmulatorServer]:
    server = EmulatorServer.start(["--no-seed-cache"])
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with recording_server() as receiver:
        yield receiver


def forged(receiver: Receiver) -> dict[str, str]:
    return {"host": receiver.url.removeprefix("http://")}


def wait_for_export(client: httpx.Client, export_id: str) -> dict[str, object]:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        run = client.get(f"/_emulator/exports/{export_id}").json()
        if run["status"] != "running":
            return dict(run)
        time.sleep(0.2)
    raise AssertionError("the export did not finish in 120 s")


def test_an_export_with_a_forged_host_goes_to_this_server(
    server: EmulatorServer, receiver: Receiver
) -> None:
    with httpx.Client(base_url=server.url, timeout=60) as client:
        started = client.post("/_emulator/exports", headers=forged(receiver))
        assert started.status_code == 202, started.text
        run = wait_for_export(client, started.json()["id"])
        assert run["status"] == "ok", run
        assert str(run.get("crmUrl", server.url)).startswith(server.url)
    assert receiver.requests == []


def test_the_dashboard_health_check_with_a_forged_host_checks_this_server(
    server: EmulatorServer, receiver: Receiver
) -> None:
    page = httpx.post(f"{server.url}/", headers=forged(receiver), timeout=30)
    assert page.status_code == 200 and 'id="health-now" class="ok"' in page.text
    assert receiver.requests == []


def test_the_custom_crm_test_with_a_forged_host_tests_this_server(
    server: EmulatorServer, receiver: Receiver
) -> None:
    body = {"baseUrl": "/crm", "apiKey": "crm-demo-key"}
    r = httpx.post(
        f"{server.url}/v1/custom-crm/test", json=body, headers={**ALL, **forged(receiver)}
    )
    assert r.status_code == 200 and r.json()["data"]["success"] is True, r.text
    assert receiver.requests == []


def test_a_get_never_calls_out(server: EmulatorServer, receiver: Receiver) -> None:
    """Even with the connection pointed at another server, reading pages calls nobody."""
    with httpx.Client(base_url=server.url, timeout=30) as client:
        connection = client.get("/_emulator/connection").json()
        changed = {**connection, "crmUrl": receiver.url, "apiKey": "crm-demo-key"}
        assert client.put("/_emulator/connection", json=changed).status_code == 200
        try:
            for path in (
                "/",
                "/?check=health",
                "/runs",
                "/journal",
                "/crm-ui",
                "/_emulator/autosync",
            ):
                assert client.get(path).status_code == 200, path
            assert receiver.requests == []
            assert client.post("/").status_code == 200  # the health check is a POST: it calls
            assert {r.path for r in receiver.requests} >= {"/health"}
        finally:
            client.put("/_emulator/connection", json={**connection, "apiKey": "crm-demo-key"})
