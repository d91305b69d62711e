"""The run form: a lab's parameters (bounded by the lab and the chosen target), a target picked by
name, and the learner's prediction. No field ever takes a URL or a host."""

import math
import re

from django import forms

from labs.models import InferenceTarget, Lab
from labs.plans import CAPPED_PARAMS, needs_forced_output

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


def fit_to_target(*, param_specs: list[dict], params: dict, target: InferenceTarget) -> tuple[dict, list[str]]:
    """The parameters within the target's caps, and a note for every value changed.

    A lab's defaults are written for a large GPU (concurrency up to 64); a small target allows
    less. Rather than refuse them, a list keeps the values the target allows (or its cap, when
    none fits) and a single value is lowered to the cap, and the learner is told what changed.
    """
    fitted = dict(params)
    notes: list[str] = []
    for param in param_specs:
        name = param["name"]
        limit_attr = CAPPED_PARAMS.get(name)
        value = fitted.get(name)
        if limit_attr is None or value is None:
            continue
        limit = getattr(target, limit_attr)
        label = param["label"]
        if isinstance(value, list):
            over = [v for v in value if v > limit]
            if not over:
                continue
            kept = [v for v in value if v <= limit] or [limit]
            fitted[name] = kept
            notes.append(
                f"{label}: {', '.join(map(str, over))} left out; {target.name} allows at most {limit}, "
                f"so the run uses {', '.join(map(str, kept))}."
            )
        elif value > limit:
            fitted[name] = limit
            notes.append(f"{label}: {value} lowered to {limit}, the most {target.name} allows.")
    return fitted, notes


_RANGE_PLACEHOLDER = re.compile(r"\{(\w+)\.(low|high)\}")


def prediction_prompt(*, text: str, params: dict) -> str:
    """The lab's prediction prompt with {name.low} / {name.high} replaced by the range the run
    will actually use, so it never promises levels the chosen engine does not allow."""

    def replace(match: re.Match[str]) -> str:
        value = params.get(match.group(1))
        values = value if isinstance(value, list) else [value]
        numbers = [v for v in values if isinstance(v, int | float)]
        if not numbers:
            return match.group(0)
        return f"{min(numbers) if match.group(2) == 'low' else max(numbers):,}"

    return _RANGE_PLACEHOLDER.sub(replace, text)


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

    def __init__(
        self,
        *args,
        lab: Lab,
        initial_params: dict | None = None,
        initial_predicted: dict | None = None,
        target: InferenceTarget | None = None,
        **kwargs,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.lab = lab
        enabled = InferenceTarget.objects.filter(enabled=True).order_by("name")
        self.fields["target"].queryset = enabled
        # Read once: the page asks whether there are any, then lists them (a query each, otherwise).
        self.targets = list(enabled)
        self.needs_forced_output = needs_forced_output(plan=lab.spec.get("plan", {}))
        # Marked before the learner submits: on such an engine this lab's comparison is uncontrolled.
        self.fields["target"].choices = [
            (
                target.pk,
                f"{target.name} (uncontrolled: cannot force output length)"
                if self.needs_forced_output and not target.can_force_output_length
                else target.name,
            )
            for target in self.targets
        ]
        self.param_specs = lab.spec.get("params", [])
        initial_values: dict = {}
        for param in self.param_specs:
            initial = (initial_params or {}).get(param["name"], param["default"])
            if param["kind"] == "int_list" and not isinstance(initial, list):
                initial = [initial]
            initial_values[param["name"]] = initial
        # Pre-filled within the limits of the engine the form starts on, so the defaults are
        # accepted as they stand; the notes say which defaults were changed for it.
        self.selected_target = target or (self.targets[0] if self.targets else None)
        self.fit_notes: list[str] = []
        if self.selected_target is not None:
            initial_values, self.fit_notes = fit_to_target(
                param_specs=self.param_specs, params=initial_values, target=self.selected_target
            )
            self.fields["target"].initial = self.selected_target.pk
        self.initial_values = initial_values
        # Numbers to put next to the measurement in a table: optional, the text above is not.
        self.predict_specs = lab.spec.get("predict", [])
        for entry in self.predict_specs:
            self.fields[f"predict_{entry['name']}"] = FiniteFloatField(
                label=entry["label"],
                required=False,
                min_value=0,
                help_text=(
                    "Optional: a ratio, such as 2.5 for ×2.5."
                    if entry.get("unit") == "ratio"
                    else f"Optional, in {entry['unit']}."
                    if entry.get("unit")
                    else "Optional."
                ),
                initial=(initial_predicted or {}).get(entry["name"]),
            )
        # Without JS the form cannot refill itself when another engine is picked: links beside
        # the field refill it for each engine, and a submit fits what it gets (fit_to_target).
        self.other_targets = [
            t for t in self.targets if self.selected_target is None or t.pk != self.selected_target.pk
        ]
        for param in self.param_specs:
            self.fields[f"param_{param['name']}"] = _field_for(param, initial_values[param["name"]])

    def param_fields(self):
        return [self[f"param_{param['name']}"] for param in self.param_specs]

    def clean(self):
        cleaned = super().clean()
        self.adjustments: list[str] = []
        target: InferenceTarget | None = cleaned.get("target")
        if target is None:
            return cleaned
        # Values above the engine's caps (the form was filled for another engine, or typed) are
        # fitted to it, not refused; the run page lists what changed.
        entered = {
            param["name"]: cleaned[f"param_{param['name']}"]
            for param in self.param_specs
            if f"param_{param['name']}" in cleaned
        }
        fitted, self.adjustments = fit_to_target(param_specs=self.param_specs, params=entered, target=target)
        for name, value in fitted.items():
            cleaned[f"param_{name}"] = value
        return cleaned

    @property
    def params(self) -> dict:
        return {param["name"]: self.cleaned_data[f"param_{param['name']}"] for param in self.param_specs}

    def predict_fields(self):
        return [self[f"predict_{entry['name']}"] for entry in self.predict_specs]

    @property
    def predicted(self) -> dict[str, float]:
        return {
            entry["name"]: value
            for entry in self.predict_specs
            if (value := self.cleaned_data.get(f"predict_{entry['name']}")) is not None
        }

    @property
    def prediction_prompt(self) -> str:
        return prediction_prompt(text=self.lab.spec.get("prediction", ""), params=self.initial_values)
