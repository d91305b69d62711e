"""Calculator views: GET forms that work without JavaScript and swap in place with htmx.

Each kind has one view. An htmx request gets the calculator partial
(`courses/calculators/<kind>.html`); any other request gets the full page. Lesson pages embed a
calculator with `calculator_context`, which validates the lesson's arguments up front so a bad
`!calculator(...)` line fails `sync_content` instead of rendering an error to a learner.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import NoReverseMatch, URLPattern, path, reverse
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_GET

from courses.calculators import CALCULATORS, CalculatorKind

# The patterns are included by courses/urls.py under the "courses" namespace; outside it (a test
# URLconf, another project) they resolve without one.
NAMESPACE = "courses"
_DOM_ID = re.compile(r"^[a-z][a-z0-9-]{0,63}$")


class CalculatorError(ValueError):
    """Unknown calculator kind or invalid arguments; the message names the field and the range."""


def url_name(*, kind: str) -> str:
    name = f"calculator-{kind}"
    try:
        reverse(f"{NAMESPACE}:{name}")
    except NoReverseMatch:
        return name
    return f"{NAMESPACE}:{name}"


def _get_kind(*, kind: str) -> CalculatorKind:
    try:
        return CALCULATORS[kind]
    except KeyError:
        raise CalculatorError(
            f"unknown calculator '{kind}'; calculators: {', '.join(CALCULATORS)}"
        ) from None


def _dom_id(*, kind: str, data: Mapping[str, str]) -> str:
    # Stable for the same arguments, so a cached lesson page renders the same ids every time.
    digest = hashlib.sha256(repr(sorted(data.items())).encode()).hexdigest()[:8]
    return f"calc-{kind}-{digest}"


def _form_errors(*, form: Any) -> list[str]:
    return [str(message) for messages in form.errors.values() for message in messages]


def _context(*, spec: CalculatorKind, data: dict[str, str], dom_id: str) -> dict[str, Any]:
    form = spec.form(data=data, auto_id=f"{dom_id}-%s")
    result = spec.compute(**form.cleaned_data) if form.is_valid() else None
    return {
        "calculator": {
            "kind": spec.kind,
            "title": spec.title,
            "summary": spec.summary,
            "dom_id": dom_id,
            "url_name": url_name(kind=spec.kind),
            "template": f"courses/calculators/{spec.kind}.html",
        },
        "form": form,
        "result": result,
        "errors": _form_errors(form=form),
    }


def calculator_context(*, kind: str, initial: Mapping[str, str]) -> dict[str, Any]:
    """Template context for embedding calculator `kind` with `initial` values (strings, as in
    Markdown). Raises CalculatorError for an unknown kind, an unknown argument or a value out of
    range, naming the field and what it accepts."""
    spec = _get_kind(kind=kind)
    fields = spec.form.base_fields
    for key in initial:
        if key not in fields:
            raise CalculatorError(f"unknown argument '{key}'; arguments: {', '.join(fields)}")
    data = spec.data(given={key: str(value) for key, value in initial.items()})
    context = _context(spec=spec, data=data, dom_id=_dom_id(kind=kind, data=data))
    if context["errors"]:
        raise CalculatorError(" ".join(context["errors"]))
    return context


def _calculator_view(*, kind: str) -> Callable[[HttpRequest], HttpResponse]:
    spec = CALCULATORS[kind]

    @require_GET
    def view(request: HttpRequest) -> HttpResponse:
        given = {key: value for key, value in request.GET.items() if key in spec.form.base_fields}
        data = spec.data(given=given)
        requested_id = request.GET.get("cid", "")
        dom_id = requested_id if _DOM_ID.match(requested_id) else _dom_id(kind=kind, data=data)
        context = _context(spec=spec, data=data, dom_id=dom_id)
        # A boosted navigation (hx-boost) wants the whole page, like a plain request.
        htmx = getattr(request, "htmx", None)
        partial = bool(htmx) and not htmx.boosted
        template = context["calculator"]["template"] if partial else "courses/calculators/page.html"
        # Invalid input still answers 200: htmx swaps only 2xx responses, and the errors are
        # the content.
        response = render(request, template, context)
        # The same URL answers a fragment or a page depending on HX-Request; caches must know.
        patch_vary_headers(response, ("HX-Request",))
        return response

    view.__name__ = f"calculator_{kind.replace('-', '_')}"
    view.__doc__ = f"{spec.title}: GET parameters are the form fields; htmx gets the partial."
    return view


calculator_urlpatterns: list[URLPattern] = [
    path(f"calculators/{kind}/", _calculator_view(kind=kind), name=f"calculator-{kind}")
    for kind in CALCULATORS
]
