"""emulator/redaction.py: secrets replaced by *** in text, bytes, JSON, headers and log records."""

from __future__ import annotations

import html
import json
import logging
import urllib.parse

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from emulator.redaction import MIN_RENDERED, Redactor, SecretBook, redact_logs

KEY = "crm-demo-key"
# secrets: at least one character that is not `*` (a secret of stars only is ignored)
secrets = st.text(min_size=1, max_size=20).filter(lambda s: s.strip("*"))
texts = st.text(max_size=40)


def test_examples() -> None:
    r = Redactor([KEY])
    assert r.text(f"key={KEY}; again {KEY}") == "key=***; again ***"
    assert r.bytes(b'{"echo":"X-API-Key: crm-demo-key"}') == b'{"echo":"X-API-Key: ***"}'
    assert r.json({"a": [KEY, 3, {"b": f"<{KEY}>"}], KEY: None}) == {
        "a": ["***", 3, {"b": "<***>"}],
        "***": None,
    }
    assert r.headers([("X-API-Key", KEY), ("Accept", "*/*")]) == [
        ("X-API-Key", "***"),
        ("Accept", "*/*"),
    ]
    assert r.headers([(b"x-api-key", KEY.encode())]) == [(b"x-api-key", b"***")]
    assert r.optional(None) is None


def test_escaped_forms_are_found() -> None:
    key = 'k"e<y>&\\/é'
    r = Redactor([key])
    for shown in (
        json.dumps({"echo": key}),  # \" \\ \u00e9
        json.dumps({"echo": key}, ensure_ascii=False),
        msgspec.json.encode({"echo": key}).decode(),
        html.escape(f"<p>{key}</p>"),
        urllib.parse.quote(f"/x?k={key}"),
        repr(key.encode()),
        json.dumps(json.dumps({"echo": key})),  # a JSON body kept as a string in JSON
    ):
        assert "***" in r.text(shown), shown
        assert "e<y" not in r.text(shown) and "e\\u003cy" not in r.text(shown), shown


def test_nothing_to_redact() -> None:
    assert not Redactor() and not Redactor(["", None, "***"])
    assert Redactor().text("crm-demo-key") == "crm-demo-key"
    assert Redactor().bytes(b"x") == b"x"
    assert Redactor([KEY])


@given(secrets, texts, texts)
def test_a_secret_never_survives_in_text(secret: str, before: str, after: str) -> None:
    out = Redactor([secret]).text(before + secret + after)
    assert secret not in out and "***" in out


@given(secrets, texts, texts)
def test_a_secret_never_survives_in_bytes(secret: str, before: str, after: str) -> None:
    out = Redactor([secret]).bytes((before + secret + after).encode())
    assert secret.encode() not in out and b"***" in out


@given(secrets, texts, texts)
def test_a_secret_never_survives_json_or_html_encoding(
    secret: str, before: str, after: str
) -> None:
    r = Redactor([secret])
    for encoded, escaped in (
        (json.dumps(before + secret + after), json.dumps(secret)[1:-1]),
        (json.dumps(before + secret + after, ensure_ascii=False), json.dumps(secret, ensure_ascii=False)[1:-1]),
        (html.escape(before + secret + after), html.escape(secret)),
    ):  # fmt: skip
        out = r.text(encoded)
        assert escaped not in out and "***" in out


@given(st.lists(secrets, min_size=1, max_size=3), st.recursive(
    st.none() | st.integers() | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
))  # fmt: skip
def test_json_keeps_the_shape(several: list[str], doc: object) -> None:
    wrapped = {"doc": doc, "echo": [f"x{s}y" for s in several]}
    out = Redactor(several).json(wrapped)
    # keys are redacted too (a secret may be part of "echo"): the echo is the second value
    assert type(out) is dict and len(out) == 2
    echo = list(out.values())[1]
    assert type(echo) is list and len(echo) == len(several)
    assert all(f"x{s}y" not in json.dumps(echo) for s in several)
    assert all(s not in json.loads(json.dumps(echo))[i] for i, s in enumerate(several))


def test_a_secret_next_to_stars_cannot_reform() -> None:
    assert Redactor(["x*"]).text("xx*") == "*****"
    assert "x*" not in Redactor(["x*"]).text("xxxx****")


def test_the_book_keeps_secrets_long_enough_to_search_rendered_output() -> None:
    book = SecretBook(["k", None, "short"])
    assert not book.redactor  # "k" would match every k of a page
    book.add("a" * MIN_RENDERED, "control-token-value")
    assert book.redactor.text("control-token-value " + "a" * MIN_RENDERED) == "*** ***"
    before = book.redactor
    book.add("control-token-value")
    assert book.redactor is before  # nothing new: the same redactor


def test_log_records_are_redacted(caplog: object) -> None:
    book = SecretBook(["log-secret-value"])
    redact_logs(book)
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    logger = logging.getLogger("tests.redaction")
    keep = Keep()
    logger.addHandler(keep)
    try:
        logger.warning("sent %s to the CRM", "log-secret-value")
        try:
            raise ValueError("the CRM said log-secret-value")
        except ValueError:
            logger.exception("failed")
    finally:
        logger.removeHandler(keep)
    formatter = logging.Formatter()
    shown = "\n".join(formatter.format(r) for r in records)
    assert "log-secret-value" not in shown
    assert "sent *** to the CRM" in shown and "the CRM said ***" in shown
