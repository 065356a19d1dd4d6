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
