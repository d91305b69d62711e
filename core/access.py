"""Who may open a view, marked on the view itself so tests can find every staff page from the URL
conf (tests/security) instead of a list kept by hand."""

from collections.abc import Callable

from django.contrib.admin.views.decorators import staff_member_required


def staff_only(view: Callable) -> Callable:
    """staff_member_required, plus a `staff_only` mark the security tests read off the callback."""
    wrapped = staff_member_required(view)
    wrapped.staff_only = True
    return wrapped
