"""Subset matching of expected JSON values against actual ones, with the first difference.

An expected object matches when each of its keys matches (extra actual keys are fine); an
expected list matches when each of its items matches a different actual item (in any order;
extra actual items are fine; use {"$len": n} beside it to pin the size).
Operators, as a one-key object: {"$absent": true} (key not there), {"$any": true} (there,
any value), {"$len": n} (a list or text of n items), {"$contains": "text"} (a text holding it).
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple


class _Absent:
    def __repr__(self) -> str:
        return "<absent>"


ABSENT: Any = _Absent()


class Mismatch(NamedTuple):
    path: str
    expected: Any
    actual: Any
    message: str = ""


def show(value: Any, limit: int = 240) -> str:
    """A short one-line JSON rendering for a side-by-side difference."""
    if value is ABSENT:
        return "<absent>"
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _operator(expected: Any) -> str | None:
    if isinstance(expected, dict) and len(expected) == 1:
        (key,) = expected
        if key in ("$absent", "$any", "$len", "$contains"):
            return key
    return None


def subset(expected: Any, actual: Any, path: str = "") -> Mismatch | None:
    """None when `actual` contains `expected`; else the first difference."""
    op = _operator(expected)
    if op == "$absent":
        return None if actual is ABSENT else Mismatch(path, "<absent>", actual)
    if actual is ABSENT:
        return Mismatch(path, expected, actual, "missing")
    if op == "$any":
        return None
    if op == "$len":
        n = expected["$len"]
        if not isinstance(actual, (list, str, dict)) or len(actual) != n:
            size = len(actual) if isinstance(actual, (list, str, dict)) else actual
            return Mismatch(path, f"length {n}", f"length {size}")
        return None
    if op == "$contains":
        text = expected["$contains"]
        ok = isinstance(actual, str) and isinstance(text, str) and text in actual
        return None if ok else Mismatch(path, f"a text containing {text!r}", actual)
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return Mismatch(path, expected, actual, "not an object")
        for key, value in expected.items():
            found = subset(value, actual.get(key, ABSENT), _join(path, key))
            if found:
                return found
        return None
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return Mismatch(path, expected, actual, "not a list")
        used: set[int] = set()
        for i, item in enumerate(expected):
            first: Mismatch | None = None
            for j, candidate in enumerate(actual):
                if j in used:
                    continue
                found = subset(item, candidate, _join(path, j))
                if found is None:
                    used.add(j)
                    break
                first = first or found
            else:
                if first is not None and len(actual) == 1:  # one candidate: its own difference
                    return first
                return Mismatch(_join(path, i), item, actual, "no matching item")
        return None
    if isinstance(expected, bool) or isinstance(actual, bool):
        same = type(expected) is type(actual) and expected == actual
    else:
        same = expected == actual
    return None if same else Mismatch(path, expected, actual)
