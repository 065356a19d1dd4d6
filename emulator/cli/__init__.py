"""Command line of the outreach platform emulator: serve it, export to a CRM, verify a CRM,
replay and record scenarios, wait for a server."""

from __future__ import annotations

import argparse
import os
import socket
import sys
from pathlib import Path

from emulator.cli import export as export_command
from emulator.cli import verify as verify_command
from emulator.clock import parse_clock
from emulator.fixtures.image_cache import default_cache_dir, image_counts
from emulator.fixtures.loader import DEFAULT_FIXTURES, FixtureError, load_fixture_dir
from emulator.cli import replay as replay_command
from emulator.cli import record as record_command
from emulator.serving import LOG_LEVELS, is_loopback, listening_socket, run_server
from emulator.settings import RateLimit, Settings
from emulator import __version__
from emulator.cli import wait as wait_command


def _rate_limit(text: str) -> RateLimit:
    try:
        return RateLimit.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _clock(text: str) -> float | None:
    try:
        return parse_clock(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _port(text: str) -> int:
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port number 0..65535, not {text!r}")
    return int(text)


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {text!r}")
    return int(text)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="emulator", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser(
        "serve", help="serve /v1, /crm, /_emulator, the dashboard (/) and /docs on one port"
    )
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)"
    )
    serve.add_argument(
        "--port", type=_port, default=8400, help="port to listen on, 0..65535 (default 8400)"
    )
    serve.add_argument("--fixtures", default=str(DEFAULT_FIXTURES), help="fixture directory")
    serve.add_argument("--db", default=None, help="SQLite file that keeps state across restarts")
    serve.add_argument(
        "--rate-limit",
        type=_rate_limit,
        default=RateLimit(),
        help="contact (default: GET /v1/contact/{id}), all, off, or SCOPE:N[/SECONDS]",
    )
    serve.add_argument(
        "--clock",
        type=_clock,
        default=None,
        help="frozen (default: time moves only through POST /_emulator/clock/advance) or "
        "realtime[:SPEED] (SPEED virtual seconds per wall second)",
    )
    serve.add_argument(
        "--journal-size", type=_positive, default=Settings().journalLimit, metavar="N",
        help="CRM exchanges kept in the export journal; the oldest are dropped (default 100000)",
    )
    serve.add_argument(
        "--seed-cache", default=str(default_cache_dir()), metavar="DIR",
        help="directory of seeded database images, reused while the fixture files are "
        "unchanged (default: $EMULATOR_CACHE_DIR or ~/.cache/crm-platform-emulator)",
    )
    serve.add_argument("--no-seed-cache", action="store_true", help="seed from the files every time")
    serve.add_argument(
        "--log-level", default="warning", help=f"uvicorn log level: {', '.join(LOG_LEVELS)}"
    )
    serve.add_argument(
        "--control-token", default=os.environ.get("EMULATOR_CONTROL_TOKEN") or None,
        metavar="TOKEN", help="every /_emulator route but health then needs `Authorization: "
        "Bearer TOKEN` (default: $EMULATOR_CONTROL_TOKEN)",
    )
    serve.add_argument(
        "--max-body", type=_positive, default=Settings().maxBody, metavar="BYTES",
        help="larger request bodies are answered 413 (default 16 MiB)",
    )
    serve.add_argument(
        "--allow-path", action="append", default=[], metavar="DIR",
        help="another directory POST /_emulator/fixtures and /_emulator/scenarios/run may read "
        "(besides --fixtures and the bundled fixtures and scenarios); repeatable",
    )
    wait_command.add_parser(sub)
    export_command.add_parser(sub)
    replay_command.add_parser(sub)
    record_command.add_parser(sub)
    verify_command.add_parser(sub)
    return parser


