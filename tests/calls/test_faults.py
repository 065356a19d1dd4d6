"""The /v1 fault decisions: route patterns, matching, counting, and the checks of a fault."""

from __future__ import annotations

from typing import Any

import pytest

from emulator.calls.faults import FaultBook, Incoming, V1FaultIn, problems
from emulator.calls.v1_routes import route_for, route_pattern, templates


def incoming(path: str = "/v1/contacts", method: str = "GET", **kw: Any) -> Incoming:
    values: dict[str, Any] = {"key_id": None, "query": {}, "body": None}
    values.update(kw)
    return Incoming(method, path, **values)


@pytest.mark.parametrize(
    ("template", "path", "hit"),
    [
        ("/v1/contact/{contactId}", "/v1/contact/7", True),
        ("/v1/contact/{contactId}", "/v1/contact/7/x", False),
        ("/v1/contact/{contactId}", "/v1/contact/", False),
        ("/v1/contacts", "/v1/contactsX", False),
        ("/v1/a.b/{x}", "/v1/aXb/1", False),  # dots are literal
    ],
)
def test_route_pattern(template: str, path: str, hit: bool) -> None:
    assert bool(route_pattern(template).match(path)) is hit


def test_route_for_picks_what_the_router_would() -> None:
    assert "/v1/contact/{contactId}" in templates()
    assert route_for("GET", "/v1/contact/7") == "/v1/contact/{contactId}"
    assert route_for("GET", "/v1/contacts") == "/v1/contacts"
    assert route_for("GET", "/v1/nothing/here/at/all") is None


def test_first_times_then_the_next_fault() -> None:
    book = FaultBook()
    a = book.add(V1FaultIn(route="/v1/contacts", status=503, times=2))
    b = book.add(V1FaultIn(route="/v1/contacts", status=429, times=1))
    taken = [book.take(incoming()) for _ in range(4)]
    assert [t.id if t else None for t in taken] == [a.id, a.id, b.id, None]
    listed = {f.id: (f.matched, f.fired) for f in book.listing()}
    assert listed == {a.id: (4, 2), b.id: (2, 1)}


def test_every_part_of_the_match_must_hold() -> None:
    book = FaultBook()
    book.add(
        V1FaultIn(
            method="post",
            path="/v1/contact",
            keyId="k",
            query={"dry": "1"},
            json={"a": {"b": 1}},
            status=500,
        )
    )
    good: dict[str, Any] = {
        "path": "/v1/contact",
        "method": "POST",
        "key_id": "k",
        "query": {"dry": ["1"]},
        "body": {"a": {"b": 1, "c": 2}, "d": 3},
    }
    assert book.take(incoming(**good)) is not None
    for change in (
        {"method": "GET"},
        {"path": "/v1/contact/1"},
        {"key_id": "other"},
        {"key_id": None},
        {"query": {"dry": ["0"]}},
        {"query": {}},
        {"body": {"a": {"b": 2}}},
        {"body": None},
    ):
        assert book.take(incoming(**{**good, **change})) is None, change


def test_probability_draws_depend_on_seed_and_call_number_only() -> None:
    def draws(seed: int) -> list[bool]:
        book = FaultBook()
        book.add(V1FaultIn(status=500, probability=0.3, seed=seed))
        return [book.take(incoming()) is not None for _ in range(200)]

    assert draws(1) == draws(1)
    assert draws(1) != draws(2)
    assert 30 < sum(draws(1)) < 90  # about 60 of 200


def test_remove_and_clear() -> None:
    book = FaultBook()
    a = book.add(V1FaultIn(status=500))
    assert book.remove("nope") is None
    assert book.remove(a.id) is not None and not book
    book.add(V1FaultIn(status=500))
    assert book.clear() == 1 and not book


@pytest.mark.parametrize(
    ("fault", "field"),
    [
        (V1FaultIn(), ""),
        (V1FaultIn(status=199), "status"),
        (V1FaultIn(route="/v1/contacts", path="/v1/contacts", status=500), "path"),
        (V1FaultIn(drop=True, malformed=True), "drop"),
        (V1FaultIn(headers={"a": "b"}, latencyMs=5), "status"),
        (V1FaultIn(latencyMs=-1), "latencyMs"),
        (V1FaultIn(status=500, probability=-0.1), "probability"),
    ],
)
def test_problems(fault: V1FaultIn, field: str) -> None:
    assert field in [f for f, _ in problems(fault, templates())]


def test_a_good_fault_has_no_problem() -> None:
    ok = V1FaultIn(method="GET", route="/v1/contact/{contactId}", latencyMs=2000, malformed=True)
    assert problems(ok, templates()) == []
