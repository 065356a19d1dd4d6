"""Run `emulator serve` as a real process on a free loopback port, stopped on exit."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def emulator_process(*args: str, timeout: float = 20.0) -> Iterator[str]:
    """Start `emulator serve ARGS` on a free port; yield its base URL once /_emulator/health is 200."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "emulator", "serve", "--port", str(port), *args],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                out, err = proc.communicate()
                raise AssertionError(f"emulator exited {proc.returncode}: {out!r} {err!r}")
            try:
                if httpx.get(f"{base}/_emulator/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError("emulator did not start in time")
            time.sleep(0.05)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
