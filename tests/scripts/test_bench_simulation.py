"""scripts/bench_simulation.py keeps working: a tiny run prints every figure."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_tiny_run_prints_events_and_deliveries_per_second() -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "bench_simulation.py"),
            "--contacts",
            "100",
            "--campaigns",
            "4",
            "--days",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert re.search(r"no CRM: +[\d,]+ events in [\d.]+ s = [\d,]+/s", out), out
    assert re.search(r"with CRM: +([\d,]+ events in .* autoSync on|skipped: .*)", out), out
    found = re.search(r"webhooks: +([\d,]+) deliveries \(([\d,]+) events\)", out)
    assert found and int(found[1].replace(",", "")) > 0, out
