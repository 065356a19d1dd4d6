"""No delivery loops (issue 11 item 4) and one exporter per --db file (item 2)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from emulator.fixtures.loader import DEFAULT_FIXTURES
from emulator.self_target import control_api_target
from emulator.store.export_lock import ExportLock, lock_path
from tests.hostile.harness import ALL, CRM_KEY, cli, served

LOOPS = [
    "/_emulator/webhooks/deliveries/1/redeliver",
    "/_emulator/reset",
    "/_emulator/exports",
    "/_EMULATOR/reset",
    "/%5Femulator/reset",
    "//_emulator/reset",
    "/x/../_emulator/reset",
    "/_emulator",
]


@pytest.mark.parametrize("path", LOOPS)
def test_urls_of_the_control_api_are_recognised(path: str) -> None:
    assert control_api_target(f"http://127.0.0.1:8400{path}") is not None
    assert control_api_target(f"https://elsewhere.example{path}?a=1") is not None


@pytest.mark.parametrize(
    "url",
    ["http://h/crm", "http://h/hooks/_emulator", "http://h/_emulatorx", "/crm", "http://h/v1/x"],
)
def test_other_urls_pass(url: str) -> None:
    assert control_api_target(url) is None


def test_every_way_to_aim_at_the_control_api_is_refused() -> None:
    with served() as client:
        own = str(client.base_url).rstrip("/")
        for path in LOOPS:
            target = own + path
            hook = client.post(
                "/v1/webhooks",
                headers=ALL,
                json={"name": "loop", "url": target, "events": ["EMAIL_SENT"]},
            )
            assert hook.status_code == 400 and "control API" in hook.text, hook.text
            run = client.post(
                "/v1/actions",
                headers=ALL,
                json={
                    "actions": [{"type": "VERIFY_LEAD_EMAIL"}],
                    "contactIds": [1],
                    "webhookUrl": target,
                },
            )
            assert run.status_code == 400 and "control API" in run.text, run.text
            crm = {"baseUrl": target, "apiKey": "k", "apiKeyHeader": "X-API-Key"}
            for endpoint in ("/v1/custom-crm/test", "/v1/custom-crm/connect"):
                answer = client.post(endpoint, headers=ALL, json=crm)
                assert answer.status_code == 400 and "control API" in answer.text, answer.text
            conn = client.put("/_emulator/connection", json={"crmUrl": target, "apiKey": "k"})
            assert conn.status_code == 400 and "control API" in conn.text, conn.text
            for url in (target, path):  # verify takes a path of this emulator too
                verify = client.post("/_emulator/verify", json={"crmUrl": url, "apiKey": "k"})
                assert verify.status_code == 400 and "control API" in verify.text, verify.text
        # an existing webhook cannot be pointed there either
        made = client.post(
            "/v1/webhooks",
            headers=ALL,
            json={"name": "fine", "url": "http://127.0.0.1:9/hook", "events": ["EMAIL_SENT"]},
        ).json()
        patch = client.patch(
            f"/v1/webhooks/{made['data']['id']}",
            headers=ALL,
            json={"url": own + "/_emulator/reset"},
        )
        assert patch.status_code == 400, patch.text


def test_a_seeded_loop_is_refused_at_send_time_and_never_repeats(tmp_path: Path) -> None:
    """Fixtures (or an old --db) may hold such a webhook: it gets failed attempts, no calls."""
    for file in DEFAULT_FIXTURES.glob("*.json"):
        shutil.copy(file, tmp_path / file.name)
    hooks = json.loads((tmp_path / "webhooks.json").read_text())
    hooks[0]["url"] = "http://127.0.0.1:1/_emulator/webhooks/deliveries/1/redeliver"
    (tmp_path / "webhooks.json").write_text(json.dumps(hooks))
    with served("--fixtures", str(tmp_path)) as client:
        client.post("/_emulator/clock/advance", json={"seconds": 86400}).raise_for_status()
        logs = client.get(
            f"/v1/webhooks/{hooks[0]['id']}/logs", headers=ALL, params={"pageSize": 100}
        ).json()
        assert logs["data"], "the subscription had events to deliver"
        assert all("control API" in (row["errorMessage"] or "") for row in logs["data"])
        before = logs["meta"]["total"]
        again = client.post(f"/_emulator/webhooks/deliveries/{logs['data'][0]['id']}/redeliver")
        assert again.status_code == 200 and "control API" in again.json()["errorMessage"]
        after = client.get(f"/v1/webhooks/{hooks[0]['id']}/logs", headers=ALL).json()
        assert after["meta"]["total"] == before + 1  # one manual attempt, nothing more


def test_a_bad_crm_url_is_one_line_and_exit_2() -> None:
    ran = cli("export", "--crm-url", "http://127.0.0.1:99x/crm")
    assert ran.code == 2 and "Traceback" not in ran.err and "--crm-url" in ran.err


def test_a_second_exporter_on_the_same_db_exits_2_naming_the_lock(tmp_path: Path) -> None:
    db = str(tmp_path / "state.db")
    lock = ExportLock(db)
    lock.acquire()  # what a running export holds (this process stands for it)
    try:
        ran = cli("export", "--db", db, timeout=60)
    finally:
        lock.release()
    assert ran.code == 2, (ran.out, ran.err)
    assert lock_path(db) in ran.err and "another export" in ran.err
    assert "Traceback" not in ran.err
    ran = cli("export", "--db", db, timeout=120)  # free again: it runs
    assert ran.code in (0, 1), ran.err


def test_two_exporters_at_once_send_nothing_twice(tmp_path: Path) -> None:
    db = str(tmp_path / "state.db")
    with served() as crm:
        slow = {"faults": [{"endpoint": "*", "latencyMs": 50}]}
        crm.put("/_emulator/crm/settings", json=slow).raise_for_status()
        before = crm.get("/_emulator/crm/contacts", params={"pageSize": 1}).json()["meta"]["total"]
        command = [
            sys.executable,
            "-m",
            "emulator",
            "export",
            "--db",
            db,
            "--crm-url",
            str(crm.base_url.join("/crm")),
            "--api-key",
            CRM_KEY["X-API-Key"],
        ]
        runs = [
            subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(2)
        ]
        outcomes = []
        for run in runs:
            _, err = run.communicate(timeout=120)
            outcomes.append((run.returncode, err))
        codes = sorted(code for code, _ in outcomes)
        assert codes[-1] == 2 and codes[0] in (0, 1), outcomes
        assert any("export-lock" in err for code, err in outcomes if code == 2)
        contacts = crm.get("/_emulator/crm/contacts", params={"pageSize": 100}).json()
        external = [r.get("externalId") for r in contacts["data"]]
        assert len(external) == len(set(external))
        assert contacts["meta"]["total"] > before
        activities = crm.get("/_emulator/crm/activities", params={"pageSize": 100}).json()["data"]
        keys = [
            json.dumps({k: v for k, v in a.items() if k not in ("id", "createdAt")}, sort_keys=True)
            for a in activities
        ]
        assert len(keys) == len(set(keys))
