"""Snapshot benchmark: time POST /_emulator/snapshots and .../restore over real HTTP.

Serves a fixture directory with `emulator serve` in its own process, takes a snapshot,
changes the state, restores, N times; prints the median and worst wall time of each call
as the client sees it, and the restore time the server reports (durationMs).

    python scripts/bench_snapshots.py                          # fixtures/default, 20 rounds
    python scripts/bench_snapshots.py --fixtures build/large-fixtures --rounds 5
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

from tests.processes import emulator_process  # noqa: E402 (after the sys.path line above)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fixtures", default=str(ROOT / "fixtures" / "default"))
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    took: dict[str, list[float]] = {"snapshot": [], "restore": [], "restore (server)": []}
    with (
        emulator_process("--fixtures", args.fixtures, timeout=300) as base,
        httpx.Client(base_url=f"{base}/_emulator", timeout=120) as client,
    ):
        size = 0
        for i in range(args.rounds):
            started = time.perf_counter()
            snap = client.post("/snapshots").raise_for_status().json()
            took["snapshot"].append((time.perf_counter() - started) * 1000)
            size = snap["bytes"]
            client.put("/crm/settings", json={"syncErrors": [f"x{i}@example.com"]})
            started = time.perf_counter()
            restored = client.post(f"/snapshots/{snap['id']}/restore").raise_for_status().json()
            took["restore"].append((time.perf_counter() - started) * 1000)
            took["restore (server)"].append(restored["durationMs"])
            client.delete(f"/snapshots/{snap['id']}")
    print(f"fixtures {args.fixtures}: database image {size / 1e6:.2f} MB, {args.rounds} rounds")
    for name, values in took.items():
        print(
            f"  {name:<17} median {statistics.median(values):7.2f} ms   worst {max(values):7.2f} ms"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
