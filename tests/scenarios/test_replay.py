"""`emulator replay` as a process: the bundled scenarios pass, a broken one fails readably,
a malformed file exits 2 naming file and field, JUnit has one test case per scenario."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "fixtures" / "scenarios"
SMALL = str(SCENARIOS / "_small")


def replay(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "emulator", "replay", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def scenario_files() -> list[Path]:
    return sorted(
        p
        for p in SCENARIOS.rglob("*")
        if p.suffix in (".json", ".toml")
        and not any(part.startswith("_") for part in p.relative_to(SCENARIOS).parts)
    )


def test_bundled_scenarios_all_pass_with_junit(tmp_path: Path) -> None:
    junit = tmp_path / "scenarios.xml"
    result = replay(str(SCENARIOS), "--junit", str(junit))
    assert result.returncode == 0, result.stdout + result.stderr
    files = scenario_files()
    assert len(files) >= 15
    lines = result.stdout.splitlines()
    assert sum(line.startswith("PASS ") for line in lines) == len(files)
    assert lines[-1].startswith(f"{len(files)}/{len(files)} scenarios passed")
    # Each file is named after the rule it shows.
    names = {line.split()[1] for line in lines if line.startswith("PASS ")}
    assert names == {p.stem for p in files}
    suite = ET.parse(junit).getroot()
    assert suite.tag == "testsuite" and suite.get("failures") == "0"
    assert [c.get("name") for c in suite.iter("testcase")] == [
        line.split()[1] for line in lines[:-1]
    ]


def _broken(tmp_path: Path) -> Path:
    data = json.loads((SCENARIOS / "link-templates.json").read_text())
    data["fixtures"]["directory"] = SMALL
    data["expect"]["platform"][0]["fields"]["contactCRMUrl"] = (
        "https://crm.example/WRONG/crm-ct-000001"
    )
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(data))
    return path


def test_broken_expectation_fails_with_expected_and_actual(tmp_path: Path) -> None:
    broken = _broken(tmp_path)
    result = replay(str(broken), str(SCENARIOS / "task-batch-get-omits-unknown-ids.json"), "--json")
    assert result.returncode == 1, result.stdout + result.stderr
    out = json.loads(result.stdout)
    assert (out["passed"], out["failed"], out["errors"]) == (1, 1, 0)
    failure = out["results"][0]["failure"]
    assert failure["at"] == "expect.platform[0].fields.contactCRMUrl"
    assert failure["expected"] == '"https://crm.example/WRONG/crm-ct-000001"'
    assert failure["actual"] == '"https://crm.example/people/crm-ct-000001/view"'

    text = replay(str(broken))
    assert text.returncode == 1
    assert "FAIL  link-templates" in text.stdout
    assert "at expect.platform[0].fields.contactCRMUrl" in text.stdout
    assert 'expected: "https://crm.example/WRONG/crm-ct-000001"' in text.stdout
    assert 'actual:   "https://crm.example/people/crm-ct-000001/view"' in text.stdout
    assert "0/1 scenarios passed, 1 failed" in text.stdout


def test_malformed_scenario_exits_2_naming_file_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            {"name": "bad", "steps": [{"step": "export"}, {"step": "call", "method": "GET"}]}
        )
    )
    junit = tmp_path / "out.xml"
    result = replay(str(bad), "--junit", str(junit))
    assert result.returncode == 2
    assert f"{bad}: steps[1].path" in result.stdout
    assert ET.parse(junit).getroot().find("testcase/error") is not None

    toml = tmp_path / "bad.toml"
    toml.write_text('name = "t"\n[[steps]]\nstep = "teleport"\n')
    result = replay(str(toml))
    assert result.returncode == 2
    assert f"{toml}: steps[0].step" in result.stdout

    result = replay(str(tmp_path / "missing.json"))
    assert result.returncode == 2 and "no such file" in result.stderr
