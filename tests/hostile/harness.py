"""What the hostile suite shares: a real `emulator serve`, the CLI as a process, and a
fingerprint of the whole observable state (to compare interleavings with sequential runs)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx

from emulator.testing import EmulatorServer

ALL = {"x-api-key": "demo-all"}
CRM_KEY = {"X-API-Key": "crm-demo-key"}


@contextmanager
def served(*args: str, token: str | None = None) -> Iterator[httpx.Client]:
    """`emulator serve ARGS` as a process; yields a client carrying the token (if any)."""
    server = EmulatorServer.start(list(args), token=token)
    try:
        with httpx.Client(base_url=server.url, headers=server.headers, timeout=60) as client:
            yield client
    finally:
        server.stop()


@dataclass
class Ran:
    code: int
    out: str
    err: str
    seconds: float


def cli(*args: str, timeout: float = 30.0) -> Ran:
    """`emulator ARGS` as a process, timed."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "emulator", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return Ran(done.returncode, done.stdout, done.stderr, time.monotonic() - started)


def total(client: httpx.Client, path: str, **params: Any) -> int:
    body = client.get(path, params={**params, "pageSize": 1}, headers=ALL).json()
    return int(body["meta"]["total"] if "meta" in body else body["total"])


def fingerprint(client: httpx.Client) -> dict[str, Any]:
    """Everything an advance, export or reset changes, as the public surfaces show it."""
    health = client.get("/_emulator/health").json()
    events = client.get("/_emulator/events", params={"limit": 1000}).json()["data"]
    hooks = client.get("/v1/webhooks", params={"pageSize": 100}, headers=ALL).json()["data"]
    crm_contacts = client.get("/_emulator/crm/contacts", params={"pageSize": 100}).json()
    return {
        "now": health["now"],
        "counts": health["counts"],
        "events": [(e["type"], e["contactId"], e["campaignId"], e["occurredAt"]) for e in events],
        "deliveries": {h["id"]: total(client, f"/v1/webhooks/{h['id']}/logs") for h in hooks},
        "journal": total(client, "/_emulator/journal"),
        "crm": {
            k: total(client, f"/_emulator/crm/{k}")
            for k in ("contacts", "companies", "activities", "tasks")
        },
        "crmExternalIds": sorted(r.get("externalId") or "" for r in crm_contacts["data"]),
        "tasks": total(client, "/_emulator/tasks"),
    }


def wait_export(client: httpx.Client, export_id: str, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        report: dict[str, Any] = client.get(f"/_emulator/exports/{export_id}").json()
        if report["status"] != "running":
            return report
        assert time.monotonic() < deadline, f"export {export_id} still running"
        time.sleep(0.05)
