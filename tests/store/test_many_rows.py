"""Rows written in a few multi-row statements: every row once, in order, in statements of at
most 128 rows drawn from a handful of texts (each parsed once, then cached)."""

from __future__ import annotations

import sqlite3

from hypothesis import given
from hypothesis import strategies as st

from emulator.store.many_rows import many_rows, many_rows_statements

HEAD = "INSERT INTO t(a, b) VALUES "


@given(st.integers(min_value=0, max_value=1_200))
def test_every_row_once_in_order_in_statements_of_at_most_128_rows(n: int) -> None:
    rows = [(i, f"r{i}") for i in range(n)]
    statements = many_rows_statements(HEAD, rows)
    written = []
    for sql, runs in statements:
        size = sql.count("(?, ?)")
        assert 1 <= size <= 128
        for params in runs:
            assert len(params) == 2 * size
            written.extend(zip(params[0::2], params[1::2], strict=True))
    assert written == rows
    # n = 127 needs 3 x 32 + 3 x 8 + 7 x 1: each size one statement text, run as often as it fits
    assert len(statements) <= 4


def test_the_rows_reach_the_table_in_order() -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t(a INTEGER, b TEXT)")
    rows = [(i, f"r{i}") for i in range(300)]
    many_rows(conn, HEAD, rows)
    assert conn.execute("SELECT a, b FROM t ORDER BY rowid").fetchall() == rows