# One example per subcommand, shown at the end of its --help.
EXAMPLES = {
    "serve": "emulator serve --port 8400 --fixtures fixtures/default --db state.db",
    "export": 'emulator export --crm-url https://crm.example.com/api --api-key "$CRM_KEY" '
    "--junit export.xml",
    "replay": "emulator replay fixtures/scenarios --junit scenarios.xml",
    "record": 'emulator record --crm-url https://crm.example.com/api --api-key "$CRM_KEY" '
    "--out bug-1234.json",
    "verify": 'emulator verify --crm-url http://127.0.0.1:3000 --api-key "$CRM_API_KEY" '
    "--junit verify.xml --html verify.html",
    "wait": "emulator serve & emulator wait --timeout 30 && curl -s localhost:8400/_emulator/health",
}


def add_examples(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Give each subcommand without an epilog of its own its example; answers the parser."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, command in sub.choices.items():
        if command.epilog is None and name in EXAMPLES:
            command.epilog = f"example:\n  {EXAMPLES[name]}"
            command.formatter_class = argparse.RawDescriptionHelpFormatter
    return parser


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _display(path: str) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return path


def serve(args: argparse.Namespace) -> int:
    """Serve until SIGTERM or SIGINT; a start-up failure is one line on stderr and exit 2."""
    if args.log_level.lower() not in LOG_LEVELS:
        return _fail(f"unknown --log-level {args.log_level!r} (one of {', '.join(LOG_LEVELS)})")
    for root in args.allow_path:
        if not Path(root).is_dir():
            return _fail(f"--allow-path {root}: not a directory")
    if not args.control_token and not is_loopback(args.host):
        print(
            f"emulator: warning: listening on {args.host} without --control-token: anyone who "
            "reaches this port can reset, load files into and export from this emulator",
            file=sys.stderr, flush=True,
        )
    try:
        sock = listening_socket(args.host, args.port)
    except OSError as exc:
        return _fail(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}")
    try:
        return _serve_on(sock, args)
    finally:
        sock.close()


def _serve_on(sock: socket.socket, args: argparse.Namespace) -> int:
    from emulator.app import create_app  # the whole server: other commands start without it

    settings = Settings(
        host=args.host, port=sock.getsockname()[1], fixtures=args.fixtures, db=args.db,
        rateLimit=args.rate_limit, journalLimit=args.journal_size, clockSpeed=args.clock,
        seedCache=None if args.no_seed_cache else args.seed_cache,
        controlToken=args.control_token, maxBody=args.max_body, allowPaths=args.allow_path,
    )
    app = create_app(settings)
    try:
        # With a seed cache the fixtures are validated while an image is seeded (or were,
        # when the image of the same files exists): the app starts from the image.
        image = app.state.services.emulator.build_image()
        fixtures = None if image is not None else load_fixture_dir(args.fixtures)
    except FixtureError as exc:
        return _fail(f"fixture error: {exc}")
    if image is not None:
        n = image_counts(image)
    else:
        assert fixtures is not None
        n = {"contacts": len(fixtures.contacts), "companies": len(fixtures.companies),
             "campaigns": len(fixtures.campaigns)}
    state = f"state in {args.db}" if args.db else "state in memory"
    banner = (
        f"emulator listening on http://{_url_host(args.host)}:{settings.port} "
        f"(fixtures {_display(args.fixtures)}: {n['contacts']} contacts, "
        f"{n['companies']} companies, {n['campaigns']} campaigns; {state})"
    )
    app.state.services.emulator.fixtures = fixtures  # the app seeds the store from it, then lets it go
    del fixtures
    return run_server(app, settings, sock, args.log_level.lower(), banner)


def _fail(message: str) -> int:
    print(f"emulator: {message}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    args = add_examples(build_parser()).parse_args(argv)
    try:
        return _run(args)
    except BrokenPipeError:
        # `emulator replay ... | head`: the reader left; stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def _run(args: argparse.Namespace) -> int:
    if args.command == "wait":
        return wait_command.main(args)
    if args.command == "serve":
        return serve(args)
    if args.command == "export":
        return export_command.main(args)
    if args.command == "replay":
        return replay_command.main(args)
    if args.command == "record":
        return record_command.main(args)
    if args.command == "verify":
        return verify_command.main(args)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
