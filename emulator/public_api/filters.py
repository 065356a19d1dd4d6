"""Pure pieces of list filters: inclusive ISO 8601 bounds, LIKE patterns, a non-ASCII test."""

from __future__ import annotations

from datetime import date

from emulator.errors import BadRequest
from emulator.wire import normalise_iso


def iso_bound(where: str, raw: str, end: bool = False) -> str:
    """`raw` in the stored form; a date-only end bound covers its whole day; bad is a 400."""
    try:
        value = normalise_iso(raw)
    except (ValueError, OverflowError):  # OverflowError: a valid offset pushes past year 1..9999
        raise BadRequest.field(where, "must be an ISO 8601 date or date-time") from None
    if end and _date_only(raw.strip()):
        value = value[:11] + "23:59:59.999Z"
    return value


def _date_only(text: str) -> bool:
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


def like_pattern(term: str) -> str:
    """`%term%` for `LIKE ? ESCAPE '\\'`, with the term's own wildcards taken literally."""
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def non_ascii(column: str) -> str:
    """SQL: the value holds a character beyond ASCII (its UTF-8 bytes outnumber its chars).

    Twice as fast as a GLOB character class; a NUL (where SQLite's text functions stop)
    also counts, so such values take the exact Python path too.
    """
    return f"length(CAST(({column}) AS BLOB)) != length({column})"
