"""Match keys: url_key's fast path for the usual schemes keys as the general rule does."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from emulator.normalise import url_key


def _general_rule(value: str) -> str | None:
    """url_key as its docstring states it, any scheme read by one pattern."""
    text = value.strip().lower()
    match = re.match(r"^[a-z][a-z0-9+.-]*://", text)
    text = (text[match.end() :] if match else text).partition("?")[0].partition("#")[0]
    if text.startswith("www."):
        text = text[4:]
    return text.rstrip("/") or None


@pytest.mark.parametrize(
    ("value", "key"),
    [
        ("https://www.Example.com/in/ada/?x=1", "example.com/in/ada"),
        ("  HTTP://network.example/in/bo#top ", "network.example/in/bo"),
        ("https://", None),
        ("https:/example.com", "https:/example.com"),
        ("httpsx://example.com/a", "example.com/a"),
        ("ftp://example.com/", "example.com"),
        ("example.com/in/cy/", "example.com/in/cy"),
    ],
)
def test_a_profile_url_keys_without_scheme_www_query_or_trailing_slash(
    value: str, key: str | None
) -> None:
    assert url_key(value) == key


@given(
    st.builds(
        lambda scheme, rest: scheme + rest,
        st.sampled_from(["", "http://", "https://", "HTTPS://", "http:/", "https:", "git+ssh://"]),
        st.text(alphabet="aW./?#: -:", max_size=12),
    )
)
def test_the_usual_schemes_key_as_any_other(value: str) -> None:
    assert url_key(value) == _general_rule(value)
