"""Load the course and its lessons from courses/content/ into the database, idempotently."""

import re
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction

from core.content import (
    SLUG_RE,
    ContentError,
    ContentReference,
    ContentSyncPart,
    SyncReport,
    content_hash,
    line_of,
    parse_toml,
    read_toml,
    require,
    save_changed,
)
from courses.models import Course, Lesson, Module
from courses.rendering import InternalLink, RenderError, render_lesson_body


@dataclass(frozen=True)
class LessonFile:
    slug: str
    path: Path
    title: str
    summary: str
    minutes: int
    objectives: list[str]
    practice: list[str]
    labs: list[str]
    checks: list[str]
    body: str
    body_line_offset: int
    text: str


@dataclass
class CourseSyncResult:
    report: SyncReport
    anchors: dict[str, set[str]]
    links: dict[str, list[InternalLink]]
    lesson_files: dict[str, LessonFile]


def parse_lesson_file(path: Path) -> LessonFile:
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    if not lines or lines[0].strip() != "+++":
        raise ContentError(path=path, line=1, message="a lesson starts with a TOML front matter block opened by '+++'")
    try:
        closing = next(i for i in range(1, len(lines)) if lines[i].strip() == "+++")
    except StopIteration:
        raise ContentError(path=path, line=1, message="front matter opened with '+++' is never closed") from None
    front = parse_toml(text="\n".join(lines[1:closing]), path=path, first_line=2)
    slug = path.stem
    if not SLUG_RE.match(slug):
        raise ContentError(path=path, line=None, message=f"file name '{slug}' is not a slug (a-z, 0-9, '-')")
    title = require(front, "title", str, path=path, text=text)
    minutes = front.get("minutes", 10)
    if not isinstance(minutes, int) or not 1 <= minutes <= 240:
        raise ContentError(
            path=path,
            line=line_of(text=text, pattern=r"^minutes\s*="),
            message="'minutes' must be a whole number from 1 to 240",
        )
    lists = {}
    for key in ("objectives", "practice", "labs", "checks"):
        value = front.get(key, [])
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise ContentError(
                path=path, line=line_of(text=text, pattern=rf"^{key}\s*="), message=f"'{key}' must be a list of strings"
            )
        lists[key] = value
    if not lists["objectives"]:
        raise ContentError(path=path, line=2, message="'objectives' must list what the learner will be able to do")
    return LessonFile(
        slug=slug,
        path=path,
        title=title,
        summary=front.get("summary", ""),
        minutes=minutes,
        objectives=lists["objectives"],
        practice=lists["practice"],
        labs=lists["labs"],
        checks=lists["checks"],
        body="\n".join(lines[closing + 1 :]).rstrip("\n") + "\n",
        body_line_offset=closing + 1,
        text=text,
    )


def _parse_course(path: Path) -> tuple[dict, str]:
    data, text = read_toml(path)
    for key in ("slug", "title"):
        require(data, key, str, path=path, text=text)
    modules = require(data, "modules", list, path=path, text=text)
    if not modules:
        raise ContentError(path=path, line=None, message="a course needs at least one [[modules]] table")
    seen: set[str] = set()
    for module in modules:
        slug = require(module, "slug", str, path=path, text=text, context="[[modules]]")
        require(module, "title", str, path=path, text=text, context=f"module '{slug}'")
        lessons = require(module, "lessons", list, path=path, text=text, context=f"module '{slug}'")
        for lesson_slug in lessons:
            if lesson_slug in seen:
                raise ContentError(
                    path=path,
                    line=line_of(text=text, pattern=re.escape(f'"{lesson_slug}"')),
                    message=f"lesson '{lesson_slug}' is listed twice",
                )
            seen.add(lesson_slug)
    return data, text


