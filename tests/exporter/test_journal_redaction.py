"""emulator/exporter/journal.py as a sink: it redacts what it stores, whoever sent the request."""

from __future__ import annotations

from emulator.exporter.client import Attempt
from emulator.exporter.journal import JOURNAL_BODY_CAP, Journal
from emulator.redaction import Redactor

KEY = 'journal"key-123'


def stored(attempt: Attempt) -> tuple[object, ...]:
    journal = Journal("e1", lambda: "2026-01-01T00:00:00Z", 100, redactor=Redactor([KEY]))
    journal.add(attempt)
    (row,) = journal.take()
    return row


def test_bodies_and_errors_are_redacted_before_they_are_cut() -> None:
    echoed = b'{"echo": "X-API-Key: journal\\"key-123"}'  # the key as JSON escapes it
    # the key straddles the cap: redacted whole first, so no half of it is kept
    long = b"x" * (JOURNAL_BODY_CAP - 5) + KEY.encode()
    row = stored(Attempt("POST", "/contacts", 200, 1.0, 1, long, echoed, f"error {KEY}"))
    request, response, error = row[7], row[8], row[9]
    assert isinstance(request, str) and isinstance(response, str) and isinstance(error, str)
    assert response == '{"echo": "X-API-Key: ***"}'
    assert "journ" not in request and request.endswith("***")
    assert error == "error ***"


def test_without_a_key_nothing_changes() -> None:
    journal = Journal("e1", lambda: "now", 100)
    journal.add(Attempt("GET", "/health", None, 1.0, 1, None, b"journal-key", None))
    row = journal.take()[0]
    assert (row[7], row[8], row[9]) == (None, "journal-key", None)
