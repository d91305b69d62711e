from django import forms

from questions.services import MAX_ANSWER_CHARS


class AnswerForm(forms.Form):
    answer = forms.CharField(
        label="Your answer",
        widget=forms.Textarea(attrs={"rows": 9, "placeholder": "Answer as you would out loud in an interview."}),
        # The limit is enforced by the service with a message that shows it; the browser limit is
        # one larger so a pasted overlong answer reaches the server and gets that message.
        max_length=MAX_ANSWER_CHARS * 2,
        strip=True,
        required=False,
        help_text=(
            f"Up to {MAX_ANSWER_CHARS:,} characters. "
            "Full sentences: the rubric rewards explanations, not keyword lists."
        ),
    )
    follow_up = forms.SlugField(required=False, widget=forms.HiddenInput)


class NumericAnswerForm(AnswerForm):
    answer = forms.CharField(
        label="Your answer (with its unit)",
        max_length=200,
        required=False,
        widget=forms.TextInput(attrs={"placeholder": "e.g. 16 GiB, 1.6e10 bytes, 42 tokens/s", "autocomplete": "off"}),
        help_text="A number and a unit. Show your working in a follow-up if you like.",
    )


class ChoiceAnswerForm(AnswerForm):
    answer = forms.ChoiceField(label="Pick one", widget=forms.RadioSelect, required=False, choices=())

    def __init__(self, *args, choices: list[str], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["answer"].choices = [(str(index), text) for index, text in enumerate(choices)]


def answer_form_for(*, question, data=None, auto_id: str = "id_%s") -> AnswerForm:
    """The form that takes a main answer to `question` (free text, numeric or a choice).

    `auto_id` keeps element ids unique when several forms share a page (a lesson's checks).
    """
    from questions.models import Question

    if question.kind == Question.Kind.NUMERIC:
        return NumericAnswerForm(data, auto_id=auto_id)
    if question.kind == Question.Kind.MULTIPLE_CHOICE:
        choices = [choice["text"] for choice in question.spec.get("choices", [])]
        return ChoiceAnswerForm(data, choices=choices, auto_id=auto_id)
    return AnswerForm(data, auto_id=auto_id)
