"""Which files the server may read on a caller's behalf (POST /_emulator/fixtures and
/_emulator/scenarios/run): regular files of bounded size under the roots it was started with.

Every refusal is the same sentence, whether the path is missing, outside the roots, a device,
a FIFO or too large: the answer must not tell a caller what exists on the machine. Checks run
in a worker thread (a stat on a slow mount must not stall the event loop). The CLI reads any
path its user names and never comes here.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from emulator.fixtures.loader import DEFAULT_FIXTURES, FILES
from emulator.scenarios.models import scenario_files

MAX_FILE_BYTES = 512 * 1024 * 1024  # a fixture file of 100,000 contacts is ~100 MB
MAX_SCENARIO_FILES = 1000  # a directory run beyond that is a mistaken root
BUNDLED = (DEFAULT_FIXTURES, DEFAULT_FIXTURES.parent / "scenarios")


class PathRefused(Exception):
    def __init__(self, what: str) -> None:
        super().__init__(
            f"not a {what} this server may read: regular files of at most "
            f"{MAX_FILE_BYTES // 2**20} MiB under --fixtures, the bundled fixtures and "
            "scenarios, or an --allow-path directory"
        )


class PathRoots:
    def __init__(self, roots: Iterable[str | Path]) -> None:
        self.roots = [Path(os.path.realpath(r)) for r in roots]

    @classmethod
    def of_server(cls, fixtures: str, allowed: Iterable[str]) -> PathRoots:
        return cls([fixtures, *BUNDLED, *allowed])

    def _inside(self, raw: str | Path, what: str) -> Path:
        """`raw` with every link resolved, when it lies under a root."""
        try:
            real = Path(os.path.realpath(raw))
        except (ValueError, OSError):  # NUL bytes, loops
            raise PathRefused(what) from None
        if not any(real == root or real.is_relative_to(root) for root in self.roots):
            raise PathRefused(what)
        return real

    def _regular(self, path: Path, what: str) -> None:
        try:
            info = os.stat(path)
        except OSError:
            raise PathRefused(what) from None
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
            raise PathRefused(what)

    def fixture_dir(self, raw: str | Path) -> Path:
        """A fixture directory whose files (those the loader reads) are all safe to read."""
        real = self._inside(raw, "fixture directory")
        if not real.is_dir():
            raise PathRefused("fixture directory")
        for name in FILES:
            if os.path.lexists(real / name):
                self._regular(self._inside(real / name, "fixture directory"), "fixture directory")
        return real

    def scenario_files(self, raw: str) -> list[Path]:
        """The scenario files of a file or directory (as `emulator replay` finds them)."""
        real = self._inside(raw, "scenario file or directory")
        if not real.is_dir():
            self._regular(real, "scenario file or directory")
            return [real]
        found = scenario_files([str(real)])
        if len(found) > MAX_SCENARIO_FILES:
            raise PathRefused("scenario file or directory")
        for file in found:
            self._regular(
                self._inside(file, "scenario file or directory"), "scenario file or directory"
            )
        return found
