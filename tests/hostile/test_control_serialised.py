"""Reset, fixture loading, snapshot restore, clock advance and export runs never interleave
(issue 11 item 2), against a real `emulator serve`.

Each case starts a slow operation (an advance whose webhook receiver answers slowly, an
export to a CRM with latency), sends another while it runs, and then compares the whole
observable state with the same operations run one after the other: the second one either
waited (the state is its own) or was refused with a 409 naming the first (the state is the
first's). Nothing of an interrupted advance or export survives.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from emulator.fixtures.loader import DEFAULT_FIXTURES
from tests.hostile.harness import fingerprint, served, wait_export
from tests.servers import Receiver, recording_server

MONTH = 30 * 86400
SLOW_CRM = {"faults": [{"endpoint": "*", "latencyMs": 50}]}


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    """A webhook receiver that takes its time: an advance's deliveries last seconds."""
    with recording_server() as receiver:
        receiver.delay = 0.05
        yield receiver


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory: pytest.TempPathFactory, receiver: Receiver) -> Path:
    """The default fixtures, with every webhook delivering to the slow receiver."""
    directory = tmp_path_factory.mktemp("slow-hooks")
    for file in DEFAULT_FIXTURES.glob("*.json"):
        shutil.copy(file, directory / file.name)
    hooks = json.loads((directory / "webhooks.json").read_text())
    for hook in hooks:
        hook["url"] = f"{receiver.url}/hooks/{hook['id']}"
    (directory / "webhooks.json").write_text(json.dumps(hooks))
    return directory


@pytest.fixture(scope="module")
def client(fixtures: Path) -> Iterator[httpx.Client]:
    with served("--fixtures", str(fixtures), "--rate-limit", "off") as client:
        yield client


def advance(client: httpx.Client) -> httpx.Response:
    return client.post("/_emulator/clock/advance", json={"seconds": MONTH})


def export(client: httpx.Client) -> dict[str, Any]:
    client.put("/_emulator/crm/settings", json=SLOW_CRM).raise_for_status()
    started = client.post("/_emulator/exports")
    assert started.status_code == 202, started.text
    return wait_export(client, started.json()["id"])


def reset(client: httpx.Client) -> None:
    assert client.post("/_emulator/reset").status_code == 200


def in_background(work: Callable[[], Any]) -> Callable[[], Any]:
    """Start `work` in a thread; the answer is a function that joins it and answers its result."""
    result: list[Any] = []
    thread = threading.Thread(target=lambda: result.append(work()))
    thread.start()

    def join() -> Any:
        thread.join(120)
        return result[0]

    return join


def test_reset_during_an_advance_waits_or_is_refused(client: httpx.Client) -> None:
    reset(client)
    pristine = fingerprint(client)
    advance(client).raise_for_status()
    advanced = fingerprint(client)
    assert sum(advanced["deliveries"].values()) > 0  # the advance does deliver (slowly)

    reset(client)
    joined = in_background(lambda: advance(client))
    time.sleep(0.3)
    second = client.post("/_emulator/reset")
    assert joined().status_code == 200
    if second.status_code == 409:  # refused: the advance's state stands, whole
        assert "clock advance is running" in second.json()["message"]
        assert fingerprint(client) == advanced
    else:  # waited: the reset came last, and nothing of the advance survives it
        assert second.status_code == 200, second.text
        assert fingerprint(client) == pristine


def test_reset_cancels_an_export_fixtures_wait_or_are_refused(
    client: httpx.Client, fixtures: Path
) -> None:
    reset(client)
    pristine = fingerprint(client)
    report = export(client)
    assert report["status"] != "aborted", report
    exported = fingerprint(client)
    assert exported["crm"]["contacts"] > pristine["crm"]["contacts"]

    for label, other in (
        ("reset", lambda: client.post("/_emulator/reset")),
        ("fixtures", lambda: client.post("/_emulator/fixtures", json={"directory": str(fixtures)})),
    ):
        reset(client)
        joined = in_background(lambda: export(client))
        time.sleep(0.5)
        second = other()
        report = joined()
        if label == "reset" and report["status"] == "cancelled":
            # a reset cancels a running export first (its report says so), then resets
            assert "a reset" in report["message"] and report["exitCode"] == 2, report
            assert second.status_code == 200, second.text
            assert second.json()["cancelled"]["exports"] == [report["id"]]
            assert fingerprint(client) == pristine, label
            continue
        assert report["status"] == exported_status(exported, report), (label, report)
        if second.status_code == 409:
            assert "export run" in second.json()["message"], label
            assert fingerprint(client) == exported, label
        else:
            assert second.status_code == 200, (label, second.text)
            assert fingerprint(client) == pristine, label


def exported_status(exported: dict[str, Any], report: dict[str, Any]) -> str:
    """An export that ran whole ends as the sequential one did (never `failed` midway)."""
    assert not report.get("message") or "cancelled" not in report["message"]
    return str(report["status"])


def test_advance_during_an_export_and_restore_during_an_advance(client: httpx.Client) -> None:
    reset(client)
    snapshot = client.post("/_emulator/snapshots", json={"label": "start"}).json()["id"]
    pristine = fingerprint(client)

    joined = in_background(lambda: export(client))
    time.sleep(0.5)
    refused = advance(client)
    joined()
    if refused.status_code == 409:
        assert "export run" in refused.json()["message"]
    else:
        assert refused.status_code == 200

    reset(client)
    joined = in_background(lambda: advance(client))
    time.sleep(0.3)
    restore = client.post(f"/_emulator/snapshots/{snapshot}/restore")
    assert joined().status_code == 200
    assert restore.status_code in (200, 409), restore.text
    if restore.status_code == 200:
        assert fingerprint(client) == pristine
    else:
        assert "clock advance" in restore.json()["message"]
        assert fingerprint(client)["events"]  # the advance's state stands


def test_many_interleavings_leave_no_duplicate_and_no_server_error(client: httpx.Client) -> None:
    """Every pair of control operations fired together: only 2xx or 409, and the CRM never
    holds a record twice."""
    reset(client)
    snapshot = client.post("/_emulator/snapshots").json()["id"]
    operations: dict[str, Callable[[], httpx.Response]] = {
        "reset": lambda: client.post("/_emulator/reset"),
        "advance": lambda: client.post("/_emulator/clock/advance", json={"seconds": 86400}),
        "export": lambda: client.post("/_emulator/exports"),
        "restore": lambda: client.post(f"/_emulator/snapshots/{snapshot}/restore"),
        "snapshot": lambda: client.post("/_emulator/snapshots"),
    }
    names = list(operations)
    exports: list[str] = []
    for first in names:
        for second in names:
            joined = in_background(operations[first])
            time.sleep(0.05)
            answer = operations[second]()
            for name, response in ((first, joined()), (second, answer)):
                assert response.status_code < 500, (name, response.text)
                assert response.status_code in (200, 201, 202, 409), (name, response.text)
                if name == "export" and response.status_code == 202:
                    exports.append(response.json()["id"])
            for export_id in exports:  # the next pair starts with the guard free
                wait_export(client, export_id)
            external = fingerprint(client)["crmExternalIds"]
            assert len(external) == len(set(external)), (first, second)
