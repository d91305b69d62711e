"""Login throttling with django-axes: who a failure counts against, and the lockout page.

Failures count per (username, client IP) pair, so an attacker guessing one learner's password is
stopped without locking that learner out from their own machine.
"""

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone


def client_ip(request: HttpRequest) -> str:
    """The address a failure counts against.

    X-Forwarded-For is written by whoever sends the request, so it is trusted only for the hops
    our own proxies added (LOGIN_TRUSTED_PROXIES): the entry that many places from the right is
    the one our outermost proxy saw. With no trusted proxy it is the socket's peer address.
    """
    hops = settings.LOGIN_TRUSTED_PROXIES
    remote = request.META.get("REMOTE_ADDR", "")
    if hops <= 0:
        return remote
    chain = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
    return chain[-hops] if len(chain) >= hops else remote


def locked_out(request: HttpRequest, original_response: HttpResponse | None = None, credentials=None) -> HttpResponse:
    """AXES_LOCKOUT_CALLABLE: a page that says why and the time the learner can try again."""
    from axes.helpers import get_client_username, get_cool_off
    from axes.models import AccessAttempt

    username = get_client_username(request, credentials) or ""
    cool_off = get_cool_off(request)
    # The lockout runs from the failure that reached the limit (failures during a lockout do not
    # extend it: AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT is off).
    attempt = (
        AccessAttempt.objects.filter(username=username, ip_address=getattr(request, "axes_ip_address", None))
        .order_by("-attempt_time")
        .first()
    )
    started = attempt.attempt_time if attempt else timezone.now()
    context = {
        "username": username,
        "failure_limit": settings.AXES_FAILURE_LIMIT,
        "retry_at": started + cool_off,
        "cool_off_minutes": round(cool_off.total_seconds() / 60),
    }
    return render(request, "accounts/locked_out.html", context, status=settings.AXES_HTTP_RESPONSE_CODE)
