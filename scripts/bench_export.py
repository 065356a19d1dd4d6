"""Export benchmark: records/s and peak RSS of `emulator export` against `emulator serve` as the CRM.

For each size (contacts; companies = contacts / 10) it generates fixtures, serves them in a
separate process as the CRM, seeds a platform database, then runs `emulator export` twice as
its own process: the first run creates, the second updates. It prints records/s over the
companies and contacts phases, the whole run's time, and the exporter's peak RSS.

    python scripts/bench_export.py                  # 10,000 and 100,000 contacts
    python scripts/bench_export.py --sizes 2000     # a quick look

Targets (issue 13): >= 10,000 records/s at 100,000 contacts, and flat exporter memory (peak
RSS at the largest size within 1.2 x the smallest's); printed at the end, met or MISSED.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.processes import emulator_process  # noqa: E402 (after the sys.path line above)


def fixtures_for(contacts: int, out: Path) -> Path:
    directory = out / f"fixtures-{contacts}"
    if not (directory / "contacts.json").exists():
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "scripts" / "generate_fixtures.py"),
                "--contacts",
                str(contacts),
                "--companies",
                str(max(1, contacts // 10)),
                "--seed",
                "1",
                "--out",
                str(directory),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    return directory


def seed_platform(fixtures: Path, db: Path) -> None:
    """Write the platform database beforehand, in its own process: the measured process only
    exports, and this one stays small (a forked child's peak RSS counts its parent's pages)."""
    code = (
        "import asyncio, sys\n"
        "from emulator.platform.seed import seed\n"
        "from emulator.settings import Settings\n"
        "from emulator.state import Emulator\n"
        "async def run():\n"
        "    e = Emulator(Settings(fixtures=sys.argv[1], db=sys.argv[2]), seeders=[seed])\n"
        "    await e.start()\n"
        "    await e.close()\n"
        "asyncio.run(run())\n"
    )
    subprocess.run([sys.executable, "-c", code, str(fixtures), str(db)], cwd=ROOT, check=True)


def export(crm: str, db: Path, report: Path) -> tuple[dict, float, int]:
    """One `emulator export` process: (report, wall seconds, peak RSS in KiB)."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "emulator",
            "export",
            "--crm-url",
            f"{crm}/crm",
            "--api-key",
            "crm-demo-key",
            "--db",
            str(db),
            "--report",
            str(report),
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    err = proc.stderr.read().decode() if proc.stderr else ""
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) == 2:
        raise SystemExit(f"export failed ({status}): {err}")
    return json.loads(report.read_text()), wall, usage.ru_maxrss


def figures(report: dict) -> tuple[int, float, float]:
    """Records of the companies and contacts phases, their seconds, the exporter's CPU seconds."""
    phases = report["phases"]
    records = phases["companies"]["sent"] + phases["contacts"]["sent"]
    seconds = phases["companies"]["seconds"] + phases["contacts"]["seconds"]
    return records, seconds, phases["companies"]["cpuSeconds"] + phases["contacts"]["cpuSeconds"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="contact counts, comma-separated")
    parser.add_argument("--out", default=str(ROOT / "build" / "bench-export"))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    per_record: dict[int, list[float]] = {}
    peak_rss: dict[int, float] = {}
    print(
        f"{'contacts':>9} {'run':>7} {'records':>8} {'rec/s':>8} {'us/rec':>7} "
        f"{'cpu%':>5} {'created':>8} {'updated':>8} {'failed':>7} {'activities':>10} {'run s':>7} "
        f"{'RSS MB':>7}"
    )
    for size in (int(s) for s in args.sizes.split(",")):
        fixtures = fixtures_for(size, out)
        with (
            tempfile.TemporaryDirectory() as tmp,
            emulator_process("--fixtures", str(fixtures), timeout=300) as crm,
        ):
            db = Path(tmp) / "platform.db"
            seed_platform(fixtures, db)
            for label in ("first", "second"):
                report, wall, rss = export(crm, db, Path(tmp) / f"{label}.json")
                records, seconds, cpu = figures(report)
                ph = report["phases"]
                created = ph["companies"]["created"] + ph["contacts"]["created"]
                updated = ph["companies"]["updated"] + ph["contacts"]["updated"]
                failed = ph["companies"]["failed"] + ph["contacts"]["failed"]
                rate = records / seconds if seconds else 0.0
                per_record.setdefault(size, []).append(1e6 * seconds / max(records, 1))
                peak_rss[size] = max(peak_rss.get(size, 0.0), rss / 1024)
                print(
                    f"{size:>9} {label:>7} {records:>8} {rate:>8.0f} {1e6 / max(rate, 1e-9):>7.0f} "
                    f"{100 * cpu / max(seconds, 1e-9):>5.0f} {created:>8} {updated:>8} {failed:>7} {ph['activities']['created']:>10} "
                    f"{wall:>7.1f} {rss / 1024:>7.0f}",
                    flush=True,
                )
            httpx.get(f"{crm}/_emulator/health", timeout=5)
    sizes = sorted(per_record)
    largest = sizes[-1]
    best = min(per_record[largest])
    print(
        f"records/s at {largest:,} contacts: {1e6 / best:,.0f} (best run) "
        f"[target >= 10,000/s: {'met' if 1e6 / best >= 10_000 else 'MISSED'}]"
    )
    if len(sizes) >= 2:
        low, high = peak_rss[sizes[0]], peak_rss[largest]
        print(
            f"exporter peak RSS: {low:.0f} MB at {sizes[0]:,}, {high:.0f} MB at {largest:,} "
            f"[target flat, <= 1.2 x: {'met' if high <= 1.2 * low else 'MISSED'}]"
        )
    if len(sizes) >= 2:
        small, large = sizes[0], sizes[-1]
        for i, label in enumerate(("first", "second")):
            a, b = per_record[small][i], per_record[large][i]
            print(
                f"time per record, {label} run: {a:.0f} us at {small} contacts, {b:.0f} us at "
                f"{large} contacts (x{b / a:.2f})"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
