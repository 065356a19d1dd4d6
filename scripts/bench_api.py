"""Benchmark of the public API against a real `emulator serve` (run by `make bench`).

Prints requests/s and p50/p99 latency from wrk for a random 100-contact page and for a
single contact over 100,000 generated contacts, the start-up time of `emulator serve` to its
first 200 on the default fixtures, and the server's peak RSS. Targets (2 cores, wrk sharing
them): >= 2,000 req/s with p99 <= 30 ms for the page, >= 3,000 req/s for one contact,
start-up <= 0.5 s, peak RSS <= 250 MB.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from emulator.testing import free_port

ROOT = Path(__file__).resolve().parents[1]
EMULATOR = [sys.executable, "-m", "emulator"]

PAGE_SCRIPT = """
math.randomseed(42)
request = function()
  local page = math.random(1, %(pages)d)
  return wrk.format("GET", "/v1/contacts?pageSize=100&page=" .. page, {["x-api-key"] = "demo-all"})
end
"""
ONE_SCRIPT = """
math.randomseed(7)
request = function()
  local id = math.random(1, %(contacts)d)
  return wrk.format("GET", "/v1/contact/" .. id, {["x-api-key"] = "demo-all"})
end
"""


def ensure_wrk() -> str:
    found = shutil.which("wrk")
    if found:
        return found
    print("wrk not found: installing it from Debian's packages", flush=True)
    subprocess.run(["apt-get", "update", "-qq"], check=True)
    subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], check=True)
    return shutil.which("wrk") or "wrk"


def start_server(fixtures: Path, port: int, *extra: str) -> tuple[subprocess.Popen[bytes], float]:
    """Start `emulator serve`; answer the process and seconds until its first 200."""
    began = time.perf_counter()
    proc = subprocess.Popen(
        [*EMULATOR, "serve", "--fixtures", str(fixtures), "--port", str(port), *extra],
        stdout=subprocess.DEVNULL,
        cwd=ROOT,
    )
    url = f"http://127.0.0.1:{port}/v1/contacts?pageSize=1"
    with httpx.Client(timeout=1.0) as client:
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"emulator serve exited with {proc.returncode}")
            try:
                if client.get(url, headers={"x-api-key": "demo-all"}).status_code == 200:
                    return proc, time.perf_counter() - began
            except httpx.TransportError:
                pass
            time.sleep(0.005)
            if time.perf_counter() - began > 120:
                proc.kill()
                raise SystemExit("emulator serve did not answer within 120 s")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def peak_rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    match = re.search(r"VmHWM:\s+(\d+) kB", status)
    return int(match.group(1)) / 1024 if match else float("nan")


def _ms(text: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text)
    if match is None:
        raise SystemExit(f"bench_api: cannot read wrk latency {text!r}")
    value, unit = match.groups()
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}[unit]


def run_wrk(wrk: str, port: int, script: str, seconds: int, connections: int) -> dict[str, float]:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(script)
    try:
        out = subprocess.run(
            [wrk, "-t2", f"-c{connections}", f"-d{seconds}s", "--latency", "-s", f.name,
             f"http://127.0.0.1:{port}"],
            check=True, capture_output=True, text=True,
        ).stdout
    finally:
        os.unlink(f.name)
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p50 = _ms(re.search(r"50%\s+(\S+)", out).group(1))  # type: ignore[union-attr]
    p99 = _ms(re.search(r"99%\s+(\S+)", out).group(1))  # type: ignore[union-attr]
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"rps": rps, "p50": p50, "p99": p99, "non2xx": float(errors.group(1)) if errors else 0}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--contacts", type=int, default=100_000)
    parser.add_argument("--companies", type=int, default=10_000)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--fixtures", help="reuse a generated fixture directory")
    args = parser.parse_args()
    wrk = ensure_wrk()

    # Start-up on the default fixtures: best of three cold starts.
    startups = []
    for _ in range(3):
        proc, seconds = start_server(ROOT / "fixtures" / "default", free_port())
        startups.append(seconds)
        stop(proc)

    workdir = Path(tempfile.mkdtemp(prefix="bench-api-"))
    fixtures = Path(args.fixtures) if args.fixtures else workdir / "fixtures"
    if not args.fixtures:
        subprocess.run(
            [sys.executable, str(ROOT / "scripts" / "generate_fixtures.py"),
             "--contacts", str(args.contacts), "--companies", str(args.companies),
             "--seed", "1", "--out", str(fixtures)],
            check=True, stdout=subprocess.DEVNULL,
        )
    port = free_port()
    proc, big_start = start_server(fixtures, port, "--rate-limit", "off")
    try:
        pages = max(1, args.contacts // 100)
        page = run_wrk(wrk, port, PAGE_SCRIPT % {"pages": pages}, args.seconds, args.connections)
        one = run_wrk(
            wrk, port, ONE_SCRIPT % {"contacts": args.contacts}, args.seconds, args.connections
        )
        rss = peak_rss_mb(proc.pid)
    finally:
        stop(proc)
        shutil.rmtree(workdir, ignore_errors=True)

    def verdict(ok: bool) -> str:
        return "ok" if ok else "MISSED"

    print(f"bench_api: {args.contacts:,} contacts, {args.connections} connections, "
          f"{args.seconds} s per run (wrk shares the cores)")
    print(f"  page of 100    {page['rps']:8.0f} req/s  p50 {page['p50']:6.2f} ms  "
          f"p99 {page['p99']:6.2f} ms  non-2xx {page['non2xx']:.0f}  "
          f"[target >= 2,000 req/s, p99 <= 30 ms: "
          f"{verdict(page['rps'] >= 2000 and page['p99'] <= 30)}]")
    print(f"  one contact    {one['rps']:8.0f} req/s  p50 {one['p50']:6.2f} ms  "
          f"p99 {one['p99']:6.2f} ms  non-2xx {one['non2xx']:.0f}  "
          f"[target >= 3,000 req/s: {verdict(one['rps'] >= 3000)}]")
    print(f"  start-up       {min(startups):8.3f} s to first 200 on the default fixtures "
          f"[target <= 0.5 s: {verdict(min(startups) <= 0.5)}]; "
          f"{big_start:.2f} s with {args.contacts:,} contacts")
    print(f"  peak RSS       {rss:8.1f} MB with {args.contacts:,} contacts "
          f"[target <= 250 MB: {verdict(rss <= 250)}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
