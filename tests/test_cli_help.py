"""The command line's own documentation: version, help for every flag, one example each."""

from __future__ import annotations

import argparse
import subprocess
import sys

from emulator import __version__
from emulator.cli import build_parser
from tests.processes import emulator_process, free_port


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _emulator(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "emulator", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_version_prints_the_package_version() -> None:
    done = _emulator("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"emulator {__version__}"


def test_every_flag_of_every_subcommand_has_help() -> None:
    missing = [
        f"{name} {action.option_strings or action.dest}"
        for name, command in _subcommands().items()
        for action in command._actions
        if not action.help
    ]
    assert missing == []


def test_every_subcommand_help_shows_an_example_and_no_stale_text() -> None:
    assert "join as they are built" not in _emulator("--help").stdout
    for name in _subcommands():
        text = _emulator(name, "--help").stdout
        assert "example:" in text.lower(), name
        example = text.lower().split("example:")[1]
        assert f"emulator {name}" in example, name


def test_wait_answers_once_the_server_is_up_and_fails_clearly_when_none_is() -> None:
    with emulator_process() as url:
        done = _emulator("wait", "--url", url, "--timeout", "10")
        assert done.returncode == 0 and done.stdout.startswith(f"emulator ready at {url}")
    nobody = f"http://127.0.0.1:{free_port()}"
    done = _emulator("wait", "--url", nobody, "--timeout", "0.5")
    assert done.returncode == 1
    assert "not ready after 0.5 s" in done.stderr and "Connection refused" in done.stderr


def test_a_mistyped_flag_shows_the_usage_of_its_own_subcommand() -> None:
    for name, command in _subcommands().items():
        # a value for each required argument, so that the unknown flag is the only error
        required = [
            part
            for a in command._actions
            if a.required
            for part in ([a.option_strings[0], "x"] if a.option_strings else ["x"])
        ]
        done = _emulator(name, *required, "--no-such-flag")
        assert done.returncode == 2, name
        assert done.stderr.startswith(f"usage: emulator {name} "), (name, done.stderr)
        assert "unrecognized arguments: --no-such-flag" in done.stderr, name


def test_a_subcommand_loads_no_other_subcommand_module() -> None:
    code = (
        "import sys; from emulator.cli import parse; args = parse(['serve', '--port', '0']); "
        "print(args.command, sorted(m for m in sys.modules if m.startswith('emulator.cli.')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split(" ", 1) == ["serve", "['emulator.cli.serve']\n"]
    assert _emulator("nosuch").stderr.endswith(
        "invalid choice: 'nosuch' (choose from 'serve', 'wait', 'export', 'replay', 'record', "
        "'verify', 'check')\n"
    )
