"""The site as an attacker sees it, found rather than listed: every URL pattern from the URL conf
(the admin included), concrete URLs built from real keys and from hostile values each converter
accepts, and the forms and query parameters the pages themselves offer.

Nothing here names a page or a field of the project, so a new view or form is walked the day it
is added.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import parse_qsl, urljoin, urlsplit

from django.urls import URLPattern, URLResolver, get_resolver, resolve
from django.urls.exceptions import Resolver404


@dataclass(frozen=True)
class Route:
    """One URL pattern of the site, its prefixes joined: a template with {name} placeholders."""

    template: str
    params: tuple[tuple[str, str], ...]  # (name, converter kind: int, slug, str, path, or regex:<body>)
    callback: object
    name: str  # namespaced URL name, or the template when the pattern has none

    @property
    def int_params(self) -> list[str]:
        return [name for name, kind in self.params if kind == "int"]


_ROUTE_PARAM = re.compile(r"<(?:(?P<conv>[^>:]+):)?(?P<name>[^>]+)>")


def _regex_template(regex: str) -> tuple[str, list[tuple[str, str]]]:
    """Turn a regex pattern into a template: named groups become placeholders (balanced parens)."""
    body = regex.removeprefix("^").removesuffix("$").removesuffix(r"\Z")
    out, params, index = [], [], 0
    while index < len(body):
        if body.startswith("(?P<", index):
            end_name = body.index(">", index)
            name = body[index + 4 : end_name]
            depth, cursor = 1, end_name + 1
            while depth:
                depth += {"(": 1, ")": -1}.get(body[cursor], 0) if body[cursor - 1] != "\\" else 0
                cursor += 1
            params.append((name, f"regex:{body[end_name + 1 : cursor - 1]}"))
            out.append("{" + name + "}")
            index = cursor
        else:
            out.append(body[index].replace("{", "{{").replace("}", "}}") if body[index] != "\\" else "")
            index += 1
    return "".join(out), params


def _piece(pattern) -> tuple[str, list[tuple[str, str]]]:
    regex = pattern.pattern
    if hasattr(regex, "_route"):  # RoutePattern: path("runs/<int:run_id>/")
        route = str(regex._route)
        params = [(m["name"], m["conv"] or "str") for m in _ROUTE_PARAM.finditer(route)]
        template = _ROUTE_PARAM.sub(lambda m: "{" + m["name"] + "}", route.replace("{", "{{").replace("}", "}}"))
        return template, params
    return _regex_template(str(regex._regex))


def site_routes() -> list[Route]:
    """Every pattern of the root URL conf, recursing into includes (the admin site is one)."""
    routes: list[Route] = []

    def walk(resolver: URLResolver, prefix: str, params: list, namespace: str) -> None:
        for entry in resolver.url_patterns:
            template, own = _piece(entry)
            if isinstance(entry, URLResolver):
                inner = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
                walk(entry, prefix + template, params + own, inner)
            elif isinstance(entry, URLPattern):
                full = "/" + prefix + template
                name = f"{namespace}{entry.name}" if entry.name else full
                routes.append(Route(template=full, params=tuple(params + own), callback=entry.callback, name=name))

    walk(get_resolver(), "", [], "")
    return routes


# Values each kind of converter accepts but no real object has: zero, past a 64-bit integer,
# far past any database integer; a slug that names nothing, and one 1,000 characters long.
HOSTILE_PATH_VALUES = {
    "int": ["0", str(2**63), str(10**30)],
    "slug": ["no-such-thing", "a" * 1000],
    "str": ["0", str(10**30), "%3Cscript%3E"],
    "path": ["0", str(10**30), "..%2F..%2Fetc%2Fpasswd"],
}


def _regex_values(body: str) -> list[str]:
    """Candidate values for a regex group: its alternatives when it is a plain alternation."""
    if re.fullmatch(r"[\w\-|]+", body):
        return body.split("|")
    return ["no/such/page", "%3Cscript%3E"]


def _fill(template: str, values: dict[str, str]) -> str:
    return template.format(**values)


def concrete_urls(route: Route, *, real_keys: dict[str, list[str]], hostile: bool = True) -> list[tuple[str, bool]]:
    """(url, is_hostile) pairs for one route: real keys first, then one hostile value at a time.

    real_keys maps a converter kind or a parameter name (more specific) to keys of real objects.
    Only URLs that resolve back to the same view are kept, so a value a converter refuses is never
    counted as tested.
    """
    if not route.params:
        return [(route.template, False)]
    pools: dict[str, list[str]] = {}
    for name, kind in route.params:
        if kind.startswith("regex:"):
            pools[name] = real_keys.get(name) or _regex_values(kind.removeprefix("regex:"))
        else:
            pools[name] = real_keys.get(name) or real_keys.get(kind) or []
    if any(not pool for pool in pools.values()):
        real = []
    else:
        real = [
            dict(zip(pools, combo, strict=True)) for combo in itertools.islice(itertools.product(*pools.values()), 4)
        ]
    urls = [(_fill(route.template, values), False) for values in real]
    if hostile:
        base = real[0] if real else {name: (pools[name] or ["1"])[0] for name in pools}
        for name, kind in route.params:
            kind_key = "path" if kind.startswith("regex:") else kind
            for value in HOSTILE_PATH_VALUES.get(kind_key, HOSTILE_PATH_VALUES["str"]):
                urls.append((_fill(route.template, {**base, name: value}), True))
    kept = []
    for url, is_hostile in dict.fromkeys(urls):
        try:
            match = resolve(urlsplit(url).path)
        except Resolver404:
            continue
        if match.func is route.callback:
            kept.append((url, is_hostile))
    return kept


def route_of(url: str) -> str | None:
    """The URL pattern a site path resolves to (the key forms and parameters are grouped by)."""
    try:
        return resolve(urlsplit(url).path).route
    except Resolver404:
        return None


def handler_of(url: str) -> str | None:
    """What handles a URL: the admin's model for its views (add and change share a form), else
    the route."""
    try:
        match = resolve(urlsplit(url).path)
    except Resolver404:
        return None
    model_admin = getattr(match.func, "model_admin", None)
    if model_admin is not None and match.url_name and match.url_name.endswith(("_add", "_change")):
        return f"admin form of {model_admin.model._meta.label}"
    return match.route


def is_admin(url: str) -> bool:
    try:
        return resolve(urlsplit(url).path).namespace == "admin"
    except Resolver404:
        return False


@dataclass
class Form:
    method: str
    action: str  # absolute site path with any query string
    fields: dict[str, list[str]] = field(default_factory=dict)  # name -> the values a browser sends
    choices: dict[str, list[str]] = field(default_factory=dict)  # select/radio options offered
    kinds: dict[str, str] = field(default_factory=dict)  # name -> input type
    submitted: bool = False  # a named submit button already counted

    def defaults(self) -> dict[str, list[str]]:
        return {name: list(values) for name, values in self.fields.items()}


class PageParser(HTMLParser):
    """Forms (with what a browser would submit by default) and same-site links of one page."""

    def __init__(self, page_url: str) -> None:
        super().__init__(convert_charrefs=True)
        self.page_url = page_url
        self.forms: list[Form] = []
        self.links: list[str] = []
        self._form: Form | None = None
        self._select: tuple[str, bool] | None = None  # (name, multiple)
        self._select_seen: list[str] = []
        self._select_selected: list[str] = []
        self._textarea: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = {key: value or "" for key, value in attrs}
        if tag == "a" and attrs.get("href"):
            self.links.append(urljoin(self.page_url, attrs["href"]))
        elif tag == "form":
            action = urljoin(self.page_url, attrs.get("action") or self.page_url)
            self._form = Form(method=(attrs.get("method") or "get").lower(), action=action)
            self.forms.append(self._form)
        elif self._form is None or "name" not in attrs or "disabled" in attrs:
            return
        elif tag == "input":
            kind = (attrs.get("type") or "text").lower()
            name = attrs["name"]
            if kind in {"submit", "image"}:
                # A browser sends the button that submitted the form: the first one, by default.
                if not self._form.submitted:
                    self._form.submitted = True
                    self._form.fields.setdefault(name, []).append(attrs.get("value", ""))
                return
            if kind in {"button", "reset", "file"}:
                return
            self._form.kinds.setdefault(name, kind)
            if kind in {"checkbox", "radio"}:
                self._form.choices.setdefault(name, []).append(attrs.get("value", "on"))
                self._form.fields.setdefault(name, [])
                if "checked" in attrs:
                    self._form.fields[name].append(attrs.get("value", "on"))
            else:
                self._form.fields.setdefault(name, []).append(attrs.get("value", ""))
        elif tag == "button" and (attrs.get("type") or "submit").lower() == "submit":
            if not self._form.submitted:
                self._form.submitted = True
                self._form.fields.setdefault(attrs["name"], []).append(attrs.get("value", ""))
        elif tag == "textarea":
            self._textarea, self._text = attrs["name"], []
            self._form.kinds.setdefault(attrs["name"], "textarea")
        elif tag == "select":
            self._select = (attrs["name"], "multiple" in attrs)
            self._select_seen, self._select_selected = [], []
            self._form.kinds.setdefault(attrs["name"], "select")
        if tag == "option" and self._select is not None:
            value = attrs.get("value", "")
            self._select_seen.append(value)
            if "selected" in attrs:
                self._select_selected.append(value)

    def handle_data(self, data):
        if self._textarea is not None:
            self._text.append(data)

    def handle_endtag(self, tag):
        if tag == "form":
            self._form = None
        elif tag == "textarea" and self._textarea is not None and self._form is not None:
            self._form.fields.setdefault(self._textarea, []).append("".join(self._text).removeprefix("\n"))
            self._textarea = None
        elif tag == "select" and self._select is not None and self._form is not None:
            name, multiple = self._select
            selected = self._select_selected or ([] if multiple else self._select_seen[:1])
            self._form.fields.setdefault(name, []).extend(selected)
            self._form.choices.setdefault(name, []).extend(self._select_seen)
            self._select = None

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)


def parse_page(*, url: str, html: str) -> PageParser:
    parser = PageParser(f"http://testserver{url}")
    parser.feed(html)
    parser.close()
    return parser


def site_path(url: str) -> str | None:
    """The path and query of a link or action on this site, or None for another site."""
    parts = urlsplit(url)
    if parts.scheme not in {"http", "https"} or parts.netloc != "testserver":
        return None
    return parts.path + (f"?{parts.query}" if parts.query else "")


def query_params(url: str) -> dict[str, list[str]]:
    params: dict[str, list[str]] = {}
    for key, value in parse_qsl(urlsplit(url).query, keep_blank_values=True):
        params.setdefault(key, []).append(value)
    return params


class _InlineScripts(HTMLParser):
    """Script a Content-Security-Policy of script-src 'self' would block: <script> bodies and
    on* event attributes. JSON data islands (type="application/json") are not run, so they pass."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self._open: bool = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "script":
            kind = (attrs.get("type") or "text/javascript").lower()
            self._open = "src" not in attrs and kind not in {"application/json", "application/ld+json"}
        for name, value in attrs.items():
            if name.startswith("on"):
                self.found.append(f"<{tag} {name}={value!r}>")

    def handle_endtag(self, tag):
        if tag == "script":
            self._open = False

    def handle_data(self, data):
        if self._open and data.strip():
            self.found.append(f"<script>{data.strip()[:60]}")


def inline_scripts(html: str) -> list[str]:
    parser = _InlineScripts()
    parser.feed(html)
    parser.close()
    return parser.found
