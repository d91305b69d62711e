from django.core.cache import cache

from courses.rendering import RENDERER_VERSION, render_lesson_body
from labs.models import Lab


def rendered_guide(*, lab: Lab) -> str:
    key = f"lab-guide:{RENDERER_VERSION}:{lab.content_hash}"
    html = cache.get(key)
    if html is None:
        html = render_lesson_body(body=lab.spec.get("guide", "")).html
        cache.set(key, html, timeout=None)
    return html
