"""Who can reach what: CSRF on every POST, no redirect off the site through any `next`, a
learner's rows closed to other learners, staff pages closed to learners, target API keys never
shown. Routes and forms come from the URL conf and the pages (site_map, crawl), not a list."""

from urllib.parse import urlsplit

import pytest
from django.test import Client

from labs.models import LabRun
from tests.security.conftest import API_KEY, PASSWORD
from tests.security.crawl import crawl_site
from tests.security.site_map import concrete_urls, route_of, site_routes

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


def test_crawl_as_every_role_keeps_keys_secret_staff_pages_to_staff_and_next_on_site(world):
    """One crawl of every concrete GET URL as anonymous, learner and staff (the admin's change
    pages and the run exports included), then three checks on what it found."""
    crawl = crawl_site(world)
    routes = {route.template: route for route in site_routes()}

    # 1. The target's API key is in no page, export or admin form, for anyone.
    shown = [f"{page.role} GET {page.url}" for page in crawl.pages if API_KEY in page.body]
    assert not shown, "the API key was shown:\n" + "\n".join(shown)
    assert any("/admin/labs/inferencetarget/" in page.url and "/change/" in page.url for page in crawl.pages)
    assert any(page.url.endswith("export.csv") and page.status == 200 for page in crawl.pages)

    # 2. Staff pages refuse learners: the admin and every view marked staff_only. And the mark is
    #    complete: a page staff may open and a learner may not is a staff page.
    by_url: dict[str, dict[str, int]] = {}
    for page in crawl.pages:
        by_url.setdefault(page.url, {})[page.role] = page.status
    staff_urls = {page.url for page in crawl.pages if (route := _route_for(routes, page.url)) and is_staff_route(route)}
    assert "/labs/queue/" in staff_urls
    opened = [url for url in staff_urls if by_url[url].get("learner") == 200]
    assert not opened, "learners opened staff pages:\n" + "\n".join(sorted(opened))
    unmarked = [
        url
        for url, statuses in by_url.items()
        if statuses.get("staff") == 200 and statuses.get("learner") in (302, 403) and url not in staff_urls
    ]
    assert not unmarked, "staff-only pages not marked staff_only (core.access):\n" + "\n".join(sorted(unmarked))

    # 3. No `next` the site honours leads off the site: every form with a `next` field, posted with
    #    each off-site spelling (login forms with the right password, so the redirect happens).
    next_forms = [(role, form) for role, form in crawl.forms.values() if "next" in form.fields]
    assert {route_of(form.action) for _, form in next_forms} >= {"accounts/login/", "admin/login/"}
    assert any("cancel" in form.action for _, form in next_forms), "the queue's cancel form was not found"
    escaped = []
    for role, form in next_forms:
        for target in OFF_SITE:
            client = world.client_for(role)
            data = {**form.defaults(), "next": target}
            if "password" in data:
                user = world.staff if form.action.startswith("/admin/") else world.learner
                data.update(username=user.username, password=PASSWORD)
            response = client.post(f"{form.action.split('?')[0]}?next={target}", data)
            location = response.get("Location", "")
            if response.status_code >= 500 or (location and not stays_on_site(location)):
                escaped.append(f"{role} POST {form.action} next={target!r}: {response.status_code} -> {location!r}")
    assert not escaped, "redirects off the site:\n" + "\n".join(escaped)


def _route_for(routes, url):
    from django.urls import resolve

    match = resolve(urlsplit(url).path)
    return next((route for route in routes.values() if route.callback is match.func), None)
