"""Load lab guides from labs/content/*.toml into the database, idempotently."""

import re
from pathlib import Path

from django.db import transaction

from core.content import (
    SLUG_RE,
    ContentError,
    ContentReference,
    ContentSyncPart,
    SyncReport,
    content_hash,
    lesson_reference,
    line_of,
    read_toml,
    require,
    save_changed,
)
from labs.analysis import measure_problem
from labs.models import Lab
from labs.plans import plan_problems

PARAM_KINDS = {"int", "float", "int_list", "choice"}


def _validate_params(*, params: list, path: Path, text: str) -> None:
    names: set[str] = set()
    for param in params:
        if not isinstance(param, dict):
            raise ContentError(
                path=path,
                line=line_of(text=text, pattern=r"^\[\[params\]\]"),
                message="each [[params]] entry must be a table",
            )
        name = require(param, "name", str, path=path, text=text, context="[[params]]")
        where = f"param '{name}'"
        line = line_of(text=text, pattern=rf'^name\s*=\s*"{name}"')
        if name in names:
            raise ContentError(path=path, line=line, message=f"{where} is defined twice")
        names.add(name)
        kind = require(param, "kind", str, path=path, text=text, context=where)
        if kind not in PARAM_KINDS:
            raise ContentError(
                path=path, line=line, message=f"{where}: kind '{kind}' is not one of {sorted(PARAM_KINDS)}"
            )
        require(param, "label", str, path=path, text=text, context=where)
        if "default" not in param:
            raise ContentError(path=path, line=line, message=f"{where} needs a default")
        if kind == "choice":
            choices = require(param, "choices", list, path=path, text=text, context=where)
            if param["default"] not in choices:
                raise ContentError(
                    path=path, line=line, message=f"{where}: default {param['default']!r} is not among its choices"
                )
        else:
            low, high = param.get("min"), param.get("max")
            if low is None or high is None or low > high:
                raise ContentError(path=path, line=line, message=f"{where} needs numeric bounds with min <= max")
            values = param["default"] if kind == "int_list" else [param["default"]]
            if not isinstance(values, list) or not all(isinstance(v, int | float) and low <= v <= high for v in values):
                default_line = line_of(text=text, pattern=r"^default\s*=", start_line=line or 1)
                raise ContentError(
                    path=path,
                    line=default_line,
                    message=f"{where}: default {param['default']!r} is outside {low}..{high}",
                )


def _validate_plan(*, data: dict, params: list, path: Path, text: str) -> None:
    plan = data.get("plan", {})
    if not isinstance(plan, dict):
        raise ContentError(path=path, line=line_of(text=text, pattern=r"^\[plan\]"), message="[plan] must be a table")
    names = {param["name"] for param in params}
    for key, message in plan_problems(plan=plan, param_names=names):
        line = line_of(text=text, pattern=rf"^{key}\s*=") or line_of(text=text, pattern=r"^\[plan\]")
        raise ContentError(path=path, line=line, message=message)
    ranged = {param["name"] for param in params if param["kind"] in ("int", "int_list")}
    for name in re.findall(r"\{(\w+)\.(?:low|high)\}", data["prediction"]):
        if name not in ranged:
            raise ContentError(
                path=path,
                line=line_of(text=text, pattern=r"^prediction\s*="),
                message=f"prediction refers to {{{name}.low/high}}, but '{name}' is not a numeric parameter",
            )


def _validate_predicts(*, data: dict, path: Path, text: str) -> None:
    predicts = data.get("predict", [])
    line = line_of(text=text, pattern=r"^\[\[predict\]\]")
    if not isinstance(predicts, list):
        raise ContentError(path=path, line=line, message="'predict' must be a list of [[predict]] tables")
    names: set[str] = set()
    for entry in predicts:
        if not isinstance(entry, dict):
            raise ContentError(path=path, line=line, message="each [[predict]] entry must be a table")
        name = require(entry, "name", str, path=path, text=text, context="[[predict]]")
        where = f"[[predict]] '{name}'"
        if name in names:
            raise ContentError(path=path, line=line, message=f"{where} is defined twice")
        names.add(name)
        require(entry, "label", str, path=path, text=text, context=where)
        measure = require(entry, "measure", str, path=path, text=text, context=where)
        problem = measure_problem(measure)
        if problem:
            raise ContentError(
                path=path, line=line_of(text=text, pattern=rf'^measure\s*=\s*"{re.escape(measure)}"'), message=problem
            )


def parse_lab_file(path: Path) -> dict:
    data, text = read_toml(path)
    slug = require(data, "slug", str, path=path, text=text)
    if slug != path.stem or not SLUG_RE.match(slug):
        raise ContentError(
            path=path,
            line=line_of(text=text, pattern=r"^slug\s*="),
            message=f"slug '{slug}' must be a slug equal to the file name '{path.stem}'",
        )
    for key in ("title", "objective", "guide", "prediction"):
        require(data, key, str, path=path, text=text)
    params = require(data, "params", list, path=path, text=text)
    _validate_params(params=params, path=path, text=text)
    _validate_plan(data=data, params=params, path=path, text=text)
    _validate_predicts(data=data, path=path, text=text)
    questions = data.get("questions", [])
    if not isinstance(questions, list) or not all(isinstance(q, str) for q in questions):
        raise ContentError(
            path=path,
            line=line_of(text=text, pattern=r"^questions\s*="),
            message="'questions' must be a list of question slugs",
        )
    data["_hash"] = content_hash(text)
    return data


@transaction.atomic
def sync_labs(*, content_dir: Path) -> tuple[SyncReport, dict[str, dict]]:
    report = SyncReport(kind="labs")
    parsed = {path.stem: parse_lab_file(path) for path in sorted(content_dir.glob("*.toml"))}
    for order, (slug, data) in enumerate(parsed.items(), start=1):
        digest = data.pop("_hash")
        fields = {
            "title": data["title"],
            "objective": data["objective"],
            "lesson_ref": data.get("lesson", ""),
            "spec": data,
            "source_path": f"labs/content/{slug}.toml",
            "content_hash": digest,
            "order": data.get("order", order),
            "retired": False,
        }
        lab = Lab.objects.filter(slug=slug).first()
        if lab is None:
            Lab.objects.create(slug=slug, **fields)
            report.created.append(slug)
        elif save_changed(lab, **fields):
            report.updated.append(slug)
        else:
            report.unchanged.append(slug)
    for lab in Lab.objects.filter(retired=False).exclude(slug__in=parsed):
        lab.retired = True
        lab.save(update_fields=["retired"])
        report.retired.append(lab.slug)
    return report, parsed


def sync_lab_content(*, content_dir: Path) -> ContentSyncPart:
    """The labs for core's content pipeline: their slugs, and the lessons and questions they point at."""
    report, labs = sync_labs(content_dir=content_dir)
    references: list[ContentReference] = []
    for slug, lab in labs.items():
        where = f"labs/content/{slug}.toml"
        if lab.get("lesson"):
            references.append(lesson_reference(where=where, ref=lab["lesson"]))
        references += [ContentReference(where=where, kind="question", slug=q) for q in lab.get("questions", [])]
    return ContentSyncPart(report=report, provides={"lab": set(labs)}, references=references)
