"""Who can reach what: CSRF on every POST, no redirect off the site through any `next`, a
learner's rows closed to other learners, staff pages closed to learners, target API keys never
shown. Routes come from the URL conf (site_map), not a list; the checks that need every page
(staff pages, API keys, every `next`) ride on the site walk in test_site_walk.py."""

from urllib.parse import urlsplit

import pytest
from django.test import Client

from labs.models import LabRun
from tests.security.site_map import concrete_urls, site_routes

pytestmark = pytest.mark.django_db

# Ways to spell "another site" that browsers follow and naive checks let through.
OFF_SITE = [
    "//evil.example",
    "https://evil.example",
    "/\\evil.example",
    "\\\\evil.example",
    "javascript:alert(1)",
    "http:evil.example",
    "https://evil.example@testserver/",
    "/%2F%2Fevil.example",
    " //evil.example",
]


def is_staff_route(route) -> bool:
    """The admin (but its login page, the way in for everyone), and any project view marked with
    core.access.staff_only."""
    if route.name == "admin:login":
        return False
    return route.template.startswith("/admin/") or getattr(route.callback, "staff_only", False)


def stays_on_site(location: str) -> bool:
    """Would a browser following this Location stay on testserver? (It treats \\ as /.)"""
    normalised = location.strip().replace("\\", "/")
    parts = urlsplit(normalised)
    if parts.scheme and parts.scheme not in {"http", "https"}:
        return False
    if normalised.startswith("//") or (parts.scheme and not parts.netloc):
        return False
    return parts.netloc in {"", "testserver"}


def test_every_post_without_a_csrf_token_is_refused(world):
    """Every concrete URL of the URL conf, POSTed as each role with no token, answers 403."""
    allowed = []
    for role in ("anonymous", "learner", "staff"):
        client = Client(enforce_csrf_checks=True, raise_request_exception=False)
        if role != "anonymous":
            client.force_login(world.learner if role == "learner" else world.staff)
        for route in site_routes():
            for url, _ in concrete_urls(route, real_keys=world.real_keys(route), hostile=False):
                status = client.post(url, {"next": "/"}).status_code
                if status != 403:
                    allowed.append(f"POST as {role} {url}: {status}")
    assert not allowed, "POSTs without a CSRF token that were not refused:\n" + "\n".join(allowed)
    world.queued.refresh_from_db()
    assert world.queued.status == LabRun.Status.QUEUED


def test_a_learner_gets_404_for_another_learners_rows_by_id(world):
    """Every route with an int converter, filled with B's ids, as A: 404 (405 for a method the
    view never takes), never B's page, and B's queued run stays queued."""
    client = world.client_for("learner")
    other_ids = {
        "run_id": [str(world.runs["bob"].pk), str(world.queued.pk)],
        "attempt_id": [str(world.attempts["bob"].pk)],
    }
    leaks, tried = [], 0
    for route in site_routes():
        if not route.int_params or is_staff_route(route):
            continue
        assert set(route.int_params) <= set(other_ids), f"{route.template}: no ids of B's for {route.int_params}"
        for url, _ in concrete_urls(route, real_keys=other_ids, hostile=False):
            for method in ("get", "post"):
                response = getattr(client, method)(url)
                tried += 1
                if response.status_code not in (404, 405):
                    leaks.append(f"{method.upper()} {url}: {response.status_code}")
    assert tried >= 12
    assert not leaks, "A reached B's rows:\n" + "\n".join(leaks)
    world.queued.refresh_from_db()
    assert world.queued.status == LabRun.Status.QUEUED
