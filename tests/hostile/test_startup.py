"""Start-up tells the truth and stopping is prompt (issue 11 item 5)."""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from emulator.testing import free_port
from tests.hostile.harness import cli
from tests.servers import recording_server


@contextmanager
def serving(*args: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """`emulator serve ARGS` on a free port, once it printed its banner; killed at the end."""
    port = free_port()
    with subprocess.Popen(
        [sys.executable, "-m", "emulator", "serve", "--port", str(port), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            assert f"listening on http://127.0.0.1:{port}" in line, line
            yield process, f"http://127.0.0.1:{port}"
        finally:
            if process.poll() is None:
                process.kill()
            process.wait()


def stop_within(process: subprocess.Popen[str], sig: int, seconds: float) -> None:
    sent = time.monotonic()
    process.send_signal(sig)
    process.wait(10)
    assert time.monotonic() - sent < seconds


def assert_one_line_failure(ran_err: str, code: int, seconds: float, *needles: str) -> None:
    assert code == 2
    assert seconds < 5
    assert "Traceback" not in ran_err
    lines = [line for line in ran_err.splitlines() if line.strip()]
    assert lines and lines[-1].startswith(("emulator", "usage")), ran_err
    for needle in needles:
        assert needle in ran_err, (needle, ran_err)


def test_a_file_that_is_not_sqlite_is_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "state.db"
    bad.write_text("not a database, just text\n" * 100)
    ran = cli("serve", "--db", str(bad), "--port", str(free_port()), timeout=20)
    assert_one_line_failure(ran.err, ran.code, ran.seconds, str(bad), "not a database")
    assert "listening" not in ran.out


def test_a_db_in_a_missing_directory_is_one_line_and_exit_2(tmp_path: Path) -> None:
    ran = cli("serve", "--db", str(tmp_path / "no" / "such" / "x.db"), "--port", str(free_port()))
    assert_one_line_failure(ran.err, ran.code, ran.seconds, "cannot open --db")


def test_a_port_in_use_is_one_line_and_exit_2() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        ran = cli("serve", "--port", str(port))
    assert_one_line_failure(ran.err, ran.code, ran.seconds, f"127.0.0.1:{port}", "in use")
    assert "listening" not in ran.out


@pytest.mark.parametrize("port", ["99999", "-1", "http"])
def test_an_out_of_range_port_is_refused(port: str) -> None:
    ran = cli("serve", "--port", port)
    assert_one_line_failure(ran.err, ran.code, ran.seconds, "--port", "0..65535")


def test_an_unknown_log_level_is_one_line_and_exit_2() -> None:
    ran = cli("serve", "--log-level", "loud", "--port", str(free_port()))
    assert_one_line_failure(ran.err, ran.code, ran.seconds, "--log-level", "loud")


def test_listening_is_printed_only_once_the_port_answers() -> None:
    with serving() as (process, base):
        # the very moment the banner is out, the port is bound and the store open
        assert httpx.get(f"{base}/_emulator/health", timeout=5).status_code == 200
        stop_within(process, signal.SIGTERM, 5)


def test_binding_beyond_loopback_without_a_token_warns() -> None:
    # 192.0.2.1 (TEST-NET-1) is on no interface: the bind fails, after the warning.
    ran = cli("serve", "--host", "192.0.2.1", "--port", str(free_port()))
    assert "without --control-token" in ran.err and "anyone" in ran.err
    assert_one_line_failure(ran.err, ran.code, ran.seconds, "cannot listen on 192.0.2.1")
    quiet = cli("serve", "--host", "192.0.2.1", "--port", str(free_port()), "--control-token", "t")
    assert "without --control-token" not in quiet.err


def slow_fixtures(tmp_path: Path, url: str) -> Path:
    from emulator.fixtures.loader import DEFAULT_FIXTURES

    for file in DEFAULT_FIXTURES.glob("*.json"):
        (tmp_path / file.name).write_bytes(file.read_bytes())
    hooks = json.loads((tmp_path / "webhooks.json").read_text())
    for hook in hooks:
        hook["url"] = f"{url}/hooks/{hook['id']}"
    (tmp_path / "webhooks.json").write_text(json.dumps(hooks))
    return tmp_path


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_mid_advance_stops_the_server_within_5_s(tmp_path: Path, sig: int) -> None:
    with recording_server() as receiver:
        receiver.delay = 2.0  # every delivery hangs: the advance lasts far beyond the signal
        fixtures = slow_fixtures(tmp_path, receiver.url)
        with serving("--fixtures", str(fixtures)) as (process, base):
            advance = threading.Thread(
                target=lambda: _ignore(
                    lambda: httpx.post(
                        f"{base}/_emulator/clock/advance", json={"seconds": 30 * 86400}, timeout=60
                    )
                )
            )
            advance.start()
            deadline = time.monotonic() + 10
            while not receiver.requests:  # the advance is delivering: mid-advance for sure
                assert time.monotonic() < deadline
                time.sleep(0.05)
            stop_within(process, sig, 5)
            advance.join(10)


def test_sigterm_mid_export_stops_the_server_within_5_s() -> None:
    with serving() as (process, base):
        slow = {"faults": [{"endpoint": "*", "latencyMs": 3000}]}
        assert httpx.put(f"{base}/_emulator/crm/settings", json=slow).status_code == 200
        assert httpx.post(f"{base}/_emulator/exports").status_code == 202
        time.sleep(0.5)
        stop_within(process, signal.SIGTERM, 5)


def _ignore(work: Callable[[], object]) -> None:
    with contextlib.suppress(httpx.HTTPError):  # the server stopped under it: the point
        work()
