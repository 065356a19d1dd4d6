"""The export's progress bar on a terminal: every phase shown with its last count, redrawn at
a bounded rate however many batches a phase sends."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

from emulator.cli.export import ProgressBar
from emulator.exporter.report import Progress

PHASES = ("companies", "contacts", "associations", "activities", "tasks", "engagement")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def terminal() -> Terminal:
    return Terminal()


def test_a_phase_of_many_batches_is_drawn_at_its_start_and_end_only_within_the_interval(
    terminal: Terminal,
) -> None:
    bar = ProgressBar(interval=3600, stream=terminal)
    for done in range(0, 1001):
        bar(Progress(phase="contacts", done=done, total=1000))
    bar(Progress(phase="activities", done=0, total=5))
    bar.close()
    text = terminal.getvalue()
    assert text.count("\r") == 3  # contacts 0/1000, contacts 1000/1000, activities 0/5
    assert "1000/1000" in text
    assert text.endswith("0/5   \n")


def test_the_last_state_is_drawn_when_the_bar_closes(terminal: Terminal) -> None:
    bar = ProgressBar(interval=3600, stream=terminal)
    for done in range(0, 501):
        bar(Progress(phase="contacts", done=done, total=1000))
    bar.close()
    assert terminal.getvalue().endswith(" 500/1000   \n")


def test_without_a_terminal_nothing_is_written() -> None:
    out = io.StringIO()
    bar = ProgressBar(stream=out)
    bar(Progress(phase="contacts", done=1, total=2))
    bar.close()
    assert out.getvalue() == ""


def test_an_export_on_a_terminal_shows_every_phase_with_its_last_count() -> None:
    try:
        master, slave = os.openpty()
    except OSError as e:  # pragma: no cover - a machine without pseudo-terminals
        pytest.skip(f"no pseudo-terminal: {e}")
    proc = subprocess.Popen(
        [sys.executable, "-m", "emulator", "export"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=slave,
    )
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert proc.wait(timeout=120) == 0
    lines = out.decode().replace("\r", "\n").splitlines()
    for phase in PHASES:
        shown = [line for line in lines if line.startswith(phase)]
        assert shown, phase
        done, _, total = shown[-1].split("]")[1].strip().partition("/")
        assert done == total, shown[-1]  # the phase's last count is drawn
