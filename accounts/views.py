from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from accounts.forms import SignUpForm
from accounts.selectors import learner_activity


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


@login_required
def me(request: HttpRequest) -> HttpResponse:
    return render(request, "accounts/me.html", learner_activity(user=request.user))
