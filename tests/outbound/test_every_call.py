"""Every kind of outgoing call against a dribbling and an endless peer, on a real
`emulator serve` (and the CLI commands as processes): each fails at its deadline, or at the
response cap without reading on, and the process's memory grows by less than 100 MB.

The serve runs with `--outgoing-deadline 1` and the CRM connection with `timeoutSeconds: 1`
(the CLI commands with `--timeout 1`), so a dribbling answer fails after about a second.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from emulator.testing import EmulatorServer
from tests.outbound.hostile_peers import MB, Memory, Peers, hostile_peers

DEADLINE = 1.0
SLACK = 4.0  # seconds on top of the deadlines a case waits: a loaded machine, start-ups
GROWTH = 100 * MB
MOST_SENT = 64 * MB  # an endless answer gets no further than the cap plus socket buffers
ALL = {"x-api-key": "demo-all"}
DEADLINE_TEXT = ("within the 1 s deadline", "timed out after 1 s")
CAP_TEXT = "larger than the 4 MiB cap"


@pytest.fixture(scope="module")
def peers() -> Iterator[Peers]:
    with hostile_peers() as running:
        yield running


@pytest.fixture(scope="module")
def server() -> Iterator[EmulatorServer]:
    started = EmulatorServer.start(["--outgoing-deadline", str(DEADLINE)])
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture
def http(server: EmulatorServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        assert client.post("/_emulator/reset").status_code == 200
        yield client


def crm(http: httpx.Client, url: str, **fields: Any) -> None:
    body = {"crmUrl": url, "apiKey": "k", "timeoutSeconds": DEADLINE, **fields}
    response = http.put("/_emulator/connection", json=body)
    assert response.status_code == 200, response.text


def ok(response: httpx.Response) -> Any:
    assert response.status_code in (200, 201, 202), response.text
    return response.json()


def until_done(http: httpx.Client, path: str) -> Any:
    """GET path until its status is no longer running."""
    for _ in range(300):
        doc = ok(http.get(path))
        if doc["status"] != "running":
            return doc
        time.sleep(0.05)
    raise AssertionError(f"{path} still running")


def journal(http: httpx.Client, export_id: str) -> str:
    return http.get("/_emulator/journal", params={"exportId": export_id}).text


# A kind of call: started against a peer's URL, it answers the text that shows its failure.
Kind = Callable[[httpx.Client, str], str]


def export(http: httpx.Client, url: str) -> str:
    crm(http, url)
    started = ok(http.post("/_emulator/exports"))
    until_done(http, f"/_emulator/exports/{started['id']}")
    return journal(http, started["id"])


def verify(http: httpx.Client, url: str) -> str:
    started = ok(http.post("/_emulator/verify", json={"crmUrl": url, "apiKey": "k"}))
    return json.dumps(until_done(http, f"/_emulator/verify/{started['id']}"))


def autosync(http: httpx.Client, url: str) -> str:
    crm(http, url)
    # contact 4 of campaign 1 is in the CRM (contacts.json): its new event is pushed
    event = {"campaignId": 1, "contactId": 4, "type": "EMAIL_SENT", "subject": "Hi", "content": "x"}
    ok(http.post("/_emulator/events", json=event))
    state = ok(http.post("/_emulator/autosync/push"))
    return json.dumps(state) + journal(http, state["last"]["id"])


def health_check(http: httpx.Client, url: str) -> str:
    crm(http, url)
    ok(http.post("/_emulator/clock/advance", json={"seconds": 600}))
    return http.get("/v1/custom-crm/status", headers=ALL).text


def actions_export(http: httpx.Client, url: str) -> str:
    crm(http, url)
    body = {"actions": [{"type": "EXPORT_TO_CRM"}], "contactIds": [1]}
    run = ok(http.post("/v1/actions", headers=ALL, json=body))["data"]
    ok(http.post("/_emulator/clock/advance", json={"seconds": 30}))
    return journal(http, f"actions-{run['actionsId']}")


def actions_delivery(http: httpx.Client, url: str) -> str:
    body = {"actions": [{"type": "VERIFY_LEAD_EMAIL"}], "contactIds": [1], "webhookUrl": url}
    run = ok(http.post("/v1/actions", headers=ALL, json=body))["data"]
    ok(http.post("/_emulator/clock/advance", json={"seconds": 20}))
    return http.get(f"/_emulator/actions/{run['actionsId']}/deliveries").text


def subscribe(http: httpx.Client, url: str) -> int:
    body = {"name": "hostile", "url": url, "events": ["EMAIL_SENT"], "campaignIds": [1]}
    return int(ok(http.post("/v1/webhooks", headers=ALL, json=body))["data"]["id"])


def webhook_delivery(http: httpx.Client, url: str) -> str:
    hook = subscribe(http, url)
    event = {"campaignId": 1, "contactId": 1, "type": "EMAIL_SENT", "subject": "Hi", "content": "x"}
    ok(http.post("/_emulator/events", json=event))  # delivered by the listeners it runs
    return http.get(f"/v1/webhooks/{hook}/logs", headers=ALL).text


def sample_delivery(http: httpx.Client, url: str) -> str:
    hook = subscribe(http, url)
    answer = http.post(f"/v1/webhooks/{hook}/test", headers=ALL)
    return answer.text + http.get(f"/v1/webhooks/{hook}/logs", headers=ALL).text


def redelivery(http: httpx.Client, url: str) -> str:
    hook = subscribe(http, url)
    http.post(f"/v1/webhooks/{hook}/test", headers=ALL)
    logs = ok(http.get(f"/v1/webhooks/{hook}/logs", headers=ALL))["data"]
    return http.post(f"/_emulator/webhooks/deliveries/{logs[0]['id']}/redeliver").text


def custom_crm_test(http: httpx.Client, url: str) -> str:
    body = {"baseUrl": url, "apiKey": "k", "apiKeyHeader": "X-Key"}
    return http.post("/v1/custom-crm/test", headers=ALL, json=body).text


def custom_crm_connect(http: httpx.Client, url: str) -> str:
    body = {"baseUrl": url, "apiKey": "k", "apiKeyHeader": "X-Key"}
    return http.post("/v1/custom-crm/connect", headers=ALL, json=body).text


# kind: (the function, how many exchanges in a row it may wait out against a dribbling peer)
SERVER_KINDS: dict[str, tuple[Kind, int]] = {
    "export": (export, 1),
    "verify": (verify, 1),
    # the event injected, and the advance, run the periodic health check too (health, users)
    "auto-sync": (autosync, 3),
    "health-check": (health_check, 2),  # GET /health, GET /users
    "actions-export": (actions_export, 3),
    "actions-delivery": (actions_delivery, 1),
    "webhook-delivery": (webhook_delivery, 1),
    "test-delivery": (sample_delivery, 1),
    "redelivery": (redelivery, 2),  # the test delivery it resends, then the resend
    "custom-crm-test": (custom_crm_test, 2),  # GET /health, GET /users
    "custom-crm-connect": (custom_crm_connect, 2),
}


@pytest.mark.parametrize("kind", SERVER_KINDS)
def test_a_dribbling_peer_fails_every_call_at_its_deadline(
    kind: str, http: httpx.Client, peers: Peers
) -> None:
    run, exchanges = SERVER_KINDS[kind]
    started = time.monotonic()
    text = run(http, peers.dribbling)
    took = time.monotonic() - started
    assert any(message in text for message in DEADLINE_TEXT), text
    assert took < exchanges * DEADLINE + SLACK, f"{kind} took {took:.1f} s"


@pytest.mark.parametrize("kind", SERVER_KINDS)
def test_an_endless_body_fails_every_call_at_the_cap(
    kind: str, http: httpx.Client, peers: Peers, server: EmulatorServer
) -> None:
    run, _ = SERVER_KINDS[kind]
    assert server.process is not None
    memory = Memory(server.process.pid)
    peers.most_sent = 0
    started = time.monotonic()
    text = run(http, peers.endless)
    took = time.monotonic() - started
    assert CAP_TEXT in text, text
    assert memory.growth() < GROWTH, f"{kind}: grew {memory.growth() / MB:.0f} MB"
    assert took < SLACK, f"{kind} took {took:.1f} s"
    time.sleep(0.2)  # what the peer got out after the client stopped reading, counted
    assert 0 < peers.most_sent < MOST_SENT


# The CLI commands, each its own process: the peak memory of the endless run is compared with
# the dribbling run's (the same work but for the body).
PEAK = (
    "import atexit, resource, runpy, sys\n"
    "out = sys.argv.pop(1)\n"
    "atexit.register(lambda: open(out, 'w').write("
    "str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)))\n"
    "runpy.run_module('emulator', run_name='__main__', alter_sys=True)\n"
)

CLI_KINDS: dict[str, Callable[[str, Path], list[str]]] = {
    "export": lambda url, tmp: ["export", "--crm-url", url, "--api-key", "k", "--timeout", "1"],
    "verify": lambda url, tmp: ["verify", "--crm-url", url, "--api-key", "k", "--timeout", "1"],
    "record": lambda url, tmp: [
        *("record", "--crm-url", url, "--api-key", "k", "--timeout", "1"),
        *("--out", str(tmp / "recorded.json")),
    ],
}


def cli(args: list[str], tmp: Path) -> tuple[str, float, int]:
    """What the command showed (its output, and the scenario `record` wrote), how long it
    took and its peak resident memory. Export and verify exit non-zero here (`record` exits 0
    once it wrote the scenario, whatever the export found)."""
    peak_file, recorded = tmp / "peak", tmp / "recorded.json"
    recorded.unlink(missing_ok=True)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", PEAK, str(peak_file), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    took = time.monotonic() - started
    if args[0] != "record":
        assert done.returncode != 0, done.stdout + done.stderr
    shown = done.stdout + done.stderr + (recorded.read_text() if recorded.exists() else "")
    return shown, took, int(peak_file.read_text())


@pytest.mark.parametrize("kind", CLI_KINDS)
def test_every_cli_command_stops_at_the_deadline_and_the_cap(
    kind: str, peers: Peers, tmp_path: Path
) -> None:
    slow, slow_took, slow_peak = cli(CLI_KINDS[kind](peers.dribbling, tmp_path), tmp_path)
    assert any(message in slow for message in DEADLINE_TEXT), slow
    big, big_took, big_peak = cli(CLI_KINDS[kind](peers.endless, tmp_path), tmp_path)
    assert CAP_TEXT in big, big
    assert big_peak - slow_peak < GROWTH, f"{kind}: {(big_peak - slow_peak) / MB:.0f} MB more"
    # a start-up (seeding the platform for export and record) and one deadline
    assert slow_took < 10 + DEADLINE and big_took < 10
