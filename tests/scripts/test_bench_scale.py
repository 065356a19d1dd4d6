"""scripts/bench_scale.py keeps working: a tiny run prints every figure beside its target,
the cost table and the count of targets, and writes the same figures with --json."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.processes import generated_fixtures

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "bench_scale.py"
PHASES = ("companies", "contacts", "associations", "activities", "tasks", "engagement")
FILTERS = ("?search=", "?updatedAtFrom=", "?updatedAtTo=", "?companyId=", "?listId=")


def tiny_run(tmp_path: Path, parts: str, *extra: str) -> tuple[str, dict[str, Any]]:
    """bench_scale over 300 contacts already generated as WORK/fixtures-300: (stdout, JSON)."""
    generated_fixtures(tmp_path / "fixtures-300", contacts=300, companies=30, seed=7)
    figures = tmp_path / "figures.json"
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            *("--sizes", "300", "--runs", "1", "--samples", "5", "--days", "1"),
            *("--only", parts, "--work", str(tmp_path), "--json", str(figures)),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "generating" not in out, out  # the existing fixtures-300 were used

    # the last line counts the verdicts printed; the JSON holds the same figures and counts
    verdicts = re.findall(r": (met|MISSED)\]$", out, re.M)
    last = out.strip().splitlines()[-1]
    assert last == f"targets: {verdicts.count('met')} met, {verdicts.count('MISSED')} MISSED"
    written = json.loads(figures.read_text())
    assert written["sizes"] == [300] and written["failed"] == []
    assert (written["met"], written["missed"]) == (verdicts.count("met"), verdicts.count("MISSED"))
    assert {f["part"] for f in written["figures"]} == set(parts.split(","))
    assert all(set(columns) == {"300"} for columns in written["costs"].values())
    return out, written


def test_export_and_filters_print_every_phase_and_filter_with_a_verdict(tmp_path: Path) -> None:
    out, _ = tiny_run(tmp_path, "export,filters")
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
    for row in ("µs per record", "p99 ms, first call", "p99 ms, after a write"):
        assert re.search(rf"^  .*{row}.* +[\d.,]+$", out, re.M), (row, out)


def test_start_and_simulation_print_their_figures_and_costs(tmp_path: Path) -> None:
    out, written = tiny_run(tmp_path, "start,simulation")
    assert re.search(r"cold start +[\d.]+ s", out), out
    assert re.search(r"warm start \(same --seed-cache\) +[\d.]+ s", out), out
    assert re.search(r"peak RSS in memory, warm +[\d,]+ MB, [\d.]+x image", out), out
    assert re.search(r"--db second start +[\d.]+ s, peak [\d,]+ MB +\[.*: (met|MISSED)\]", out)
    assert re.search(r"one-day advances +[\d,]+ events/s \([\d,]+ in [\d.]+ s\)", out), out
    assert re.search(r"slowest one-day advance +[\d.]+ s", out), out
    for row in ("s per 100,000", "µs per event"):
        assert re.search(rf"^  .*{row}.* +[\d.,]+$", out, re.M), (row, out)
    events = next(f for f in written["figures"] if f["name"] == "one-day advances")
    assert events["values"]["events"] > 0 and events["values"]["seconds"] > 0
    image = next(f for f in written["figures"] if f["name"] == "peak RSS in memory, warm")
    assert image["values"]["image_mb"] > 0 and image["values"]["peak_mb"] > 0


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


def test_mixed_measures_the_ceiling_right_before_each_load(tmp_path: Path) -> None:
    """The ceiling comes after the server's start and index, just before its load (measured
    once before the servers, it was minutes away from the load at 1,000,000 contacts), and
    every page the load reads is read twice before either (a page is kept from then on)."""
    out, written = tiny_run(tmp_path, "mixed", "--seconds", "1")
    lines = [line.strip() for line in out.splitlines()]
    ready = next(i for i, line in enumerate(lines) if line.startswith("search index ready"))
    filled = next(i for i, line in enumerate(lines) if line.startswith("every page of the load"))
    ceiling = next(i for i, line in enumerate(lines) if line.startswith("ceiling (bare Starlette)"))
    load = next(i for i, line in enumerate(lines) if line.startswith("pages + 1 in 10"))
    assert ready < filled < ceiling < load, out
    assert re.search(r"every page of the load read twice first +3 pages in [\d.]+ s", out), out
    assert re.search(r"pages \+ 1 in 10 new contacts +[\d,]+ req/s [\d.]+x p99", out), out
    figures = {f["name"]: f["values"] for f in written["figures"]}
    mixed = figures["pages + 1 in 10 new contacts"]
    ceiling_rps = figures["ceiling (bare Starlette), just before"]["rps"]
    assert abs(mixed["ratio"] - mixed["rps"] / ceiling_rps) < 1e-9
    # the servers' own CPU a request, beside the ratio (which the machine's load moves too)
    assert re.search(r"server CPU a request \(the ceiling's\) +[\d,]+ us \([\d,]+ us\)", out), out
    cpu = figures["server CPU a request (the ceiling's)"]
    assert cpu["cpu_us"] == mixed["cpu_us"] > 0
    assert cpu["ceiling_cpu_us"] > 0
