"""CallJournal: the ring's caps in rows and bytes, filters, paging, and clears."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from emulator.calls.journal import ROW_OVERHEAD, Call, CallFilter, CallJournal, body_value

MOMENT = datetime(2026, 11, 2, 9, tzinfo=UTC)


def call(journal: CallJournal, path: str = "/v1/contacts", body: bytes = b"", **kw: object) -> Call:
    c = Call(
        id=journal.next_id(),
        method="GET",
        path=path,
        query="",
        at=0.0,
        virtual_at=MOMENT,
        generation=journal.generation,
        request_body=body,
        **kw,  # type: ignore[arg-type]
    )
    journal.add(c)
    return c


@given(st.lists(st.integers(0, 3000), max_size=60), st.integers(1, 20), st.integers(1, 20_000))
def test_caps_hold_and_only_the_oldest_go(sizes: list[int], rows: int, max_bytes: int) -> None:
    journal = CallJournal(max_rows=rows, max_bytes=max_bytes)
    for n, size in enumerate(sizes):
        call(journal, path=f"/v1/contact/{n}", body=b"x" * size)
    kept = [c.path for c in journal.newest_first(CallFilter())]
    if sizes:
        assert kept[0] == f"/v1/contact/{len(sizes) - 1}"  # the newest is always kept
    assert len(kept) <= rows
    # what is kept is the newest calls, in order, and within the bytes unless only one is left
    expected = [f"/v1/contact/{n}" for n in reversed(range(len(sizes)))][: len(kept)]
    assert kept == expected
    if len(kept) > 1:
        assert journal.bytes <= max_bytes
    assert journal.bytes == sum(
        ROW_OVERHEAD + size + len(f"/v1/contact/{n}")
        for n, size in list(enumerate(sizes))[len(sizes) - len(kept) :]
    )


def test_filters_and_pages_newest_first() -> None:
    journal = CallJournal()
    for n in range(5):
        call(journal, path=f"/v1/contact/{n}", route="/v1/contact/{contactId}", status=200)
    call(journal, path="/v1/contacts", route="/v1/contacts", status=None)
    page = journal.page(CallFilter(route="/v1/contact/{contactId}"), 2, 2)
    assert [c.path for c in page.data] == ["/v1/contact/2", "/v1/contact/1"]
    assert (page.meta.page, page.meta.pageSize, page.meta.total) == (2, 2, 5)
    assert journal.page(CallFilter(unanswered=True), 1, 10).meta.total == 1
    assert journal.page(CallFilter(status=200, path="/v1/contact/4"), 1, 10).meta.total == 1
    assert journal.page(CallFilter(method="POST"), 1, 10).meta.total == 0


def test_a_call_that_began_before_a_clear_is_not_added() -> None:
    journal = CallJournal()
    early = Call(
        id=journal.next_id(), method="GET", path="/v1/x", query="", at=0.0, virtual_at=MOMENT
    )
    assert journal.clear() == 0
    journal.add(early)  # it finishes after the clear (e.g. a slow call, then a reset)
    assert len(journal) == 0
    call(journal)
    assert len(journal) == 1


def test_body_values() -> None:
    assert body_value(b"", False) is None
    assert body_value(b'{"a": [1]}', False) == {"a": [1]}
    assert body_value(b'{"a": [1', True) == '{"a": [1'
    assert body_value(b"not json", False) == "not json"
    assert body_value(b"\xff", False) == "\ufffd"


def test_secrets_in_bodies_are_redacted_whole_or_cut_off() -> None:
    whole = b'{"url": "https://crm", "apiKey": "s3cr3t", "nested": [{"Secret": "x\\"y"}]}'
    assert body_value(whole, False) == {
        "url": "https://crm",
        "apiKey": "***",
        "nested": [{"Secret": "***"}],
    }
    cut = body_value(whole[:40], True)
    assert "s3cr3t" not in cut and '"apiKey": "***"' in cut
    open_ended = body_value(b'{"a": 1, "apiKey": "s3c', True)
    assert open_ended == '{"a": 1, "apiKey": "***"'
    assert body_value(b'{"secret": null}', False) == {"secret": None}
