"""Fetch every concrete GET URL of the site as each role and gather what the pages offer: forms
(with the values a browser would send) and query parameters of same-site links."""

from __future__ import annotations

from dataclasses import dataclass, field

from tests.security.site_map import (
    Form,
    concrete_urls,
    handler_of,
    parse_page,
    query_params,
    route_of,
    site_path,
    site_routes,
)

ROLES = ("anonymous", "learner", "staff")


@dataclass
class Page:
    role: str
    url: str
    status: int
    content_type: str
    body: str


@dataclass
class Crawl:
    pages: list[Page] = field(default_factory=list)
    # One entry per distinct form, kept for the first role that sees it (anonymous, then learner,
    # then staff): (method, handler, field names) -> (role, form). The handler is the route, or the
    # admin's model for its views, so a model's add and change forms with the same fields are one.
    forms: dict[tuple, tuple[str, Form]] = field(default_factory=dict)
    # route -> (role, path, {param: default values}): query strings of links and GET forms
    queries: dict[str, tuple[str, str, dict[str, list[str]]]] = field(default_factory=dict)
    requests: int = 0


def _note_query(crawl: Crawl, role: str, url: str, params: dict[str, list[str]]) -> None:
    path = url.split("?", 1)[0]
    route = route_of(path)
    if route is None or not params:
        return
    seen_role, _, known = crawl.queries.setdefault(route, (role, path, {}))
    if seen_role != role:
        return
    for name, values in params.items():
        known.setdefault(name, values)


def crawl_site(world, *, roles=ROLES, hostile_paths: bool = False, only: set | None = None) -> Crawl:
    """GET every route filled with real keys (and, with hostile_paths, hostile ones) as each role;
    `only` limits it to (role, url) pairs, e.g. the pages an earlier crawl found."""
    crawl = Crawl()
    routes = site_routes()
    for role in roles:
        client = world.client_for(role)
        for route in routes:
            for url, _ in concrete_urls(route, real_keys=world.real_keys(route), hostile=hostile_paths):
                if only is not None and (role, url) not in only:
                    continue
                response = client.get(url)
                crawl.requests += 1
                content_type = response.get("Content-Type", "")
                body = b"".join(response.streaming_content) if response.streaming else response.content
                text = body.decode("utf-8", errors="replace")
                crawl.pages.append(Page(role, url, response.status_code, content_type, text))
                if response.status_code != 200 or not content_type.startswith("text/html"):
                    continue
                parsed = parse_page(url=url, html=text)
                for link in parsed.links:
                    target = site_path(link)
                    if target and "?" in target:
                        _note_query(crawl, role, target, query_params(target))
                for form in parsed.forms:
                    action = site_path(form.action)
                    if action is None:
                        continue
                    form.action = action
                    if form.method == "get":
                        _note_query(crawl, role, action, {**query_params(action), **form.defaults()})
                        continue
                    key = (form.method, handler_of(action), tuple(sorted(form.fields)))
                    crawl.forms.setdefault(key, (role, form))
    return crawl
