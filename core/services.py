"""Content sync across the apps, plus the cross-checks no single app can do (dangling links)."""

from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction

from core.content import ContentError, SyncReport
from courses.content_sync import sync_courses
from labs.content_sync import sync_labs
from questions.content_sync import sync_questions


@dataclass
class ContentSyncOutcome:
    reports: list[SyncReport]
    dangling: list[str] = field(default_factory=list)

    @property
    def warnings(self) -> list[str]:
        return [warning for report in self.reports for warning in report.warnings] + self.dangling


def sync_all_content(*, strict: bool = False) -> ContentSyncOutcome:
    """Load every content file; all-or-nothing, so a malformed file leaves the database as it was.

    With strict=True a dangling link (to a lesson, anchor, question or lab that does not exist)
    is an error instead of a warning.
    """
    dirs = settings.CONTENT_DIRS
    with transaction.atomic():
        courses = sync_courses(content_dir=dirs["courses"])
        questions = sync_questions(content_dir=dirs["questions"])
        labs_report, labs = sync_labs(content_dir=dirs["labs"])
        dangling = _dangling_links(courses=courses, question_refs=questions.references, labs=labs)
        if strict and dangling:
            raise ContentError(path="content", line=None, message="dangling links:\n  " + "\n  ".join(dangling))
    return ContentSyncOutcome(reports=[courses.report, questions.report, labs_report], dangling=dangling)


def _dangling_links(*, courses, question_refs: dict, labs: dict[str, dict]) -> list[str]:
    lesson_anchors: dict[str, set[str]] = courses.anchors
    question_slugs = set(question_refs)
    problems: list[str] = []

    def check_lesson_ref(ref: str, where: str) -> None:
        slug, _, anchor = ref.partition("#")
        if slug not in lesson_anchors:
            problems.append(f"{where}: lesson '{slug}' does not exist")
        elif anchor and anchor not in lesson_anchors[slug]:
            problems.append(f"{where}: lesson '{slug}' has no heading with anchor '#{anchor}'")

    for slug, lesson_file in courses.lesson_files.items():
        for link in courses.links[slug]:
            where = f"{lesson_file.path}:{link.line}"
            if link.kind == "lesson":
                check_lesson_ref(f"{link.slug}#{link.anchor}" if link.anchor else link.slug, where)
            elif link.kind == "question" and link.slug not in question_slugs:
                problems.append(f"{where}: question '{link.slug}' does not exist")
            elif link.kind == "lab" and link.slug not in labs:
                problems.append(f"{where}: lab '{link.slug}' does not exist")
        for question in lesson_file.practice:
            if question not in question_slugs:
                problems.append(f"{lesson_file.path}: practice lists unknown question '{question}'")
        for lab in lesson_file.labs:
            if lab not in labs:
                problems.append(f"{lesson_file.path}: labs lists unknown lab '{lab}'")
    for slug, ref in question_refs.items():
        if ref.lesson:
            check_lesson_ref(ref.lesson, f"{ref.path} question '{slug}'")
        if ref.lab and ref.lab not in labs:
            problems.append(f"{ref.path} question '{slug}': lab '{ref.lab}' does not exist")
    for slug, lab in labs.items():
        where = f"labs/content/{slug}.toml"
        if lab.get("lesson"):
            check_lesson_ref(lab["lesson"], where)
        for question in lab.get("questions", []):
            if question not in question_slugs:
                problems.append(f"{where}: question '{question}' does not exist")
    return problems
