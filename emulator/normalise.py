"""Normal forms used to match records: e-mails, domains, profile and page URLs, phones, names."""

from __future__ import annotations

import re

_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*://")
# compiled once: re.sub(pattern, ...) looks its pattern up in re's cache on every call, a
# third of phone_key's time (twice per contact in each CRM sync, create and update)
_NOT_DIGIT = re.compile(r"\D")


def email_key(email: str | None) -> str | None:
    """Case-insensitive e-mail; blank is None."""
    if email is None:
        return None
    key = email.strip().lower()
    return key or None


def _without_scheme(value: str) -> str:
    text = value.strip().lower()
    # the usual schemes without the regular expression (half of url_key's time): neither
    # ':' nor '/' can be part of a scheme, so they are exactly what _SCHEME matches
    if text.startswith("https://"):
        return text[8:]
    if text.startswith("http://"):
        return text[7:]
    match = _SCHEME.match(text)
    return text[match.end() :] if match else text


def domain_key(value: str | None) -> str | None:
    """Lower case, no protocol, no `www.`, no path, query, port or trailing dot."""
    if value is None:
        return None
    text = _without_scheme(value)
    text = text.partition("/")[0].partition("?")[0].partition("#")[0]
    text = text.rpartition("@")[2].partition(":")[0].rstrip(".")
    if text.startswith("www."):
        text = text[4:]
    return text or None


def url_key(value: str | None) -> str | None:
    """Lower case, no scheme, no `www.`, no query or fragment, no trailing slash."""
    if value is None:
        return None
    text = _without_scheme(value).partition("?")[0].partition("#")[0]
    if text.startswith("www."):
        text = text[4:]
    text = text.rstrip("/")
    return text or None


def phone_key(value: str | None) -> str | None:
    """Digits only (a leading + is dropped); fewer than 5 digits is no phone."""
    if value is None:
        return None
    digits = _NOT_DIGIT.sub("", value)
    return digits if len(digits) >= 5 else None


def name_key(value: str | None) -> str | None:
    """Case-insensitive, whitespace-folded name."""
    if value is None:
        return None
    key = " ".join(value.split()).lower()
    return key or None


# Many values at once (a fixture's contacts, a thousand a chunk): where every value is
# printable ASCII without spaces, which leaves nothing for `str.strip` to take, the keys come
# from a few C-speed passes over the values joined by spaces (bytes' lower, replace, split),
# not from a Python call each; anything else takes `url_key` one value at a time.
_VISIBLE = bytes(range(0x21, 0x7F))


def url_keys(values: list[str | None]) -> list[str | None]:
    """`url_key` of each value, in order."""
    text = f" {' '.join([v or '' for v in values])} "  # None keys as "" does: None
    if text.isascii():
        data = text.encode("ascii")
        if data.translate(None, _VISIBLE) == b" " * (len(values) + 1):
            # each value's own start follows a space: its https:// and then its `www.` are
            # cut there only; any other scheme, one left after it, a query or a fragment:
            # one value at a time
            data = data.lower().replace(b" https://", b" ")
            if b"://" not in data and b"?" not in data and b"#" not in data:
                data = data.replace(b" www.", b" ")
                while b"/ " in data:  # rstrip("/") of every value
                    data = data.replace(b"/ ", b" ")
                return [key or None for key in data[1:-1].decode("ascii").split(" ")]
    return list(map(url_key, values))
