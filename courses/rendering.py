"""Lesson Markdown -> HTML: tables, highlighted code, footnotes, TOC, admonitions, MathML math,
figures drawn by code, embedded calculators and internal links (lesson:, question:, lab:).

Rendering is deterministic for a given body, so its output is cached by content hash.
"""

import re
import shlex
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import markdown
from django.conf import settings
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import escape
from latex2mathml.converter import convert as latex_to_mathml
from markdown.extensions import Extension
from markdown.inlinepatterns import InlineProcessor
from markdown.preprocessors import Preprocessor
from markdown.treeprocessors import Treeprocessor

_FIGURE_LINE = re.compile(r"^!figure\[(?P<alt>[^\]]*)\]\((?P<spec>[^)]*)\)\s*$")
_CALCULATOR_LINE = re.compile(r"^!calculator\((?P<spec>[^)]*)\)\s*$")
_INTERNAL_LINK = re.compile(r"^(?P<kind>lesson|question|lab):(?P<slug>[a-z0-9-]+)(?:#(?P<anchor>[\w-]+))?$")


class RenderError(Exception):
    def __init__(self, *, line: int | None, message: str) -> None:
        self.line = line
        self.message = message
        super().__init__(message)


@dataclass(frozen=True)
class InternalLink:
    kind: str
    slug: str
    anchor: str | None
    line: int | None


@dataclass
class RenderedLesson:
    html: str
    toc: list[dict]
    anchors: set[str]
    links: list[InternalLink] = field(default_factory=list)


def parse_directive_args(*, spec: str, line: int | None) -> tuple[str, dict[str, str]]:
    try:
        parts = shlex.split(spec)
    except ValueError as error:
        raise RenderError(line=line, message=f"cannot read arguments '{spec}': {error}") from None
    if not parts:
        raise RenderError(line=line, message="a name is required, e.g. !figure[alt](roofline gpu=h100-sxm)")
    name, args = parts[0], {}
    for part in parts[1:]:
        key, sep, value = part.partition("=")
        if not sep or not key:
            raise RenderError(line=line, message=f"argument '{part}' must look like key=value")
        args[key] = value
    return name, args


class _DirectivePreprocessor(Preprocessor):
    """Replaces figure/calculator lines and display math with stashed HTML.

    Runs after fenced code blocks are stashed, so directives inside code are left alone. Line
    numbers are counted on the original body (plus the front matter offset) for error messages.
    """

    def __init__(self, md: markdown.Markdown, renderer: "LessonRenderer") -> None:
        super().__init__(md)
        self.renderer = renderer

    def run(self, lines: list[str]) -> list[str]:
        output: list[str] = []
        math_lines: list[str] | None = None
        math_start = 0
        for index, line in enumerate(lines):
            number = self.renderer.line_for(index)
            stripped = line.strip()
            if math_lines is not None:
                if stripped == "$$":
                    output.append(self._stash(self.renderer.display_math("\n".join(math_lines), math_start)))
                    math_lines = None
                else:
                    math_lines.append(line)
                continue
            if stripped == "$$":
                math_lines, math_start = [], number
                continue
            if stripped.startswith("$$") and stripped.endswith("$$") and len(stripped) > 4:
                output.append(self._stash(self.renderer.display_math(stripped[2:-2], number)))
                continue
            figure = _FIGURE_LINE.match(stripped)
            if figure:
                html = self.renderer.figure(alt=figure["alt"], spec=figure["spec"], line=number)
                output.extend(["", self._stash(html), ""])
                continue
            calculator = _CALCULATOR_LINE.match(stripped)
            if calculator:
                html = self.renderer.calculator(spec=calculator["spec"], line=number)
                output.extend(["", self._stash(html), ""])
                continue
            output.append(line)
        if math_lines is not None:
            raise RenderError(line=math_start, message="display math opened with $$ is never closed")
        return output

    def _stash(self, html: str) -> str:
        return self.md.htmlStash.store(html)


class _InlineMathProcessor(InlineProcessor):
    def __init__(self, pattern: str, md: markdown.Markdown, renderer: "LessonRenderer") -> None:
        super().__init__(pattern, md)
        self.renderer = renderer

    def handleMatch(self, m: re.Match, data: str):
        html = self.renderer.inline_math(m.group(1))
        return self.md.htmlStash.store(html), m.start(0), m.end(0)


class _LinkTreeprocessor(Treeprocessor):
    """Turns lesson:/question:/lab: hrefs into site URLs and records them for dangling checks."""

    def __init__(self, md: markdown.Markdown, renderer: "LessonRenderer") -> None:
        super().__init__(md)
        self.renderer = renderer

    def run(self, root: ET.Element) -> None:
        for element in root.iter("a"):
            href = element.get("href", "")
            match = _INTERNAL_LINK.match(href)
            if match:
                element.set("href", self.renderer.internal_url(match["kind"], match["slug"], match["anchor"]))
            elif ":" in href.split("/")[0] and href.split(":")[0] in {"lesson", "question", "lab"}:
                raise RenderError(line=None, message=f"malformed internal link '{href}'")
            elif href.startswith(("http://", "https://")):
                element.set("rel", "noopener noreferrer")
        for element in root.iter("table"):
            element.set("class", "table")


