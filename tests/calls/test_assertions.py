"""The plugin's assertions over calls: what matches, and the near misses a failure lists."""

from __future__ import annotations

from typing import Any

from emulator.calls.assertions import called_failure, near_misses, not_called_failure


def c(
    method: str, path: str, route: str | None, status: int = 200, body: Any = None
) -> dict[str, Any]:
    return {"method": method, "path": path, "route": route, "status": status, "requestBody": body}


CALLS = [
    c("GET", "/v1/contacts", "/v1/contacts"),
    c("POST", "/v1/contact", "/v1/contact", 201, {"firstName": "Ada", "tags": ["a", "b"]}),
    c("GET", "/v1/contact/1", "/v1/contact/{contactId}", 404),
    c("PATCH", "/v1/webhooks/3", "/v1/webhooks/{webhookId}", body="x" * 500),
]


def test_called_holds() -> None:
    assert called_failure(CALLS, "GET", "/v1/contacts") is None
    assert called_failure(CALLS, "get", "/v1/contact/{contactId}", times=1) is None
    assert called_failure(CALLS, "GET", "/v1/contact/1") is None  # an exact path too
    assert called_failure(CALLS, "POST", "/v1/contact", json={"tags": ["b"]}) is None
    assert called_failure(CALLS, None, None, times=4) is None


def test_wrong_count_lists_the_calls_that_matched() -> None:
    message = called_failure(CALLS, "GET", "/v1/contacts", times=2)
    assert message is not None
    assert message.splitlines() == [
        "expected GET /v1/contacts 2 times, but it was called 1 time(s):",
        "  GET /v1/contacts -> 200",
    ]


def test_no_match_lists_the_closest_first_with_body_excerpts() -> None:
    message = called_failure(CALLS, "POST", "/v1/contact", json={"firstName": "Bob"})
    assert message is not None
    lines = message.splitlines()
    assert lines[0] == (
        'expected POST /v1/contact with a body containing {"firstName":"Bob"}, but no call '
        "matched (4 call(s) recorded); the closest calls:"
    )
    assert lines[1] == '  POST /v1/contact -> 201  {"firstName":"Ada","tags":["a","b"]}'
    # then the route sharing the prefix, then the rest newest first
    assert lines[2] == "  GET /v1/contact/1 -> 404"
    long = next(line for line in lines if "PATCH" in line)
    assert long.endswith("…") and len(long.split("  ", 2)[2]) == 120


def test_no_call_at_all() -> None:
    message = called_failure([], "GET", "/v1/contacts")
    assert message == "expected GET /v1/contacts, but no call matched (0 call(s) recorded)"


def test_near_misses_are_at_most_five() -> None:
    many = [c("GET", f"/v1/contact/{n}", "/v1/contact/{contactId}") for n in range(9)]
    assert len(near_misses(many, "POST", "/v1/contact")) == 5


def test_not_called() -> None:
    assert not_called_failure(CALLS, "DELETE", "/v1/contacts") is None
    message = not_called_failure(CALLS, "GET", "/v1/contact/{contactId}")
    assert message is not None and "GET /v1/contact/1 -> 404" in message
