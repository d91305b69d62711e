"""The real production settings, served by gunicorn as deployed: plain http is sent to https, and
over https (the proxy's X-Forwarded-Proto) every response carries the security headers and the
cookies are Secure. tests/core/test_settings_env.py already runs `check --deploy`; this asks the
running server what a browser would get."""

import os
import subprocess
import sys
import time
from html.parser import HTMLParser

import httpx
import pytest
from django.contrib.auth.hashers import PBKDF2PasswordHasher

from tests.conftest import ROOT, free_port
from tests.security.conftest import PASSWORD
from tests.service_fixtures import worker_database_url

pytestmark = pytest.mark.django_db(transaction=True)

HTTPS = {"X-Forwarded-Proto": "https"}


class Scripts(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.sources: list[str | None] = []
        self.inline: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self.sources.append(dict(attrs).get("src"))
            self._in_script = True
        for name, value in attrs:
            if name.startswith("on"):  # an inline event handler is inline script too
                self.inline.append(f"{tag} {name}={value}")

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_script and data.strip():
            self.inline.append(data.strip()[:80])


@pytest.fixture
def production_server(tmp_path, settings):
    env = {k: v for k, v in os.environ.items() if k not in {"DJANGO_ALLOW_ASYNC_UNSAFE", "DEBUG"}}
    env.update(
        DJANGO_SETTINGS_MODULE="config.production",
        SECRET_KEY="prod-" + "q8Zt3Lm5Xc7Vb1Nn9Kj2Hg4Fd6Sa0Pw" * 2,
        ALLOWED_HOSTS="127.0.0.1",
        DATABASE_URL=worker_database_url(),
        REDIS_URL=settings.REDIS_URL,
        CACHE_KEY_PREFIX=settings.CACHES["default"]["KEY_PREFIX"],
        PREFILL_VAR_DIR=str(tmp_path),  # collected static files land here, not in var/
    )
    env.pop("SECURE_SSL_REDIRECT", None)  # the default, on
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=180,
    )
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "config.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "1"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(f"{url}/healthz", timeout=1)
            break
        except httpx.TransportError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                pytest.fail(f"gunicorn did not start: {server.stderr.read().decode()[-2000:]}")
            time.sleep(0.1)
    yield url
    server.terminate()
    server.wait(timeout=10)


def csp_directives(header: str) -> dict[str, list[str]]:
    directives = {}
    for part in header.split(";"):
        name, *values = part.split()
        directives[name] = values
    return directives


def test_production_serves_https_only_with_security_headers_and_secure_cookies(production_server, make_user):
    # Stored with a hasher production knows (the test settings hash with MD5, which it refuses);
    # few iterations, as the hash itself records them.
    user = make_user("ada")
    user.password = PBKDF2PasswordHasher().encode(PASSWORD, "prefillsalt", iterations=1000)
    user.save(update_fields=["password"])
    with httpx.Client(base_url=production_server, follow_redirects=False, timeout=10) as http:
        # Plain http, as a browser that typed the address: a permanent redirect to https.
        response = http.get("/accounts/login/")
        assert response.status_code == 301
        assert response.headers["Location"] == f"https://{production_server.removeprefix('http://')}/accounts/login/"

        page = http.get("/", headers=HTTPS)
        assert page.status_code == 200
        headers = page.headers
        assert headers["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"
        assert headers["X-Frame-Options"] == "DENY"
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert headers["Referrer-Policy"] == "same-origin"
        csp = csp_directives(headers["Content-Security-Policy"])
        assert csp["default-src"] == ["'self'"]
        assert csp["script-src"] == ["'self'"]  # no 'unsafe-inline', no 'unsafe-eval', no CDN
        assert csp["object-src"] == ["'none'"]
        assert csp["frame-ancestors"] == ["'none'"]

        # The pages keep to that policy: every script is one of our static files, none inline,
        # and each is served (collected, hashed) so the browser can run it.
        scripts = Scripts()
        scripts.feed(page.text)
        assert scripts.sources and not scripts.inline, scripts.inline
        for source in scripts.sources:
            assert source and source.startswith("/static/"), source
            served = http.get(source, headers=HTTPS)
            assert served.status_code == 200 and "javascript" in served.headers["Content-Type"], source

        # Cookies: the CSRF cookie and, after logging in, the session cookie are Secure; the
        # session cookie is HttpOnly so page scripts cannot read it.
        login = http.get("/accounts/login/", headers=HTTPS)
        csrf_cookie = login.headers["Set-Cookie"]
        assert csrf_cookie.startswith("csrftoken=") and "Secure" in csrf_cookie
        token = login.cookies["csrftoken"]
        response = http.post(
            "/accounts/login/",
            data={"username": "ada", "password": PASSWORD, "csrfmiddlewaretoken": token},
            headers={**HTTPS, "Origin": f"https://{production_server.removeprefix('http://')}"},
            cookies={"csrftoken": token},
        )
        assert response.status_code == 302, response.text[:500]
        session_cookie = next(c for c in response.headers.get_list("Set-Cookie") if c.startswith("sessionid="))
        for flag in ("Secure", "HttpOnly", "SameSite=Lax"):
            assert flag in session_cookie, session_cookie
