"""Answer forms built where they are shown, so pages of other apps (a lesson's checks) need only
the questions app's selectors for their data."""

from django import template

from questions.forms import answer_form_for

register = template.Library()


@register.simple_tag
def answer_form(check: dict):
    """The check's form: the one that came back with errors, else a fresh one."""
    return check.get("form") or answer_form_for(
        question=check["question"], auto_id=f"check-{check['question'].slug}-%s"
    )
