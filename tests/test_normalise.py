"""Match keys: url_key's fast path for the usual schemes keys as the general rule does, and
the keys of many values at once as each value's own."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from emulator import normalise
from emulator.normalise import url_key, url_keys


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


# Values near the edges of the many-at-once path: schemes at and after the start, `www.`
# twice, queries, fragments, trailing slashes, spaces and other whitespace, NUL, non-ASCII
# (a capital whose lower case is two characters), empty strings and None.
_URLISH = st.one_of(
    st.none(),
    st.builds(
        "".join,
        st.lists(
            st.sampled_from(
                [
                    "https://",
                    "HTTPS://",
                    "http://",
                    "ftp://",
                    "www.",
                    "WWW.",
                    "a",
                    "B",
                    "/",
                    "?",
                    "#",
                    ":",
                    " ",
                    "\t",
                    "\x1f",
                    "\x00",
                    "\u0130",
                    "\u00e9",
                    "x.com",
                ]
            ),
            max_size=8,
        ),
    ),
)


@given(st.lists(_URLISH, max_size=12))
def test_many_urls_key_as_each_one_alone(values: list[str | None]) -> None:
    assert url_keys(values) == [url_key(v) for v in values]


def test_many_plain_urls_take_the_joined_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Printable ASCII without spaces, https:// or no scheme: no call of url_key a value."""

    def one_at_a_time(value: str | None) -> str | None:
        raise AssertionError(f"url_key({value!r})")

    monkeypatch.setattr(normalise, "url_key", one_at_a_time)
    values = ["https://www.Network.com/in/ada-1/", None, "www.x.org//", "", "HTTPS://www.", "y"]
    assert url_keys(values) == ["network.com/in/ada-1", None, "x.org", None, None, "y"]
