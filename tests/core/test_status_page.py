"""The footer's "Status" opens a page for people; machines keep reading JSON at /healthz."""

import re

import pytest
from django.test import override_settings

from tests.conftest import free_port

pytestmark = pytest.mark.django_db


def _text(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def test_the_footer_links_to_a_human_status_page(client):
    home = client.get("/glossary/").content.decode()
    assert 'href="/status/">Status</a>' in home
    assert 'href="/healthz">Status' not in home
    response = client.get("/status/")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/html")
    text = _text(response.content.decode())
    assert re.search(r"Database working \d+ ms Lessons, answers, mark sheets and lab results\.", text), text
    assert "Redis (queue and cache) working" in text
    assert "served as JSON at /healthz" in text


def test_the_status_page_says_what_is_down_and_what_it_affects(client):
    dead_url = f"redis://127.0.0.1:{free_port()}/0"
    with override_settings(REDIS_URL=dead_url, HEALTHZ_TIMEOUT_S=0.5):
        text = _text(client.get("/status/").content.decode())
    assert "Something is down" in text
    assert "Redis (queue and cache) down Affected: Queuing lab runs" in text
    assert "127.0.0.1" not in text  # connection details are for staff, not the public


def test_healthz_stays_json_for_machines(client):
    response = client.get("/healthz")
    assert response["Content-Type"] == "application/json"
    assert response.json()["status"] == "ok"


def test_all_systems_working_only_when_every_part_answers(client, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True  # the ping task runs here: a worker that answers
    text = _text(client.get("/status/").content.decode())
    assert "All systems working" in text and "Background workers working" in text