@transaction.atomic
def sync_courses(*, content_dir: Path) -> CourseSyncResult:
    report = SyncReport(kind="lessons")
    course_path = content_dir / "course.toml"
    if not course_path.exists():
        raise ContentError(path=course_path, line=None, message="the course file is missing")
    course_data, course_text = _parse_course(course_path)

    lesson_files = {path.stem: parse_lesson_file(path) for path in sorted((content_dir / "lessons").glob("*.md"))}
    listed = [slug for module in course_data["modules"] for slug in module["lessons"]]
    for slug in listed:
        if slug not in lesson_files:
            raise ContentError(
                path=course_path,
                line=line_of(text=course_text, pattern=re.escape(f'"{slug}"')),
                message=f"lesson '{slug}' is listed but courses/content/lessons/{slug}.md does not exist",
            )
    for slug, lesson_file in lesson_files.items():
        if slug not in listed:
            report.warnings.append(f"{lesson_file.path}: not listed in any module of course.toml, so not published")

    anchors: dict[str, set[str]] = {}
    links: dict[str, list[InternalLink]] = {}
    rendered_ok: dict[str, LessonFile] = {}
    for slug in listed:
        lesson_file = lesson_files[slug]
        try:
            rendered = render_lesson_body(body=lesson_file.body, line_offset=lesson_file.body_line_offset)
        except RenderError as error:
            raise ContentError(path=lesson_file.path, line=error.line, message=error.message) from None
        anchors[slug] = rendered.anchors
        links[slug] = rendered.links
        rendered_ok[slug] = lesson_file

    course, _ = Course.objects.get_or_create(slug=course_data["slug"], defaults={"title": course_data["title"]})
    save_changed(course, title=course_data["title"], summary=course_data.get("summary", ""), retired=False)
    Course.objects.exclude(pk=course.pk).filter(retired=False).update(retired=True)

    position = 0
    live_lessons: set[str] = set()
    live_modules: set[int] = set()
    for module_order, module_data in enumerate(course_data["modules"], start=1):
        module, _ = Module.objects.get_or_create(
            course=course, slug=module_data["slug"], defaults={"title": module_data["title"], "order": module_order}
        )
        save_changed(
            module,
            title=module_data["title"],
            summary=module_data.get("summary", ""),
            order=module_order,
            retired=False,
        )
        live_modules.add(module.pk)
        for slug in module_data["lessons"]:
            position += 1
            lesson_file = rendered_ok[slug]
            digest = content_hash(lesson_file.text)
            fields = {
                "module": module,
                "title": lesson_file.title,
                "summary": lesson_file.summary,
                "minutes": lesson_file.minutes,
                "objectives": lesson_file.objectives,
                "practice": lesson_file.practice,
                "labs": lesson_file.labs,
                "checks": lesson_file.checks,
                "body": lesson_file.body,
                "source_path": str(lesson_file.path.relative_to(content_dir.parent.parent)),
                "content_hash": digest,
                "order": position,
                "retired": False,
            }
            lesson = Lesson.objects.filter(slug=slug).first()
            if lesson is None:
                Lesson.objects.create(slug=slug, **fields)
                report.created.append(slug)
            elif save_changed(lesson, **fields):
                report.updated.append(slug)
            else:
                report.unchanged.append(slug)
            live_lessons.add(slug)

    for lesson in Lesson.objects.filter(retired=False).exclude(slug__in=live_lessons):
        lesson.retired = True
        lesson.save(update_fields=["retired"])
        report.retired.append(lesson.slug)
    Module.objects.filter(retired=False).exclude(pk__in=live_modules).update(retired=True)
    return CourseSyncResult(report=report, anchors=anchors, links=links, lesson_files=rendered_ok)


def sync_course_content(*, content_dir: Path) -> ContentSyncPart:
    """The course for core's content pipeline: the lessons and their anchors, and what they link to."""
    result = sync_courses(content_dir=content_dir)
    references: list[ContentReference] = []
    for slug, lesson_file in result.lesson_files.items():
        for link in result.links[slug]:
            if link.kind in ("lesson", "question", "lab"):
                where = f"{lesson_file.path}:{link.line}"
                references.append(
                    ContentReference(where=where, kind=link.kind, slug=link.slug, anchor=link.anchor or "")
                )
        references += [
            ContentReference(where=f"{lesson_file.path} (practice)", kind="question", slug=question)
            for question in lesson_file.practice
        ]
        references += [
            ContentReference(where=f"{lesson_file.path} (labs)", kind="lab", slug=lab) for lab in lesson_file.labs
        ]
        references += [
            ContentReference(where=f"{lesson_file.path} (checks)", kind="question", slug=question)
            for question in lesson_file.checks
        ]
    return ContentSyncPart(
        report=result.report, provides={"lesson": set(result.anchors)}, anchors=result.anchors, references=references
    )
