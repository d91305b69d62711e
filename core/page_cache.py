"""A signed-in learner's page, kept whole in this process until something it shows changes.

Rendering a signed-in lesson page costs milliseconds of CPU (the learner's queries, the template
engine); serving the same bytes again costs a dict lookup. A page is kept per

    (view, full path, learner, their session and CSRF cookie, content version, learner token)

so it can only ever be served to the browser it was rendered for, and it is dropped (missed, then
evicted) when the content changes (core.versions: sync_content) or when anything of the learner's
changes (core.learner_state: progress, answers, reveals, review cards, runs, the account itself).
A hit costs one Redis round trip (the session and the learner's token in one MGET) and no query. Pages that also show
what is not the learner's own (the lab's engines, the review queue's due dates) are kept at most
``max_age_s``.

Only plain GETs with a session and no pending messages are kept; a page rendered while the
session turned out to be stale (logged out, password changed elsewhere) is not. The page's CSRF
token is part of its bytes, so a hit hands the browser the CSRF cookie that token belongs to, as
rendering it would have.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps

from django.conf import settings
from django.contrib.auth import HASH_SESSION_KEY, SESSION_KEY
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse

from core.learner_state import LEARNER_STATE_KEY, learner_state_token
from core.lru import BoundedLRU
from core.versions import content_version

# A lesson page is about 75 KB; a few hundred pages per process is a few tens of MB.
PAGES_PER_PROCESS = 384
# Django's messages: a page that shows one must be rendered (showing it consumes it).
MESSAGES_COOKIE = "messages"
MESSAGES_SESSION_KEY = "_messages"


@dataclass(frozen=True)
class KeptPage:
    content: bytes
    headers: tuple[tuple[str, str], ...]
    csrf_secret: str | None
    kept_at: float


_pages = BoundedLRU(max_items=PAGES_PER_PROCESS)
# Session key -> the learner it was signed in as, so a kept page's two reads go in one round trip.
_session_learners = BoundedLRU(max_items=4 * PAGES_PER_PROCESS)


def _session_and_token(*, request: HttpRequest, session_key: str) -> tuple[dict, str | None]:
    """The session's data and the learner's token. For a session seen before, whose learner is
    known, both come in one Redis round trip (MGET); otherwise the session loads as usual, then
    the token. A session key belongs to one learner for its whole life (a login gets a new key),
    and the data read here is checked for that learner before it is used."""
    session = request.session
    user_id = _session_learners.get(session_key)
    cache_key = getattr(session, "cache_key_prefix", None)
    if user_id is not None and cache_key is not None and settings.SESSION_CACHE_ALIAS == "default":
        token_key = LEARNER_STATE_KEY.format(user_id=user_id)
        values = cache.get_many([cache_key + session_key, token_key])
        data = values.get(cache_key + session_key)
        if isinstance(data, dict) and data.get(SESSION_KEY) == user_id and values.get(token_key) is not None:
            # What SessionBase._get_session() does after load(): the view and the middleware
            # read this dict, and the response varies on the cookie.
            session._session_cache = data
            session.accessed = True
            return data, values[token_key]
    user_id = session.get(SESSION_KEY)
    if user_id is None:
        return {}, None
    _session_learners.put(session_key, user_id)
    return session._session_cache, learner_state_token(user_id=int(user_id))


def _page_key(*, request: HttpRequest, view_name: str) -> str | None:
    """The key of this request's page, or None when it must be rendered (and not kept)."""
    if request.method != "GET" or getattr(request, "htmx", False):
        return None
    session_key = request.COOKIES.get(settings.SESSION_COOKIE_NAME)
    if not session_key or MESSAGES_COOKIE in request.COOKIES or request.session.session_key is None:
        return None
    session, token = _session_and_token(request=request, session_key=session_key)
    user_id = session.get(SESSION_KEY)
    if user_id is None or token is None or MESSAGES_SESSION_KEY in session:
        return None
    csrf_cookie = request.COOKIES.get(settings.CSRF_COOKIE_NAME, "")
    parts = (
        view_name,
        request.get_full_path(),
        str(user_id),
        session.get(HASH_SESSION_KEY, ""),
        session_key,
        csrf_cookie,
        content_version(),
        token,
    )
    return "\0".join(parts)


def _serve(*, request: HttpRequest, page: KeptPage) -> HttpResponse:
    response = HttpResponse(page.content)
    for name, value in page.headers:
        response[name] = value
    if page.csrf_secret is not None:
        # What csrf.get_token() does while the page renders: the cookie goes out with the page.
        request.META["CSRF_COOKIE"] = page.csrf_secret
        request.META["CSRF_COOKIE_NEEDS_UPDATE"] = True
    return response


def _keepable(*, request: HttpRequest, response: HttpResponse, user_id: str) -> bool:
    user = request.user
    return (
        response.status_code == 200
        and not response.streaming
        and not response.cookies
        and user.is_authenticated
        and str(user.pk) == user_id
    )


def per_learner_page(*, max_age_s: float) -> Callable:
    """Keep the view's signed-in GET pages per learner (see the module), each at most ``max_age_s``."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        view_name = f"{view.__module__}.{view.__qualname__}"

        @wraps(view)
        def wrapper(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
            key = _page_key(request=request, view_name=view_name)
            if key is None:
                return view(request, *args, **kwargs)
            now = time.monotonic()
            page = _pages.get(key)
            if isinstance(page, KeptPage) and now - page.kept_at < max_age_s:
                return _serve(request=request, page=page)
            response = view(request, *args, **kwargs)
            if _keepable(request=request, response=response, user_id=key.split("\0")[2]):
                _pages.put(
                    key,
                    KeptPage(
                        content=response.content,
                        headers=tuple(response.items()),
                        csrf_secret=request.META.get("CSRF_COOKIE"),
                        kept_at=now,
                    ),
                )
            return response

        return wrapper

    return decorate


def forget_kept_pages() -> None:
    """Drop this process's pages (tests: each has its own cache namespace)."""
    _pages.clear()
    _session_learners.clear()
