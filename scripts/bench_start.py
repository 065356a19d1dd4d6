"""Start-up benchmark (issue 24, item 4): `emulator serve` at one fixture size, cold (an
empty seed cache), warm (the image the cold start cached), and both with `--db FILE`.

For each start: seconds from spawn to the first 200 on /_emulator/health, RSS then, RSS
after the contact search's index is built and after a handful of /v1 requests, the server's
own peak (VmHWM) and the peak of any process of the start (`/usr/bin/time -v`: the server,
the seeding process, its contacts worker), and the largest RSS seen of the server's child
(the seeding process) while it starts. The seeded image's size is printed too.

    python scripts/bench_start.py --fixtures DIR [--before CHECKOUT] [--rounds N]

With --before, the code of that checkout is started the same way, alternating with this
one, so both meet the same load. Run it on a quiet machine: `nice -n 5` and a loaded one
give slower, noisier figures.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench_api import cpu_seconds  # noqa: E402 (with the children it waited for: the seeding process)

from emulator.testing import free_port  # noqa: E402

KEY = {"x-api-key": "demo-all"}
REQUESTS = (
    "/v1/contacts?page=1&pageSize=100",
    "/v1/contacts?page=5000&pageSize=100",
    "/v1/contacts?search=smith",
    "/v1/companies?page=3&pageSize=50",
    "/v1/campaigns",
    "/v1/contact/12345",
)


def rss_mb(pid: int) -> float:
    """The resident set of `pid` now, MB."""
    status = Path(f"/proc/{pid}/status").read_text()
    match = re.search(r"VmRSS:\s+(\d+) kB", status)
    return int(match.group(1)) / 1024 if match else 0.0


def server_pid(timer: subprocess.Popen[bytes]) -> int:
    """The python under /usr/bin/time."""
    for _ in range(200):
        children = Path(f"/proc/{timer.pid}/task/{timer.pid}/children")
        if children.exists() and (text := children.read_text().split()):
            return int(text[0])
        time.sleep(0.01)
    raise RuntimeError("no server process")


def start(
    code: Path, fixtures: Path, cache: Path, db: Path | None, index: bool = True
) -> dict[str, float]:
    port = free_port()
    command = [
        "/usr/bin/time",
        "-v",
        sys.executable,
        "-m",
        "emulator",
        "serve",
        "--fixtures",
        str(fixtures),
        "--port",
        str(port),
        "--seed-cache",
        str(cache),
    ]
    if db is not None:
        command += ["--db", str(db)]
    began = time.perf_counter()
    timer = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=code,
        env=dict(os.environ, PYTHONPATH=str(code), PYTHONDONTWRITEBYTECODE="1"),
    )
    pid = server_pid(timer)
    out: dict[str, float] = {}
    worker_peak = 0.0
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=KEY, timeout=120) as client:
        while True:
            try:
                if client.get("/_emulator/health").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if timer.poll() is not None:
                raise RuntimeError(timer.stderr.read().decode() if timer.stderr else "died")
            for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
                with contextlib.suppress(OSError, ValueError):
                    worker_peak = max(worker_peak, rss_mb(int(child)))
            time.sleep(0.02)
        out["first 200 (s)"] = time.perf_counter() - began
        out["CPU at first 200 (s)"] = cpu_seconds(pid)
        out["RSS at first 200 (MB)"] = rss_mb(pid)
        # the search index is built in the background: wait until a search is fast
        fast, n, t0 = 0, 0, time.perf_counter()
        while index and fast < 3 and time.perf_counter() - t0 < 120:
            n += 1
            t = time.perf_counter()
            client.get("/v1/contacts", params={"search": f"zq{n}x"})
            fast = fast + 1 if time.perf_counter() - t < 0.025 else 0
            time.sleep(0.05)
        out["search index ready (s)"] = time.perf_counter() - began
        out["RSS index built (MB)"] = rss_mb(pid)
        for path in REQUESTS:
            client.get(path).raise_for_status()
        for i in range(20):
            client.post("/v1/contact", json={"firstName": "Bench", "lastName": f"S{i}"})
            client.get(f"/v1/contacts?page={1 + i * 997}&pageSize=100").raise_for_status()
        out["RSS after /v1 requests (MB)"] = rss_mb(pid)
    status = Path(f"/proc/{pid}/status").read_text()
    hwm = re.search(r"VmHWM:\s+(\d+) kB", status)
    out["server peak RSS (MB)"] = int(hwm.group(1)) / 1024 if hwm else 0.0
    os.kill(pid, signal.SIGTERM)
    _, err = timer.communicate(timeout=60)
    match = re.search(rb"Maximum resident set size \(kbytes\): (\d+)", err)
    # wait4's figure: the largest of the server and every process it waited for
    out["peak RSS of any process (MB)"] = int(match.group(1)) / 1024 if match else 0.0
    out["seeding process RSS seen (MB)"] = worker_peak
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixtures", type=Path, required=True)
    parser.add_argument("--before", type=Path, help="a checkout of the code to compare with")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--only", default="memory,db", help="memory, db or both")
    parser.add_argument("--no-index", action="store_true", help="do not wait for the search index")
    args = parser.parse_args()
    codes = {"now": ROOT}
    if args.before is not None:
        codes = {"before": args.before.resolve(), **codes}
    modes = args.only.split(",")
    (ROOT / "build").mkdir(exist_ok=True)  # a fresh checkout has none
    for _ in range(args.rounds):
        for label, code in codes.items():
            scratch = Path(tempfile.mkdtemp(prefix="bench-start-", dir=ROOT / "build"))
            try:
                cache = scratch / "cache"
                for mode in modes:
                    for kind in ("cold", "warm"):
                        if kind == "cold":
                            shutil.rmtree(cache, ignore_errors=True)
                        db = scratch / "state.sqlite" if mode == "db" else None
                        for leftover in scratch.glob("state.sqlite*"):
                            leftover.unlink()
                        figures = start(code, args.fixtures.resolve(), cache, db, not args.no_index)
                        images = list(cache.glob("seeded-*.sqlite"))
                        image = images[0].stat().st_size / 2**20 if images else 0.0
                        print(f"{label:<6} {mode:<6} {kind}: image {image:.0f} MB", flush=True)
                        for name, value in figures.items():
                            print(f"    {name:<32} {value:10.2f}", flush=True)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
