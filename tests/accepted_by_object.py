"""What the strict-file tests ask of `emulator.file_keys.accepted_keys` for many key paths of
one document, answered once per object: each call walks the format's types afresh (~10 ms),
and those tests choose their cases at collection, in every pytest process of a run."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from emulator.file_keys import accepted_keys


def accepted_by_object(
    root: Any, paths: Iterable[tuple[str | int, ...]], data: Any
) -> dict[tuple[str | int, ...], list[str]]:
    """The path of each object holding one of `paths` -> the keys that object accepts."""
    accepted: dict[tuple[str | int, ...], list[str]] = {}
    for path in paths:
        if path[:-1] not in accepted:
            accepted[path[:-1]] = accepted_keys(root, list(path[:-1]), data)
    return accepted
