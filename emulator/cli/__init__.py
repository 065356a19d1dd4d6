"""Command line of the outreach platform emulator: serve it, export to a CRM, verify a CRM,
replay and record scenarios, check scenario and fixture files, wait for a server."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from emulator import __version__
from emulator.cli import check as check_command
from emulator.cli import export as export_command
from emulator.cli import record as record_command
from emulator.cli import replay as replay_command
from emulator.cli import serve as serve_command
from emulator.cli import verify as verify_command
from emulator.cli import wait as wait_command


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="emulator", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    serve_command.add_parser(sub)
    wait_command.add_parser(sub)
    export_command.add_parser(sub)
    replay_command.add_parser(sub)
    record_command.add_parser(sub)
    verify_command.add_parser(sub)
    check_command.add_parser(sub)
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
    "check": "emulator check fixtures/default fixtures/scenarios",
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


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "serve": serve_command.main,
    "wait": wait_command.main,
    "export": export_command.main,
    "replay": replay_command.main,
    "record": record_command.main,
    "verify": verify_command.main,
    "check": check_command.main,
}


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The arguments; a flag no subcommand knows is reported with that subcommand's usage
    (argparse's own parse_args would show the top-level usage, which names none of its flags)."""
    parser = add_examples(build_parser())
    args, extras = parser.parse_known_args(argv)
    if extras:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        sub.choices[args.command].error(f"unrecognized arguments: {' '.join(extras)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    try:
        return _run(args)
    except BrokenPipeError:
        # `emulator replay ... | head`: the reader left; stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        # Ctrl-C: each command has already stopped what it started; a traceback would only
        # hide that. 130 is what a shell reports for a program ended by SIGINT.
        print("interrupted", file=sys.stderr)
        return 130


def _run(args: argparse.Namespace) -> int:
    command = COMMANDS.get(args.command)
    return command(args) if command is not None else 2


if __name__ == "__main__":
    raise SystemExit(main())
