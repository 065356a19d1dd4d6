"""`emulator wait`: block until an emulator answers its health check (scripts, CI, the README)."""

from __future__ import annotations

import argparse
import os
import sys
import time

import httpx

DEFAULT_URL = "http://127.0.0.1:8400"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    wait = sub.add_parser("wait", help="wait until an emulator answers GET /_emulator/health")
    wait.add_argument(
        "--url",
        default=os.environ.get("EMULATOR_URL", DEFAULT_URL),
        help=f"the emulator's base URL (default: $EMULATOR_URL or {DEFAULT_URL})",
    )
    wait.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="give up after this long, exit code 1 (default 60)",
    )


def wait_until_healthy(url: str, timeout: float) -> str | None:
    """None once GET {url}/_emulator/health answers 200; else why not, after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    target = url.rstrip("/") + "/_emulator/health"
    last = "no answer yet"
    while True:
        try:
            status = httpx.get(target, timeout=2).status_code
            if status == 200:
                return None
            last = f"GET {target} answered {status}"
        except httpx.HTTPError as exc:
            last = f"GET {target}: {exc or type(exc).__name__}"
        if time.monotonic() >= deadline:
            return last
        time.sleep(0.2)


def main(args: argparse.Namespace) -> int:
    started = time.monotonic()
    problem = wait_until_healthy(args.url, args.timeout)
    if problem is not None:
        print(f"emulator wait: not ready after {args.timeout:g} s ({problem})", file=sys.stderr)
        return 1
    print(f"emulator ready at {args.url.rstrip('/')} ({time.monotonic() - started:.1f} s)")
    return 0
