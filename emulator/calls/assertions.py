"""Assertions over recorded calls (the pytest plugin's): which match, and the near misses.

Pure functions over calls as GET /_emulator/requests answers them (dicts), so the plugin
needs no server-side code: a call matches on method, route template or exact path, and a
JSON-body subset; a failure lists the calls closest to what was expected, WireMock-style.
"""

from __future__ import annotations

import json as jsonlib
from typing import Any

from emulator.scenarios.match import subset

NEAR_MISSES = 5
EXCERPT = 120


def route_or_path_matches(call: dict[str, Any], route: str | None) -> bool:
    """`route` names a template (or, for convenience, an exact path)."""
    return route is None or call.get("route") == route or call.get("path") == route


def matches(call: dict[str, Any], method: str | None, route: str | None, json: Any = None) -> bool:
    if method is not None and call.get("method") != method.upper():
        return False
    if not route_or_path_matches(call, route):
        return False
    return json is None or subset(json, call.get("requestBody")) is None


def closeness(call: dict[str, Any], method: str | None, route: str | None, json: Any) -> int:
    """How near a call is to the expectation: a right route weighs most, then method, body."""
    score = 0
    if route is not None:
        if route_or_path_matches(call, route):
            score += 4
        elif str(call.get("path", "")).startswith(route.split("{", 1)[0]):
            score += 2
    if method is not None and call.get("method") == method.upper():
        score += 2
    if json is not None and subset(json, call.get("requestBody")) is None:
        score += 1
    return score


def excerpt(body: Any) -> str:
    if body is None:
        return ""
    text = body if isinstance(body, str) else jsonlib.dumps(body, separators=(",", ":"))
    return text if len(text) <= EXCERPT else text[: EXCERPT - 1] + "…"


def describe(call: dict[str, Any]) -> str:
    status = call.get("status")
    line = f"{call.get('method')} {call.get('path')} -> {status if status is not None else 'no answer'}"
    body = excerpt(call.get("requestBody"))
    return f"{line}  {body}" if body else line


def near_misses(
    calls: list[dict[str, Any]], method: str | None, route: str | None, json: Any = None
) -> list[dict[str, Any]]:
    """Up to NEAR_MISSES calls, closest first (the newest first among equals)."""
    ranked = sorted(
        enumerate(calls), key=lambda ic: (-closeness(ic[1], method, route, json), -ic[0])
    )
    return [c for _, c in ranked[:NEAR_MISSES]]


def expectation(method: str | None, route: str | None, times: int | None, json: Any) -> str:
    what = f"{(method or 'any method').upper()} {route or 'any route'}"
    if json is not None:
        what += f" with a body containing {excerpt(json)}"
    if times is not None:
        what += f" {times} time{'s' if times != 1 else ''}"
    return what


def called_failure(
    calls: list[dict[str, Any]],
    method: str | None,
    route: str | None,
    times: int | None = None,
    json: Any = None,
) -> str | None:
    """None when the calls hold the expectation; else the message, with the near misses."""
    found = [c for c in calls if matches(c, method, route, json)]
    if (times is None and found) or (times is not None and len(found) == times):
        return None
    wanted = expectation(method, route, times, json)
    if found:
        shown = found[-NEAR_MISSES:]
        head = f"expected {wanted}, but it was called {len(found)} time(s):"
    else:
        shown = near_misses(calls, method, route, json)
        head = f"expected {wanted}, but no call matched ({len(calls)} call(s) recorded)"
        if shown:
            head += "; the closest calls:"
    return "\n".join([head, *(f"  {describe(c)}" for c in shown)])


def not_called_failure(
    calls: list[dict[str, Any]], method: str | None, route: str | None
) -> str | None:
    found = [c for c in calls if matches(c, method, route)]
    if not found:
        return None
    wanted = expectation(method, route, None, None)
    lines = [f"expected no call {wanted}, but it was called {len(found)} time(s):"]
    return "\n".join([*lines, *(f"  {describe(c)}" for c in found[-NEAR_MISSES:])])
