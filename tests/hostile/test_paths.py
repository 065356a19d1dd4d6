"""POST /_emulator/scenarios/run and /_emulator/fixtures read only regular files under the
server's roots (issue 11 item 3); the CLI keeps reading any path."""

from __future__ import annotations

import os
import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from emulator.fixtures.loader import DEFAULT_FIXTURES
from emulator.path_roots import BUNDLED
from tests.hostile.harness import cli, served

SCENARIOS = BUNDLED[1]
ONE_SCENARIO = SCENARIOS / "task-batch-get-omits-unknown-ids.json"


@pytest.fixture(scope="module")
def allowed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An --allow-path root holding a copy of the default fixtures, a scenario, a FIFO and a
    socket named like files the loaders read, and a link pointing out of the root."""
    root = tmp_path_factory.mktemp("allowed")
    shutil.copytree(DEFAULT_FIXTURES, root / "fixtures")
    shutil.copy(ONE_SCENARIO, root / "one.json")
    shutil.copytree(SCENARIOS / "_small", root / "_small")  # what its fixtures name
    (root / "trap").mkdir()
    shutil.copytree(DEFAULT_FIXTURES, root / "trap" / "fifo-fixtures")
    (root / "trap" / "fifo-fixtures" / "contacts.json").unlink()
    os.mkfifo(root / "trap" / "fifo-fixtures" / "contacts.json")
    os.mkfifo(root / "trap" / "scenario.json")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(root / "trap" / "socket.json"))
    (root / "trap" / "outside.json").symlink_to("/etc/hostname")
    return root


@pytest.fixture(scope="module")
def client(allowed: Path) -> Iterator[httpx.Client]:
    with served("--allow-path", str(allowed)) as client:
        yield client


REFUSED = [
    "/dev/zero",
    "/dev/null",
    "/dev/urandom",
    "/usr",
    "/",
    "/etc/passwd",
    "/proc/self/environ",
    "/no/such/file.json",
    "relative/../../etc/hostname",
    "a\u0000b",
    "",
]


@pytest.mark.parametrize("path", REFUSED)
def test_scenario_paths_outside_the_roots_are_one_400(client: httpx.Client, path: str) -> None:
    started = time.monotonic()
    r = client.post("/_emulator/scenarios/run", json={"path": path})
    assert r.status_code == 400, r.text
    assert time.monotonic() - started < 5
    assert r.json()["errors"][0]["field"] == "path"
    # the same sentence whatever the path: nothing tells what exists
    first = client.post("/_emulator/scenarios/run", json={"path": "/no/such"}).json()["message"]
    assert r.json()["message"] == first
    assert path not in r.json()["message"] or not path


@pytest.mark.parametrize("path", REFUSED)
def test_fixture_directories_outside_the_roots_are_one_400(client: httpx.Client, path: str) -> None:
    r = client.post("/_emulator/fixtures", json={"directory": path})
    assert r.status_code == 400, r.text
    assert r.json()["errors"][0]["field"] == "directory"


@pytest.mark.parametrize(
    "name", ["trap/scenario.json", "trap/socket.json", "trap/outside.json", "trap"]
)
def test_devices_fifos_sockets_and_links_out_are_refused_inside_a_root(
    client: httpx.Client, allowed: Path, name: str
) -> None:
    started = time.monotonic()
    r = client.post("/_emulator/scenarios/run", json={"path": str(allowed / name)})
    assert r.status_code == 400, r.text
    assert time.monotonic() - started < 5  # a FIFO never blocks the server
    assert client.get("/_emulator/health").status_code == 200


def test_a_fixture_directory_with_a_fifo_is_refused(client: httpx.Client, allowed: Path) -> None:
    directory = allowed / "trap" / "fifo-fixtures"
    r = client.post("/_emulator/fixtures", json={"directory": str(directory)})
    assert r.status_code == 400, r.text
    assert client.get("/_emulator/health").json()["counts"]["contacts"] == 200


def test_an_inline_scenario_cannot_name_fixtures_outside_the_roots(client: httpx.Client) -> None:
    scenario = {"name": "x", "fixtures": {"directory": "/etc"}, "expect": {"report": {}}}
    r = client.post("/_emulator/scenarios/run", json=scenario)
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == "fixtures.directory"


def test_files_under_the_roots_are_read(client: httpx.Client, allowed: Path) -> None:
    for path in (ONE_SCENARIO, allowed / "one.json"):
        r = client.post("/_emulator/scenarios/run", json={"path": str(path)})
        assert r.status_code == 200 and r.json()["passed"] == 1, r.text
    r = client.post("/_emulator/fixtures", json={"directory": str(allowed / "fixtures")})
    assert r.status_code == 200, r.text
    assert r.json()["contacts"] == 200


def test_the_cli_reads_any_path(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.json"
    shutil.copy(ONE_SCENARIO, outside)
    shutil.copytree(SCENARIOS / "_small", tmp_path / "_small")
    ran = cli("replay", str(outside), timeout=60)
    assert ran.code == 0, ran.err
