import pytest
from django.contrib.auth.models import User


@pytest.mark.django_db
def test_sign_up_logs_the_learner_in_and_lands_on_me(client):
    response = client.post(
        "/accounts/signup/",
        {"username": "grace", "password1": "decode-is-memory-bound-42", "password2": "decode-is-memory-bound-42"},
        follow=True,
    )
    assert response.redirect_chain[-1][0] == "/accounts/me/"
    assert response.context["user"].username == "grace"
    assert b"No lessons marked done yet" in response.content
    assert User.objects.get(username="grace").check_password("decode-is-memory-bound-42")


@pytest.mark.django_db
def test_sign_up_rejects_a_weak_password_with_djangos_validators(client):
    response = client.post("/accounts/signup/", {"username": "weak", "password1": "password", "password2": "password"})
    assert response.status_code == 200
    assert b"This password is too common" in response.content
    assert not User.objects.filter(username="weak").exists()


@pytest.mark.django_db
def test_log_in_log_out_and_change_password(client, user):
    response = client.post("/accounts/login/", {"username": "ada", "password": "a-long-test-password-42"}, follow=True)
    assert response.context["user"].is_authenticated
    response = client.post(
        "/accounts/password/",
        {
            "old_password": "a-long-test-password-42",
            "new_password1": "kv-cache-grows-per-token-7",
            "new_password2": "kv-cache-grows-per-token-7",
        },
        follow=True,
    )
    assert b"Password changed" in response.content
    client.post("/accounts/logout/")
    assert client.get("/accounts/me/").status_code == 302
    # Through the login page, not client.login(): the throttling backend needs the request.
    response = client.post("/accounts/login/", {"username": "ada", "password": "kv-cache-grows-per-token-7"})
    assert response.status_code == 302
    assert client.get("/accounts/me/").status_code == 200


@pytest.mark.django_db
def test_me_requires_login_and_redirects_back(client):
    response = client.get("/accounts/me/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/accounts/me/"


@pytest.mark.django_db
def test_login_next_cannot_leave_the_site(client, user):
    response = client.post(
        "/accounts/login/?next=https://evil.example/steal",
        {"username": "ada", "password": "a-long-test-password-42", "next": "https://evil.example/steal"},
    )
    assert response.status_code == 302
    assert "evil.example" not in response["Location"]
