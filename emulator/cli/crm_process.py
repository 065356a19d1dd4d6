"""The embedded reference CRM of `emulator export` in a process of its own.

Both sides of an export call cost about the same CPU, and Python's GIL keeps one process on one
core: served in the exporter's own process, the reference CRM makes each call cost client plus
server. A child `emulator serve` (same interpreter, same package, the same fixture files) puts
the CRM on another core, so each call costs what it costs against a served /crm.

The child is started before the export loads its own state (both load at once), listens on a
port its kernel picks (`--port 0`: no other process can take it between choosing and binding),
and is found through the address its start-up line names, then its health. It is stopped
whatever happens (terminate, then kill after a grace), and on Linux it also dies with its
parent, should the parent be killed outright.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import emulator

# What `emulator serve` prints on stdout once it accepts connections (emulator/cli/serve.py).
LISTENING = re.compile(rb"^emulator listening on (http://127\.0\.0\.1:\d+) ", re.MULTILINE)
# Seconds the child may take to answer its health once the export's own state is loaded: both
# load the same files at once, so it is about ready by then (EMULATOR_CRM_START_SECONDS).
START_SECONDS = 60.0
STOP_GRACE_SECONDS = 5.0
TAIL_LINES = 20


class CrmStartFailed(RuntimeError):
    """The CRM's process exited or did not answer in time (the message has its last lines)."""


def start_seconds() -> float:
    """The start deadline: EMULATOR_CRM_START_SECONDS when set to a positive number."""
    text = os.environ.get("EMULATOR_CRM_START_SECONDS", "")
    try:
        value = float(text) if text else START_SECONDS
    except ValueError:
        value = START_SECONDS
    return value if value > 0 else START_SECONDS


def serve_command(fixtures: str) -> list[str]:
    """`emulator serve` of this interpreter on a loopback port its kernel picks. No seed cache:
    the export seeds from the files itself, and the CRM then starts from exactly the same rows
    (and nothing is written to the user's cache directory, as before)."""
    return [
        sys.executable,
        "-m",
        "emulator",
        "serve",
        "--fixtures",
        fixtures,
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--no-seed-cache",
        # its /v1 search is never asked: no index built beside the CRM's first calls
        "--lazy-search-index",
    ]


def die_with_parent() -> Callable[[], None] | None:
    """Linux: what makes the child SIGTERMed when its parent dies (a SIGKILLed export leaves
    no server behind), run between fork and exec; resolved here, before the fork."""
    if sys.platform != "linux":
        return None
    import ctypes

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig = 1

    def set_death_signal() -> None:  # pragma: no cover - runs in the child
        prctl(pr_set_pdeathsig, signal.SIGTERM)

    return set_death_signal


@contextlib.contextmanager
def ctrl_c_held() -> Iterator[None]:
    """Ctrl-C (SIGINT) arriving inside the block is acted on as the block ends, as the handler
    it had would have. Around a spawn: interrupted between the fork and Popen's return, the
    child would run on with nobody holding its pid to stop it. The main thread alone can set
    a handler; elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: caught.append(signum))
    try:
        yield
    finally:
        # None: a handler not set from Python, which cannot be put back; the default then
        signal.signal(signal.SIGINT, signal.SIG_DFL if previous is None else previous)
        if caught:  # sent again: ignored, default or Python's KeyboardInterrupt, as it was
            os.kill(os.getpid(), signal.SIGINT)


class CrmProcess:
    """A child `emulator serve`: `start` it, `await ready()` for its base URL, `stop()` it."""

    def __init__(self, command: Sequence[str]) -> None:
        self.command = list(command)
        # An unguessable control token: no other local process drives the CRM's emulator.
        self.token = secrets.token_urlsafe(24)
        self._dir = tempfile.TemporaryDirectory(prefix="emulator-crm-")
        self._stdout = Path(self._dir.name, "stdout")
        self._stderr = Path(self._dir.name, "stderr")
        self.process: subprocess.Popen[bytes] | None = None

    @classmethod
    def start(cls, command: Sequence[str]) -> CrmProcess:
        child = cls(command)
        try:
            with ctrl_c_held():
                child._spawn()
        except BaseException:
            child.stop()
            raise
        return child

    def _spawn(self) -> None:
        env = dict(os.environ)
        # the same package as this process, wherever it was imported from
        root = str(Path(emulator.__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        env["EMULATOR_CONTROL_TOKEN"] = self.token
        # appended to, read by path: the parent's reads do not move the child's writes
        with self._stdout.open("ab") as out, self._stderr.open("ab") as err:
            self.process = subprocess.Popen(
                self.command,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env=env,
                # spawned before this process starts any thread (PLW1509's concern)
                preexec_fn=die_with_parent(),  # noqa: PLW1509
            )

    def tail(self) -> str:
        """The last lines the child wrote on stderr (its error, when it failed)."""
        try:
            text = self._stderr.read_bytes().decode(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.rstrip().splitlines()[-TAIL_LINES:])

    def _failure(self, why: str) -> CrmStartFailed:
        tail = self.tail()
        return CrmStartFailed(
            f"the embedded reference CRM (a child `emulator serve`) {why}"
            + (f"; its last lines:\n{tail}" if tail else "")
            + "\n(--crm in-process serves it in this process instead)"
        )

    async def ready(self, timeout: float) -> str:
        """Its base URL once it answers its health; CrmStartFailed if it exits or is late."""
        import httpx  # deferred, as the exporter

        assert self.process is not None
        deadline = time.monotonic() + timeout
        base: str | None = None
        async with httpx.AsyncClient(timeout=1.0, trust_env=False) as client:
            while True:
                if self.process.poll() is not None:
                    raise self._failure(f"exited {self.process.returncode} while starting")
                if base is None:
                    found = LISTENING.search(self._stdout.read_bytes())
                    base = found.group(1).decode() if found else None
                if base is not None:
                    try:
                        if (await client.get(f"{base}/_emulator/health")).status_code == 200:
                            return base
                    except httpx.TransportError:
                        pass
                if time.monotonic() > deadline:
                    raise self._failure(f"did not answer its health within {timeout:g} s")
                await asyncio.sleep(0.02)

    def stop(self) -> None:
        """Terminate it, kill it after a grace; then remove its output files."""
        try:
            process = self.process
            if process is not None and process.poll() is None:
                process.terminate()
                try:
                    process.wait(STOP_GRACE_SECONDS)
                except subprocess.TimeoutExpired:
                    pass
                finally:  # late, or a second Ctrl-C during the grace
                    if process.poll() is None:
                        process.kill()
                        process.wait()
        finally:
            self._dir.cleanup()
