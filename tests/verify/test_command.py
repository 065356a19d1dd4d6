"""`emulator verify` as a real process against real uvicorn servers: exit codes and the three files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

from emulator.verify.catalogue import CHECKS
from tests.exporter.test_e2e import serve_https
from tests.servers import serve_app, unused_url
from tests.verify.strange_crm import HEADER, KEY, StrangeCrm

ROOT = Path(__file__).resolve().parents[2]


def verify(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "emulator", "verify", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def files(tmp: Path) -> tuple[list[str], Path, Path, Path]:
    report, junit, html = tmp / "r.json", tmp / "j.xml", tmp / "r.html"
    return (
        ["--report", str(report), "--junit", str(junit), "--html", str(html)],
        report,
        junit,
        html,
    )


def junit_failures(junit: Path) -> set[tuple[str | None, str | None]]:
    cases = ET.parse(junit).getroot().iter("testcase")
    return {(c.get("name"), c.get("classname")) for c in cases if c.find("failure") is not None}


def test_the_embedded_reference_crm_passes_with_consistent_outputs(tmp_path: Path) -> None:
    flags, report_file, junit, html = files(tmp_path)
    done = verify(*flags, "--deep", "--examples", "2", "--seed", "3")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "deep: after the checks, 2 random sequences from seed 3" in done.stdout
    assert "deep: PASS seed 3, 2 sequences" in done.stdout
    lines = done.stdout.splitlines()
    assert sum(line.startswith("PASS ") for line in lines) == len(CHECKS)  # one line per check
    assert "verdict: PASS (exit 0)" in done.stdout
    report = json.loads(report_file.read_text())
    assert (report["status"], report["exitCode"]) == ("pass", 0)
    assert report["crmUrl"].startswith("http://127.0.0.1:") and report["crmUrl"].endswith("/crm")
    assert {c["endpoint"] for c in report["checks"]} >= {"PATCH /tasks/batch", "GET /tasks/:taskId"}
    assert set(report["checks"][0]) == {"id", "endpoint", "outcome", "rule", "message", "exchanges"}
    assert report["deep"]["outcome"] == "pass" and report["deep"]["calls"] > 0
    root = ET.parse(junit).getroot()
    assert root.get("tests") == str(len(CHECKS) + 1) and root.get("failures") == "0"
    page = html.read_text()
    assert page.count("<table>") == 15 and "Verdict: PASS" in page
    assert not any(asset in page for asset in ("<script", "<link", "src=", "@import", "url("))


def test_a_crm_breaking_a_rule_exits_1_and_every_output_names_the_check(tmp_path: Path) -> None:
    crm = StrangeCrm({"tasks-route-swallows-batch"})
    flags, report_file, junit, html = files(tmp_path)
    with serve_app(crm.app, lifespan="off") as url:
        done = verify("--crm-url", url, "--api-key", KEY, "--api-key-header", HEADER, *flags)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAIL  PATCH /tasks/batch" in done.stdout and "verdict: FAIL (exit 1)" in done.stdout
    report = json.loads(report_file.read_text())
    assert (report["status"], report["exitCode"], report["summary"]["fail"]) == ("fail", 1, 1)
    assert junit_failures(junit) == {("patch-tasks-batch/complete", "PATCH /tasks/batch")}
    assert KEY not in report_file.read_text() + junit.read_text() + html.read_text()
    page = html.read_text()
    assert "Verdict: FAIL" in page and '<td class="fail">' in page


def test_unreachable_crm_exits_2_and_the_junit_fails(tmp_path: Path) -> None:
    flags, report_file, junit, _ = files(tmp_path)
    done = verify("--crm-url", unused_url(), "--api-key", "k", *flags)
    assert done.returncode == 2 and "cannot be reached" in done.stdout
    report = json.loads(report_file.read_text())
    assert (report["status"], report["exitCode"]) == ("error", 2)
    assert junit_failures(junit) == {("reachable", "GET /health")}


def test_bad_arguments_exit_2() -> None:
    done = verify("--crm-url", "crm.example.com", "--api-key", "k")
    assert done.returncode == 2 and "--crm-url" in done.stderr
    done = verify("--crm-url", "http://127.0.0.1:9")
    assert done.returncode == 2 and "--api-key is required" in done.stderr
    done = verify(
        "--crm-url", "https://127.0.0.1:9", "--api-key", "k", "--ca-file", "/no/such/ca.pem"
    )
    assert done.returncode == 2 and "emulator verify:" in done.stderr


def test_https_with_a_ca_file_and_untrusted_without(tmp_path: Path) -> None:
    with serve_https(StrangeCrm().app, tmp_path) as (url, ca_file):
        trusted = verify(
            "--crm-url", url, "--api-key", KEY, "--api-key-header", HEADER, "--ca-file", ca_file
        )
        assert trusted.returncode == 0, trusted.stdout
        untrusted = verify("--crm-url", url, "--api-key", KEY, "--api-key-header", HEADER)
        assert untrusted.returncode == 2 and "CERTIFICATE_VERIFY_FAILED" in untrusted.stdout


def test_deep_failure_exits_1_with_the_shrunk_sequence_in_every_output(tmp_path: Path) -> None:
    crm = StrangeCrm({"task-patch-ignores-completed"})
    flags, report_file, junit, html = files(tmp_path)
    deep = ["--deep", "--seed", "4", "--deep-time", "30"]
    with serve_app(crm.app, lifespan="off") as url:
        done = verify("--crm-url", url, "--api-key", KEY, "--api-key-header", HEADER, *deep, *flags)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAIL deep/task-state" in done.stdout and "shortest failing sequence" in done.stdout
    assert "1. POST /tasks -> 201" in done.stdout and f"curl -sS -X POST {url}/tasks" in done.stdout
    report = json.loads(report_file.read_text())
    steps = report["deep"]["sequence"]
    assert report["exitCode"] == 1 and report["deep"]["rule"] == "task-state"
    assert [s["method"] for s in steps][-1] == "PATCH" and all(s["curl"] for s in steps)
    assert ("random call sequences", "verify --deep") in junit_failures(junit)
    assert "verify --deep: FAIL" in html.read_text()
    everything = done.stdout + report_file.read_text() + junit.read_text() + html.read_text()
    assert KEY not in everything and f"{HEADER}: ***" in everything


def test_deep_options_need_deep_and_sane_values() -> None:
    for args in (["--seed", "1"], ["--deep-time", "5"]):
        done = verify(*args)
        assert done.returncode == 2 and "need --deep" in done.stderr
    for args in (["--examples", "0"], ["--seed", "x"]):
        done = verify("--deep", *args)
        assert done.returncode == 2 and "emulator verify: error: argument" in done.stderr
