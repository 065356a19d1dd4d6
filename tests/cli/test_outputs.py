"""Report files of the commands: their directories are made, an impossible path is one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.processes import ROOT

SCENARIO = ROOT / "fixtures" / "scenarios" / "link-templates.json"


def _emulator(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "emulator", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_report_in_a_directory_nobody_made_is_written_there(tmp_path: Path) -> None:
    done = _emulator("replay", str(SCENARIO), "--junit", "build/deep/scenarios.xml", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "build" / "deep" / "scenarios.xml").read_text().startswith("<?xml")


def test_an_unwritable_report_path_stops_before_the_run_with_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    for command in (
        ("replay", str(SCENARIO), "--junit", f"{blocker}/x.xml"),
        ("export", "--html", f"{blocker}/x.html"),
        ("verify", "--report", f"{blocker}/x.json"),
        ("record", "--crm-url", "http://127.0.0.1:9", "--out", f"{blocker}/x.json"),
    ):
        done = _emulator(*command, cwd=tmp_path)
        assert done.returncode == 2, (command, done.stderr)
        assert done.stderr.strip() == (
            f"emulator {command[0]}: cannot write {command[-1]}: "
            "a file stands where its directory must be"
        )
        assert done.stdout == "", command  # nothing ran
