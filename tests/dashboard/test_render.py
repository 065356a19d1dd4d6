"""How a page writes values: as the API writes them, dates kept whole."""

from __future__ import annotations

import pytest

from emulator.dashboard.render import scalar, when


@pytest.mark.parametrize(
    ("value", "written"),
    [
        (True, "true"),
        (False, "false"),
        (None, '<span class="null">null</span>'),
        (0, "0"),
        (1.5, "1.5"),
        ("plain <text>", "plain &lt;text&gt;"),
        ("", ""),
        ([1, None], "[\n  1,\n  null\n]"),
        ({"on": False}, "{\n  &#34;on&#34;: false\n}"),
        (
            "2026-01-05T09:00:00.000Z",
            '<time datetime="2026-01-05T09:00:00.000Z">2026-01-05T09:00:00.000Z</time>',
        ),
        ("2026-01-05", '<time datetime="2026-01-05">2026-01-05</time>'),
        (
            "2026-01-05T09:00+02:00",
            '<time datetime="2026-01-05T09:00+02:00">2026-01-05T09:00+02:00</time>',
        ),
        ("2026-01-05 and more", "2026-01-05 and more"),  # not a date: text
    ],
)
def test_a_value_is_written_as_the_api_writes_it(value: object, written: str) -> None:
    assert str(scalar(value)) == written


def test_a_date_is_escaped_and_absent_dates_write_nothing() -> None:
    assert str(when('2026"<x>')) == '<time datetime="2026&#34;&lt;x&gt;">2026&#34;&lt;x&gt;</time>'
    assert str(when(None)) == "" and str(when("")) == ""
