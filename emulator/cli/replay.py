"""`emulator replay PATH...`: replay scenario files, one line each, JUnit and JSON on request."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import msgspec

import emulator.cli.outputs as outputs
from emulator.scenarios.models import ReplayResult


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    replay = sub.add_parser(
        "replay", help="replay scenario files (or directories of them) and report pass or fail"
    )
    replay.add_argument("paths", nargs="+", metavar="PATH", help="scenario files or directories")
    replay.add_argument(
        "--junit", metavar="FILE", help="write JUnit XML (one test case per scenario)"
    )
    replay.add_argument("--json", action="store_true", help="print the results as JSON only")


def junit_xml(result: ReplayResult) -> bytes:
    suite = ET.Element(
        "testsuite",
        name="scenarios",
        tests=str(len(result.results)),
        failures=str(result.failed),
        errors=str(result.errors),
        time=f"{result.seconds:.3f}",
    )
    for res in result.results:
        case = ET.SubElement(
            suite,
            "testcase",
            name=res.name,
            classname=res.file or "inline",
            time=f"{res.seconds:.3f}",
        )
        f = res.failure
        if f is not None:
            tag = "error" if res.outcome == "error" else "failure"
            node = ET.SubElement(case, tag, message=f"{f.at}: {f.message}")
            node.text = (
                f"expected: {f.expected}\nactual:   {f.actual}"
                if f.expected or f.actual
                else f.message
            )
    return ET.tostring(suite, encoding="utf-8", xml_declaration=True)


def main(args: argparse.Namespace) -> int:
    """Exit 0 when every scenario passed, 1 when one failed, 2 when one could not be read."""
    # deferred: the runner and the whole server load only when `replay` runs
    from emulator.app import create_app
    from emulator.scenarios.results import describe, exit_code, summary
    from emulator.scenarios.runner import replay
    from emulator.server import server_opener

    if not outputs.prepare("replay", args.junit):
        return 2
    missing = [p for p in args.paths if not Path(p).exists()]
    if missing:
        print(f"emulator replay: no such file or directory: {', '.join(missing)}", file=sys.stderr)
        return 2

    def show(res: object) -> None:
        if not args.json:
            print(describe(res), flush=True)  # type: ignore[arg-type]

    result = asyncio.run(replay(args.paths, server_opener(create_app), on_result=show, quiet=True))
    if args.junit and not outputs.write("replay", args.junit, junit_xml(result)):
        return 2
    if args.json:
        sys.stdout.write(msgspec.json.format(msgspec.json.encode(result), indent=2).decode() + "\n")
    else:
        print(summary(result))
    return exit_code(result)
