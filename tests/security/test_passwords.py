"""Sign-up applies Django's password validators and shows their messages on the page."""

import pytest
from django.contrib.auth.models import User

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("username", "password", "message"),
    [
        ("grace", "kv7-ttf", "This password is too short. It must contain at least 8 characters."),
        ("grace", "qwertyuiop", "This password is too common."),
        ("grace", "4815162342", "This password is entirely numeric."),
        ("gracehopper", "gracehopper1", "The password is too similar to the username."),
    ],
)
def test_sign_up_refuses_a_weak_password_with_djangos_message(client, username, password, message):
    response = client.post("/accounts/signup/", {"username": username, "password1": password, "password2": password})
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not User.objects.filter(username=username).exists()