class _PrefillExtension(Extension):
    def __init__(self, renderer: "LessonRenderer") -> None:
        super().__init__()
        self.renderer = renderer

    def extendMarkdown(self, md: markdown.Markdown) -> None:
        md.ESCAPED_CHARS.append("$")
        md.preprocessors.register(_DirectivePreprocessor(md, self.renderer), "prefill_directives", 20)
        # Below backticks (190) so `$x$` inside code stays code; above emphasis so _ in TeX is safe.
        md.inlinePatterns.register(
            _InlineMathProcessor(r"(?<![\\$\w])\$(?![\s$])(.+?)(?<![\s\\])\$(?![\w$])", md, self.renderer),
            "prefill_inline_math",
            185,
        )
        md.treeprocessors.register(_LinkTreeprocessor(md, self.renderer), "prefill_links", 1)


class LessonRenderer:
    def __init__(self, *, line_offset: int = 0, figure_cache_dir: Path | None = None) -> None:
        self.line_offset = line_offset
        self.figure_cache_dir = figure_cache_dir or (settings.VAR_DIR / "figures")
        self.links: list[InternalLink] = []
        self._source_lines: list[str] = []

    def line_for(self, index: int) -> int:
        # Fenced code is stashed before directives run, so an index is only a first guess; the
        # figure, calculator and math handlers look their line up by content.
        return index + 1 + self.line_offset

    def render(self, body: str) -> RenderedLesson:
        self.links = []
        self._record_links(body)
        md = markdown.Markdown(
            extensions=[
                "tables",
                "fenced_code",
                "codehilite",
                "footnotes",
                "admonition",
                "attr_list",
                "def_list",
                "sane_lists",
                "toc",
                _PrefillExtension(self),
            ],
            extension_configs={
                "codehilite": {"guess_lang": False, "css_class": "codehilite"},
                "toc": {"permalink": "#", "permalink_title": "Link to this section", "toc_depth": "2-3"},
                "footnotes": {"BACKLINK_TITLE": "Back to the text"},
            },
            output_format="html",
        )
        html = md.convert(body)
        toc_tokens = getattr(md, "toc_tokens", [])
        anchors: set[str] = set()

        def collect(tokens: list[dict]) -> None:
            for token in tokens:
                anchors.add(token["id"])
                collect(token.get("children", []))

        collect(toc_tokens)
        return RenderedLesson(html=html, toc=toc_tokens, anchors=anchors, links=list(self.links))

    def _record_links(self, body: str) -> None:
        for number, line in enumerate(body.splitlines(), start=1):
            for match in re.finditer(r"\]\(((?:lesson|question|lab):[^)\s]*)\)", line):
                link = _INTERNAL_LINK.match(match.group(1))
                if not link:
                    raise RenderError(
                        line=number + self.line_offset,
                        message=f"malformed internal link '{match.group(1)}' "
                        "(use lesson:SLUG#anchor, question:SLUG or lab:SLUG)",
                    )
                self.links.append(InternalLink(link["kind"], link["slug"], link["anchor"], number + self.line_offset))
        self._source_lines = body.splitlines()

    def _source_line(self, needle: str) -> int | None:
        for number, line in enumerate(self._source_lines, start=1):
            if needle and needle in line:
                return number + self.line_offset
        return None

    def internal_url(self, kind: str, slug: str, anchor: str | None) -> str:
        if kind == "lesson":
            url = reverse("courses:lesson", kwargs={"lesson_slug": slug})
        elif kind == "question":
            url = reverse("questions:question", kwargs={"question_slug": slug})
        else:
            url = reverse("labs:lab", kwargs={"lab_slug": slug})
        return f"{url}#{anchor}" if anchor else url

    def display_math(self, tex: str, line: int | None) -> str:
        first = next((row.strip() for row in tex.splitlines() if row.strip()), "")
        line = self._source_line(first) or line
        try:
            mathml = latex_to_mathml(tex.strip(), display="block")
        except Exception as error:
            raise RenderError(line=line, message=f"cannot render math '{tex.strip()[:60]}': {error}") from None
        return f'<div class="math-display">{mathml}</div>'

    def inline_math(self, tex: str) -> str:
        try:
            return latex_to_mathml(tex)
        except Exception as error:
            line = self._source_line(f"${tex}$")
            raise RenderError(line=line, message=f"cannot render math '{tex[:60]}': {error}") from None

    def figure(self, *, alt: str, spec: str, line: int | None) -> str:
        from courses.figures import FigureError, render_figure

        line = self._source_line(spec) or line
        name, args = parse_directive_args(spec=spec, line=line)
        if not alt.strip():
            raise RenderError(line=line, message=f"figure '{name}' needs alt text: !figure[what it shows]({spec})")
        try:
            svg = render_figure(name=name, args=args, alt=alt, cache_dir=self.figure_cache_dir)
        except FigureError as error:
            raise RenderError(line=line, message=f"figure '{name}': {error}") from None
        return f'<figure class="figure">{svg}<figcaption>{escape(alt)}</figcaption></figure>'

    def calculator(self, *, spec: str, line: int | None) -> str:
        from courses.views_calculators import CalculatorError, calculator_context

        line = self._source_line(spec) or line
        kind, args = parse_directive_args(spec=spec, line=line)
        try:
            context = calculator_context(kind=kind, initial=args)
        except CalculatorError as error:
            raise RenderError(line=line, message=f"calculator '{kind}': {error}") from None
        html = render_to_string(f"courses/calculators/{kind}.html", context)
        return f'<div class="calculator-embed">{html}</div>'


def render_lesson_body(*, body: str, line_offset: int = 0) -> RenderedLesson:
    return LessonRenderer(line_offset=line_offset).render(body)
