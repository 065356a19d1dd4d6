"""Which injected fault (FaultRule) applies to a call: pure decisions plus in-memory counters.

Rules are tried in order. Each rule counts the calls of its endpoint that reach it (a call
taken by an earlier rule does not), so `times` rules chain: "first 2 calls 503, then one
429" is two rules. A rule applies to every call it sees, to the first `times` of them,
and/or to a fraction `rate` drawn deterministically from `seed` and the call number.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from emulator.fixtures.models import FaultRule
from emulator.part_a import ENDPOINTS

_BRACES = re.compile(r"\{(\w+)\}")


def endpoint_key(text: str) -> str:
    """ "post  /tasks/{taskId}" -> "POST /tasks/:taskId"; "*" stays "*"."""
    text = text.strip()
    if text == "*":
        return text
    method, _, path = text.partition(" ")
    path = _BRACES.sub(r":\1", path.strip())
    if len(path) > 1:
        path = path.rstrip("/")
    return f"{method.upper()} {path}"


def matches(rule: FaultRule, endpoint: str) -> bool:
    key = endpoint_key(rule.endpoint)
    return key == "*" or key == endpoint


def applies(rule: FaultRule, n: int) -> bool:
    """Whether `rule` hits the n-th call (1-based) it sees."""
    return hits(n, rule.times, rule.rate, rule.seed)


def hits(n: int, times: int | None, rate: float | None, seed: int) -> bool:
    """Whether a fault for the first `times` calls (None: all) drawn at `rate` (None: always)
    with `seed` hits the n-th call (1-based) it sees (/crm and /v1 faults alike)."""
    if times is not None and n > times:
        return False
    if rate is not None:
        # One generator per (seed, call): the same call number always draws the same value.
        return random.Random(seed * 1_000_003 + n).random() < rate
    return True


@dataclass(frozen=True)
class DropConnection:
    """The connection closes without an answer."""


@dataclass(frozen=True)
class ErrorStatus:
    """An error answer; `retry_after` seconds in a Retry-After header when set."""

    status: int
    retry_after: int | None


@dataclass(frozen=True)
class MalformedBody:
    """A 200 whose body is not JSON."""


@dataclass(frozen=True)
class LatencyOnly:
    """The handler answers as usual (after the rule's latency)."""


FaultKind = DropConnection | ErrorStatus | MalformedBody | LatencyOnly


def fault_kind(rule: FaultRule) -> FaultKind:
    """What a rule that took a call answers instead of the handler, first match wins."""
    if rule.dropConnection:
        return DropConnection()
    if rule.status is not None:
        retry_after = rule.retryAfterSeconds
        if retry_after is None and rule.status == 429:
            retry_after = 1
        return ErrorStatus(rule.status, retry_after)
    if rule.malformedBody:
        return MalformedBody()
    return LatencyOnly()


def rule_problems(rule: FaultRule) -> list[tuple[str, str]]:
    """(field, message) for each setting of `rule` the CRM cannot honour."""
    problems: list[tuple[str, str]] = []
    if endpoint_key(rule.endpoint) not in ("*", *ENDPOINTS):
        problems.append(
            ("endpoint", f"unknown endpoint {rule.endpoint!r}; one of *, {', '.join(ENDPOINTS)}")
        )
    if rule.status is not None and not 400 <= rule.status <= 599:
        problems.append(("status", "must be 400 to 599"))
    if rule.retryAfterSeconds is not None and rule.retryAfterSeconds < 0:
        problems.append(("retryAfterSeconds", "must be >= 0"))
    if not 0 <= rule.latencyMs <= 60_000:
        problems.append(("latencyMs", "must be 0 to 60000"))
    if rule.times is not None and rule.times < 0:
        problems.append(("times", "must be >= 0"))
    if rule.rate is not None and not 0.0 <= rule.rate <= 1.0:
        problems.append(("rate", "must be 0 to 1"))
    return problems


class FaultCounter:
    """Call counts per rule; cleared on reset and whenever the rules are replaced."""

    def __init__(self) -> None:
        self._seen: dict[int, int] = {}

    def clear(self) -> None:
        self._seen.clear()

    def counts(self) -> dict[int, int]:
        """A copy of the call counts (snapshots carry them)."""
        return dict(self._seen)

    def load(self, counts: dict[int, int]) -> None:
        self._seen = dict(counts)

    def next(self, rules: list[FaultRule], endpoint: str) -> FaultRule | None:
        """Count this call of `endpoint` and answer the rule that takes it, if any."""
        for index, rule in enumerate(rules):
            if not matches(rule, endpoint):
                continue
            n = self._seen[index] = self._seen.get(index, 0) + 1
            if applies(rule, n):
                return rule
        return None
