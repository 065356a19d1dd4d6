"""`emulator record`: export to a real CRM process with faults, then replay the file without it."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from emulator.cli import main as cli_main
from emulator.scenarios.record import RecordingTransport
from tests.processes import ROOT, emulator_process

CRM_SETTINGS = {
    "syncErrors": ["3"],  # company 3 and contact 3 fail in their sync batches
    "updateFailures": [],
    "faults": [
        {"endpoint": "POST /contacts/sync", "status": 503, "times": 1},  # answered, then retried
        {"endpoint": "POST /companies/sync", "dropConnection": True, "times": 1},  # no answer
    ],
}


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "emulator", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_recorded_export_replays_without_its_crm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "recorded.json"
    with emulator_process() as base:
        shown = httpx.put(f"{base}/_emulator/crm/settings", json=CRM_SETTINGS)
        assert shown.status_code == 200, shown.text
        done = run(
            "record", "--crm-url", f"{base}/crm", "--api-key", "crm-demo-key", "--out", str(out)
        )
        # The export failed (records 3): `record` exits with its code, the file is written.
        assert done.returncode == 1, done.stderr
        assert "failed contacts 3: CRM sync error" in done.stdout
        assert f"into {out}" in done.stdout
    text = out.read_text()
    assert "crm-demo-key" not in text  # neither in the connection nor in any body
    recorded: dict[str, Any] = json.loads(text)
    playback = recorded["crm"]["playback"]
    expected = recorded["expect"]["crmCalls"]
    counts: dict[str, int] = {}
    for a in playback:
        counts[f"{a['method']} {a['path']}"] = counts.get(f"{a['method']} {a['path']}", 0) + 1
        assert a["method"] == "GET" or "request" in a  # what it answered goes with it
    assert (
        expected["counts"] == counts and counts["POST /contacts/sync"] == 3
    )  # 503, retry, batch 2
    # Each phase's opening call, in order: the contacts phase opened with the injected 503.
    assert [(c["method"], c["path"], c["status"]) for c in expected["calls"]][:6] == [
        ("GET", "/health", 200),
        ("GET", "/users", 200),
        ("POST", "/companies/sync", 200),
        ("POST", "/contacts/sync", 503),
        ("POST", "/associations", 200),
        ("POST", "/activities", 201),
    ]
    report = recorded["expect"]["report"]
    assert report["status"] == "failed" and report["exitCode"] == 1
    assert {(f["kind"], f["id"]) for f in report["failed"]} == {
        ("companies", "3"),
        ("contacts", "3"),
    }
    # The dropped attempt cannot be played back: it is left out, and so are request counts.
    assert "1 exchanges got no answer" in recorded["description"]
    assert "requests" not in report["phases"]["contacts"]
    assert counts["POST /companies/sync"] == 1

    # The CRM process is gone: the replay answers from the file alone, and passes.
    replayed = run("replay", str(out))
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert replayed.stdout.startswith("PASS") and "recorded" in replayed.stdout

    # The same file with one expected failure changed no longer passes, and says where.
    report["failed"] = [{**f, "reason": "something else"} for f in report["failed"]]
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(recorded))
    assert cli_main(["replay", str(broken)]) == 1
    shown_out = capsys.readouterr().out
    assert "FAIL" in shown_out and "expect.report.failed" in shown_out
    assert "something else" in shown_out and "CRM sync error" in shown_out


def test_recording_an_unreachable_crm_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "recorded.json"
    with socket.socket() as sock:  # a port that refuses: bound, never listening
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        done = run(
            "record",
            "--crm-url",
            f"http://127.0.0.1:{port}/crm",
            "--out",
            str(out),
            "--api-key",
            "k",
        )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "aborted (exit 2)" in done.stdout and "CRM unreachable" in done.stdout
    assert "nothing recorded" in done.stderr and not out.exists()


def test_a_clean_recording_exits_0(tmp_path: Path) -> None:
    out = tmp_path / "clean.json"
    with emulator_process() as base:
        done = run(
            "record", "--crm-url", f"{base}/crm", "--api-key", "crm-demo-key", "--out", str(out)
        )
    assert done.returncode == 0, done.stdout + done.stderr
    assert out.exists() and "recording starts from the fixtures" in done.stderr


async def _answers(inner: httpx.MockTransport, secret: str = "k3y") -> list[dict[str, Any]]:
    recorder = RecordingTransport(inner, "/api/crm", secret)
    async with httpx.AsyncClient(transport=recorder, base_url="http://crm.test/api/crm") as client:
        for path in ("/health", "/users", "/contacts/sync", "/tasks/1"):
            await client.get(path)
    assert [e.path for e in recorder.exchanges] == [
        "/health",
        "/users",
        "/contacts/sync",
        "/tasks/1",
    ]
    return [e.answer or {} for e in recorder.exchanges]


@pytest.mark.anyio
async def test_answers_keep_text_headers_and_lose_the_key() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/health"):
            return httpx.Response(200, json={"echo": "k3y"})
        if request.url.path.endswith("/users"):
            return httpx.Response(
                501, text="<html>nope k3y</html>", headers={"content-type": "text/html"}
            )
        if request.url.path.endswith("/sync"):
            return httpx.Response(
                429,
                content=b"null",
                headers={"Retry-After": "2", "content-type": "application/json"},
            )
        return httpx.Response(204)

    got = await _answers(httpx.MockTransport(answer))
    assert got[0] == {"status": 200, "body": {"echo": "***"}}
    assert got[1] == {
        "status": 501,
        "text": "<html>nope ***</html>",
        "headers": {"content-type": "text/html"},
    }
    assert got[2] == {"status": 429, "body": None, "headers": {"retry-after": "2"}}
    assert got[3] == {"status": 204, "text": ""}


@pytest.mark.parametrize(
    "args, message",
    [
        (["--crm-url", "ftp://x", "--out", "x.json"], "--crm-url must be an http"),
        (["--crm-url", "http://x", "--out", "x.json", "--batch-size", "0"], "--batch-size"),
        (["--crm-url", "http://x", "--out", "x.json", "--fixtures", "/nowhere"], "fixture error"),
    ],
)
def test_bad_arguments_exit_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_main(["record", *args]) == 2
    assert message in capsys.readouterr().err
