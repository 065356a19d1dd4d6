"""The /v1 guard reads the API key as Starlette's headers do: the first `x-api-key` header."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from starlette.datastructures import Headers

from emulator.public_api.auth import api_key

names = st.sampled_from([b"x-api-key", b"host", b"x-api-keys", b"x-api", b"content-type"])
values = st.binary(max_size=12).map(lambda b: b.replace(b"\r", b"").replace(b"\n", b""))


@given(st.lists(st.tuples(names, values), max_size=6))
def test_the_key_is_the_first_x_api_key_header(headers: list[tuple[bytes, bytes]]) -> None:
    scope = {"type": "http", "headers": headers}
    expected = next((v.decode("latin-1") for n, v in headers if n == b"x-api-key"), None)
    assert api_key(scope) == expected == Headers(scope=scope).get("x-api-key")
