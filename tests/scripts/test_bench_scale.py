"""scripts/bench_scale.py keeps working: a tiny run prints every figure beside its target."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PHASES = ("companies", "contacts", "associations", "activities", "tasks", "engagement")
FILTERS = ("?search=", "?updatedAtFrom=", "?updatedAtTo=", "?companyId=", "?listId=")


def test_tiny_run_prints_every_export_phase_and_filter_with_a_verdict(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "bench_scale.py"),
            *("--sizes", "300", "--runs", "1", "--samples", "5", "--only", "export,filters"),
            *("--work", str(tmp_path)),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert re.search(r"embedded export +[\d,]+ rec/s, run [\d.]+ s", out), out
    for phase in PHASES:
        found = re.search(
            rf"{phase} per call +[\d.]+ vs [\d.]+ ms \([\d.]+x\) +\[.*: (met|MISSED)\]", out
        )
        assert found, (phase, out)
    for name in FILTERS:
        found = re.search(
            rf"contacts {re.escape(name)} +[\d.]+ / [\d.]+ ms +\[.*: (met|MISSED)\]", out
        )
        assert found, (name, out)
    assert re.search(r"POST /v1/companies/search +[\d.]+ / [\d.]+ ms", out), out
    assert re.search(r"search index ready +[\d.]+ s after spawn", out), out
