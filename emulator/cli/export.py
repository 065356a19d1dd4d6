"""`emulator export`: wire a platform store, a CRM URL and the exporter, then write the report.

Without --crm-url (and no absolute crmUrl in the stored connection) the run brings the embedded
reference CRM, reached over real HTTP like any stranger's CRM: a child `emulator serve` of the
same fixtures (emulator/cli/crm_process.py), on another core than the exporter's; with --db (the
CRM's tables live in that file beside the platform's) or --crm in-process, the whole app served
in this process under uvicorn on a free loopback port.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import httpx
import msgspec

import emulator.cli.outputs as outputs
from emulator.cli.crm_process import CrmProcess, serve_command, start_seconds
from emulator.cli.spaced_gc import spaced_collections
from emulator.fixtures.loader import DEFAULT_FIXTURES, FixtureError, load_fixture_dir
from emulator.fixtures.models import CrmConnection, FixtureSet
from emulator.platform import connection as platform_connection
from emulator.redaction import SecretBook, redact_logs
from emulator.server import (
    Platform,
    ServerOpener,
    add_connection_flags,
    connection_for,
    platform_only,
    server_opener,
)
from emulator.settings import Settings
from emulator.store.export_lock import ExportLocked, export_lock

if TYPE_CHECKING:  # the exporter (httpx) loads only when `export` runs: `serve` starts faster
    from emulator.exporter.report import Progress, Report

CHILD_WORTH_IT = 4 << 20  # bytes of contacts.json from which the CRM gets a process of its own


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    export = sub.add_parser("export", help="export contacts and companies to a CRM and report")
    export.add_argument("--crm-url", help="the CRM's base URL (default: the embedded /crm)")
    add_connection_flags(export)
    export.add_argument(
        "--db",
        help="SQLite file with the platform state, kept after the run (seeded from "
        "--fixtures when new)",
    )
    export.add_argument("--report", help="write the JSON report to FILE")
    export.add_argument(
        "--junit",
        help="write JUnit XML (a test case per contract check, per phase and for the run)",
    )
    export.add_argument("--html", help="write the report as one self-contained HTML page to FILE")
    export.add_argument("--json", action="store_true", help="print the JSON report to stdout")
    export.add_argument(
        "--crm",
        choices=("auto", "process", "in-process"),
        default="auto",
        help="where the embedded reference CRM runs (no --crm-url): a child `emulator serve` "
        "on another core (process) or this process (in-process, the only choice with --db: "
        "the CRM's tables live in that file); auto (the default): a child for fixtures whose "
        "contacts.json is 4 MiB or more (~6,000 contacts), where its second core pays for "
        "its start, else this process",
    )
    add_strict_flag(export)


def add_strict_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--strict",
        action="store_true",
        help="fail the run (exit 1, a JUnit failure) on any warning, not only on violations",
    )


# Said before a run without a persistent store starts (and kept in its report).
NO_DB_NOTE = (
    "no --db: nothing is kept after this run, so a later run logs every activity and creates"
    " every task in the CRM again; keep the platform state with --db FILE"
)


# Pages of the --db file the exporter keeps in memory: it reads and writes each record once,
# so a larger cache only grows with the file (the server's 64 MiB made its peak RSS follow
# the file's size: 64 MB at 10,000 contacts, 120 MB at 100,000).
EXPORT_DB_CACHE_KIB = 8 * 1024
# Pages of the --db file's write-ahead log before a commit copies them into the file. Each
# batch's write hop commits a few hundred pages; at SQLite's 1,000 every few batches paid a
# checkpoint (reading the pages back, writing them, an fdatasync on the database thread),
# copying again the index pages every batch rewrites (docs/performance.md).
EXPORT_DB_CHECKPOINT_PAGES = 16_000


def run_notes(db: str | None) -> list[str]:
    """What a run says up front: without a store file, that it remembers nothing."""
    return [] if db else [NO_DB_NOTE]


class ProgressBar:
    """One self-rewriting line on stderr, only when stderr is a terminal: redrawn when a phase
    starts or ends and at most every `interval` seconds between (a redraw per batch took ~10%
    of the exporter's CPU); the last state is drawn when the bar closes."""

    def __init__(self, interval: float = 0.1, stream: TextIO | None = None) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.enabled = self.stream.isatty()
        self.interval = interval
        self._drawn_at = 0.0  # the first update is drawn anyway: no bar drawn yet
        self._drawn: Progress | None = None
        self._last: Progress | None = None

    def __call__(self, p: Progress) -> None:
        if not self.enabled or p == self._drawn:
            return
        self._last = p
        now = time.monotonic()
        changed = self._drawn is None or p.phase != self._drawn.phase
        if changed or p.done == p.total or now - self._drawn_at >= self.interval:
            self._draw(p)
            self._drawn_at = now

    def _draw(self, p: Progress) -> None:
        width = 30
        filled = width if not p.total else min(width, width * p.done // p.total)
        total = f"/{p.total}" if p.total else ""
        self.stream.write(
            f"\r{p.phase:<12} [{'#' * filled}{'.' * (width - filled)}] {p.done}{total}   "
        )
        self.stream.flush()
        self._drawn = p

    def close(self) -> None:
        if self.enabled:
            if self._last is not None and self._last != self._drawn:
                self._draw(self._last)
            self.stream.write("\n")


def crm_child_opener(child: CrmProcess) -> ServerOpener:
    """The platform store alone, with the child's base URL as the server's (relative crmUrls
    resolve to the child's /crm). The child loads while this process seeds its store."""

    @asynccontextmanager
    async def open_platform(
        settings: Settings, fixtures: FixtureSet | None
    ) -> AsyncIterator[Platform]:
        async with platform_only(settings, fixtures) as platform:
            base = await child.ready(start_seconds())
            yield Platform(platform.store, platform.emulator, base)

    return open_platform


async def _export(
    args: argparse.Namespace,
    fixtures: FixtureSet | None,
    book: SecretBook,
    child: CrmProcess | None = None,
) -> Report:
    """The run's report; `book` learns the key in use (the outputs are redacted with it)."""
    # deferred: the exporter loads only when `export` runs (not for --help, wait, ...)
    from emulator.exporter.start import prepare_export

    settings = Settings(
        fixtures=args.fixtures or str(DEFAULT_FIXTURES),
        db=args.db,
        dbCacheKib=EXPORT_DB_CACHE_KIB,
        dbCheckpointPages=EXPORT_DB_CHECKPOINT_PAGES,
    )
    stored_absolute = False
    if not args.crm_url and fixtures is not None and fixtures.connection is not None:
        stored_absolute = platform_connection.is_absolute(fixtures.connection.crmUrl)
    embedded = not args.crm_url and not stored_absolute
    opener: ServerOpener = platform_only
    if embedded and child is not None:
        opener = crm_child_opener(child)
    elif embedded:
        from emulator.app import create_app  # deferred: the whole server, only for the embedded CRM

        opener = server_opener(create_app)
    async with opener(settings, fixtures) as platform:

        def with_flags(stored: CrmConnection | None) -> CrmConnection:
            if embedded and stored is None and args.api_key is None and fixtures is not None:
                args.api_key = fixtures.crm.settings.apiKey
            return connection_for(args, stored, platform.server_base)

        bar = ProgressBar()
        notes = run_notes(args.db)
        exporter = await prepare_export(
            platform.store,
            platform.emulator.clock.now_iso,
            settings,
            book,
            platform.server_base,
            changes=with_flags,
            on_progress=bar,
            strict=args.strict,
            notes=notes,
        )
        for note in notes:
            print(f"emulator export: note: {note}", file=sys.stderr)
        try:
            with spaced_collections():
                return await exporter.run()
        finally:
            bar.close()


def fast_loop() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop when installed (as `emulator serve` runs on), else asyncio's.

    The embedded CRM answers in the exporter's own loop: on uvloop each call costs what it
    costs against a served /crm (asyncio's loop takes ~1.5x as long per call for both sides).
    """
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvicorn[standard] installs it where it builds
        return None
    return uvloop.new_event_loop


def main(args: argparse.Namespace) -> int:
    """Run the export; exit 0 (contract kept), 1 (records failed or contract broken), 2 (no run)."""
    if args.batch_size is not None and not 1 <= args.batch_size <= 100:
        print("emulator export: --batch-size must be between 1 and 100", file=sys.stderr)
        return 2
    if not outputs.prepare("export", args.report, args.junit, args.html):
        return 2
    if args.crm_url and not args.crm_url.startswith(("http://", "https://")):
        print("emulator export: --crm-url must be an http:// or https:// URL", file=sys.stderr)
        return 2
    if args.crm_url:
        try:
            httpx.URL(args.crm_url)
        except httpx.InvalidURL as exc:
            print(f"emulator export: --crm-url: {exc}", file=sys.stderr)
            return 2
    if args.crm == "process" and args.db:
        print(
            "emulator export: --crm process cannot keep the CRM's tables in --db (they live "
            "in that file beside the platform's): use --crm in-process, or leave out --crm",
            file=sys.stderr,
        )
        return 2
    # Started first: the CRM's process loads the same files while this one does.
    child = None
    try:  # entered before the start: a Ctrl-C right after it still stops the child
        if crm_in_child(args):
            try:
                child = CrmProcess.start(serve_command(str(args.fixtures or DEFAULT_FIXTURES)))
            except OSError as exc:
                print(f"emulator export: cannot start the embedded CRM: {exc}", file=sys.stderr)
                return 2
        return _run(args, child)
    finally:
        if child is not None:
            child.stop()


def crm_in_child(args: argparse.Namespace) -> bool:
    """Whether the embedded CRM gets a process of its own (see --crm)."""
    if args.crm_url or args.db is not None or args.crm == "in-process":
        return False
    if args.crm == "process":
        return True
    # auto: a child costs ~1 s of start-up the export waits for at small sizes (its imports
    # are hidden behind the parent's load only when that load is long)
    contacts = Path(args.fixtures or DEFAULT_FIXTURES) / "contacts.json"
    try:
        return contacts.stat().st_size >= CHILD_WORTH_IT
    except OSError:
        return False  # the fixture loader names the missing file


def _run(args: argparse.Namespace, child: CrmProcess | None) -> int:
    fixtures: FixtureSet | None = None
    try:
        if args.db is None or not Path(args.db).exists():
            fixtures = load_fixture_dir(args.fixtures or DEFAULT_FIXTURES)
    except FixtureError as exc:
        print(f"emulator export: fixture error: {exc}", file=sys.stderr)
        return 2
    stored = fixtures.connection if fixtures is not None else None
    if child is not None and stored is not None and platform_connection.is_absolute(stored.crmUrl):
        child.stop()  # the stored connection names another CRM: no embedded one
        child = None
    # The client redacts what it records; every output is redacted again as it is written.
    book = SecretBook([args.api_key])
    if child is not None:  # the child's control token and its CRM's key
        book.add(child.token, fixtures.crm.settings.apiKey if fixtures is not None else None)
    redact_logs(book)
    try:
        # a second exporter on this file exits 2 before sending
        with export_lock(args.db), asyncio.Runner(loop_factory=fast_loop()) as runner:
            report = runner.run(_export(args, fixtures, book, child))
    except ExportLocked as exc:
        print(book.redactor.text(f"emulator export: {exc}"), file=sys.stderr)
        return 2
    except (ValueError, OSError, RuntimeError) as exc:
        print(book.redactor.text(f"emulator export: {exc}"), file=sys.stderr)
        return 2
    redact = book.redactor  # the key in use added by now
    from emulator.exporter.report import junit_xml, summary  # deferred, as above
    from emulator.exporter.report_html import html_report

    data = redact.bytes(msgspec.json.format(msgspec.json.encode(report), indent=2))
    files = (
        (args.report, lambda: data + b"\n"),
        (args.junit, lambda: redact.bytes(junit_xml(report))),
        (args.html, lambda: redact.text(html_report(report)).encode()),
    )
    if not all(outputs.write("export", path, render()) for path, render in files if path):
        return 2
    if args.json:
        sys.stdout.write(data.decode() + "\n")
    else:
        print(redact.text(summary(report)))
    return report.exitCode if report.exitCode is not None else 2
