"""Workspace benchmark: how fast a workspace is created, and how much memory 50 of them take.

Serves the default fixtures with `emulator serve` in its own process, creates workspaces
over real HTTP (POST /_emulator/workspaces, each a copy of the seeded image) and reads the
server's resident memory (RSS, /proc) once 50 are live, each having answered a /v1 call.
Prints both figures beside their targets with met/MISSED.

    python scripts/bench_workspaces.py                 # 50 workspaces
    python scripts/bench_workspaces.py --count 80
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from emulator.testing import EmulatorServer  # noqa: E402 (after the sys.path line above)

CREATE_TARGET_MS = 50.0  # creating one from the default fixtures
MEMORY_TARGET_MB = 600.0  # 50 live default workspaces, the whole server's RSS


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc status")


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=50)
    args = parser.parse_args()
    took: list[float] = []
    server = EmulatorServer.start(["--max-workspaces", str(args.count + 1)], timeout=120)
    assert server.process is not None
    pid = server.process.pid
    with httpx.Client(base_url=server.url, timeout=60) as client:
        before = rss_mb(pid)
        client.post("/_emulator/workspaces").raise_for_status()  # the first keeps the image
        for _ in range(args.count - 1):
            started = time.perf_counter()
            created = client.post("/_emulator/workspaces").raise_for_status().json()
            took.append((time.perf_counter() - started) * 1000)
            client.get(
                f"/w/{created['id']}/v1/contacts", headers={"x-api-key": "demo-all"}
            ).raise_for_status()
        time.sleep(0.5)
        after = rss_mb(pid)
    server.stop()
    median = statistics.median(took)
    print(f"workspaces on the default fixtures: {args.count} created over HTTP")
    print(
        f"  create one   median {median:7.2f} ms   worst {max(took):7.2f} ms"
        f"   target <= {CREATE_TARGET_MS:.0f} ms (median): {verdict(median <= CREATE_TARGET_MS)}"
    )
    print(
        f"  server RSS   {after:7.1f} MB with {args.count} live (before: {before:.1f} MB)"
        f"   target <= {MEMORY_TARGET_MB:.0f} MB: {verdict(after <= MEMORY_TARGET_MB)}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
