"""Run `emulator serve` as a real process on a free loopback port, stopped on exit.

The start-up and stop are the pytest plugin's own (`emulator.testing.EmulatorServer`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from emulator.testing import EmulatorServer, free_port

ROOT = Path(__file__).resolve().parents[1]

__all__ = ["ROOT", "emulator_process", "free_port"]


@contextmanager
def emulator_process(*args: str, timeout: float = 20.0) -> Iterator[str]:
    """Start `emulator serve ARGS` on a free port; yield its base URL once /_emulator/health is 200."""
    server = EmulatorServer.start(list(args), timeout)
    try:
        yield server.url
    finally:
        server.stop()
