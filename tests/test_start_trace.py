"""EMULATOR_START_TRACE: a cold start's phases stamped on stderr by each of its processes
(the server, the seeding process, its contacts worker), on one clock and in order; unset,
nothing is written."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from emulator.start_trace import ENV
from tests.processes import free_port
from tests.test_seed_process import ASIDE, large_copy


def serve_once(
    tmp_path: Path, fixtures: Path, env: dict[str, str], aside: tuple[str, ...] = ASIDE
) -> str:
    """stderr of one `emulator serve` from a fresh seed cache, stopped once it answers."""
    port, log = free_port(), tmp_path / "stderr.log"
    cache = tmp_path / f"cache-{len(list(tmp_path.glob('cache-*')))}"
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "emulator", "serve", "--port", str(port)),
                *("--fixtures", str(fixtures), "--seed-cache", str(cache), *aside),
            ],
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env,
        )
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    if httpx.get(f"http://127.0.0.1:{port}/_emulator/health").status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                assert proc.poll() is None, log.read_text()
                time.sleep(0.05)
            else:
                raise AssertionError("the server did not answer within 60 s")
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    return log.read_text()


def test_a_traced_cold_start_stamps_every_process_phase_in_order(tmp_path: Path) -> None:
    fixtures = large_copy(tmp_path)
    err = serve_once(tmp_path, fixtures, {**os.environ, ENV: "1"})
    stamps = [line.split(" ", 4) for line in err.splitlines() if line.startswith("start-trace ")]
    phases = [(rest.split(": ", 1)[0], rest.split(": ", 1)[1]) for *_, rest in stamps]
    by_process: dict[str, list[str]] = {}
    for process, phase in phases:
        by_process.setdefault(process, []).append(phase)
    assert set(by_process) == {"server", "seeding process", "contacts worker"}
    # three processes, each with its own pid, stamping on one clock
    assert len({pid for _, _, pid, _, _ in stamps}) == 3
    for pid in {pid for _, _, pid, _, _ in stamps}:
        times = [float(t) for _, t, p, _, _ in stamps if p == pid]
        assert times == sorted(times)
        # each with the CPU its process spent so far, which never goes back
        cpu = [float(c) for _, _, p, c, _ in stamps if p == pid]
        assert cpu == sorted(cpu) and cpu[-1] > 0
    assert by_process["contacts worker"] == [
        "started",
        "contacts and memberships written",
        "memberships handed over",
        "contacts' indexes built",
        "answered",
    ]
    seeding = by_process["seeding process"]
    assert seeding[:2] == ["started", "fixtures hashed"]
    assert seeding[-5:] == [
        "contacts worker done",
        "contacts copied, references to contacts checked",
        "image committed",
        "answered",  # before its clean-up: the server reads the image meanwhile
        "decoded files freed, scratch files removed",
    ]
    assert "seeder emulator.platform.seed.seed_records" in seeding
    assert seeding.index("memberships copied") < seeding.index(
        "seeder emulator.simulation.campaigns.seed.seed"
    )
    # the server's modules imported while the seeding process ran: the app is only built
    assert by_process["server"][-4:] == [
        "seeding process answered",
        "image read into memory",
        "app created",
        "listening",
    ]


def test_a_server_that_seeds_hashes_the_files_while_it_imports(tmp_path: Path) -> None:
    fixtures = large_copy(tmp_path)
    err = serve_once(tmp_path, fixtures, {**os.environ, ENV: "1"}, aside=())
    stamps = [line.split(" ", 4) for line in err.splitlines() if line.startswith("start-trace ")]
    server = [rest.split(": ", 1)[1] for *_, rest in stamps if rest.startswith("server: ")]
    assert "seeder emulator.platform.seed.seed_records" in server  # no seeding process
    # the digest came from the thread started before the server's modules were imported
    assert server.index("fixtures hashed (on a thread)") < server.index("app created")


def test_an_untraced_start_writes_no_stamp(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != ENV}
    assert "start-trace" not in serve_once(tmp_path, large_copy(tmp_path), env)
