"""The site walk: every concrete GET URL of the URL conf fetched as anonymous, learner and staff
(once per module, site_crawl), then what the pages show and what they accept.

What they show: no target API key anywhere, staff pages only to staff, no `next` that leaves.
What they accept: hostile input to every form, query parameter and path parameter the site has,
found by walking the URL conf and the pages (tests/security/site_map.py), never from a list.

Each parameter gets each payload while the others keep the values a browser would send. The site
may refuse (4xx) or accept (2xx/3xx), but never fail (5xx), never render a payload live, never
evaluate a template payload, and a refused form says what was wrong. One run lists every defect.
"""

import json
from datetime import date
from urllib.parse import urlencode, urlsplit

import pytest
from django.urls import resolve

from tests.security.conftest import API_KEY, PASSWORD
from tests.security.crawl import ROLES, crawl_site
from tests.security.site_map import concrete_urls, inline_scripts, is_admin, route_of, site_routes
from tests.security.test_access_control import OFF_SITE, is_staff_route, stays_on_site

# Every test here takes the database, so pytest-django keeps them together and the module's world
# and walk are built once (it runs database tests before the others).
pytestmark = pytest.mark.django_db

YEAR = date.today().year

# Markup in a text context and in an attribute, and template syntax, in one string. The template
# part carries markers so evaluation shows: {{ 7|add:1000000 }} prints 1000007, {% now "Y" %} the year.
XSS = "\"><img src=x onerror=alert(1)><script>alert('prefill-xss')</script>"
MARKUP = XSS + '{{ 7|add:1000000 }}{% now "Y" %}-prefill-now'
NUL = "nul\x00byte\x01\x1b[31m\r\n"  # PostgreSQL refuses NUL in text: the classic 500
STRING_PAYLOADS = [MARKUP, "' OR '1'='1; DROP TABLE auth_user; --", "../../../../etc/passwd", "x" * 100_000, NUL]
# Numbers where a number or a choice is expected: negative, zero, past a 64-bit integer,
# not-a-number, infinite, and a superscript digit (str.isdigit() says yes, int() says no).
NUMBER_PAYLOADS = ["-1", "0", str(2**63), "NaN", "-inf", "²"]
CHOICE_KINDS = {"select", "radio", "checkbox", "hidden", "number"}


def expects_number(*, kind: str, default: list[str]) -> bool:
    """A number input, a choice, a hidden id, or a field whose value is a number."""
    return kind in CHOICE_KINDS or any(_is_number(value) for value in default)


def payloads_for(*, kind: str, default: list[str]) -> list[str]:
    """Strings for every field; numbers too where a number or a choice is expected."""
    return STRING_PAYLOADS + NUMBER_PAYLOADS if expects_number(kind=kind, default=default) else STRING_PAYLOADS


def variations(*, url: str, defaults: dict[str, list[str]], kinds: dict[str, str], form: bool):
    """(field, payload, data) to send: each field given each payload while the others keep their
    defaults; then every field repeated (its valid value and a hostile one), and markup in every
    field sent as htmx sends it.

    The admin is Django's own, tested code; what is ours there is its configuration (filters,
    search and ordering fields, forms), so each field gets one payload per kind of failure: markup
    and template syntax, then NUL for text or an id past 64 bits for a number or a choice. Its
    forms are slow pages, so a form takes each payload in every field at once (Django validates
    each field on its own, so one bad field does not hide another); a changelist's filters are
    not independent (one bad lookup stops the query), so they vary one at a time.
    """
    # The CSRF token is not an input of the form's own (test_access_control covers it), and
    # "initial-" fields are Django's copy of a value, read only to tell whether it changed.
    names = [name for name in defaults if name != "csrfmiddlewaretoken" and not name.startswith("initial-")]
    if is_admin(url):
        worst = {
            name: str(2**63) if expects_number(kind=kinds.get(name, "text"), default=defaults[name]) else NUL
            for name in names
        }
        if not form:
            for name in names:
                yield name, "markup", {**defaults, name: [MARKUP]}
                yield name, worst[name], {**defaults, name: [worst[name]]}
        elif names:
            yield "<all>", "markup", {**defaults, **{name: [MARKUP] for name in names}}
            yield "<all>", "NUL or 2**63", {**defaults, **{name: [value] for name, value in worst.items()}}
        return
    for name in names:
        for payload in payloads_for(kind=kinds.get(name, "text"), default=defaults[name]):
            yield name, payload, {**defaults, name: [payload]}
    if names:  # wrong types: every field twice, its own value and a hostile one
        yield "<all>", "<repeated>", {**defaults, **{name: [*defaults[name], XSS] for name in names}}
        # htmx asks for a fragment, rendered by other templates (partials) than the page's.
        yield "<all>", HTMX, {**defaults, **{name: [MARKUP] for name in names}}


def _is_number(text: str) -> bool:
    try:
        float(text.replace(",", ""))
    except ValueError:
        return False
    return True


