"""Per Part A endpoint, the calls of a run and their answers, in every output: a default
rehearsal calls all 15 endpoints; one never called is named "not exercised"; one whose every
call fails (5xx, no answer, a body that is not JSON) fails the run, and JUnit says so."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from emulator.exporter import endpoints as ep
from emulator.exporter.report import exit_code, junit_xml, new_report, settle_endpoints, summary
from emulator.exporter.report_html import html_report
from emulator.exporter.run import Exporter
from emulator.platform import connection as platform_connection
from emulator.state import Emulator
from tests.exporter.harness import FAST, FakeCrm, run_export
from tests.hostile.harness import served, wait_export

ROOT = Path(__file__).resolve().parents[2]
# The spec's Part A endpoint table, written out (interfaces.md), not read from the code.
SPEC_ENDPOINTS = {
    "GET /health",
    "POST /contacts",
    "POST /contacts/sync",
    "PUT /contacts",
    "POST /companies",
    "POST /companies/sync",
    "PUT /companies",
    "POST /associations",
    "POST /activities",
    "POST /tasks",
    "GET /tasks/:taskId",
    "PATCH /tasks/:taskId",
    "POST /tasks/batch",
    "PATCH /tasks/batch",
    "GET /users",
}


def export(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "emulator", "export", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def junit_endpoints(path: Path) -> dict[str, ET.Element]:
    suite = ET.parse(path).getroot()
    return {
        c.get("name", ""): c for c in suite.iter("testcase") if c.get("classname") == "crm-endpoint"
    }


# --- pure rules ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "error", "expected"),
    [
        (200, None, "2xx"),
        (201, None, "2xx"),
        (404, None, "4xx"),
        (503, None, "5xx"),
        (0, "ReadTimeout: timed out", "no answer: timeout"),
        (0, "ConnectError: [Errno 111] Connection refused", "no answer: connection"),
        (0, "RemoteProtocolError: Server disconnected", "no answer: connection"),
    ],
)
def test_a_call_is_counted_under_its_status_class_or_why_no_answer_came(
    status: int, error: str | None, expected: str
) -> None:
    assert ep.outcome(status, error) == expected


def test_an_endpoint_whose_every_call_failed_is_failing_and_fails_the_run() -> None:
    report = new_report("r", "http://crm.test", "2026-01-01T00:00:00.000Z")
    calls = report.endpoints
    ep.count_call(calls, "PATCH /tasks/batch", 500, None, 1)
    ep.count_call(calls, "PATCH /tasks/batch", 503, None, 4)
    ep.count_call(calls, "POST /tasks/batch", 500, None, 1)
    ep.count_call(calls, "POST /tasks/batch", 200, None, 1)  # one answered: not failing
    ep.count_call(calls, "POST /contacts/sync", 200, None, 1)
    ep.count_unreadable(calls, "POST /contacts/sync")  # its only call: not JSON
    ep.count_call(calls, "GET /users", 501, None, 1)  # the documented "no users endpoint"
    ep.count_call(calls, "PUT /contacts (engagement)", 0, "ReadTimeout", 4)
    settle_endpoints(report, name_unexercised=False)
    status = {name: e.status for name, e in calls.items()}
    assert status["PATCH /tasks/batch"] == "failing"
    assert status["POST /contacts/sync"] == "failing"
    assert status["PUT /contacts"] == "failing"  # the engagement PUTs are its calls
    assert status["POST /tasks/batch"] == status["GET /users"] == "exercised"
    assert status["GET /health"] == "not exercised"
    assert ep.outcome_text(calls["PATCH /tasks/batch"]) == "2 calls: 2 5xx (5 attempts)"
    failing = {g.check for g in report.violations if g.message == ep.FAILING}
    assert failing == {"PATCH /tasks/batch", "POST /contacts/sync", "PUT /contacts"}
    report.status = "ok"
    assert exit_code(report) == 1
    assert calls["PATCH /tasks/batch"].violations == 1


def test_an_endpoint_never_called_is_named_in_every_output() -> None:
    report = new_report("r", "http://crm.test", "2026-01-01T00:00:00.000Z")
    for name in SPEC_ENDPOINTS - {"PATCH /tasks/batch"}:
        ep.count_call(report.endpoints, name, 200, None, 1)
    settle_endpoints(report, name_unexercised=True)
    report.status, report.exitCode = "ok", exit_code(report)
    assert report.exitCode == 0
    assert report.endpoints["PATCH /tasks/batch"].status == "not exercised"
    assert [(g.check, g.message) for g in report.warnings] == [
        ("PATCH /tasks/batch", ep.NOT_EXERCISED)
    ]
    assert any(
        line.split() == ["PATCH", "/tasks/batch", "not", "exercised"]
        for line in summary(report).splitlines()
    )
    suite = ET.fromstring(junit_xml(report))
    case = next(
        c
        for c in suite.iter("testcase")
        if (c.get("classname"), c.get("name")) == ("crm-endpoint", "PATCH /tasks/batch")
    )
    skipped = case.find("skipped")
    assert skipped is not None and "not exercised" in (skipped.get("message") or "")
    assert suite.get("failures") == "0"
    page = html_report(report)
    assert '<td>PATCH /tasks/batch</td><td class="warning">not exercised</td>' in page


@pytest.mark.anyio
async def test_a_push_names_no_unexercised_endpoint_as_a_finding(platform: Emulator) -> None:
    """Only a full run had its chance at every endpoint: a push lists them, warns of none."""
    crm = FakeCrm()
    await run_export(platform, crm)
    connection = await platform.db.read(platform_connection.read)
    assert connection is not None
    push = await Exporter(
        platform.db, connection, now=platform.clock.now_iso, transport=crm.transport(), policy=FAST
    ).push_events([1], [])
    assert push.endpoints["POST /contacts/sync"].status == "not exercised"
    assert not any(g.message == ep.NOT_EXERCISED for g in push.warnings)


# --- the default rehearsal ------------------------------------------------------------------


def test_a_default_export_calls_all_15_endpoints_and_every_output_lists_them(
    tmp_path: Path,
) -> None:
    files = {
        k: tmp_path / n for k, n in (("json", "r.json"), ("junit", "j.xml"), ("html", "r.html"))
    }
    done = export(
        "--report", str(files["json"]), "--junit", str(files["junit"]), "--html", str(files["html"])
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(files["json"].read_text())
    assert set(report["endpoints"]) == SPEC_ENDPOINTS
    for name, entry in report["endpoints"].items():
        assert entry["status"] == "exercised" and entry["calls"] >= 1, name
        assert sum(entry["outcomes"].values()) == entry["calls"], name
    calls = {name: e["calls"] for name, e in report["endpoints"].items()}
    # The task endpoints the default fixtures' task states call (fixtures/default/tasks.json):
    # 2 tasks completed before they were sent -> one PATCH /tasks/batch; 1 completed on the
    # platform since its creation -> one PATCH /tasks/:taskId; the read-back of every open one
    # -> one POST /tasks/batch, whose answer leaves out the task deleted on the CRM -> one GET.
    assert calls["PATCH /tasks/batch"] == calls["PATCH /tasks/:taskId"] == 1
    assert calls["POST /tasks/batch"] == calls["GET /tasks/:taskId"] == 1
    assert report["endpoints"]["GET /tasks/:taskId"]["outcomes"] == {"4xx": 1}  # 404: deleted
    assert report["taskReadBack"]["completedOnCrm"] == 2
    assert not any(g["message"] == ep.NOT_EXERCISED for g in report["warnings"])
    lines = done.stdout.splitlines()
    for name in SPEC_ENDPOINTS:
        assert any(line.strip().startswith(name + " ") and "call" in line for line in lines), name
    cases = junit_endpoints(files["junit"])
    assert set(cases) == SPEC_ENDPOINTS
    assert all(c.find("skipped") is None and c.find("failure") is None for c in cases.values())
    page = files["html"].read_text()
    assert page.count('<td class="ok">exercised</td>') == 15


def test_a_crm_whose_patch_tasks_batch_always_answers_500_fails_the_run(tmp_path: Path) -> None:
    """The done-when of the rehearsal: a default export, a CRM whose PATCH /tasks/batch is
    broken on every attempt, exit 1 and a failing JUnit file."""
    junit = tmp_path / "j.xml"
    with served("--rate-limit", "off") as client:
        settings = client.get("/_emulator/crm/settings").json()
        fault = {"endpoint": "PATCH /tasks/batch", "status": 500}
        r = client.put("/_emulator/crm/settings", json={**settings, "faults": [fault]})
        assert r.status_code == 200, r.text
        crm = str(client.base_url).rstrip("/") + "/crm"
        done = export(
            "--crm-url", crm, "--api-key", "crm-demo-key", "--json", "--junit", str(junit)
        )
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr
    report = json.loads(done.stdout)
    assert report["status"] == "failed" and report["exitCode"] == 1
    entry = report["endpoints"]["PATCH /tasks/batch"]
    assert (entry["status"], entry["outcomes"]) == ("failing", {"5xx": 1})
    assert any(
        g["check"] == "PATCH /tasks/batch" and g["message"] == ep.FAILING
        for g in report["violations"]
    )
    suite = ET.parse(junit).getroot()
    assert int(suite.get("failures") or 0) > 0
    failure = junit_endpoints(junit)["PATCH /tasks/batch"].find("failure")
    assert failure is not None and "5xx" in (failure.get("message") or "")


def test_a_crm_without_the_task_endpoints_names_them_not_exercised_or_failing(
    tmp_path: Path,
) -> None:
    """Fixtures without tasks: the task endpoints are never called, and say so."""
    fixtures = tmp_path / "fixtures"
    fixtures.mkdir()
    for path in (ROOT / "fixtures" / "default").iterdir():
        if path.name != "tasks.json":
            (fixtures / path.name).write_bytes(path.read_bytes())
    crm = json.loads((fixtures / "crm.json").read_text())
    crm["tasks"] = []
    (fixtures / "crm.json").write_text(json.dumps(crm))
    campaigns = json.loads((fixtures / "campaigns.json").read_text())
    for campaign in campaigns:  # no TASK step: no task is ever made
        campaign["sequence"] = [s for s in campaign["sequence"] if s["type"] != "TASK"]
    (fixtures / "campaigns.json").write_text(json.dumps(campaigns))
    junit = tmp_path / "j.xml"
    done = export("--fixtures", str(fixtures), "--json", "--junit", str(junit))
    report = json.loads(done.stdout)
    idle = {n for n, e in report["endpoints"].items() if e["status"] == "not exercised"}
    assert idle == {
        "POST /tasks",
        "GET /tasks/:taskId",
        "PATCH /tasks/:taskId",
        "POST /tasks/batch",
        "PATCH /tasks/batch",
    }
    warned = {g["check"] for g in report["warnings"] if g["message"] == ep.NOT_EXERCISED}
    assert warned == idle and done.returncode == 0
    cases = junit_endpoints(junit)
    assert {n for n, c in cases.items() if c.find("skipped") is not None} == idle


def test_the_control_api_report_lists_the_endpoints() -> None:
    with served("--rate-limit", "off") as client:
        started = client.post("/_emulator/exports")
        assert started.status_code == 202
        report = wait_export(client, started.json()["id"])
        page = client.get(f"/_emulator/exports/{report['id']}/report.html")
    assert {
        n for n, e in report["endpoints"].items() if e["status"] == "exercised"
    } == SPEC_ENDPOINTS
    assert page.status_code == 200 and "<h2>Endpoints</h2>" in page.text
