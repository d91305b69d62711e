"""A signed-in learner's page, kept whole in this process until something it shows changes, and
served before Django's middleware stack.

Rendering a signed-in lesson page costs milliseconds of CPU (the learner's queries, the template
engine); even serving kept bytes from the view costs a millisecond of middleware (the session, the
CSRF check, the user, messages, CSP) that a static file, answered by WhiteNoise, never pays. So the
view only says that its page may be kept (``per_learner_page``) and under what (the learner, their
session's auth hash, the content version and the learner token read before it rendered), and
``KeptPageMiddleware``, placed straight after SecurityMiddleware and WhiteNoise, keeps the response
as the whole stack sent it (bytes, headers, the CSRF cookie) and answers the next request for the
same page from it. A page is found by

    (scheme, host, full path, session cookie, CSRF cookie)

so it can only ever be served to the browser it was rendered for, and before it is served one
Redis round trip (MGET) reads the session and the learner's token: it is served only while the
session is still signed in as that learner with the same auth hash and no message waiting, the
token is the one it was rendered under (core.learner_state renews it at every write of the
learner's: progress, answers, reveals, review cards, runs, the account itself), the content
version is the same (core.versions: sync_content) and it is younger than the view's
``max_age_s`` (pages that also show what is not the learner's own: the lab's engines, the review
queue's due dates).

Only GETs with a session and no pending messages are kept (htmx requests only for views that
say so: a poll, kept apart from the page by its HX-* headers), and only responses that set no
cookie but the CSRF one (a view that wrote the session, a message, a logout during the render is
not kept). The page's CSRF token is part of its bytes, so a hit hands the browser the CSRF cookie
that token belongs to, as rendering it would have; SecurityMiddleware's headers are added on the
way out to every response, kept or not.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from importlib import import_module

from django.conf import settings
from django.contrib.auth import HASH_SESSION_KEY, SESSION_KEY
from django.core.cache import cache
from django.core.exceptions import MiddlewareNotUsed
from django.http import HttpRequest, HttpResponse

from core.learner_state import LEARNER_STATE_KEY, learner_state_token
from core.lru import BoundedLRU
from core.versions import content_version

# A lesson page is about 75 KB; a few hundred pages per process is a few tens of MB.
PAGES_PER_PROCESS = 384
# Django's messages: a page that shows one must be rendered (showing it consumes it).
MESSAGES_COOKIE = "messages"
MESSAGES_SESSION_KEY = "_messages"
# What the view leaves on the request for the middleware: this page may be kept, under this plan.
PLAN_ATTRIBUTE = "_kept_page_plan"


@dataclass(frozen=True)
class PagePlan:
    """What a page was rendered under; a kept page is served only while all of it still holds."""

    user_id: str
    session_hash: str
    token: str
    content_version: str
    max_age_s: float


@dataclass(frozen=True)
class KeptPage:
    plan: PagePlan
    content: bytes
    # As the stack below KeptPageMiddleware sent them (Content-Type, Content-Length, Vary, CSP,
    # X-Frame-Options...): SecurityMiddleware adds its own on the way out, to a hit too.
    headers: tuple[tuple[str, str], ...]
    # The CSRF cookie's value the response carried (the secret of the token in its forms).
    csrf_secret: str | None
    kept_at: float


_pages = BoundedLRU(max_items=PAGES_PER_PROCESS)
# Session key -> the learner it was signed in as, so a render's two reads go in one round trip.
_session_learners = BoundedLRU(max_items=4 * PAGES_PER_PROCESS)


def _session_cache_prefix() -> str | None:
    """Where the session engine keeps sessions in the default cache (cache, cached_db), or None."""
    if settings.SESSION_CACHE_ALIAS != "default":
        return None
    return getattr(import_module(settings.SESSION_ENGINE).SessionStore, "cache_key_prefix", None)


def _read_session_and_token(*, session_key: str, user_id: str) -> tuple[dict | None, str | None]:
    """A session's data and a learner's token, in one Redis round trip where sessions live in the
    cache; None for what is not there."""
    token_key = LEARNER_STATE_KEY.format(user_id=user_id)
    prefix = _session_cache_prefix()
    if prefix is not None:
        values = cache.get_many([prefix + session_key, token_key])
        data = values.get(prefix + session_key)
        return (data if isinstance(data, dict) else None), values.get(token_key)
    store = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
    return store.load() or None, cache.get(token_key)


def _session_and_token(*, request: HttpRequest, session_key: str) -> tuple[dict, str | None]:
    """The session's data and the learner's token, while the view renders. For a session seen
    before, whose learner is known, both come in one round trip; otherwise the session loads as
    usual, then the token. A session key belongs to one learner for its whole life (a login gets a
    new key), and the data read here is checked for that learner before it is used."""
    session = request.session
    user_id = _session_learners.get(session_key)
    if user_id is not None and _session_cache_prefix() is not None:
        data, token = _read_session_and_token(session_key=session_key, user_id=str(user_id))
        if data is not None and data.get(SESSION_KEY) == user_id and token is not None:
            # What SessionBase._get_session() does after load(): the view and the middleware
            # read this dict, and the response varies on the cookie.
            session._session_cache = data
            session.accessed = True
            return data, token
    user_id = session.get(SESSION_KEY)
    if user_id is None:
        return {}, None
    _session_learners.put(session_key, user_id)
    return session._session_cache, learner_state_token(user_id=int(user_id))


def _plan(*, request: HttpRequest, max_age_s: float, htmx: bool) -> PagePlan | None:
    """What this request's page may be kept under, or None when it must not be kept."""
    if request.method != "GET" or (getattr(request, "htmx", False) and not htmx):
        return None
    session_key = request.COOKIES.get(settings.SESSION_COOKIE_NAME)
    if not session_key or MESSAGES_COOKIE in request.COOKIES or request.session.session_key is None:
        return None
    session, token = _session_and_token(request=request, session_key=session_key)
    user_id = session.get(SESSION_KEY)
    if user_id is None or token is None or MESSAGES_SESSION_KEY in session:
        return None
    return PagePlan(
        user_id=user_id,
        session_hash=session.get(HASH_SESSION_KEY, ""),
        token=token,
        content_version=content_version(),
        max_age_s=max_age_s,
    )


