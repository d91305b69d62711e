from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.templatetags.static import static
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from core.glossary import METRICS
from core.health import health_report


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    healthy, report = health_report(deep=request.GET.get("deep") == "1")
    return JsonResponse(report, status=200 if healthy else 503)


# What each part does for a learner, so the status page says what is affected when it is down.
_PARTS = {
    "database": ("Database", "Lessons, answers, mark sheets and lab results."),
    "redis": ("Redis (queue and cache)", "Queuing lab runs and grading second opinions; page caching."),
    "worker": ("Background workers", "Running queued lab runs and scheduled clean-ups."),
}


@never_cache
@require_GET
def status_page(request: HttpRequest) -> HttpResponse:
    """The status for people (the footer's "Status"); machines read JSON at /healthz."""
    healthy, report = health_report(deep=True)
    parts = [
        {"name": _PARTS[key][0], "affects": _PARTS[key][1], **check}
        for key, check in report["checks"].items()
        if key in _PARTS
    ]
    # The page is for people: a missing worker is worth saying even though /healthz stays 200 for it.
    everything_ok = healthy and all(part["ok"] for part in parts)
    return render(request, "core/status.html", {"everything_ok": everything_ok, "parts": parts})


@require_GET
def favicon(request: HttpRequest) -> HttpResponse:
    """Browsers ask for /favicon.ico on pages that name no icon (the admin, exports)."""
    return redirect(static("favicon.svg"), permanent=True)


@require_GET
def glossary(request: HttpRequest) -> HttpResponse:
    return render(request, "core/glossary.html", {"metrics": METRICS})


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return render(request, "core/404.html", status=404)


def server_error(request: HttpRequest) -> HttpResponse:
    return render(request, "core/500.html", status=500)
