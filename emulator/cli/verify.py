"""`emulator verify`: probe a CRM's every Part A endpoint and rule; a line per check, a verdict.

Without --crm-url the embedded reference CRM is served in-process under uvicorn on a free
loopback port (as `emulator export` does) and verified over real HTTP with its own key: a
quick way to see what a passing CRM looks like.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

import emulator.cli.outputs as outputs
from emulator.fixtures.loader import DEFAULT_FIXTURES, FixtureError, load_fixture_dir
from emulator.redaction import SecretBook, redact_logs
from emulator.server import deadline_arg, embedded_server
from emulator.settings import Settings
from emulator.verify.deep_report import (
    DEFAULT_EXAMPLES,
    DEFAULT_TIME_LIMIT,
    MAX_EXAMPLES,
    DeepOptions,
)

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
    deep = verify.add_argument_group("deep mode (random call sequences, shrunk on failure)")
    deep.add_argument(
        "--deep",
        action="store_true",
        help="after the checks, run random sequences of calls and check the spec's invariants "
        "after each; a failure is shrunk to the shortest sequence that shows it",
    )
    deep.add_argument(
        "--examples",
        type=positive,
        metavar="N",
        help=f"sequences to draw with --deep (default {DEFAULT_EXAMPLES})",
    )
    deep.add_argument(
        "--deep-time",
        type=seconds,
        metavar="SECONDS",
        help=f"wall-clock limit of --deep: no sequence starts and shrinking stops past it "
        f"(default {DEFAULT_TIME_LIMIT:g})",
    )
    deep.add_argument(
        "--seed",
        type=seed_value,
        metavar="S",
        help="seed of the sequences with --deep: the same seed draws the same sequences "
        "(default: a random seed, printed)",
    )


def positive(text: str) -> int:
    value = int(text)
    if not 1 <= value <= MAX_EXAMPLES:
        raise argparse.ArgumentTypeError(f"must be 1 to {MAX_EXAMPLES}")
    return value


def seconds(text: str) -> float:
    value = float(text)
    if not 0 < value <= 86400:
        raise argparse.ArgumentTypeError("must be more than 0 and at most 86400")
    return value


def seed_value(text: str) -> int:
    value = int(text)
    if not 0 <= value < 2**63:
        raise argparse.ArgumentTypeError("must be 0 to 2**63-1")
    return value


def deep_options(args: argparse.Namespace) -> DeepOptions | None:
    if not args.deep:
        return None
    seed = args.seed if args.seed is not None else secrets.randbelow(2**32)
    return DeepOptions(
        examples=args.examples or DEFAULT_EXAMPLES,
        seed=seed,
        timeLimit=args.deep_time or DEFAULT_TIME_LIMIT,
    )


async def _verify(
    args: argparse.Namespace,
    show: Callable[[CheckResult], None],
    book: SecretBook,
    deep: DeepOptions | None,
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
            prober(args.crm_url, args.api_key, args.api_key_header or "X-API-Key"),
            on_result=show,
            deep=deep,
        )

    from emulator.app import create_app  # deferred: the whole server, only for the embedded CRM

    fixtures = load_fixture_dir(args.fixtures or DEFAULT_FIXTURES)
    crm = fixtures.crm.settings
    settings = Settings(fixtures=args.fixtures or str(DEFAULT_FIXTURES))
    async with embedded_server(settings, fixtures, create_app) as platform:
        url = f"{platform.server_base}/crm"
        key, header = args.api_key or crm.apiKey, args.api_key_header or crm.apiKeyHeader
        book.add(key)
        return await verify(prober(url, key, header), on_result=show, deep=deep)


def main(args: argparse.Namespace) -> int:
    """Exit 0 (no check failed), 1 (a check failed), 2 (CRM unreachable or bad arguments)."""
    if args.crm_url and not args.crm_url.startswith(("http://", "https://")):
        print("emulator verify: --crm-url must be an http:// or https:// URL", file=sys.stderr)
        return 2
    if args.crm_url and not args.api_key:
        print("emulator verify: --api-key is required with --crm-url", file=sys.stderr)
        return 2
    if not args.deep and any(a is not None for a in (args.examples, args.seed, args.deep_time)):
        print("emulator verify: --examples, --seed and --deep-time need --deep", file=sys.stderr)
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

    deep = deep_options(args)
    if deep is not None:
        print(
            f"deep: after the checks, {deep.examples} random sequences from seed {deep.seed}",
            flush=True,
        )
    try:
        report = asyncio.run(_verify(args, show, book, deep))
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
