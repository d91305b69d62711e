"""A request that finds the database gone gets a page that says so, not a bare server error."""

import logging

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string

logger = logging.getLogger(__name__)
RETRY_AFTER_S = 5


class DatabaseUnavailableMiddleware:
    """A PostgreSQL restart or failover lasts seconds: answer 503 with Retry-After while it does.

    The page is rendered without a request context: the user and the session live in the
    database that is not answering. htmx polls keep polling through a 503 and pick up again.
    """

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, OperationalError | InterfaceError):
            return None
        logger.warning("database unavailable for %s %s: %s", request.method, request.path, exception)
        response = HttpResponse(render_to_string("core/503.html"), status=503)
        response["Retry-After"] = str(RETRY_AFTER_S)
        return response
