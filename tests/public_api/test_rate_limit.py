"""The /v1 rate limit: per API key and endpoint, a 60 s block, the documented headers."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emulator.app import create_app
from emulator.errors import RateLimited
from emulator.public_api.rate_limit import RateLimiter
from emulator.settings import RateLimit
from tests.conftest import ALL, READONLY, make_settings, open_client

pytestmark = pytest.mark.anyio


class FakeTime:
    """An injected wall clock (Unix seconds) that tests move by hand."""

    def __init__(self, at: float = 1_800_000_000.0) -> None:
        self.at = at

    def __call__(self) -> float:
        return self.at


async def test_each_endpoint_has_its_own_budget_under_all() -> None:
    """Calls to two endpoints leave a third untouched (the /identities report of issue 14)."""
    app = create_app(make_settings(rateLimit=RateLimit(scope="all", limit=2)))
    async with open_client(app) as client:
        for path in ("/v1/contacts", "/v1/contacts", "/v1/companies", "/v1/companies"):
            assert (await client.get(path, headers=ALL)).status_code == 200
        assert (await client.get("/v1/contacts", headers=ALL)).status_code == 429
        identities = await client.get("/v1/identities", headers=ALL)
        assert identities.status_code == 200
        assert identities.headers["X-RateLimit-Remaining"] == "1"
        # one endpoint is the route template: other ids share the budget of /contact/{id}
        assert (await client.get("/v1/contact/1", headers=ALL)).status_code == 200
        assert (await client.get("/v1/contact/2", headers=ALL)).status_code == 200
        assert (await client.get("/v1/contact/3", headers=ALL)).status_code == 429
        # and other keys have their own
        assert (await client.get("/v1/contacts", headers=READONLY)).status_code == 200


async def test_a_429_blocks_the_endpoint_for_60_seconds_of_wall_time() -> None:
    app = create_app(make_settings(rateLimit=RateLimit(limit=2)))
    fake = FakeTime()
    app.state.services.public_api.limiter._now = fake
    async with open_client(app) as client:
        first = await client.get("/v1/contact/1", headers=ALL)
        assert first.headers["X-RateLimit-Reset-Seconds"] == str(math.ceil(fake.at + 60))
        assert first.headers["X-RateLimit-Retry-After-Seconds"] == "0"
        fake.at += 10
        last = await client.get("/v1/contact/1", headers=ALL)
        assert last.headers["X-RateLimit-Remaining"] == "0"
        assert last.headers["X-RateLimit-Retry-After-Seconds"] == "50"  # the first hit expires
        fake.at += 5
        refused = await client.get("/v1/contact/1", headers=ALL)
        assert refused.status_code == 429
        assert refused.headers["Retry-After"] == "60"
        assert refused.headers["X-RateLimit-Retry-After-Seconds"] == "60"
        assert refused.headers["X-RateLimit-Reset-Seconds"] == str(math.ceil(fake.at + 60))
        # the window alone would free a slot at +45 s: the block holds until +60 s
        fake.at += 59.9
        still = await client.get("/v1/contact/1", headers=ALL)
        assert still.status_code == 429
        assert still.headers["Retry-After"] == "1"
        fake.at += 0.1
        again = await client.get("/v1/contact/1", headers=ALL)
        assert again.status_code == 200
        assert again.headers["X-RateLimit-Remaining"] == "1"


async def test_the_default_scope_limits_only_get_contact() -> None:
    app = create_app(make_settings())
    async with open_client(app) as client:
        assert "X-RateLimit-Limit" in (await client.get("/v1/contact/1", headers=ALL)).headers
        for path in ("/v1/contacts", "/v1/identities", "/v1/companies"):
            assert "X-RateLimit-Limit" not in (await client.get(path, headers=ALL)).headers


async def test_off_limits_nothing() -> None:
    app = create_app(make_settings(rateLimit=RateLimit(scope="off", limit=1)))
    async with open_client(app) as client:
        for _ in range(3):
            response = await client.get("/v1/contact/1", headers=ALL)
            assert response.status_code == 200
            assert "X-RateLimit-Limit" not in response.headers


# ---- properties of the limiter (any request sequence, injected time) -------------------------

LIMIT, WINDOW = 3, 60.0
requests = st.lists(
    st.tuples(
        st.floats(min_value=0, max_value=40, allow_nan=False),  # seconds since the last one
        st.sampled_from(["k1", "k2"]),
        st.sampled_from(["GET /v1/contacts", "GET /v1/contact/{contactId}"]),
    ),
    max_size=60,
)


def replay(
    sequence: list[tuple[float, str, str]],
) -> list[tuple[float, str, str, dict[str, str] | None, dict[str, str]]]:
    """Each request: (time, key, endpoint, headers when accepted else None, headers answered)."""
    fake = FakeTime()
    limiter = RateLimiter(RateLimit(scope="all", limit=LIMIT, windowSeconds=WINDOW), now=fake)
    out = []
    for gap, key, endpoint in sequence:
        fake.at += gap
        try:
            headers = limiter.check(key, endpoint)
            out.append((fake.at, key, endpoint, headers, headers))
        except RateLimited as exc:
            out.append((fake.at, key, endpoint, None, dict(exc.headers)))
    return out


@settings(max_examples=150, deadline=None)
@given(requests)
def test_never_more_than_the_limit_in_any_window(sequence: list[tuple[float, str, str]]) -> None:
    accepted: dict[tuple[str, str], list[float]] = {}
    for at, key, endpoint, ok, _ in replay(sequence):
        if ok is not None:
            accepted.setdefault((key, endpoint), []).append(at)
    for times in accepted.values():
        for i, start in enumerate(times):
            in_window = [t for t in times[i:] if t < start + WINDOW]
            assert len(in_window) <= LIMIT


@settings(max_examples=150, deadline=None)
@given(requests)
def test_a_block_lasts_exactly_one_window(sequence: list[tuple[float, str, str]]) -> None:
    blocked_since: dict[tuple[str, str], float] = {}
    for at, key, endpoint, ok, _ in replay(sequence):
        pair = (key, endpoint)
        since = blocked_since.get(pair)
        if since is not None and at >= since + WINDOW:
            since = None
            del blocked_since[pair]
        if since is not None:
            assert ok is None  # inside the block: always refused
        elif ok is None:
            blocked_since[pair] = at  # a refusal outside a block starts one


@settings(max_examples=150, deadline=None)
@given(requests)
def test_headers_are_consistent(sequence: list[tuple[float, str, str]]) -> None:
    for at, _, _, ok, headers in replay(sequence):
        assert headers["X-RateLimit-Limit"] == str(LIMIT)
        remaining = int(headers["X-RateLimit-Remaining"])
        retry = int(headers["X-RateLimit-Retry-After-Seconds"])
        reset = int(headers["X-RateLimit-Reset-Seconds"])
        assert 0 <= remaining < LIMIT
        assert at < reset <= math.ceil(at + WINDOW)  # a Unix timestamp within one window
        if ok is None:
            assert remaining == 0
            assert headers["Retry-After"] == str(retry)
            assert 1 <= retry <= WINDOW
        else:
            assert (retry == 0) == (remaining > 0)
            assert retry <= WINDOW