def per_learner_page(*, max_age_s: float, htmx: bool = False) -> Callable:
    """Let KeptPageMiddleware keep the view's signed-in GET pages per learner (see the module),
    each at most ``max_age_s``; with ``htmx``, its answers to htmx requests too (a poll), kept
    apart from the plain page by their HX-* headers. The plan is read before the view runs: a
    write during the render (or any time after) renews the token, so the page is not served again."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapper(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
            plan = _plan(request=request, max_age_s=max_age_s, htmx=htmx)
            if plan is not None:
                setattr(request, PLAN_ATTRIBUTE, plan)
            return view(request, *args, **kwargs)

        return wrapper

    return decorate


def _page_key(request: HttpRequest) -> str | None:
    """Which browser asks for which page, or None when no kept page may answer this request."""
    if request.method != "GET":
        return None
    cookies = request.COOKIES
    session_key = cookies.get(settings.SESSION_COOKIE_NAME)
    if not session_key or MESSAGES_COOKIE in cookies:
        return None
    # get_host() refuses a host not in ALLOWED_HOSTS (400), as CommonMiddleware would.
    parts = (
        request.scheme,
        request.get_host(),
        request.get_full_path(),
        session_key,
        cookies.get(settings.CSRF_COOKIE_NAME, ""),
        # An htmx request for the same URL gets a fragment, never the page, and the reverse.
        _htmx_headers(request.META) if "HTTP_HX_REQUEST" in request.META else "",
    )
    return "\0".join(parts)


def _htmx_headers(meta: dict) -> str:
    return "\0".join(f"{name}={value}" for name, value in sorted(meta.items()) if name.startswith("HTTP_HX_"))


def _still_good(*, page: KeptPage, session_key: str) -> bool:
    plan = page.plan
    if time.monotonic() - page.kept_at >= plan.max_age_s or content_version() != plan.content_version:
        return False
    session, token = _read_session_and_token(session_key=session_key, user_id=plan.user_id)
    return (
        session is not None
        and token == plan.token
        and session.get(SESSION_KEY) == plan.user_id
        and session.get(HASH_SESSION_KEY, "") == plan.session_hash
        and MESSAGES_SESSION_KEY not in session
    )


def _set_csrf_cookie(*, response: HttpResponse, secret: str) -> None:
    """The cookie CsrfViewMiddleware sets with a page whose forms carry a token (its
    _set_csrf_cookie, with CSRF_USE_SESSIONS off): the expiry timer renews with each page."""
    response.set_cookie(
        settings.CSRF_COOKIE_NAME,
        secret,
        max_age=settings.CSRF_COOKIE_AGE,
        domain=settings.CSRF_COOKIE_DOMAIN,
        path=settings.CSRF_COOKIE_PATH,
        secure=settings.CSRF_COOKIE_SECURE,
        httponly=settings.CSRF_COOKIE_HTTPONLY,
        samesite=settings.CSRF_COOKIE_SAMESITE,
    )


def _serve(page: KeptPage) -> HttpResponse:
    response = HttpResponse(page.content)
    for name, value in page.headers:
        response.headers[name] = value
    if page.csrf_secret is not None:
        _set_csrf_cookie(response=response, secret=page.csrf_secret)
    return response


def _keepable(*, request: HttpRequest, response: HttpResponse, plan: PagePlan) -> bool:
    user = getattr(request, "user", None)
    cookies = response.cookies
    return (
        response.status_code == 200
        and not response.streaming
        and user is not None
        and user.is_authenticated
        and str(user.pk) == plan.user_id
        # Only the CSRF cookie, with the secret of the token in the page: any other (the session
        # saved or flushed, a message stored) means the next response must be rendered.
        and set(cookies) <= {settings.CSRF_COOKIE_NAME}
        and all(morsel.value == request.META.get("CSRF_COOKIE") for morsel in cookies.values())
    )


class KeptPageMiddleware:
    """Answer a request for a kept signed-in page before the rest of the stack (see the module).
    Placed after SecurityMiddleware (its redirects and headers apply to a kept page too) and
    WhiteNoise, before SessionMiddleware."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        if settings.CSRF_USE_SESSIONS or settings.SESSION_SAVE_EVERY_REQUEST:
            # Then every response may write the session or set its cookie: nothing can be kept.
            raise MiddlewareNotUsed
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        key = _page_key(request)
        if key is not None:
            page = _pages.get(key)
            session_key = request.COOKIES[settings.SESSION_COOKIE_NAME]
            if isinstance(page, KeptPage) and _still_good(page=page, session_key=session_key):
                return _serve(page)
        response = self.get_response(request)
        plan = getattr(request, PLAN_ATTRIBUTE, None)
        if key is not None and plan is not None and _keepable(request=request, response=response, plan=plan):
            csrf = response.cookies.get(settings.CSRF_COOKIE_NAME)
            _pages.put(
                key,
                KeptPage(
                    plan=plan,
                    content=response.content,
                    headers=tuple(response.items()),
                    csrf_secret=csrf.value if csrf is not None else None,
                    kept_at=time.monotonic(),
                ),
            )
        return response


def forget_kept_pages() -> None:
    """Drop this process's pages (tests: each has its own cache namespace)."""
    _pages.clear()
    _session_learners.clear()
