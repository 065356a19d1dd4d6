"""Counts are the CRM's, against a served reference CRM (`emulator serve`) and real `emulator
export` processes: links it already had are "already linked", dependents a failed record holds
back are named under it and counted, a run without --db says up front that it remembers
nothing, and --strict fails the run on any warning."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import httpx

from tests.processes import ROOT, emulator_process

KEY = "crm-demo-key"


def export(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "emulator", "export", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def crm_settings(base: str, **changes: Any) -> None:
    current = httpx.get(f"{base}/_emulator/crm/settings").json()
    shown = httpx.put(f"{base}/_emulator/crm/settings", json={**current, **changes})
    assert shown.status_code == 200, shown.text


def test_a_re_export_counts_the_links_the_crm_already_had_as_already_linked(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "platform.db")
    with emulator_process() as base:
        crm_settings(base, syncBack="none")  # nothing to clear: only the counts matter here
        first = export("--crm-url", f"{base}/crm", "--api-key", KEY, "--db", db, "--json")
        assert first.returncode == 0, first.stderr
        made = json.loads(first.stdout)["phases"]["associations"]
        # the reference CRM starts with some links of its own
        assert made["created"] + made["alreadyLinked"] == made["sent"] > made["created"] > 0
        second = export("--crm-url", f"{base}/crm", "--api-key", KEY, "--db", db)
    assert second.returncode == 0, second.stderr
    line = next(x for x in second.stdout.splitlines() if x.strip().startswith("associations"))
    assert "created" not in line and f"already linked {made['sent']}" in line


def test_a_run_without_db_says_first_that_it_will_log_everything_again(tmp_path: Path) -> None:
    report_file = tmp_path / "r.json"
    done = export(
        "--report",
        str(report_file),
        "--junit",
        str(tmp_path / "j.xml"),
        "--html",
        str(tmp_path / "r.html"),
    )
    assert done.returncode == 0, done.stderr
    first_line = done.stderr.splitlines()[0]
    assert "no --db" in first_line and "--db FILE" in first_line
    assert "logs every activity and creates every task in the CRM again" in first_line
    report = json.loads(report_file.read_text())
    assert report["notes"] and "no --db" in report["notes"][0]
    assert "note: no --db" in done.stdout
    assert "no --db" in (tmp_path / "j.xml").read_text()
    assert "Note: no --db" in (tmp_path / "r.html").read_text()
    kept = export("--db", str(tmp_path / "p.db"), "--json")
    assert kept.returncode == 0 and "no --db" not in kept.stderr + kept.stdout


def test_a_failed_company_names_and_counts_every_link_it_holds_back() -> None:
    with emulator_process() as base:
        crm_settings(base, syncErrors=["4"])  # company 4 and contact 4 fail their sync
        done = export("--crm-url", f"{base}/crm", "--api-key", KEY, "--json")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    [company] = [f for f in report["failed"] if f["kind"] == "companies"]
    # Company 4's contacts in the default fixtures: 13, 35, 140, 177, 195.
    links = {f"association of contact {i}" for i in (13, 35, 140, 177, 195)}
    assert links <= set(company["heldBack"])
    assert report["phases"]["associations"]["heldBack"] >= 5
    assert company["heldBackTotal"] == len(company["heldBack"])
    [contact] = [f for f in report["failed"] if f["kind"] == "contacts"]
    # Contact 4's activities and tasks are held back by it, named there.
    assert contact["heldBackTotal"] > 0
    assert all(d.startswith(("activity ", "task ", "engagement ")) for d in contact["heldBack"])
    assert report["phases"]["activities"]["heldBack"] == sum(
        d.startswith("activity ") for f in report["failed"] for d in f["heldBack"]
    )


def test_strict_fails_the_run_on_warnings_alone(tmp_path: Path) -> None:
    """A CRM that answers its whole stored record as `properties` (an echo of the last
    update) breaks no contract: a warning, exit 0; with --strict, exit 1 and a JUnit failure."""
    db, junit = str(tmp_path / "platform.db"), tmp_path / "j.xml"
    with emulator_process() as base:
        crm = ("--crm-url", f"{base}/crm", "--api-key", KEY, "--db", db)
        assert export(*crm).returncode == 0  # creates: no sync match, nothing echoed yet
        crm_settings(base, syncBack="all")
        lenient = export(*crm, "--json")
        strict = export(*crm, "--json", "--strict", "--junit", str(junit))
    assert lenient.returncode == 0, lenient.stdout
    warned = {g["message"] for g in json.loads(lenient.stdout)["warnings"]}
    assert any("echo the CRM's last update" in m for m in warned), warned
    assert not any("whole stored record" in m for m in warned)
    assert strict.returncode == 1, strict.stdout
    report = json.loads(strict.stdout)
    assert report["strict"] is True and report["status"] == "failed"
    suite = ET.parse(junit).getroot()
    failed = {c.get("name") for c in suite.iter("testcase") if c.find("failure") is not None}
    assert "POST /companies/sync" in failed and int(suite.get("failures") or 0) >= 1


def test_report_times_are_wall_clock_and_the_virtual_time_is_its_own_field(
    tmp_path: Path,
) -> None:
    done = export("--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    from datetime import UTC, datetime

    started = datetime.fromisoformat(report["startedAt"])
    finished = datetime.fromisoformat(report["finishedAt"])
    now = datetime.now(UTC)
    assert abs((now - started).total_seconds()) < 300 and started <= finished <= now
    assert report["virtualStartedAt"] and report["virtualStartedAt"] != report["startedAt"]
    assert report["virtualFinishedAt"] is not None
