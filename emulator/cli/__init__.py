"""Command line of the outreach platform emulator: serve it, export to a CRM, verify a CRM,
replay and record scenarios, check scenario and fixture files, wait for a server."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable
from types import ModuleType

from emulator import __version__

# Each subcommand's module (its add_parser and main), in the order --help lists them.
COMMANDS = ("serve", "wait", "export", "replay", "record", "verify", "check")


def _command_module(name: str) -> ModuleType:
    return importlib.import_module(f"emulator.cli.{name}")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with `only`, that subcommand alone (the others' modules, with
    the libraries they import, are not loaded: `emulator serve` starts sooner)."""
    parser = argparse.ArgumentParser(prog="emulator", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        if only is None or name == only:
            _command_module(name).add_parser(sub)
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


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The arguments; a flag no subcommand knows is reported with that subcommand's usage
    (argparse's own parse_args would show the top-level usage, which names none of its flags)."""
    parser = add_examples(build_parser(_named_command(sys.argv[1:] if argv is None else argv)))
    args, extras = parser.parse_known_args(argv)
    if extras:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        sub.choices[args.command].error(f"unrecognized arguments: {' '.join(extras)}")
    return args


def main(argv: list[str] | None = None) -> int:
    try:
        # parsing imports the command's modules (~0.3 s): Ctrl-C then is an interruption too
        return _run(parse(argv))
    except BrokenPipeError:
        # `emulator replay ... | head`: the reader left; stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        # Ctrl-C: each command has already stopped what it started; a traceback would only
        # hide that. 130 is what a shell reports for a program ended by SIGINT.
        print("interrupted", file=sys.stderr)
        return 130


def _named_command(argv: list[str]) -> str | None:
    """The subcommand `argv` names first, when it is one (the top level takes no option but
    --help and --version: a first word that is no command gets the whole parser's error)."""
    return argv[0] if argv and argv[0] in COMMANDS else None


def _run(args: argparse.Namespace) -> int:
    if args.command not in COMMANDS:
        return 2
    main: Callable[[argparse.Namespace], int] = _command_module(args.command).main
    return main(args)


if __name__ == "__main__":
    raise SystemExit(main())
