"""The dispatcher's pure parts: which paths are a workspace's, and a page's links prefixed."""

from __future__ import annotations

from emulator.workspaces.dispatch import prefixed_html, split


def test_only_w_id_paths_belong_to_a_workspace() -> None:
    assert split("/w/abc/v1/contacts") == ("abc", "/v1/contacts")
    assert split("/w/abc/") == ("abc", "/")
    assert split("/w/abc") == ("abc", "/")
    assert split("/w/") is None
    assert split("/w") is None
    assert split("/v1/contacts") is None
    assert split("/webhooks/3") is None  # a dashboard page that merely starts with /w


def test_a_pages_root_relative_links_get_the_prefix_and_nothing_else() -> None:
    page = (
        b'<html lang="en"><a href="/contacts/4">x</a> <form method="post" action="/">'
        b'<button data-api="/_emulator/reset" data-then="/">r</button></form>'
        b'<script src="/dashboard-assets/dashboard.js"></script>'
        b'<a href="https://example.com/x">out</a> <a href="//cdn.example/y">proto</a>'
        b'<a href="#top">anchor</a> <p>href="/not-an-attribute"</p></html>'
    )
    out = prefixed_html(page, "/w/abc")
    assert out.startswith(b'<html data-base="/w/abc" lang="en">')
    for link in (
        b'href="/w/abc/contacts/4"',
        b'action="/w/abc/"',
        b'data-api="/w/abc/_emulator/reset"',
        b'data-then="/w/abc/"',
        b'src="/w/abc/dashboard-assets/dashboard.js"',
        b'href="https://example.com/x"',
        b'href="//cdn.example/y"',
        b'href="#top"',
        b'<p>href="/not-an-attribute"</p>',
    ):
        assert link in out, link
