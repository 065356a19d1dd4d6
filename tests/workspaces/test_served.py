"""Workspaces on a real `emulator serve`: exports reach their own reference CRM over HTTP,
and one workspace's long export never blocks another's reset, advance or export."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from tests.processes import emulator_process


@pytest.fixture(scope="module")
def served() -> Iterator[httpx.Client]:
    with emulator_process() as url, httpx.Client(base_url=url, timeout=30) as client:
        yield client


def finished(client: httpx.Client, path: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        report = client.get(path).json()
        if report["status"] != "running":
            return report
        assert time.monotonic() < deadline, f"{path} still running"
        time.sleep(0.1)


def crm_contacts(client: httpx.Client, prefix: str) -> set[str]:
    data = client.get(f"{prefix}/_emulator/crm/contacts", params={"limit": 1000}).json()["data"]
    return {r["crmId"] for r in data}


def test_an_export_in_a_workspace_reaches_its_own_crm_and_blocks_no_other(
    served: httpx.Client,
) -> None:
    a = served.post("/_emulator/workspaces").json()
    b = served.post("/_emulator/workspaces").json()
    pa, pb = f"/w/{a['id']}", f"/w/{b['id']}"
    default_crm = crm_contacts(served, "")
    # A's CRM answers slowly: its export holds A's state for a while
    settings = served.get(f"{pa}/_emulator/crm/settings").json()
    settings["faults"] = [{"endpoint": "*", "latencyMs": 300}]
    assert served.put(f"{pa}/_emulator/crm/settings", json=settings).status_code == 200
    slow = served.post(f"{pa}/_emulator/exports")
    assert slow.status_code == 202, slow.text
    assert slow.json()["crmUrl"] == f"{a['baseUrl']}/crm"
    # meanwhile B resets, advances and exports: no 409
    assert served.post(f"{pb}/_emulator/reset").status_code == 200
    advanced = served.post(f"{pb}/_emulator/clock/advance", json={"seconds": 3600})
    assert advanced.status_code == 200, advanced.text
    quick = served.post(f"{pb}/_emulator/exports")
    assert quick.status_code == 202, quick.text
    assert finished(served, f"{pb}/_emulator/exports/{quick.json()['id']}")["exitCode"] == 0
    assert served.get(f"{pa}/_emulator/exports/{slow.json()['id']}").json()["status"] == "running"
    report = finished(served, f"{pa}/_emulator/exports/{slow.json()['id']}")
    assert report["exitCode"] == 0, report.get("message")
    # A's CRM received A's export (its journal of incoming calls), the default CRM nothing
    received = served.get(f"{pa}/_emulator/requests", params={"path": "/crm/health"}).json()
    assert received["meta"]["total"] >= 1
    assert served.get("/_emulator/requests", params={"path": "/crm/health"}).json()["data"] == []
    assert crm_contacts(served, "") == default_crm
    exported = served.get(f"{pa}/_emulator/journal.jsonl").text.splitlines()
    assert exported and not served.get("/_emulator/journal.jsonl").text.strip()
    for ws in (a, b):
        assert served.delete(f"/_emulator/workspaces/{ws['id']}").status_code == 200