# The payload label of a request sent as htmx sends it (HX-Request), with markup in every field.
HTMX = "markup, as htmx"

# Bytes that are not UTF-8, percent-encoded and bare (the test client passes them through).
INVALID_UTF8 = "%FF%FE%C3%28"

# A refused form names what was wrong: Django's error list, the admin's note, our alert boxes.
ERROR_MARKERS = ('class="errorlist', "errornote", 'role="alert"', "message-error", 'class="messagelist"')


def live_payload(body: str) -> str | None:
    """Why the body shows a payload live, or None. Escaped echoes are fine."""
    if "<script>alert('prefill-xss')" in body:
        return "script rendered unescaped"
    if "<img src=x onerror" in body:
        return "img onerror rendered unescaped"
    if "1000007" in body or f"{YEAR}-prefill-now" in body:
        return "template payload evaluated"
    if "root:x:0:0" in body:
        return "file contents served"
    return None


class Findings:
    """Every (method, url, field, payload, status, why) that broke a rule, for one assertion."""

    def __init__(self) -> None:
        self.failures: list[str] = []
        self.requests = 0

    def check(self, response, *, method: str, url: str, name: str, payload: str, form_refused_check=False) -> None:
        self.requests += 1
        status = response.status_code
        shown = payload if len(payload) <= 60 else f"{payload[:30]!r}...({len(payload)} chars)"
        where = f"{method} {url[:120]} field={name!r} payload={shown!r} status={status}"
        if status >= 500:
            self.failures.append(f"{where}: server error")
            return
        if not response.get("Content-Type", "").startswith("text/html"):
            return
        body = response.content.decode("utf-8", errors="replace")
        why = live_payload(body)
        if why:
            self.failures.append(f"{where}: {why}")
        if form_refused_check and status in (200, 400, 422) and not any(m in body for m in ERROR_MARKERS):
            self.failures.append(f"{where}: form refused without a message naming what was wrong")

    def assert_none(self, what: str) -> None:
        assert not self.failures, f"{len(self.failures)} defects in {what} ({self.requests} requests):\n" + "\n".join(
            self.failures
        )


def _route_for(routes, url):
    match = resolve(urlsplit(url).path)
    return next((route for route in routes if route.callback is match.func), None)


def test_no_page_export_or_admin_form_shows_a_target_api_key(site_crawl):
    shown = [f"{page.role} GET {page.url}" for page in site_crawl.pages if API_KEY in page.body]
    assert not shown, "the API key was shown:\n" + "\n".join(shown)
    # The walk did reach the places a key would leak from: the admin form and the exports.
    assert any(
        "/admin/labs/inferencetarget/" in page.url and page.url.endswith("/change/") for page in site_crawl.pages
    )
    assert any(page.url.endswith(("export.csv", "export.json")) and page.status == 200 for page in site_crawl.pages)


def test_staff_pages_refuse_learners_and_every_staff_page_is_marked(site_crawl):
    """The admin and every view marked core.access.staff_only refuse a learner. And the mark is
    complete: a page staff may open and a learner may not is a staff page."""
    routes = site_routes()
    by_url: dict[str, dict[str, int]] = {}
    for page in site_crawl.pages:
        by_url.setdefault(page.url, {})[page.role] = page.status
    staff_urls = {url for url in by_url if (route := _route_for(routes, url)) and is_staff_route(route)}
    assert "/labs/queue/" in staff_urls
    opened = [url for url in staff_urls if by_url[url].get("learner") == 200]
    assert not opened, "learners opened staff pages:\n" + "\n".join(sorted(opened))
    unmarked = [
        url
        for url, statuses in by_url.items()
        if statuses.get("staff") == 200 and statuses.get("learner") in (302, 403) and url not in staff_urls
    ]
    assert not unmarked, "staff-only pages not marked staff_only (core.access):\n" + "\n".join(sorted(unmarked))


def test_no_page_needs_script_the_content_security_policy_blocks(site_crawl):
    """Production's CSP runs scripts only from our own static files (script-src 'self'), so a
    page with an inline script or an on* handler would break there: no page has one."""
    found = [
        f"{page.role} GET {page.url}: {', '.join(scripts)}"
        for page in site_crawl.pages
        if page.content_type.startswith("text/html") and (scripts := inline_scripts(page.body))
    ]
    assert not found, "inline script the CSP blocks:\n" + "\n".join(found)


def test_no_next_parameter_the_site_honours_leads_off_the_site(world, site_crawl):
    """Every form with a `next` field (the login pages, the queue's cancel form), posted with each
    off-site spelling in the form and the query string; login forms with the right password, so
    the redirect really happens."""
    next_forms = [(role, form) for role, form in site_crawl.forms.values() if "next" in form.fields]
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
            response = client.post(f"{form.action.split('?')[0]}?{urlencode({'next': target})}", data)
            location = response.get("Location", "")
            if response.status_code >= 500 or (location and not stays_on_site(location)):
                escaped.append(f"{role} POST {form.action} next={target!r}: {response.status_code} -> {location!r}")
    assert not escaped, "redirects off the site:\n" + "\n".join(escaped)


