"""Simulation benchmark: events/s of campaigns advancing on the virtual clock, and webhook
deliveries/s to a local receiver.

It generates fixtures (CONTACTS contacts, every one of CAMPAIGNS campaigns made ACTIVE, no
webhook subscriptions), serves them with `emulator serve` in its own process and advances the
clock through DAYS simulated days in STEP-day steps through the control API, three times:

1. without a CRM (autoSync off): events/s;
2. with the reference CRM in another `emulator serve` process and autoSync on: events/s;
3. with one subscription on every webhook event type pointing at a fast receiver in another
   process: deliveries/s (deliveries / extra seconds over run 1, and over the whole run).

    python scripts/bench_simulation.py                          # 10,000 contacts, 30 days
    python scripts/bench_simulation.py --contacts 200 --days 3  # a quick look
    python scripts/bench_simulation.py --only nocrm,crm         # some of the runs only

Targets (issue 13): >= 50,000 events/s without a CRM, >= 15,000 events/s with auto-sync,
>= 1,000 deliveries/s; each printed beside its figure, met or MISSED. No asserts.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, get_args

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from emulator.event_types import WebhookEvent  # noqa: E402 (after the sys.path line above)
from tests.processes import emulator_process, free_port  # noqa: E402

EVENT_TYPES = list(get_args(WebhookEvent))  # every event a webhook may carry
KEY = {"x-api-key": "demo-all"}
DAY = 86_400
RUNS = ("nocrm", "crm", "webhooks")


def fixtures_for(contacts: int, campaigns: int, out: Path) -> Path:
    """Generated fixtures with every campaign ACTIVE and no webhook subscriptions."""
    directory = out / f"fixtures-{contacts}-{campaigns}"
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "generate_fixtures.py"),
            "--contacts",
            str(contacts),
            "--companies",
            str(max(1, contacts // 10)),
            "--campaigns",
            str(campaigns),
            "--seed",
            "1",
            "--out",
            str(directory),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    path = directory / "campaigns.json"
    rows = json.loads(path.read_text())
    for row in rows:
        row["status"] = "ACTIVE"
    path.write_text(json.dumps(rows))
    (directory / "webhooks.json").write_text("[]")
    return directory


# --- the receiver: its own process, uvicorn + a bare ASGI app that answers 204 and counts ---


def serve_receiver(port: int) -> None:
    import uvicorn

    seen = 0

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        nonlocal seen
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        body = b""
        if scope["method"] == "POST":
            seen += 1
        else:
            body = str(seen).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 200 if body else 204,
                "headers": [(b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body})

    uvicorn.run(
        app, host="127.0.0.1", port=port, log_level="warning", access_log=False, lifespan="off"
    )


@contextmanager
def receiver_process() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, __file__, "--serve-receiver", str(port)], cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx.get(f"{url}/count", timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise SystemExit("the receiver did not start") from None
                time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


# --- the runs ---


def advance(base: str, days: int, step: int) -> tuple[int, float]:
    """Advance `days` days in `step`-day steps: (events, wall seconds spent advancing)."""
    events = 0
    seconds = 0.0
    with httpx.Client(base_url=base, timeout=600) as client:
        for _ in range(0, days, step):
            started = time.perf_counter()
            response = client.post("/_emulator/clock/advance", json={"seconds": step * DAY})
            seconds += time.perf_counter() - started
            if response.status_code != 200:
                raise SystemExit(f"advance failed: {response.status_code} {response.text[:300]}")
            got = response.json().get("events", 0)
            events += got if isinstance(got, int) else len(got)
    return events, seconds


def reset(base: str) -> None:
    response = httpx.post(f"{base}/_emulator/reset", timeout=120)
    if response.status_code != 200:
        raise SystemExit(f"reset failed: {response.status_code} {response.text[:300]}")


def autosync_available(base: str) -> bool:
    return httpx.get(f"{base}/_emulator/autosync", timeout=10).status_code == 200


def connect_crm(base: str, fixtures: Path, crm: str) -> None:
    settings = json.loads((fixtures / "connection.json").read_text())
    settings.update(crmUrl=f"{crm}/crm", autoSync=True)
    response = httpx.put(f"{base}/_emulator/connection", json=settings, timeout=30)
    if response.status_code >= 300:
        raise SystemExit(f"connection refused: {response.status_code} {response.text[:300]}")


def subscribe_all(base: str, url: str) -> None:
    body = {
        "name": "bench receiver",
        "url": f"{url}/hook",
        "events": EVENT_TYPES,
        "secret": "whsec-bench-0001",
    }
    response = httpx.post(f"{base}/v1/webhooks", json=body, headers=KEY, timeout=30)
    if response.status_code != 201:
        raise SystemExit(f"subscription refused: {response.status_code} {response.text[:300]}")


def rate(count: float, seconds: float) -> str:
    return f"{count / seconds:,.0f}/s" if seconds > 0 else "n/a"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--contacts", type=int, default=10_000)
    parser.add_argument("--campaigns", type=int, default=20)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--step", type=int, default=1, help="days per advance")
    parser.add_argument(
        "--only",
        default=",".join(RUNS),
        help=f"comma-separated runs to make, of {','.join(RUNS)} (default: all)",
    )
    parser.add_argument("--serve-receiver", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_receiver:
        serve_receiver(args.serve_receiver)
        return
    runs = {run.strip() for run in args.only.split(",") if run.strip()}
    if not runs or runs - set(RUNS):
        parser.error(f"--only: choose among {','.join(RUNS)}")

    with tempfile.TemporaryDirectory(prefix="bench-sim-") as tmp:
        started = time.perf_counter()
        fixtures = fixtures_for(args.contacts, args.campaigns, Path(tmp))
        print(
            f"fixtures: {args.contacts:,} contacts, {args.campaigns} ACTIVE campaigns "
            f"({time.perf_counter() - started:.1f} s); {args.days} days in {args.step}-day "
            "steps"
        )
        serve = ("--fixtures", str(fixtures))
        with (
            emulator_process(*serve, timeout=120) as crm,
            emulator_process(*serve, timeout=120) as base,
            receiver_process() as receiver,
        ):
            # each leg starts from the fixtures: POST /_emulator/reset; the webhook run needs
            # the no-CRM run's seconds
            if runs & {"nocrm", "webhooks"}:
                events, seconds = advance(base, args.days, args.step)
                print(
                    f"no CRM:        {events:,} events in {seconds:.2f} s = "
                    f"{rate(events, seconds)} {target(events / seconds, 50_000)}"
                )
                reset(base)
            if "crm" in runs and not autosync_available(base):
                print("with CRM:      skipped: autoSync not available")
            elif "crm" in runs:
                connect_crm(base, fixtures, crm)
                crm_events, crm_seconds = advance(base, args.days, args.step)
                print(
                    f"with CRM:      {crm_events:,} events in {crm_seconds:.2f} s = "
                    f"{rate(crm_events, crm_seconds)} (reference CRM in another process, "
                    f"autoSync on) {target(crm_events / crm_seconds, 15_000)}"
                )
                reset(base)
            if "webhooks" not in runs:
                return
            subscribe_all(base, receiver)
            hook_events, hook_seconds = advance(base, args.days, args.step)
            delivered = int(httpx.get(f"{receiver}/count", timeout=10).text)
        extra = hook_seconds - seconds
        print(
            f"webhooks:      {delivered:,} deliveries ({hook_events:,} events) in "
            f"{hook_seconds:.2f} s = {rate(delivered, hook_seconds)} overall, "
            f"{rate(delivered, extra)} over the {extra:.2f} s they added "
            f"{target(delivered / extra if extra > 0 else 0.0, 1_000)}"
        )


def target(figure: float, goal: float) -> str:
    return f"[target >= {goal:,.0f}/s: {'met' if figure >= goal else 'MISSED'}]"


if __name__ == "__main__":
    main()
