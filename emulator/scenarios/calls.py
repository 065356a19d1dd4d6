"""A scenario's failures, and the checks of the CRM calls an export made."""

from __future__ import annotations

from msgspec import UNSET

from emulator.scenarios import models as sm
from emulator.scenarios.match import Mismatch, show, subset
from emulator.scenarios.models import Failure
from emulator.scenarios.record import Exchange


class Failed(Exception):
    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


def mismatch(at: str, m: Mismatch, what: str) -> Failed:
    where = f"{at}.{m.path}" if m.path and not m.path.startswith("[") else f"{at}{m.path}"
    message = f"{what}: {m.message or 'differs'} at {m.path or '(top)'}"
    return Failed(
        Failure(at=where, message=message, expected=show(m.expected), actual=show(m.actual))
    )


def _path_matches(pattern: str, path: str) -> bool:
    want, got = pattern.strip("/").split("/"), path.strip("/").split("/")
    if want and want[-1] == "*":
        return len(got) >= len(want) - 1 and all(
            w.startswith(":") or w == g for w, g in zip(want[:-1], got, strict=False)
        )
    return len(want) == len(got) and all(
        w.startswith(":") or w == g for w, g in zip(want, got, strict=True)
    )


def callmismatch(expected: sm.CrmCallExpect, call: Exchange) -> Mismatch | None:
    """None when the call is the expected one; else why not."""
    if expected.method.upper() != call.method or not _path_matches(expected.path, call.path):
        return Mismatch(
            "", f"{expected.method.upper()} {expected.path}", f"{call.method} {call.path}"
        )
    if expected.status is not UNSET and expected.status != call.status:
        return Mismatch("status", expected.status, call.status)
    if expected.body is not UNSET:
        m = subset(expected.body, call.request, "body")
        if m:
            return m
    return None


def _calls_line(calls: list[Exchange], limit: int = 12) -> str:
    parts = [
        f"{c.method} {c.path} {c.status if c.status is not None else '-'}" for c in calls[:limit]
    ]
    more = f" … (+{len(calls) - limit})" if len(calls) > limit else ""
    return ", ".join(parts) + more if parts else "(no calls)"


def check_calls(spec: sm.CrmCallsExpect, calls: list[Exchange], at: str) -> None:
    """Raise Failed on the first expected call not found (in order), or an unwanted one."""
    if spec.exact and len(spec.calls) != len(calls):
        raise Failed(
            Failure(
                at=at,
                message=f"expected exactly {len(spec.calls)} CRM calls, got {len(calls)}",
                expected=", ".join(f"{c.method} {c.path}" for c in spec.calls),
                actual=_calls_line(calls, 40),
            )
        )
    j = 0
    for i, want in enumerate(spec.calls):
        where = f"{at}.calls[{i}]"
        if spec.exact:
            m = callmismatch(want, calls[i])
            if m:
                raise mismatch(where, m, f"call {i + 1} of {len(calls)}")
            continue
        first: Mismatch | None = None
        start = j
        while j < len(calls):
            m = callmismatch(want, calls[j])
            j += 1
            if m is None:
                break
            if first is None and m.path:  # same method and path, different status or body
                first = m
        else:
            if first is not None:
                raise mismatch(where, first, f"{want.method} {want.path}")
            raise Failed(
                Failure(
                    at=where,
                    message=f"no {want.method.upper()} {want.path} call after the calls matched before it",
                    expected=f"{want.method.upper()} {want.path}",
                    actual=_calls_line(calls[start:]),
                )
            )
    for i, unwanted in enumerate(spec.absent):
        for call in calls:
            if callmismatch(unwanted, call) is None:
                raise Failed(
                    Failure(
                        at=f"{at}.absent[{i}]",
                        message="an unwanted CRM call was made",
                        expected="no such call",
                        actual=f"{call.method} {call.path} {show(call.request, 160)}",
                    )
                )
    for key, n in spec.counts.items():
        method, _, path = key.partition(" ")
        pattern = sm.CrmCallExpect(method=method, path=path)
        got = sum(1 for c in calls if callmismatch(pattern, c) is None)
        if got != n:
            raise Failed(
                Failure(
                    at=f"{at}.counts[{key!r}]",
                    message=f"number of {key} calls",
                    expected=str(n),
                    actual=str(got),
                )
            )
