"""sequence_text: the one owner of how a step's texts read for a member."""

from __future__ import annotations

from emulator.platform.sequence_text import render, task_description, task_subject


def test_render_fills_the_member_in_and_falls_back_like_message_bodies() -> None:
    assert render("Hi {{firstName}} of {{companyName}}", "Ada", "Acme") == "Hi Ada of Acme"
    assert render("Hi {{firstName}} of {{companyName}}", None, None) == "Hi there of your team"
    assert render("", "Ada", "Acme") is None and render(None, "Ada", "Acme") is None


def test_task_subject_is_the_rendered_template_or_type_and_campaign() -> None:
    assert task_subject("Call {{firstName}}", "CALL", "Q1", "Ada", None) == "Call Ada"
    assert task_subject(None, "CALL", "Q1", "Ada", None) == "CALL: Q1"
    assert task_subject(None, None, "Q1", "Ada", None) == "Task: Q1"


def test_task_description_is_the_rendered_content_or_the_campaign() -> None:
    assert task_description("Ask {{firstName}}", "Q1", "Ada", None) == "Ask Ada"
    assert task_description(None, "Q1", "Ada", None) == "Sequence task of campaign Q1"
    assert task_description(None, None, "Ada", None) is None
