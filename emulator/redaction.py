"""Secrets out of every output: `Redactor(secrets)` replaces each secret with `***`.

Pure (no I/O): given the secrets in force (the CRM's API key, webhook secrets, the control
token), it redacts text, bytes, header lists and decoded JSON. A secret is found raw, inside
longer strings, and in the forms an output may have escaped it into: JSON (compact and
ASCII-only), HTML, URL encoding, Python's repr, and JSON of those (a JSON body kept as a string
inside another JSON document, such as a journal entry). A CRM that echoes the key it was sent
therefore cannot make the key reach a report, a page or a log.

    r = Redactor(["crm-demo-key"])
    r.text("key=crm-demo-key")        -> "key=***"
    r.bytes(b'{"k":"crm-demo-key"}')  -> b'{"k":"***"}'
    r.json({"h": ["crm-demo-key"]})   -> {"h": ["***"]}
    r.headers([("X-API-Key", "crm-demo-key")]) -> [("X-API-Key", "***")]

`SecretBook` holds the secrets one process has seen (added, never removed: a key replaced
later still appears in older journal rows) and hands out the matching `Redactor`;
`RedactingFilter` applies the book to log records.
"""

from __future__ import annotations

import html
import json
import logging
import re
import threading
import urllib.parse
import weakref
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

REDACTED = "***"
# Rendered outputs (pages, report files, logs) are searched only for secrets this long: a
# shorter one ("k" in a test) matches ordinary text and markup. Shorter keys are still
# redacted where exchanges are recorded (a `Redactor` takes any length).
MIN_RENDERED = 8
T = TypeVar("T")

_ESCAPES: tuple[Callable[[str], str], ...] = (
    lambda s: json.dumps(s, ensure_ascii=False)[1:-1],  # JSON as msgspec writes it
    lambda s: json.dumps(s)[1:-1],  # JSON with \uXXXX escapes
    lambda s: html.escape(s, quote=True),
    lambda s: urllib.parse.quote(s, safe=""),
    urllib.parse.quote,  # "/" left as it is, as in a path
    lambda s: urllib.parse.quote_plus(s, safe=""),
    lambda s: repr(s)[1:-1],  # a str's repr (in an exception message, say)
    lambda s: repr(s.encode())[2:-1],  # a bytes' repr, e.g. f"{body[:120]!r}"
)


def forms(secret: str) -> set[str]:
    """The secret and every way an output may have escaped it (up to two escapes deep)."""
    found = {secret}
    for _ in range(2):
        found |= {escape(f) for f in found for escape in _ESCAPES}
    return {f for f in found if f}


class Redactor:
    """Replaces every secret of `secrets` (and its escaped forms) with `***`.

    Empty secrets are ignored; so are ones made only of `*` (the replacement itself).
    """

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        self.secrets = frozenset(s for s in secrets if s and s.strip("*"))
        every = sorted({f for s in self.secrets for f in forms(s)}, key=len, reverse=True)
        # longest first: a secret inside another one's escaped form goes with the longer match
        self._text = re.compile("|".join(map(re.escape, every))) if every else None
        self._bytes = re.compile(b"|".join(re.escape(f.encode()) for f in every)) if every else None
        self.longest = max((len(f.encode()) for f in every), default=0)
        # A few plain `in` scans are much faster than the regex on a body without a secret
        # (the common case, on the exporter's path): the regex runs only after a hit.
        self._quick = tuple(f.encode() for f in every) if len(every) <= 4 else None

    def __bool__(self) -> bool:
        return self._text is not None

    def text(self, s: str) -> str:
        if self._text is None:
            return s
        # Again until none is left: a secret with a `*` may re-form around a `***` ("x*" in
        # "xx*" -> "x***"); each pass removes characters that are not `*`, so it ends.
        while self._text.search(s):
            s = self._text.sub(REDACTED, s)
        return s

    def optional(self, s: str | None) -> str | None:
        return None if s is None else self.text(s)

    def bytes(self, b: bytes) -> bytes:
        if self._bytes is None or (
            self._quick is not None and not any(f in b for f in self._quick)
        ):
            return b
        while self._bytes.search(b):  # as in `text`
            b = self._bytes.sub(REDACTED.encode(), b)
        return b

    def json(self, obj: T) -> T:
        """A copy of decoded JSON (dicts, lists, strings...) with every string redacted, keys too."""
        if self._text is None:
            return obj
        return self._walk(obj)  # type: ignore[no-any-return]

    def _walk(self, obj: Any) -> Any:
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, dict):
            return {self._walk(k): self._walk(v) for k, v in obj.items()}
        if isinstance(obj, list | tuple):
            return type(obj)(self._walk(v) for v in obj)
        if isinstance(obj, bytes):
            return self.bytes(obj)
        return obj

    def headers(self, headers: Iterable[tuple[T, T]]) -> list[tuple[T, T]]:
        """(name, value) pairs, str or bytes, with every value redacted (names kept)."""
        return [(name, self._walk(value)) for name, value in headers]


class SecretBook:
    """The secrets a process has seen, for its rendered outputs (those of MIN_RENDERED
    characters or more); thread-safe (log records come from any thread)."""

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        self._lock = threading.Lock()
        self._redactor = Redactor()
        self.add(*secrets)

    def add(self, *secrets: str | None) -> None:
        new = {s for s in secrets if s and len(s) >= MIN_RENDERED and s.strip("*")}
        if new <= self._redactor.secrets:
            return
        with self._lock:
            self._redactor = Redactor(self._redactor.secrets | new)

    @property
    def redactor(self) -> Redactor:
        return self._redactor


class RedactingFilter(logging.Filter):
    """Redacts a log record's message and traceback with the books' secrets."""

    def __init__(self, books: Iterable[SecretBook] = ()) -> None:
        super().__init__()
        self.books: weakref.WeakSet[SecretBook] = weakref.WeakSet(books)  # an app's dies with it

    def filter(self, record: logging.LogRecord) -> bool:
        redactors = [b.redactor for b in list(self.books) if b.redactor]
        if not redactors:
            return True
        message = record.getMessage()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        for r in redactors:
            message = r.text(message)
            record.exc_text = r.optional(record.exc_text)
        record.msg, record.args = message, ()
        return True


_FILTER = RedactingFilter()


def redact_logs(book: SecretBook) -> None:
    """Every log record made from now on in this process is redacted with `book`'s secrets
    too, whichever logger makes it and whichever handler writes it (uvicorn's, the root's,
    Python's last-resort stderr): the record factory runs the filter as it makes a record."""
    _FILTER.books.add(book)
    make = logging.getLogRecordFactory()
    if getattr(make, "redacting", False):
        return

    def redacted_record(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = make(*args, **kwargs)
        _FILTER.filter(record)
        return record

    redacted_record.redacting = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(redacted_record)
