"""Faults and overrides on /v1: which one takes a call (pure decisions) and their counters.

A fault matches a call by method, route template or exact path, key, and query and JSON-body
subsets; faults are tried in the order they were added, and each counts the matching calls
that reach it (a call taken by an earlier fault does not), as the reference CRM's faults do.
It fires on the first `times` of them (None: all), at `probability` drawn from `seed` and
the call number (the same draws on every run).
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from emulator.calls.v1_routes import route_pattern
from emulator.crm.faults import hits
from emulator.scenarios.match import subset
from emulator.v1_fault_spec import (
    HEADER_NAME,
    HEADER_VALUE,
    MAX_LATENCY_MS,
    METHODS,
    V1FaultIn,
)


class V1Fault(V1FaultIn):
    """A fault as GET /_emulator/v1-faults lists it: its id and how often it fired."""

    id: str
    matched: int  # matching calls that reached it
    fired: int  # calls it shaped


def problems(fault: V1FaultIn, routes: Collection[str]) -> list[tuple[str, str]]:
    """(field, message) for each setting of `fault` that cannot work; `routes`: /v1 templates."""
    found: list[tuple[str, str]] = []
    if fault.method is not None and fault.method.upper() not in METHODS:
        found.append(("method", f"one of {', '.join(METHODS)}"))
    if fault.route is not None and fault.path is not None:
        found.append(("path", "give route or path, not both"))
    if fault.route is not None and fault.route not in routes:
        found.append(("route", f"not a /v1 route template: {fault.route!r}"))
    if fault.path is not None and not fault.path.startswith("/v1/"):
        found.append(("path", "must be a /v1/... path"))
    if fault.status is not None and not 200 <= fault.status <= 599:
        found.append(("status", "must be 200 to 599"))
    if fault.status is None and (fault.body is not None or fault.headers):
        found.append(("status", "body and headers need a status"))
    for name, value in fault.headers.items():
        if not HEADER_NAME.fullmatch(name) or not HEADER_VALUE.fullmatch(value):
            found.append(("headers", f"not a valid header: {name!r}: {value!r}"))
        elif name.lower() in ("content-length", "transfer-encoding", "content-type"):
            found.append(("headers", f"{name} is set by the emulator"))
    if not 0 <= fault.latencyMs <= MAX_LATENCY_MS:
        found.append(("latencyMs", f"must be 0 to {MAX_LATENCY_MS}"))
    if fault.drop and (fault.status is not None or fault.malformed):
        found.append(("drop", "a dropped connection has no status or body"))
    if fault.status is None and not fault.latencyMs and not fault.drop and not fault.malformed:
        found.append(("", "no effect: give status, latencyMs, drop or malformed"))
    if fault.times is not None and fault.times < 1:
        found.append(("times", "must be >= 1"))
    if fault.probability is not None and not 0.0 <= fault.probability <= 1.0:
        found.append(("probability", "must be 0 to 1"))
    return found


@dataclass(frozen=True)
class Incoming:
    """What a fault may look at in a call."""

    method: str
    path: str
    key_id: str | None
    query: Mapping[str, list[str]]
    body: Any  # the decoded JSON body; None when there is none or it is not JSON


def effects(fault: V1FaultIn) -> list[str]:
    """What a fault does, in words the journal shows."""
    out = [f"latency {fault.latencyMs} ms"] if fault.latencyMs else []
    if fault.drop:
        out.append("drop")
    if fault.status is not None:
        out.append(f"status {fault.status}")
    if fault.malformed:
        out.append("malformed")
    return out


class Armed:
    """One fault with its path pattern and counters."""

    def __init__(self, fault: V1FaultIn, fault_id: str) -> None:
        self.fault, self.id = fault, fault_id
        self.method = None if fault.method is None else fault.method.upper()
        self.pattern = None if fault.route is None else route_pattern(fault.route)
        self.matched = self.fired = 0

    def matches(self, call: Incoming) -> bool:
        f = self.fault
        if self.method is not None and call.method != self.method:
            return False
        if self.pattern is not None and not self.pattern.match(call.path):
            return False
        if f.path is not None and call.path != f.path:
            return False
        if f.keyId is not None and call.key_id != f.keyId:
            return False
        for name, value in f.query.items():
            if value not in call.query.get(name, ()):
                return False
        return f.json is None or subset(f.json, call.body) is None

    def out(self) -> V1Fault:
        fields = msgspec.structs.asdict(self.fault)
        return V1Fault(**fields, id=self.id, matched=self.matched, fired=self.fired)


class FaultBook:
    """The /v1 faults of one emulator, in the order they were added."""

    def __init__(self) -> None:
        self.armed: list[Armed] = []

    def __bool__(self) -> bool:
        return bool(self.armed)

    def add(self, fault: V1FaultIn) -> V1Fault:
        armed = Armed(fault, uuid.uuid4().hex[:12])
        self.armed.append(armed)
        return armed.out()

    def remove(self, fault_id: str) -> V1Fault | None:
        for i, armed in enumerate(self.armed):
            if armed.id == fault_id:
                del self.armed[i]
                return armed.out()
        return None

    def clear(self) -> int:
        n = len(self.armed)
        self.armed.clear()
        return n

    def listing(self) -> list[V1Fault]:
        return [a.out() for a in self.armed]

    @property
    def wants_body(self) -> bool:
        return any(a.fault.json is not None for a in self.armed)

    @property
    def wants_key(self) -> bool:
        return any(a.fault.keyId is not None for a in self.armed)

    def take(self, call: Incoming) -> Armed | None:
        """Count `call` against each fault it reaches; answer the one that shapes it."""
        for armed in self.armed:
            if not armed.matches(call):
                continue
            armed.matched += 1
            f = armed.fault
            if hits(armed.matched, f.times, f.probability, f.seed):
                armed.fired += 1
                return armed
        return None
