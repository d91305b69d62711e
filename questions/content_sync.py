"""Load question sets from questions/content/*.toml (parsed by questions.bank) into the database."""

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction

from core.content import (
    ContentError,
    ContentReference,
    ContentSyncPart,
    SyncReport,
    lesson_reference,
    save_changed,
)
from questions.bank import BankError, load_bank
from questions.models import Question, QuestionSet, Rubric
from questions.rubrics import rubric_hash, rubric_spec


@dataclass(frozen=True)
class QuestionRef:
    path: str
    lesson: str
    lab: str


@dataclass
class QuestionSyncResult:
    report: SyncReport
    references: dict[str, QuestionRef]


# Parser bookkeeping that pages never show; what the grader needs is stored per rubric version
# (questions.models.Rubric).
_NOT_STORED = {"concepts", "contrasts", "path", "line"}


def _plain(value):
    if dataclasses.is_dataclass(value):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value) if f.name not in _NOT_STORED}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def question_spec(question) -> dict:
    """The question as plain JSON, stored so pages show exactly what was synced."""
    return json.loads(json.dumps(_plain(question), default=str))


@transaction.atomic
def sync_questions(*, content_dir: Path) -> QuestionSyncResult:
    report = SyncReport(kind="questions")
    try:
        bank = load_bank(content_dir=content_dir)
    except BankError as error:
        raise ContentError(path=error.path, line=error.line, message=error.message) from None

    references: dict[str, QuestionRef] = {}
    live_sets: set[str] = set()
    live_questions: set[str] = set()
    for question_set in bank.sets:
        set_fields = {
            "title": question_set.title,
            "summary": question_set.summary,
            "order": question_set.order,
            "source_path": f"questions/content/{Path(question_set.path).name}",
            "retired": False,
        }
        set_row = QuestionSet.objects.filter(slug=question_set.slug).first()
        if set_row is None:
            set_row = QuestionSet.objects.create(slug=question_set.slug, **set_fields)
        else:
            save_changed(set_row, **set_fields)
        live_sets.add(question_set.slug)
        for order, question in enumerate(question_set.questions, start=1):
            # Each rubric version is keyed by the hash of what it stores; the question names its
            # current versions (its own and each follow-up's) by that hash.
            versions = {"": rubric_spec(question)}
            versions.update({follow_up.slug: rubric_spec(follow_up) for follow_up in question.follow_ups})
            hashes = {slug: rubric_hash(spec) for slug, spec in versions.items()}
            spec = question_spec(question)
            for item in spec["follow_ups"]:
                item["rubric_version"] = hashes[item["slug"]]
            fields = {
                "question_set": set_row,
                "kind": question.type,
                "difficulty": question.difficulty,
                "prompt": question.prompt,
                "spec": spec,
                "rubric_version": hashes[""],
                "lesson_ref": question.lesson or "",
                "lab_slug": question.lab or "",
                "order": order,
                "retired": False,
            }
            row = Question.objects.filter(slug=question.slug).first()
            if row is None:
                row = Question.objects.create(slug=question.slug, **fields)
                report.created.append(question.slug)
            elif save_changed(row, **fields):
                report.updated.append(question.slug)
            else:
                report.unchanged.append(question.slug)
            for follow_up, rubric in versions.items():
                # Never updated: a version already stored is exactly this spec (same hash).
                Rubric.objects.get_or_create(
                    question=row, content_hash=hashes[follow_up], defaults={"follow_up": follow_up, "spec": rubric}
                )
            live_questions.add(question.slug)
            references[question.slug] = QuestionRef(
                path=set_fields["source_path"], lesson=question.lesson or "", lab=question.lab or ""
            )

    # Retire, never delete: attempts point at these rows.
    for row in Question.objects.filter(retired=False).exclude(slug__in=live_questions):
        row.retired = True
        row.save(update_fields=["retired"])
        report.retired.append(row.slug)
    QuestionSet.objects.filter(retired=False).exclude(slug__in=live_sets).update(retired=True)
    return QuestionSyncResult(report=report, references=references)


def sync_question_content(*, content_dir: Path) -> ContentSyncPart:
    """The question bank for core's content pipeline: its slugs, and the lessons and labs it points at."""
    result = sync_questions(content_dir=content_dir)
    references: list[ContentReference] = []
    for slug, ref in result.references.items():
        where = f"{ref.path} question '{slug}'"
        if ref.lesson:
            references.append(lesson_reference(where=where, ref=ref.lesson))
        if ref.lab:
            references.append(ContentReference(where=where, kind="lab", slug=ref.lab))
    return ContentSyncPart(report=result.report, provides={"question": set(result.references)}, references=references)
