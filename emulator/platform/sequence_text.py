"""How a sequence step's texts read for one campaign member: message bodies and subjects, task
subjects and descriptions. The one owner of these rules; the simulation, the control API and
the exporter all call it."""

from __future__ import annotations


def render(text: str | None, first_name: str | None, company: str | None) -> str | None:
    """A step's text with the member's `{{firstName}}` and `{{companyName}}` filled in."""
    if not text:
        return None
    return text.replace("{{firstName}}", first_name or "there").replace(
        "{{companyName}}", company or "your team"
    )


def task_subject(
    template: str | None,
    task_type: str | None,
    campaign: str,
    first_name: str | None,
    company: str | None,
) -> str:
    """A TASK step's subject for one member: its `taskSubject` rendered, else `<type>: <campaign>`."""
    return render(template, first_name, company) or f"{task_type or 'Task'}: {campaign}"


def task_description(
    content: str | None, campaign: str | None, first_name: str | None, company: str | None
) -> str | None:
    """A TASK step's notes for one member: its `content` rendered, else which campaign made it."""
    rendered = render(content, first_name, company)
    if rendered:
        return rendered
    return f"Sequence task of campaign {campaign}" if campaign else None
