"""The run form: a lab's parameters (bounded by the lab and the chosen target), a target picked by
name, and the learner's prediction. No field ever takes a URL or a host."""

import math

from django import forms

from labs.models import InferenceTarget, Lab
from labs.plans import CAPPED_PARAMS

MAX_LIST_VALUES = 10


class IntListField(forms.CharField):
    def __init__(self, *, min_value: int, max_value: int, **kwargs) -> None:
        self.min_value, self.max_value = min_value, max_value
        super().__init__(**kwargs)

    def to_python(self, value):
        text = super().to_python(value)
        if not text:
            return []
        items = [item for item in text.replace(";", ",").replace(" ", ",").split(",") if item]
        if len(items) > MAX_LIST_VALUES:
            raise forms.ValidationError(f"At most {MAX_LIST_VALUES} values; you gave {len(items)}.")
        numbers = []
        for item in items:
            try:
                numbers.append(int(item))
            except ValueError:
                raise forms.ValidationError(
                    f"'{item[:20]}' is not a whole number. "
                    "Write whole numbers separated by commas, e.g. 128, 512, 2048."
                ) from None
        return numbers

    def validate(self, value):
        super().validate(value)
        for number in value:
            if not self.min_value <= number <= self.max_value:
                raise forms.ValidationError(
                    f"{number} is outside the allowed range {self.min_value} to {self.max_value}."
                )


class FiniteFloatField(forms.FloatField):
    def validate(self, value):
        super().validate(value)
        if value is not None and not math.isfinite(value):
            raise forms.ValidationError("Enter a finite number.")


def _field_for(param: dict, initial):
    kind, label, help_text = param["kind"], param["label"], param.get("help", "")
    if kind == "int":
        return forms.IntegerField(
            label=label,
            help_text=f"{help_text} Allowed: {param['min']} to {param['max']}.",
            min_value=param["min"],
            max_value=param["max"],
            initial=initial,
        )
    if kind == "float":
        return FiniteFloatField(
            label=label,
            help_text=f"{help_text} Allowed: {param['min']} to {param['max']}.",
            min_value=param["min"],
            max_value=param["max"],
            initial=initial,
        )
    if kind == "int_list":
        return IntListField(
            label=label,
            min_value=param["min"],
            max_value=param["max"],
            max_length=200,
            initial=", ".join(str(v) for v in initial),
            help_text=f"{help_text} Comma-separated, each {param['min']} to {param['max']}.",
        )
    return forms.ChoiceField(
        label=label, choices=[(c, c) for c in param["choices"]], initial=initial, help_text=help_text
    )


class RunForm(forms.Form):
    target = forms.ModelChoiceField(
        queryset=InferenceTarget.objects.none(),
        label="Engine",
        empty_label=None,
        help_text="Runs on one engine never overlap, so your numbers are not polluted by another learner's run.",
    )
    prediction = forms.CharField(
        label="Your prediction",
        widget=forms.Textarea(attrs={"rows": 3}),
        max_length=2000,
        help_text="Write it before you run: the results page puts it next to what you measure.",
    )

    def __init__(self, *args, lab: Lab, initial_params: dict | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.lab = lab
        enabled = InferenceTarget.objects.filter(enabled=True).order_by("name")
        self.fields["target"].queryset = enabled
        # Read once: the page asks whether there are any, then lists them (a query each, otherwise).
        self.targets = list(enabled)
        self.fields["target"].choices = [(target.pk, target.name) for target in self.targets]
        self.param_specs = lab.spec.get("params", [])
        for param in self.param_specs:
            initial = (initial_params or {}).get(param["name"], param["default"])
            if param["kind"] == "int_list" and not isinstance(initial, list):
                initial = [initial]
            self.fields[f"param_{param['name']}"] = _field_for(param, initial)

    def param_fields(self):
        return [self[f"param_{param['name']}"] for param in self.param_specs]

    def clean(self):
        cleaned = super().clean()
        target: InferenceTarget | None = cleaned.get("target")
        if target is None:
            return cleaned
        for param in self.param_specs:
            field_name = f"param_{param['name']}"
            limit_attr = CAPPED_PARAMS.get(param["name"])
            if field_name not in cleaned or limit_attr is None:
                continue
            limit = getattr(target, limit_attr)
            values = cleaned[field_name] if isinstance(cleaned[field_name], list) else [cleaned[field_name]]
            too_big = [v for v in values if v is not None and v > limit]
            if too_big:
                self.add_error(field_name, f"{too_big[0]} is above what {target.name} allows ({limit}).")
        return cleaned

    @property
    def params(self) -> dict:
        return {param["name"]: self.cleaned_data[f"param_{param['name']}"] for param in self.param_specs}
