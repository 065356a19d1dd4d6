"""`emulator export` as a real process: exit codes 0/1/2, --report, --junit, --json, --db reruns."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.servers import serve_app, unused_url

ROOT = Path(__file__).resolve().parents[2]


def export(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "emulator", "export", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_export_to_the_embedded_crm_exits_0_and_writes_reports(tmp_path: Path) -> None:
    report_file, junit_file, html_file = (
        tmp_path / "r.json",
        tmp_path / "j.xml",
        tmp_path / "r.html",
    )
    done = export(
        "--report",
        str(report_file),
        "--junit",
        str(junit_file),
        "--html",
        str(html_file),
        "--batch-size",
        "50",
    )
    assert done.returncode == 0, done.stderr + done.stdout
    assert "ok (exit 0)" in done.stdout and "contacts" in done.stdout
    report = json.loads(report_file.read_text())
    assert report["status"] == "ok" and report["crmUrl"].endswith("/crm")
    assert report["phases"]["contacts"]["requests"] >= 4 * 2  # 200 contacts in batches of 50
    suite = ET.parse(junit_file).getroot()
    names = [case.get("name") for case in suite.iter("testcase")]
    assert "POST /contacts/sync" in names and suite.get("failures") == "0"
    assert {"contacts", "tasks", "export run"} <= set(names)
    page = html_file.read_text()
    assert page.startswith("<!doctype html>") and f"Export <code>{report['id']}</code>" in page
    for group in report["warnings"]:  # every kind of finding is on the page
        assert f"{group['message']}: {group['count']}</h3>" in page


def test_rerun_on_a_db_file_logs_nothing_twice(tmp_path: Path) -> None:
    db = str(tmp_path / "platform.db")
    first = export("--db", db, "--json")
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["phases"]["activities"]["created"] > 0
    second = export("--db", db, "--json")
    assert second.returncode == 0, second.stderr
    again = json.loads(second.stdout)
    assert again["phases"]["activities"]["sent"] == 0
    assert again["phases"]["contacts"]["created"] == 0


def test_unreachable_crm_and_wrong_key_exit_2() -> None:
    done = export("--crm-url", unused_url(), "--api-key", "k")
    assert done.returncode == 2 and "unreachable" in done.stdout
    done = export("--api-key", "wrong")
    assert done.returncode == 2 and "API key rejected by CRM" in done.stdout
    done = export("--crm-url", "crm.example.com")
    assert done.returncode == 2 and "--crm-url" in done.stderr


def broken_crm() -> Starlette:
    """Healthy, no users endpoint, and a sync answer that is not JSON."""

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def sync(request: Request) -> Response:
        return Response(b"<html>oops</html>", 200, media_type="text/html")

    async def ok(request: Request) -> Response:
        return JSONResponse({"success": True, "results": []})

    return Starlette(
        routes=[
            Route("/health", health),
            Route("/companies/sync", sync, methods=["POST"]),
            Route("/contacts/sync", sync, methods=["POST"]),
            Route("/{path:path}", ok, methods=["POST", "PUT", "PATCH"]),
        ]
    )


def test_a_crm_that_breaks_the_contract_exits_1(tmp_path: Path) -> None:
    junit_file = tmp_path / "j.xml"
    with serve_app(broken_crm(), lifespan="off") as url:
        done = export("--crm-url", url, "--api-key", "k", "--json", "--junit", str(junit_file))
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["ownerSelection"] is False
    # No sync answered, so the run learnt no CRM id: the ids the fixtures store (from some
    # earlier CRM) go nowhere, and every activity, link and engagement value waits. The
    # fixtures' tasks from an earlier export are read back: the batch answer holds none, and
    # the GET /tasks/:taskId that would confirm each unknown is a missing route (405); the
    # task completed on the platform is then completed with PATCH /tasks/:taskId, which this
    # CRM answers with its one body for every write, not the task.
    assert {v["check"] for v in report["violations"]} == {
        "POST /companies/sync",
        "POST /contacts/sync",
        "GET /tasks/:taskId",
        "PATCH /tasks/:taskId",
    }
    assert report["phases"]["contacts"]["failed"] == 200
    assert (
        report["phases"]["activities"]["requests"]
        == report["phases"]["engagement"]["requests"]
        == 0
    )
    assert report["phases"]["activities"]["heldBack"] > 0
    assert sum(f["heldBackTotal"] for f in report["failed"]) > 0
    suite = ET.parse(junit_file).getroot()
    assert int(suite.get("failures") or 0) >= 2
