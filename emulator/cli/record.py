"""`emulator record --crm-url URL --out FILE`: export to a real CRM, keep what it answered.

The export runs as `emulator export` does against an external CRM (the platform from
--fixtures, the flags laid over its connection); emulator.scenarios.record keeps every
exchange and turns them into a scenario that `emulator replay FILE` plays back.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx
import msgspec

import emulator.cli.outputs as outputs
from emulator.cli.export import add_strict_flag
from emulator.fixtures.loader import DEFAULT_FIXTURES, FixtureError, load_fixture_dir
from emulator.fixtures.models import FixtureSet
from emulator.platform import connection as platform_connection
from emulator.redaction import SecretBook, redact_logs
from emulator.scenarios.record import NOT_RECORDED, RecordingTransport, scenario
from emulator.server import add_connection_flags, connection_for, platform_only
from emulator.settings import Settings

if TYPE_CHECKING:
    from emulator.exporter.report import Report


# Said before a recording starts (and kept in its report).
RECORD_NOTE = (
    "a recording starts from the fixtures and keeps no platform state: recording again logs"
    " every activity and creates every task in the CRM again"
)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    record = sub.add_parser(
        "record",
        help="export to a real CRM and write a scenario that plays its answers back",
    )
    record.add_argument("--crm-url", required=True, help="the CRM's base URL (http:// or https://)")
    record.add_argument(
        "--out", required=True, metavar="FILE", help="scenario file to write (.json)"
    )
    record.add_argument("--name", help="scenario name (default: the file name without .json)")
    add_connection_flags(record)
    add_strict_flag(record)


async def _record(args: argparse.Namespace, fixtures: FixtureSet) -> tuple[Report, dict[str, Any]]:
    # deferred: the exporter loads only when `record` runs
    from emulator.exporter.run import Exporter
    from emulator.outbound import tls_verify

    settings = Settings(fixtures=args.fixtures or str(DEFAULT_FIXTURES))
    async with platform_only(settings, fixtures) as platform:
        stored = await platform.store.read(platform_connection.read)
        conn = connection_for(args, stored, None)
        inner = httpx.AsyncHTTPTransport(verify=tls_verify(conn.verify, conn.caFile))
        recorder = RecordingTransport(inner, urlsplit(conn.crmUrl).path, conn.apiKey)
        notes = [RECORD_NOTE]
        for note in notes:
            print(f"emulator record: note: {note}", file=sys.stderr)
        exporter = Exporter(
            platform.store,
            conn,
            now=platform.emulator.clock.now_iso,
            transport=recorder,
            journal_limit=settings.journalLimit,
            journal_bytes=settings.journalBytes,
            strict=args.strict,
            notes=notes,
        )
        recorder.phase = lambda: exporter.phase
        report = await exporter.run()
    connection = {k: v for k, v in msgspec.to_builtins(conn).items() if k not in NOT_RECORDED}
    out = Path(args.out)
    fixtures_dir = None
    if args.fixtures:  # relative to the scenario file, as the runner reads it
        target = Path(args.fixtures).resolve()
        try:
            fixtures_dir = str(target.relative_to(out.resolve().parent))
        except ValueError:
            fixtures_dir = str(target)
    name = args.name or out.name.removesuffix(".json")
    return report, scenario(name, conn.crmUrl, report, recorder.exchanges, connection, fixtures_dir)


def main(args: argparse.Namespace) -> int:
    """Exit with the export's code once the scenario is written (0 clean, 1 records failed or
    contract broken, 2 the export stopped), 2 when no run happened or nothing was recorded."""
    if not args.crm_url.startswith(("http://", "https://")):
        print("emulator record: --crm-url must be an http:// or https:// URL", file=sys.stderr)
        return 2
    if args.batch_size is not None and not 1 <= args.batch_size <= 100:
        print("emulator record: --batch-size must be between 1 and 100", file=sys.stderr)
        return 2
    if not outputs.prepare("record", args.out):
        return 2
    try:
        fixtures = load_fixture_dir(args.fixtures or DEFAULT_FIXTURES)
    except FixtureError as exc:
        print(f"emulator record: fixture error: {exc}", file=sys.stderr)
        return 2
    # The recorder redacts what it keeps; every output is redacted again as it is written.
    book = SecretBook([args.api_key, fixtures.connection.apiKey if fixtures.connection else None])
    redact_logs(book)
    redact = book.redactor
    try:
        report, data = asyncio.run(_record(args, fixtures))
    except (ValueError, OSError, RuntimeError) as exc:
        print(redact.text(f"emulator record: {exc}"), file=sys.stderr)
        return 2
    from emulator.exporter.report import summary  # deferred, as above

    answers = len(data["crm"]["playback"])
    if not answers:
        print(redact.text(summary(report)))
        print(
            f"emulator record: the CRM answered nothing: nothing recorded, {args.out} not written",
            file=sys.stderr,
        )
        return report.exitCode or 2
    text = redact.bytes(msgspec.json.format(msgspec.json.encode(data), indent=2))
    if not outputs.write("record", args.out, text + b"\n"):
        return 2
    print(redact.text(summary(report)))
    print(f"recorded {answers} CRM answers into {args.out} (replay: emulator replay {args.out})")
    return report.exitCode if report.exitCode is not None else 2
