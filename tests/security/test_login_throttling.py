"""Login throttling (django-axes): failures count per (username, address), so a guesser is stopped
without locking the learner out from everywhere, and a success wipes the count."""

from datetime import timedelta

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone

from tests.security.conftest import PASSWORD

pytestmark = pytest.mark.django_db


def log_in(username: str, password: str, *, address: str = "10.0.0.1"):
    # A fresh client per attempt: a logged-in client would be redirected before authenticating.
    client = Client(REMOTE_ADDR=address)
    return client.post("/accounts/login/", {"username": username, "password": password})


def fail(username: str, times: int, *, address: str = "10.0.0.1") -> None:
    for attempt in range(1, times + 1):
        response = log_in(username, "wrong-password", address=address)
        if attempt < settings.AXES_FAILURE_LIMIT:
            assert response.status_code == 200
            assert b"Please enter a correct username and password" in response.content
        else:  # the failure that reaches the limit already answers with the lockout page
            assert response.status_code == 429


def test_after_the_limit_even_the_right_password_is_refused_with_when_to_try_again(make_user):
    make_user("ada", PASSWORD)
    limit = settings.AXES_FAILURE_LIMIT
    fail("ada", limit)
    before = timezone.now()
    response = log_in("ada", PASSWORD)
    html = response.content.decode()
    assert response.status_code == 429
    assert "Too many failed log-ins" in html
    assert f"After {limit} wrong passwords" in html
    retry_at = timezone.localtime(before + settings.AXES_COOLOFF_TIME)  # as the page shows it
    # The lockout runs from the last counted failure: within a few seconds of now + cool-off.
    assert any((retry_at - timedelta(seconds=s)).strftime("%H:%M") in html for s in range(0, 120, 30))
    assert "sessionid" not in response.cookies


def test_the_lock_is_per_username_and_address(make_user):
    make_user("ada", PASSWORD)
    make_user("bob", PASSWORD)
    fail("ada", settings.AXES_FAILURE_LIMIT)
    # Another learner behind the same address still logs in...
    assert log_in("bob", PASSWORD).status_code == 302
    # ...and so does ada from her own machine: a guesser elsewhere cannot lock her out.
    assert log_in("ada", PASSWORD, address="10.0.0.2").status_code == 302
    assert log_in("ada", PASSWORD).status_code == 429


def test_a_success_resets_the_count(make_user):
    make_user("ada", PASSWORD)
    limit = settings.AXES_FAILURE_LIMIT
    fail("ada", limit - 1)
    assert log_in("ada", PASSWORD).status_code == 302
    fail("ada", limit - 1)
    assert log_in("ada", PASSWORD).status_code == 302


def test_x_forwarded_for_counts_only_for_trusted_proxies(make_user, settings):
    """With no trusted proxy, a forged X-Forwarded-For cannot dodge the count."""
    make_user("ada", PASSWORD)
    for index in range(settings.AXES_FAILURE_LIMIT):
        client = Client(REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR=f"203.0.113.{index}")
        client.post("/accounts/login/", {"username": "ada", "password": "wrong-password"})
    assert log_in("ada", PASSWORD).status_code == 429
    # Behind one proxy of ours, the address it saw (the right-most entry) is the client's.
    settings.LOGIN_TRUSTED_PROXIES = 1
    client = Client(REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR="198.51.100.7")
    assert client.post("/accounts/login/", {"username": "ada", "password": PASSWORD}).status_code == 302
