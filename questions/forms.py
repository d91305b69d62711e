from django import forms

from questions.challenges import MAX_NOTE_CHARS
from questions.services import MAX_ANSWER_CHARS

# One limit for the help text, the browser (maxlength) and the server (services.clean_answer,
# whose message names the limit).
_LIMIT = f"Up to {MAX_ANSWER_CHARS:,} characters."


class AnswerForm(forms.Form):
    answer = forms.CharField(
        label="Your answer",
        widget=forms.Textarea(
            attrs={
                "rows": 9,
                "maxlength": MAX_ANSWER_CHARS,
                "placeholder": "Answer as you would out loud in an interview.",
            }
        ),
        strip=True,
        required=False,
        help_text=f"{_LIMIT} Full sentences: the rubric rewards explanations, not keyword lists.",
    )
    follow_up = forms.SlugField(required=False, widget=forms.HiddenInput)


class NumericAnswerForm(AnswerForm):
    """A number with its unit; a multi-line box with the working when the working earns points."""

    def __init__(self, *args, working_points: int = 0, value_points: int = 0, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["answer"]
        if working_points:
            field.label = "Your answer (with its unit) and your working"
            field.widget = forms.Textarea(
                attrs={
                    "rows": 6,
                    "maxlength": MAX_ANSWER_CHARS,
                    "autocomplete": "off",
                    "placeholder": "e.g. 2 x 32 layers x 8 KV heads x 128 x 2 bytes = 131,072 bytes = 128 KiB",
                }
            )
            field.help_text = (
                f"The number with its unit earns {value_points} "
                f"point{'s' if value_points != 1 else ''}; the working earns {working_points} more, "
                f"so write out how you got there. {_LIMIT}"
            )
        else:
            field.label = "Your answer (with its unit)"
            field.widget = forms.TextInput(
                attrs={
                    "maxlength": MAX_ANSWER_CHARS,
                    "autocomplete": "off",
                    "placeholder": "e.g. 16 GiB, 1.6e10 bytes, 42 tokens/s",
                }
            )
            field.help_text = f"A number and its unit. {_LIMIT}"


class ChoiceAnswerForm(AnswerForm):
    answer = forms.ChoiceField(label="Pick one", widget=forms.RadioSelect, required=False, choices=())

    def __init__(self, *args, choices: list[str], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["answer"].choices = [(str(index), text) for index, text in enumerate(choices)]


def numeric_points(*, question) -> tuple[int, int]:
    """(points for the value, points for the working) of a numeric question as synced."""
    value_points = int((question.spec.get("numeric") or {}).get("points", 0))
    working_points = sum(int(criterion.get("points", 0)) for criterion in question.spec.get("rubric", []))
    return value_points, working_points


def answer_form_for(*, question, data=None, auto_id: str = "id_%s", initial: dict | None = None) -> AnswerForm:
    """The form that takes a main answer to `question` (free text, numeric or a choice).

    `auto_id` keeps element ids unique when several forms share a page (a lesson's checks).
    """
    from questions.models import Question

    if question.kind == Question.Kind.NUMERIC:
        value_points, working_points = numeric_points(question=question)
        return NumericAnswerForm(
            data, auto_id=auto_id, initial=initial, value_points=value_points, working_points=working_points
        )
    if question.kind == Question.Kind.MULTIPLE_CHOICE:
        choices = [choice["text"] for choice in question.spec.get("choices", [])]
        return ChoiceAnswerForm(data, choices=choices, auto_id=auto_id, initial=initial)
    return AnswerForm(data, auto_id=auto_id, initial=initial)


class ChallengeForm(forms.Form):
    """Which missed points the answer made and which flagged misconceptions it did not state,
    by their place on the mark sheet, with a note."""

    criteria = forms.TypedMultipleChoiceField(
        coerce=int, required=False, widget=forms.CheckboxSelectMultiple, label="Points my answer made"
    )
    misconceptions = forms.TypedMultipleChoiceField(
        coerce=int, required=False, widget=forms.CheckboxSelectMultiple, label="Misconceptions my answer does not state"
    )
    note = forms.CharField(
        required=False,
        strip=True,
        label="Why (optional)",
        widget=forms.Textarea(attrs={"rows": 3, "maxlength": MAX_NOTE_CHARS,
                                     "placeholder": "e.g. My second sentence says the cache grows with every token."}),
        help_text=f"Up to {MAX_NOTE_CHARS:,} characters.",
    )

    def __init__(self, *args, criteria: list[tuple[int, str]], misconceptions: list[tuple[int, str]], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["criteria"].choices = criteria
        self.fields["misconceptions"].choices = misconceptions
        if not misconceptions:
            del self.fields["misconceptions"]
        if not criteria:
            del self.fields["criteria"]
