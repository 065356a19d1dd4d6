"""Time stamps of a start's phases, on stderr when EMULATOR_START_TRACE is set.

A cold start runs in up to three processes at once (the server, the seeding process and its
contacts worker); where its time goes is only seen with each process's phases on one clock.
Each stamp is one line: `start-trace <wall time, s> <pid> <CPU, s> <process>: <phase>`,
written at the end of the phase it names; the CPU is the process's own so far (every thread,
user and system): on a machine shared with other jobs, a phase's wall time says more about
the load than about the phase. Child processes inherit the variable, so one setting traces
them all; unset, a stamp costs one test of a constant.
"""

from __future__ import annotations

import os
import time

ENV = "EMULATOR_START_TRACE"
_ON = bool(os.environ.get(ENV))
_named = {"process": "server"}  # this process, as its stamps call it


def name_process(name: str) -> None:
    """What this process's stamps call it (a child process, as it starts)."""
    _named["process"] = name


def stamp(phase: str) -> None:
    """`phase` ended now."""
    if _ON:
        # one write of the whole line: the processes share the stream
        clocks = f"{time.time():.3f} {os.getpid()} {time.process_time():.3f}"
        os.write(2, f"start-trace {clocks} {_named['process']}: {phase}\n".encode())
