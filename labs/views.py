from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from courses.selectors import lesson_ref_link, linked_questions
from labs.models import Lab
from labs.selectors import rendered_guide


@require_GET
def lab_index(request: HttpRequest) -> HttpResponse:
    return render(request, "labs/index.html", {"labs": Lab.objects.live()})


@require_GET
def lab_detail(request: HttpRequest, lab_slug: str) -> HttpResponse:
    lab = get_object_or_404(Lab.objects.live(), slug=lab_slug)
    context = {
        "lab": lab,
        "guide_html": rendered_guide(lab=lab),
        "params": lab.spec.get("params", []),
        "questions": linked_questions(slugs=lab.spec.get("questions", [])),
        "lesson_link": lesson_ref_link(ref=lab.lesson_ref) if lab.lesson_ref else None,
    }
    return render(request, "labs/lab.html", context)
