"""`emulator check PATH...`: validate fixture directories and scenario files without running
them; one line per problem, exit 0 clean, 1 problems, 2 unreadable."""

from __future__ import annotations

import argparse
import sys


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    check = sub.add_parser(
        "check",
        help="validate fixture directories and scenario files without running them",
        description="Validate fixture directories (every file, then the references between "
        "them), single fixture files, scenario files and directories of scenarios, without "
        "running anything. One line per problem on stdout; exit 0 when clean, 1 when a "
        "problem was found, 2 when a path is missing or a file cannot be read or is not "
        "JSON (TOML).",
    )
    check.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="fixture directories, fixture files, scenario files or directories of scenarios",
    )


def main(args: argparse.Namespace) -> int:
    from emulator.file_check import check_paths

    checked = check_paths(args.paths)
    problems = checked.problems or []
    for problem in problems:
        print(problem.line(), flush=True)
    print(
        f"emulator check: {checked.files} checked, {len(problems)} "
        f"problem{'' if len(problems) == 1 else 's'}",
        file=sys.stderr,
    )
    if any(p.unreadable for p in problems):
        return 2
    return 1 if problems else 0
