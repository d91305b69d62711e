"""`manage.py figures`: list the figures lessons can reference, or render one to an SVG file."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from courses.figures import FIGURES, FigureError, render_figure

USAGE_ERROR = 2


class Command(BaseCommand):
    # Listing and drawing figures needs neither the database nor the URLconf.
    requires_system_checks: list[str] = []
    help = (
        "List the figures lessons can reference with !figure[...](name key=value), or render one."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--render", metavar="NAME", help="render this figure instead of listing"
        )
        parser.add_argument(
            "pairs", nargs="*", metavar="key=value", help="figure arguments for --render"
        )
        parser.add_argument(
            "--alt", default="", help="alt text for --render (required with --render)"
        )
        parser.add_argument(
            "--out", type=Path, help="SVG file to write for --render (default: stdout)"
        )

    def handle(self, *args: object, **options: object) -> None:
        name = options["render"]
        if name is None:
            if options["pairs"]:
                raise CommandError("key=value arguments need --render NAME", returncode=USAGE_ERROR)
            self._list()
            return
        pairs: dict[str, str] = {}
        for pair in options["pairs"]:  # type: ignore[union-attr]
            key, sep, value = str(pair).partition("=")
            if not sep or not key:
                raise CommandError(
                    f"argument '{pair}' must look like key=value", returncode=USAGE_ERROR
                )
            pairs[key] = value
        try:
            svg = render_figure(name=str(name), args=pairs, alt=str(options["alt"]))
        except FigureError as error:
            raise CommandError(f"figure '{name}': {error}", returncode=USAGE_ERROR) from None
        out = options["out"]
        if out is None:
            self.stdout.write(svg)
        else:
            Path(str(out)).write_text(svg, encoding="utf-8")
            self.stdout.write(f"wrote {out}")

    def _list(self) -> None:
        for spec in sorted(FIGURES.values(), key=lambda figure: figure.name):
            self.stdout.write(spec.name)
            self.stdout.write(f"    {spec.summary}")
            if not spec.args:
                self.stdout.write("    (no arguments)")
            for arg in spec.args:
                self.stdout.write(f"    {arg.describe()}")
