"""`emulator verify`: probe a CRM's every Part A endpoint and rule; a line per check, a verdict.

Without --crm-url the embedded reference CRM is served in-process under uvicorn on a free
loopback port (as `emulator export` does) and verified over real HTTP with its own key: a
quick way to see what a passing CRM looks like.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

import emulator.cli.outputs as outputs
from emulator.fixtures.loader import DEFAULT_FIXTURES, FixtureError, load_fixture_dir
from emulator.redaction import SecretBook, redact_logs
from emulator.server import deadline_arg, embedded_server
from emulator.settings import Settings

if TYPE_CHECKING:  # httpx and the verifier load only when `verify` runs
    from emulator.verify.report import CheckResult, Report


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    verify = sub.add_parser(
        "verify",
        help="check a CRM against every Part A endpoint and rule (conformance suite)",
        description="Probe every Part A endpoint of a CRM with requests crafted for each rule. "
        "Exit 0 when no check fails, 1 when one does, 2 when the CRM cannot be reached.",
    )
    verify.add_argument(
        "--crm-url", help="the CRM's base URL (default: the embedded reference CRM)"
    )
    verify.add_argument(
        "--api-key", help="the CRM's API key (default with the embedded CRM: its own)"
    )
    verify.add_argument("--api-key-header", help="header carrying the key (default X-API-Key)")
    verify.add_argument("--report", metavar="FILE.json", help="write the JSON report to FILE")
    verify.add_argument(
        "--junit", metavar="FILE.xml", help="write JUnit XML (one test case per check)"
    )
    verify.add_argument("--html", metavar="FILE.html", help="write a self-contained HTML report")
    tls = verify.add_mutually_exclusive_group()
    tls.add_argument("--ca-file", help="CA bundle that signs the CRM's certificate")
    tls.add_argument("--insecure", action="store_true", help="do not verify the CRM's certificate")
    verify.add_argument(
        "--timeout",
        type=deadline_arg,
        default=10.0,
        metavar="SECONDS",
        help="deadline of each exchange as a whole: connect, send, the whole answer (default 10)",
    )
    verify.add_argument(
        "--fixtures", help="fixtures of the embedded CRM (default: fixtures/default)"
    )


async def _verify(
    args: argparse.Namespace, show: Callable[[CheckResult], None], book: SecretBook
) -> Report:
    """The run's report; `book` learns the key in use (the outputs are redacted with it)."""
    from emulator.verify.runner import Prober, verify  # deferred: only when `verify` runs

    def prober(url: str, key: str, header: str) -> Prober:
        return Prober(
            url, key, header, verify=not args.insecure, ca_file=args.ca_file, timeout=args.timeout
        )

    if args.crm_url:
        book.add(args.api_key)
        return await verify(
            prober(args.crm_url, args.api_key, args.api_key_header or "X-API-Key"), on_result=show
        )

    from emulator.app import create_app  # deferred: the whole server, only for the embedded CRM

    fixtures = load_fixture_dir(args.fixtures or DEFAULT_FIXTURES)
    crm = fixtures.crm.settings
    settings = Settings(fixtures=args.fixtures or str(DEFAULT_FIXTURES))
    async with embedded_server(settings, fixtures, create_app) as platform:
        url = f"{platform.server_base}/crm"
        key, header = args.api_key or crm.apiKey, args.api_key_header or crm.apiKeyHeader
        book.add(key)
        return await verify(prober(url, key, header), on_result=show)


def main(args: argparse.Namespace) -> int:
    """Exit 0 (no check failed), 1 (a check failed), 2 (CRM unreachable or bad arguments)."""
    if args.crm_url and not args.crm_url.startswith(("http://", "https://")):
        print("emulator verify: --crm-url must be an http:// or https:// URL", file=sys.stderr)
        return 2
    if args.crm_url and not args.api_key:
        print("emulator verify: --api-key is required with --crm-url", file=sys.stderr)
        return 2
    if not outputs.prepare("verify", args.report, args.junit, args.html):
        return 2
    # deferred: the verifier loads only when `verify` runs
    from emulator.verify.html import html_report
    from emulator.verify.report import junit_xml, line, summary, to_json

    # The verifier redacts what it records; every output is redacted again as it is written.
    book = SecretBook([args.api_key])
    redact_logs(book)

    def show(result: CheckResult) -> None:
        print(book.redactor.text(line(result)), flush=True)

    try:
        report = asyncio.run(_verify(args, show, book))
    except (FixtureError, OSError, RuntimeError, ValueError) as exc:
        print(book.redactor.text(f"emulator verify: {exc}"), file=sys.stderr)
        return 2
    files = ((args.report, to_json), (args.junit, junit_xml), (args.html, html_report))
    if not all(
        outputs.write("verify", path, book.redactor.bytes(render(report)))
        for path, render in files
        if path
    ):
        return 2
    print(book.redactor.text(summary(report)))
    return report.exitCode
