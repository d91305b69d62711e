"""Answer forms built where they are shown, so pages of other apps (a lesson's checks) need only
the questions app's selectors for their data."""

from django import template

from core.lru import BoundedLRU
from questions import challenges
from questions.forms import AnswerForm, ChoiceAnswerForm, answer_form_for

register = template.Library()


@register.simple_tag
def answer_form(check: dict):
    """The check's form: the one that came back with errors, else a fresh one."""
    return check.get("form") or answer_form_for(
        question=check["question"], auto_id=f"check-{check['question'].slug}-%s"
    )


# A multiple-choice question's radio buttons cost about 2,400 Python calls to render through
# Django's form renderer (a template per option), and they are the same HTML for every learner
# shown the same choices with the same one ticked: kept per process, keyed by everything the
# widget is drawn from (ids, choices, the ticked value; the form's code is fixed per process).
_choice_widgets = BoundedLRU(max_items=512)


@register.simple_tag
def answer_widget(form: AnswerForm) -> str:
    """The form's answer field as HTML; an unbound choice form's from the memo."""
    field = form["answer"]
    if form.is_bound or not isinstance(form, ChoiceAnswerForm):
        return str(field)
    key = "\0".join((form.auto_id or "", form.prefix or "", str(field.value() or ""), repr(field.field.choices)))
    html = _choice_widgets.get(key)
    if html is None:
        html = str(field)
        _choice_widgets.put(key, html)
    return html


@register.filter
def challengeable(attempt) -> bool:
    """Whether the mark sheet has anything the learner may challenge (a point not fully awarded,
    a misconception flagged): the same rule as the challenge form's (questions.challenges)."""
    criteria, misconceptions = challenges.challengeable(attempt=attempt)
    return bool(criteria or misconceptions)
