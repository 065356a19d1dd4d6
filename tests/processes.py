"""Run `emulator serve` as a real process on a free loopback port, stopped on exit.

The start-up and stop are the pytest plugin's own (`emulator.testing.EmulatorServer`).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from emulator.testing import EmulatorServer, free_port

ROOT = Path(__file__).resolve().parents[1]
# A user's pytest run, as the tests start one (a fresh interpreter each): without the cache and
# without the two plugins our test extras install that a user of the package does not have.
# Each costs a run ~1 s (hypothesis) and ~2.5 s (schemathesis, which imports hypothesis) of CPU.
USER_PYTEST = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:schemathesis")

__all__ = ["ROOT", "USER_PYTEST", "emulator_process", "free_port", "generated_fixtures"]


def generated_fixtures(out: Path, *, contacts: int, companies: int, seed: int, **more: int) -> Path:
    """`scripts/generate_fixtures.py` run into `out`, as a user runs it; `more` are its other
    options by name (campaigns=6)."""
    options = {"contacts": contacts, "companies": companies, "seed": seed, **more}
    subprocess.run(
        [
            *(sys.executable, str(ROOT / "scripts" / "generate_fixtures.py")),
            *(arg for name, value in options.items() for arg in (f"--{name}", str(value))),
            *("--out", str(out)),
        ],
        check=True,
        capture_output=True,
        cwd=ROOT,
        timeout=120,
    )
    return out


@contextmanager
def emulator_process(*args: str, timeout: float = 20.0) -> Iterator[str]:
    """Start `emulator serve ARGS` on a free port; yield its base URL once /_emulator/health is 200."""
    server = EmulatorServer.start(list(args), timeout)
    try:
        yield server.url
    finally:
        server.stop()