def test_hostile_path_values_never_fail(world):
    """Every path converter gets values it accepts but no object has: 0, past 64 bits, 10**30,
    a missing and a 1,000-character slug, an encoded traversal."""
    findings = Findings()
    learner, staff = world.client_for("learner"), world.client_for("staff")
    for route in site_routes():
        for url, hostile in concrete_urls(route, real_keys=world.real_keys(route)):
            if hostile:
                findings.check(learner.get(url), method="GET as learner", url=url, name="<path>", payload="")
                findings.check(learner.post(url), method="POST as learner", url=url, name="<path>", payload="")
                findings.check(staff.get(url), method="GET as staff", url=url, name="<path>", payload="")
    findings.assert_none("path parameters")
    assert findings.requests > 300  # the walk really covered the site's parameterised routes


def fuzz_queries(world, crawl, findings: Findings) -> None:
    """Each query parameter a link or GET form uses, one at a time, the others kept."""
    for _route, (role, path, defaults) in crawl.queries.items():
        client = world.client_for(role)
        label = f"GET as {role}"
        for name, payload, data in variations(url=path, defaults=defaults, kinds={}, form=False):
            headers = {"HX-Request": "true"} if payload == HTMX else {}
            response = client.get(f"{path}?{urlencode(data, doseq=True)}", headers=headers)
            findings.check(response, method=label, url=path, name=name, payload=payload)
        # Every parameter at once as bytes that are not UTF-8, percent-encoded and raw.
        for raw in (INVALID_UTF8, "\xff\xfe"):
            response = client.get(path, QUERY_STRING="&".join(f"{name}={raw}" for name in defaults))
            findings.check(response, method=label, url=path, name="<all>", payload=f"invalid utf-8 {raw!r}")


def _fuzzable(form) -> bool:
    # An admin delete confirmation deletes on any POST: its one hidden field says "yes". CSRF on
    # it is tested in test_access_control; here it would only delete the rows under test.
    return not (route_of(form.action) or "").endswith("/delete/")


def fuzz_forms(world, crawl, findings: Findings) -> None:
    """Each field of each form, one at a time, the others keeping what a browser would send; then
    the whole form as non-UTF-8 bytes, as JSON, and empty."""
    for (method, _handler, _names), (role, form) in crawl.forms.items():
        if not _fuzzable(form):
            continue
        # A fresh login per form: a logout form or a password change ends the session it posts in.
        client = world.client_for(role)
        defaults = form.defaults()
        label = f"{method.upper()} as {role}"
        for name, payload, data in variations(url=form.action, defaults=defaults, kinds=form.kinds, form=True):
            headers = {"HX-Request": "true"} if payload == HTMX else {}
            response = client.post(form.action, data, headers=headers)
            # htmx answers 200 for a refusal and for a success alike (it swaps only 2xx), so only a
            # plain submit can tell a refused form by its status.
            refused_check = payload not in {"<repeated>", HTMX}
            findings.check(
                response, method=label, url=form.action, name=name, payload=payload, form_refused_check=refused_check
            )
        body = "&".join(f"{name}={INVALID_UTF8}" for name in defaults if name != "csrfmiddlewaretoken")
        for name, payload, response in (
            (
                "<all>",
                "invalid utf-8",
                client.generic("POST", form.action, body.encode(), content_type="application/x-www-form-urlencoded"),
            ),
            (
                "<all>",
                "json body",
                client.generic("POST", form.action, json.dumps(defaults), content_type="application/json"),
            ),
            ("<none>", "empty post", client.post(form.action, {})),
        ):
            findings.check(response, method=label, url=form.action, name=name, payload=payload)


def test_every_query_parameter_and_form_field_survives_hostile_input(world, site_crawl):
    """The walk found the parameters and forms; one assertion lists every defect, including
    payloads a form stored and a later page rendered live."""
    crawl = site_crawl
    assert len(crawl.queries) >= 5, "the crawl found few query parameters: the walker is broken"
    assert {role for role, _ in crawl.forms.values()} == set(ROLES), "the crawl missed a role's forms"
    findings = Findings()
    fuzz_queries(world, crawl, findings)
    fuzz_forms(world, crawl, findings)
    shown = {(page.role, page.url) for page in crawl.pages if page.status == 200}
    for page in crawl_site(world, roles=("learner", "staff"), only=shown).pages:
        findings.requests += 1
        if page.content_type.startswith("text/html") and (why := live_payload(page.body)):
            findings.failures.append(f"GET as {page.role} {page.url} after the forms stored payloads: {why}")
    findings.assert_none("query parameters and form fields")
