"""Figure registry: argument specs, validation, SVG rendering and the on-disk cache.

A figure is a function taking typed keyword arguments and returning a matplotlib `Figure`.
`render_figure` turns the string arguments written in lesson Markdown into those types (or
raises `FigureError` naming the bad argument and what is allowed), draws, and caches the SVG
under `cache_dir` keyed by a hash of everything that determines the picture.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib
from matplotlib.figure import Figure

from core.versions import rendering_version
from courses.figures.style import to_svg
from courses.inference.specs import (
    catalogue_fingerprint,
    get_gpu,
    get_model,
    gpu_slugs,
    model_slugs,
)


class FigureError(ValueError):
    """Unknown figure or bad argument; the message says which and what is allowed."""


def _plain(*, value: float | None) -> str:
    """10000000 rather than 1e+07: these bounds are read by people writing lessons."""
    if value is None:
        return "any"
    # No thousands separators: commas separate the items of a list argument.
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


@dataclass(frozen=True)
class Arg:
    """One figure argument as written in Markdown (`key=value`).

    kind: gpu | model | models (comma list) | choice | int | float | ints | floats (comma lists).
    default: the Markdown spelling of the default; None with required=False means "absent".
    """

    name: str
    kind: str
    help: str
    default: str | None = None
    required: bool = False
    choices: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None
    max_items: int = 6

    def allowed(self) -> str:
        if self.kind == "gpu":
            return f"a GPU slug: {', '.join(gpu_slugs())}"
        if self.kind == "model":
            return f"a model slug: {', '.join(model_slugs())}"
        if self.kind == "models":
            return f"a comma list of up to {self.max_items} model slugs: {', '.join(model_slugs())}"
        if self.kind == "choice":
            return f"one of {', '.join(self.choices)}"
        number = "an integer" if self.kind in ("int", "ints") else "a number"
        bounds = f"{number} from {_plain(value=self.low)} to {_plain(value=self.high)}"
        if self.kind in ("ints", "floats"):
            return f"a comma list (no spaces) of up to {self.max_items} values, each {bounds}"
        return bounds

    def describe(self) -> str:
        if self.required:
            status = "required"
        elif self.default is None:
            status = "optional"
        else:
            status = f"default {self.default}"
        return f"{self.name} ({status}): {self.help}; {self.allowed()}"

    def parse(self, raw: str) -> Any:
        problem = f"argument '{self.name}' must be {self.allowed()}, got '{raw}'"
        if self.kind == "gpu":
            if raw not in gpu_slugs():
                raise FigureError(problem)
            return get_gpu(slug=raw)
        if self.kind == "model":
            if raw not in model_slugs():
                raise FigureError(problem)
            return get_model(slug=raw)
        if self.kind == "models":
            slugs = raw.split(",")
            if not 1 <= len(slugs) <= self.max_items or any(
                slug not in model_slugs() for slug in slugs
            ):
                raise FigureError(problem)
            if len(set(slugs)) != len(slugs):
                raise FigureError(f"argument '{self.name}' lists a model twice: '{raw}'")
            return tuple(get_model(slug=slug) for slug in slugs)
        if self.kind == "choice":
            if raw not in self.choices:
                raise FigureError(problem)
            return raw
        if self.kind in ("ints", "floats"):
            parts = raw.split(",")
            if not 1 <= len(parts) <= self.max_items:
                raise FigureError(problem)
            return tuple(self._number(part, problem) for part in parts)
        return self._number(raw, problem)

    def _number(self, raw: str, problem: str) -> int | float:
        integer = self.kind in ("int", "ints")
        try:
            value: int | float = int(raw) if integer else float(raw)
        except ValueError:
            raise FigureError(problem) from None
        if (
            value != value
            or (self.low is not None and value < self.low)
            or (self.high is not None and value > self.high)
        ):
            raise FigureError(problem)
        return value


def canonical(*, value: Any) -> str:
    """A stable spelling of a parsed value for the cache key ('2.50' and '2.5' are one figure)."""
    if value is None:
        return "-"
    if isinstance(value, tuple):
        return ",".join(canonical(value=item) for item in value)
    slug = getattr(value, "slug", None)
    if slug is not None:
        return str(slug)
    if isinstance(value, float):
        return repr(value)
    return str(value)


@dataclass(frozen=True)
class FigureSpec:
    name: str
    summary: str
    draw: Callable[..., Figure]
    args: tuple[Arg, ...] = field(default_factory=tuple)

    def parse(self, raw: Mapping[str, str]) -> dict[str, Any]:
        known = {arg.name: arg for arg in self.args}
        for key in raw:
            if key not in known:
                allowed = ", ".join(known) if known else "none"
                raise FigureError(f"unknown argument '{key}'; arguments: {allowed}")
        values: dict[str, Any] = {}
        for arg in self.args:
            if arg.name in raw:
                values[arg.name] = arg.parse(str(raw[arg.name]))
            elif arg.required:
                raise FigureError(f"argument '{arg.name}' is required: {arg.allowed()}")
            elif arg.default is None:
                values[arg.name] = None
            else:
                values[arg.name] = arg.parse(arg.default)
        return values


FIGURES: dict[str, FigureSpec] = {}


def figure(
    *, name: str, summary: str, args: tuple[Arg, ...] = ()
) -> Callable[[Callable[..., Figure]], Callable[..., Figure]]:
    """Register a drawing function under `name`."""

    def register(draw: Callable[..., Figure]) -> Callable[..., Figure]:
        if name in FIGURES:
            raise RuntimeError(f"figure '{name}' registered twice")
        FIGURES[name] = FigureSpec(name=name, summary=summary, draw=draw, args=args)
        return draw

    return register


def get_spec(*, name: str) -> FigureSpec:
    try:
        return FIGURES[name]
    except KeyError:
        raise FigureError(
            f"unknown figure '{name}'; figures: {', '.join(sorted(FIGURES))}"
        ) from None


def validate_figure(*, name: str, args: Mapping[str, str]) -> dict[str, Any]:
    """Check a figure reference without drawing it; returns the parsed arguments."""
    return get_spec(name=name).parse(args)


def cache_key(*, name: str, values: Mapping[str, Any], alt: str) -> str:
    parts = [
        rendering_version(),
        matplotlib.__version__,
        catalogue_fingerprint(),
        name,
        *(f"{key}={canonical(value=value)}" for key, value in sorted(values.items())),
        alt,
    ]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


def _write_atomically(*, path: Path, text: str) -> None:
    # Two workers may render the same figure at once; a rename is atomic, so readers see either
    # nothing or a whole file.
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".svg")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def render_figure(
    *, name: str, args: Mapping[str, str], alt: str, cache_dir: Path | None = None
) -> str:
    """SVG text for figure `name` drawn with `args`, titled and aria-labelled with `alt`.

    With `cache_dir`, the SVG is stored there as `<name>-<hash>.svg` and reused while the
    arguments, alt text, catalogues, matplotlib version and the drawing code (core.versions) are unchanged.
    """
    spec = get_spec(name=name)
    values = spec.parse(args)
    alt = " ".join(alt.split())
    if not alt:
        raise FigureError("alt text is required: one sentence saying what the figure shows")
    key = cache_key(name=name, values=values, alt=alt)
    path = Path(cache_dir) / f"{name}-{key[:24]}.svg" if cache_dir is not None else None
    if path is not None and path.is_file():
        return path.read_text(encoding="utf-8")
    try:
        drawing = spec.draw(**values)
    except ValueError as error:
        # An argument combination the per-argument checks cannot see (e.g. a prompt longer than
        # the model's context) surfaces from the math as ValueError.
        raise FigureError(str(error)) from None
    svg = to_svg(figure=drawing, alt=alt, id_prefix=f"f{key[:10]}")
    if path is not None:
        _write_atomically(path=path, text=svg)
    return svg
