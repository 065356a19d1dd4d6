"""scripts/bench_scale.py keeps working: a tiny run prints every figure beside its target,
the cost table and the count of targets, and writes the same figures with --json."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "bench_scale.py"
PHASES = ("companies", "contacts", "associations", "activities", "tasks", "engagement")
FILTERS = ("?search=", "?updatedAtFrom=", "?updatedAtTo=", "?companyId=", "?listId=")


def test_tiny_run_prints_every_figure_with_a_verdict_and_writes_them_as_json(
    tmp_path: Path,
) -> None:
    # an existing WORK/fixtures-N is used as it is (the fixtures a machine already holds)
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "generate_fixtures.py"),
            *("--contacts", "300", "--companies", "30", "--seed", "7"),
            *("--out", str(tmp_path / "fixtures-300")),
        ],
        check=True,
        capture_output=True,
        cwd=ROOT,
        timeout=120,
    )
    figures = tmp_path / "figures.json"
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            *("--sizes", "300", "--runs", "1", "--samples", "5", "--days", "1"),
            *("--only", "export,filters,start,simulation"),
            *("--work", str(tmp_path), "--json", str(figures)),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "generating" not in out, out
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
    assert re.search(r"cold start +[\d.]+ s", out), out
    assert re.search(r"warm start \(same --seed-cache\) +[\d.]+ s", out), out
    assert re.search(r"peak RSS in memory, warm +[\d,]+ MB, [\d.]+x image", out), out
    assert re.search(r"--db second start +[\d.]+ s, peak [\d,]+ MB +\[.*: (met|MISSED)\]", out)
    assert re.search(r"one-day advances +[\d,]+ events/s \([\d,]+ in [\d.]+ s\)", out), out
    assert re.search(r"slowest one-day advance +[\d.]+ s", out), out
    for row in ("µs per record", "p99 ms, first call", "s per 100,000", "µs per event"):
        assert re.search(rf"^  .*{row}.* +[\d.,]+$", out, re.M), (row, out)

    # the last line counts the verdicts printed; the JSON holds the same figures and counts
    verdicts = re.findall(r": (met|MISSED)\]$", out, re.M)
    last = out.strip().splitlines()[-1]
    assert last == f"targets: {verdicts.count('met')} met, {verdicts.count('MISSED')} MISSED"
    written = json.loads(figures.read_text())
    assert written["sizes"] == [300]
    assert (written["met"], written["missed"]) == (verdicts.count("met"), verdicts.count("MISSED"))
    assert {f["part"] for f in written["figures"]} == {"export", "filters", "start", "simulation"}
    events = next(f for f in written["figures"] if f["name"] == "one-day advances")
    assert events["values"]["events"] > 0 and events["values"]["seconds"] > 0
    assert all(set(columns) == {"300"} for columns in written["costs"].values())
    assert written["failed"] == []


def test_an_unknown_part_is_refused() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--only", "export,speed"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 2
    assert "--only: unknown part(s) speed" in done.stderr
