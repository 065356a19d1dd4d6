"""Slow and half-open clients against a real `emulator serve`: request heads have a deadline,
open connections a cap, and neither lets a flood of half-sent heads lock others out."""

from __future__ import annotations

import contextlib
import resource
import select
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

from emulator.connection_limits import RESERVED_FDS, connection_cap
from emulator.testing import EmulatorServer

HEAD_TIMEOUT = 2.0
HALF_HEAD = b"GET /_emulator/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "


@contextmanager
def soft_fd_limit(limit: int) -> Iterator[None]:
    """Run the block (a server's start) with the soft descriptor limit at `limit`: the child
    process keeps it, this one gets its own back after."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.fixture(scope="module")
def server() -> Iterator[EmulatorServer]:
    """A server limited as in the report: `ulimit -n 1024`."""
    if resource.getrlimit(resource.RLIMIT_NOFILE)[1] < 1400:
        pytest.skip("the test needs 1400 descriptors of its own (ulimit -Hn)")
    with soft_fd_limit(1024):
        server = EmulatorServer.start(["--no-seed-cache", "--head-timeout", str(HEAD_TIMEOUT)])
    try:
        yield server
    finally:
        server.stop()


def port_of(server: EmulatorServer) -> int:
    return int(server.url.rsplit(":", 1)[1])


def closed(sock: socket.socket, within: float) -> float | None:
    """Seconds until the server closed `sock` (EOF or reset), or None if it did not within
    `within` seconds (0: only whether it is closed already). poll, not select: the
    descriptors here go past 1024."""
    start = time.monotonic()
    sock.setblocking(False)
    poller = select.poll()
    poller.register(sock, select.POLLIN | select.POLLHUP | select.POLLERR)
    while True:
        left = within - (time.monotonic() - start)
        if poller.poll(max(0.0, left) * 1000):
            try:
                if sock.recv(4096) == b"":
                    return time.monotonic() - start
            except (ConnectionResetError, BrokenPipeError):
                return time.monotonic() - start
            except BlockingIOError:
                pass
        if left <= 0:
            return None


def health_seconds(server: EmulatorServer) -> float:
    start = time.monotonic()
    assert httpx.get(f"{server.url}/_emulator/health", timeout=5).status_code == 200
    return time.monotonic() - start


def test_a_silent_connection_is_closed_at_the_head_deadline(server: EmulatorServer) -> None:
    with socket.create_connection(("127.0.0.1", port_of(server))) as sock:
        seconds = closed(sock, HEAD_TIMEOUT + 3)
    assert seconds is not None and seconds <= HEAD_TIMEOUT + 1


def test_a_head_sent_a_byte_at_a_time_is_cut_at_the_deadline(server: EmulatorServer) -> None:
    with socket.create_connection(("127.0.0.1", port_of(server))) as sock:
        start = time.monotonic()
        try:
            for byte in HALF_HEAD + b"x" * 100:
                sock.sendall(bytes([byte]))
                time.sleep(0.1)
                if time.monotonic() - start > HEAD_TIMEOUT + 3:
                    break
        except (BrokenPipeError, ConnectionResetError):
            pass
        seconds = time.monotonic() - start
        assert seconds <= HEAD_TIMEOUT + 1.5 or closed(sock, 0.1) is not None
    assert seconds <= HEAD_TIMEOUT + 1.5, f"still open after {seconds:.1f} s"


def test_a_kept_alive_connection_has_the_deadline_on_its_next_head(server: EmulatorServer) -> None:
    with socket.create_connection(("127.0.0.1", port_of(server))) as sock:
        sock.sendall(b"GET /_emulator/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert sock.recv(4096).startswith(b"HTTP/1.1 200")
        sock.sendall(HALF_HEAD)  # the next request's head, never finished
        seconds = closed(sock, HEAD_TIMEOUT + 3)
    assert seconds is not None and seconds <= HEAD_TIMEOUT + 1


def test_a_later_head_gets_its_whole_deadline_from_its_first_byte(
    server: EmulatorServer,
) -> None:
    """The connection's timer, armed at its open, fires while a later head is on its way:
    that head is not cut then, but `--head-timeout` after its own first byte."""
    with socket.create_connection(("127.0.0.1", port_of(server))) as sock:
        sock.sendall(b"GET /_emulator/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert sock.recv(4096).startswith(b"HTTP/1.1 200")
        time.sleep(HEAD_TIMEOUT * 0.6)
        sock.sendall(HALF_HEAD)  # begun 0.6 deadlines after the open
        assert closed(sock, HEAD_TIMEOUT * 0.8) is None  # past the open's deadline: still open
        seconds = closed(sock, HEAD_TIMEOUT)
    assert seconds is not None and seconds <= HEAD_TIMEOUT * 0.2 + 1


def test_1100_half_sent_heads_lock_nobody_out_and_are_all_closed(server: EmulatorServer) -> None:
    """The report: under `ulimit -n 1024`, 1,100 half-sent heads made the server reset every
    new connection. Now past the cap the oldest waiting connections make room, so a new
    request is answered meanwhile, and every half-sent head is closed at the deadline."""
    socks: list[socket.socket] = []
    try:
        for _ in range(1100):
            sock = socket.create_connection(("127.0.0.1", port_of(server)), timeout=5)
            # already closed to make room: what the server should do
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                sock.sendall(HALF_HEAD)
            socks.append(sock)
        assert health_seconds(server) < 2  # answered while the flood is open
        start = time.monotonic()
        open_socks = [s for s in socks if closed(s, 0) is None]
        for sock in open_socks:
            assert closed(sock, max(0.1, HEAD_TIMEOUT + 2 - (time.monotonic() - start))) is not None
    finally:
        for sock in socks:
            sock.close()
    assert health_seconds(server) < 2


def test_the_cap_fits_the_descriptor_limit() -> None:
    """With a hard limit too low for the cap, the cap is lowered and says so (in a process of
    its own: a hard limit cannot be raised again)."""
    code = (
        "import resource; resource.setrlimit(resource.RLIMIT_NOFILE, (400, 400)); "
        "from emulator.connection_limits import connection_cap; print(connection_cap(512))"
    )
    ran = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=60
    )
    assert ran.returncode == 0, ran.stderr
    assert f"({400 - RESERVED_FDS}, " in ran.stdout and "ulimit -n" in ran.stdout
    assert connection_cap(512) == (512, None)  # here: the soft limit is raised if it must be
