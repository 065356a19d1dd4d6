"""The `emulator serve` command as a user runs it: a real process on a loopback port."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import httpx

from tests.processes import ROOT, emulator_process, free_port

ALL = {"x-api-key": "demo-all"}


def test_serve_answers_over_real_http() -> None:
    with emulator_process() as base:
        contacts = httpx.get(f"{base}/v1/contacts", params={"pageSize": 5}, headers=ALL).json()
        assert len(contacts["data"]) == 5 and contacts["meta"]["total"] >= 200
        one = httpx.get(f"{base}/v1/contact/{contacts['data'][0]['id']}", headers=ALL)
        assert one.status_code == 200 and one.headers["x-ratelimit-limit"] == "100"
        assert httpx.get(f"{base}/v1/contacts").status_code == 401
        spec = httpx.get(f"{base}/openapi.json").json()
        assert spec["openapi"].startswith("3.1") and "/v1/contacts" in spec["paths"]


def test_serve_prints_where_it_listens() -> None:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "emulator", "serve", "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
    finally:
        proc.terminate()
        proc.wait(10)
        assert proc.stdout is not None
        proc.stdout.close()
    assert line.startswith(
        f"emulator listening on http://127.0.0.1:{port} (fixtures fixtures/default"
    )
    assert "200 contacts" in line and "state in memory" in line


def serve_refused(fixtures: Path) -> subprocess.CompletedProcess[str]:
    """`emulator serve --fixtures` that must stop at start-up: exit status 2."""
    result = subprocess.run(
        [sys.executable, "-m", "emulator", "serve", "--port", "0", "--fixtures", str(fixtures)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    return result


def test_broken_fixture_stops_start_up_naming_file_record_and_field(tmp_path: Path) -> None:
    broken = tmp_path / "fixtures"
    shutil.copytree(ROOT / "fixtures" / "default", broken)
    contacts = json.loads((broken / "contacts.json").read_text())
    contacts[12]["companyId"] = 999999
    (broken / "contacts.json").write_text(json.dumps(contacts))
    result = serve_refused(broken)
    assert "contacts.json: [12].companyId: unknown company 999999" in result.stderr


def test_a_fixture_file_linking_to_nothing_stops_start_up(tmp_path: Path) -> None:
    broken = tmp_path / "fixtures"
    shutil.copytree(ROOT / "fixtures" / "default", broken)
    (broken / "contacts.json").unlink()
    (broken / "contacts.json").symlink_to(tmp_path / "moved" / "contacts.json")
    result = serve_refused(broken)
    assert (
        "contacts.json: a symbolic link to " in result.stderr and "does not exist" in result.stderr
    )


def test_bad_rate_limit_flag_is_a_usage_error() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "emulator",
            "serve",
            "--port",
            str(free_port()),
            "--rate-limit",
            "sometimes",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 2 and "unknown scope" in result.stderr


def test_state_persists_across_a_restart_with_db(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    body = {
        "firstName": "Persisted",
        "lastName": "Person",
        "professionalEmail": "p@persist.example",
    }
    with emulator_process("--db", str(db)) as base:
        created = httpx.post(f"{base}/v1/contact", json=body, headers=ALL)
        assert created.status_code == 201, created.text
        contact_id = created.json()["data"]["id"]
    assert db.exists()
    with emulator_process("--db", str(db)) as base:
        again = httpx.get(f"{base}/v1/contact/{contact_id}", headers=ALL)
        assert again.status_code == 200
        assert again.json()["data"]["professionalEmail"] == "p@persist.example"
        # reset goes back to the fixtures, also on a file database
        assert httpx.post(f"{base}/_emulator/reset").status_code == 200
        assert httpx.get(f"{base}/v1/contact/{contact_id}", headers=ALL).status_code == 404


def test_a_lazy_search_index_answers_the_same_search() -> None:
    """--lazy-search-index: no index built once listening; the first search still answers
    exactly what a server that built it answers."""
    params = {"search": "rossi", "pageSize": 100}
    answers = []
    for flags in ((), ("--lazy-search-index",)):
        with emulator_process(*flags) as base:
            found = httpx.get(f"{base}/v1/contacts", params=params, headers=ALL)
            assert found.status_code == 200, found.text
            answers.append([c["id"] for c in found.json()["data"]])
    assert answers[0] and answers[0] == answers[1]


def test_ctrl_c_while_the_command_loads_is_an_interruption() -> None:
    """Parsing imports the command's modules (~0.3 s of a start): Ctrl-C then says
    `interrupted` and exits 130, as later, without a traceback. (A process of its own: an
    interruption that escaped would stop pytest.)"""
    code = (
        "import emulator.cli as cli\n"
        "def interrupted(_command):\n"
        "    raise KeyboardInterrupt\n"
        "cli.build_parser = interrupted\n"
        "raise SystemExit(cli.main(['export']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stderr) == (130, "interrupted\n")
