import json

from django.contrib import messages
from django.contrib.auth import login, logout
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods

from accounts import services
from accounts.forms import DeleteAccountForm, SignUpForm
from accounts.selectors import learner_activity, learner_data_counts
from core.page_cache import per_learner_page


@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    if request.user.is_authenticated:
        return redirect("accounts:me")
    form = SignUpForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        messages.success(request, f"Welcome, {user.username}. Your progress is saved from now on.")
        return redirect("accounts:me")
    return render(request, "accounts/signup.html", {"form": form})


@per_learner_page(max_age_s=60)
@login_required
def me(request: HttpRequest) -> HttpResponse:
    return render(request, "accounts/me.html", learner_activity(user=request.user))


@login_required
@require_GET
def your_data(request: HttpRequest) -> HttpResponse:
    return render(request, "accounts/your_data.html", learner_data_counts(user=request.user))


def _attachment(content: str, *, content_type: str, filename: str) -> HttpResponse:
    response = HttpResponse(content, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["Cache-Control"] = "no-store"  # personal data: no proxy or browser cache keeps a copy
    return response


@login_required
@require_GET
def export_json(request: HttpRequest) -> HttpResponse:
    data = services.export_learner_data(user=request.user)
    return _attachment(
        json.dumps(data, indent=2, ensure_ascii=False),
        content_type="application/json; charset=utf-8",
        filename=f"prefill-data-{timezone.localdate():%Y-%m-%d}.json",
    )


@login_required
@require_GET
def export_runs_csv(request: HttpRequest) -> HttpResponse:
    return _attachment(
        services.lab_runs_csv(user=request.user),
        content_type="text/csv; charset=utf-8",
        filename=f"prefill-lab-runs-{timezone.localdate():%Y-%m-%d}.csv",
    )


@login_required
@require_http_methods(["GET", "POST"])
def delete_account(request: HttpRequest) -> HttpResponse:
    form = DeleteAccountForm(request.POST or None, request=request)
    if request.method == "POST" and form.is_valid():
        username = request.user.get_username()
        services.delete_account(user=request.user)
        logout(request)
        messages.success(request, f"The account {username} and everything Prefill held about it are deleted.")
        return redirect("home")
    return render(request, "accounts/delete_account.html", {"form": form, **learner_data_counts(user=request.user)})
