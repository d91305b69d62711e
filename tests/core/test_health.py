import json

import pytest
from django.test import override_settings

from core.health import check_redis
from tests.conftest import free_port


@pytest.mark.django_db
def test_healthz_is_green_with_the_real_database_and_redis(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["checks"]["database"]["ok"] is True
    assert body["checks"]["redis"]["ok"] is True


@pytest.mark.django_db
def test_healthz_is_503_and_names_redis_when_nothing_listens(client):
    dead_url = f"redis://127.0.0.1:{free_port()}/0"
    with override_settings(REDIS_URL=dead_url, HEALTHZ_TIMEOUT_S=0.5):
        response = client.get("/healthz")
    assert response.status_code == 503
    body = json.loads(response.content)
    assert body["status"] == "degraded"
    assert body["checks"]["database"]["ok"] is True
    assert body["checks"]["redis"]["ok"] is False
    assert "Connection" in body["checks"]["redis"]["error"]


def test_redis_probe_recovers_when_a_private_redis_comes_back(private_redis):
    assert check_redis(url=private_redis["url"]).ok
    private_redis["process"].terminate()
    private_redis["process"].wait(timeout=10)
    down = check_redis(url=private_redis["url"])
    assert not down.ok
    assert down.error


@pytest.mark.django_db
def test_pages_carry_a_content_security_policy_that_allows_only_our_scripts(client):
    response = client.get("/glossary/")
    policy = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy
    assert "object-src 'none'" in policy and "frame-ancestors 'none'" in policy
    assert "unsafe-eval" not in policy
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
