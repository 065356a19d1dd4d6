"""The report files a command writes: their directories made before the run, so that a long
run never ends in a traceback over a path nobody created."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def prepare(command: str, *paths: str | None) -> bool:
    """Make the directories of the named output files; False (after one line on stderr) when
    one cannot be made or written to, so the command can exit 2 before it starts its work."""
    for path in filter(None, paths):
        target = Path(path)
        problem = None
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except FileExistsError:  # a file stands where a directory of the path must be
            problem = "a file stands where its directory must be"
        except OSError as exc:
            problem = exc.strerror
        if problem is None and (target.is_dir() or not os.access(target.parent, os.W_OK)):
            problem = "not writable"
        if problem is not None:
            print(f"emulator {command}: cannot write {path}: {problem}", file=sys.stderr)
            return False
    return True


def write(command: str, path: str, data: bytes) -> bool:
    """Write one output file; False (after one line on stderr) when it cannot be written."""
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_bytes(data)
    except OSError as exc:
        print(f"emulator {command}: cannot write {path}: {exc.strerror}", file=sys.stderr)
        return False
    return True
