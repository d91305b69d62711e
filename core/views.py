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
