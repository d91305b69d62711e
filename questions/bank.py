"""Load the question bank from TOML files, with errors that point at a file and a line.

Django-free on purpose: `sync_content`, the grading CLI, the evaluation report and the tests all
read the same files through `load_bank`, and a content author gets `path:LINE: message` for any
mistake, whether tomllib or the validation below found it.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

QuestionType = Literal["free_text", "numeric", "multiple_choice"]
Difficulty = Literal["intro", "core", "advanced"]
Scope = Literal["sentence", "answer"]

QUESTION_TYPES: tuple[str, ...] = ("free_text", "numeric", "multiple_choice")
DIFFICULTIES: tuple[str, ...] = ("intro", "core", "advanced")
CONCEPTS_FILE = "concepts.toml"

_SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_CONCEPT_ID = re.compile(r"^[a-z][a-z0-9_]*$")
_LESSON_REF = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*#[a-z0-9_]+(?:-[a-z0-9_]+)*$")


class BankError(Exception):
    """A content file is malformed; `str()` is `path:LINE: message`, ready to print."""

    def __init__(self, path: Path, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}")
        self.path = path
        self.line = line
        self.message = message


@dataclass(frozen=True)
class Concept:
    id: str
    patterns: tuple[str, ...]
    # Words whose presence anywhere in a sentence keeps the concept from being found there:
    # "a sentence that says X and none of these". A criterion `unless` on such a concept sets
    # aside a sentence that names a mechanism without its reason ("the captured graph is
    # replayed" with no word of sizes or shapes). Matched as stems, without word edges.
    absent: tuple[str, ...] = ()


def concept_spec(concept: Concept) -> list[str] | dict[str, list[str]]:
    """A concept as stored in a rubric version: its patterns, with `absent` only where set, so
    the versions of rubrics whose concepts have none do not move."""
    if not concept.absent:
        return list(concept.patterns)
    return {"patterns": list(concept.patterns), "absent": list(concept.absent)}


def concept_from_spec(*, concept_id: str, spec: list[str] | Mapping[str, list[str]]) -> Concept:
    if isinstance(spec, Mapping):
        return Concept(
            id=concept_id, patterns=tuple(spec["patterns"]), absent=tuple(spec.get("absent", ())),
        )
    return Concept(id=concept_id, patterns=tuple(spec))


@dataclass(frozen=True)
class Criterion:
    id: str
    points: int
    earns: str
    match: tuple[str, ...]
    feedback_met: str
    feedback_missed: str
    unless: tuple[str, ...] = ()
    # "sentence": the concepts of an alternative must meet in one sentence (the default);
    # "answer": anywhere in the answer, for points such as "names both phases".
    scope: Scope = "sentence"
    # The same point said in other (plain) words: the semantic layer credits a learner
    # sentence that means what one of these means.
    paraphrases: tuple[str, ...] = ()
    # Sentences on the point's own topic, in its words, that state it wrongly ("tensor
    # parallelism puts different layers on different GPUs"): negatives the criterion reader can
    # be trained on (export_criterion_pairs --with-wrong-versions). Never shown to a learner.
    wrong_versions: tuple[str, ...] = ()


@dataclass(frozen=True)
class Misconception:
    id: str
    correction: str
    match: tuple[str, ...] = ()
    # Criteria that a detected misconception contradicts: they are not met, whatever matched.
    voids: tuple[str, ...] = ()
    # Concepts whose presence in the sentence means the statement is qualified, not believed.
    unless: tuple[str, ...] = ()
    # Numeric questions only: a tell-tale wrong value (in the question's unit).
    value: float | None = None
    # The wrong belief itself, stated as a learner would state it (several wordings): the
    # semantic layer flags a sentence that means what one of these means.
    statements: tuple[str, ...] = ()
    # What the learner reads on the mark sheet ("Decode is compute-bound"), never the id.
    # Presentation only: not part of a rubric version (renaming one regrades nothing).
    name: str = ""
    # Right sentences on the belief's own topic, close in words to it, among them explicit
    # denials ("It is not that ..."): hard negatives the belief reader is trained on
    # (export_reader_pairs). Never shown to a learner, never read while grading.
    right_versions: tuple[str, ...] = ()
    # Concepts a sentence must name for the semantic layer to flag the belief there: one that
    # names none of them cannot state it ("paging means moving the cache to CPU memory" needs
    # CPU or host memory; "PagedAttention borrows the idea of virtual memory" names neither).
    requires: tuple[str, ...] = ()


@dataclass(frozen=True)
class Choice:
    text: str
    correct: bool
    why: str


@dataclass(frozen=True)
class NumericSpec:
    value: float
    unit: str
    tolerance: float
    solution: str
    points: int


@dataclass(frozen=True)
class FollowUp:
    slug: str
    prompt: str
    model_answer: str
    rubric: tuple[Criterion, ...]
    misconceptions: tuple[Misconception, ...]
    concepts: Mapping[str, Concept] = field(repr=False, compare=False)
    contrasts: tuple[tuple[str, ...], ...] = field(repr=False, compare=False)
    rubric_version: str = ""
    type: QuestionType = "free_text"
    choices: tuple[Choice, ...] = ()
    numeric: NumericSpec | None = None


@dataclass(frozen=True)
class Question:
    slug: str
    set_slug: str
    type: QuestionType
    difficulty: Difficulty
    prompt: str
    model_answer: str
    marked_up: str
    lesson: str
    lab: str | None
    rubric: tuple[Criterion, ...]
    misconceptions: tuple[Misconception, ...]
    follow_ups: tuple[FollowUp, ...]
    choices: tuple[Choice, ...]
    numeric: NumericSpec | None
    concepts: Mapping[str, Concept] = field(repr=False, compare=False)
    contrasts: tuple[tuple[str, ...], ...] = field(repr=False, compare=False)
    rubric_version: str = ""
    path: Path = field(default=Path(), compare=False)
    line: int = 0
    order: int = 0

    @property
    def lesson_slug(self) -> str:
        return self.lesson.split("#", 1)[0]

    @property
    def lesson_anchor(self) -> str:
        return self.lesson.split("#", 1)[1]

    def follow_up(self, slug: str) -> FollowUp:
        for follow_up in self.follow_ups:
            if follow_up.slug == slug:
                return follow_up
        known = ", ".join(f.slug for f in self.follow_ups)
        raise KeyError(f"question {self.slug!r} has no follow-up {slug!r} (has: {known})")


@dataclass(frozen=True)
class QuestionSet:
    slug: str
    title: str
    summary: str
    order: int
    path: Path
    questions: tuple[Question, ...]


@dataclass(frozen=True)
class Bank:
    sets: tuple[QuestionSet, ...]
    concepts: Mapping[str, Concept] = field(repr=False)
    contrasts: tuple[tuple[str, ...], ...] = ()

    @cached_property
    def questions(self) -> Mapping[str, Question]:
        """Every question by slug (slugs are unique across sets)."""
        return MappingProxyType({q.slug: q for s in self.sets for q in s.questions})

    def question(self, slug: str) -> Question:
        return self.questions[slug]

    def free_text_targets(self) -> list[Question | FollowUp]:
        """Every free-text question and follow-up: what a rubric grades."""
        targets: list[Question | FollowUp] = []
        for question in self.questions.values():
            if question.type == "free_text":
                targets.append(question)
            targets.extend(f for f in question.follow_ups if f.type == "free_text")
        return targets


# --- Locating lines -------------------------------------------------------------------------

_HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\-\"' ]+?)\s*\]\]?\s*(?:#.*)?$")
_KEY = re.compile(r"^\s*([A-Za-z0-9_\-]+)\s*=")


@dataclass
class _Block:
    header: tuple[str, ...]
    is_array: bool
    start: int  # 1-based line of the header (0 for the root block)
    end: int  # last line that belongs to the block
    keys: dict[str, int]


class _Locator:
    """Maps a path into the parsed data (("questions", 3, "rubric", 1, "match")) to a line.

    tomllib reports syntax errors with a line but returns plain dicts, so semantic errors are
    located by re-reading the text: each table header opens a block, the n-th `[[questions]]`
    block is `questions[n]`, and keys are found inside their block.
    """

    def __init__(self, text: str) -> None:
        self.blocks: list[_Block] = []
        lines = text.splitlines()
        current = _Block(header=(), is_array=False, start=0, end=len(lines), keys={})
        self.blocks.append(current)
        in_multiline: str | None = None
        open_brackets = 0
        for number, raw in enumerate(lines, start=1):
            if in_multiline is not None:
                if raw.count(in_multiline) % 2 == 1:
                    in_multiline = None
                continue
            header = _HEADER.match(raw)
            if header and open_brackets == 0 and not _KEY.match(raw):
                current.end = number - 1
                name = tuple(part.strip().strip("\"'") for part in header.group(2).split("."))
                current = _Block(
                    header=name, is_array=header.group(1) == "[[", start=number,
                    end=len(lines), keys={},
                )
                self.blocks.append(current)
                continue
            key = _KEY.match(raw)
            if key and open_brackets == 0:
                current.keys.setdefault(key.group(1), number)
            for quote in ('"""', "'''"):
                if raw.count(quote) % 2 == 1:
                    in_multiline = quote
                    break
            else:
                bare = _strip_strings(raw)
                open_brackets = max(0, open_brackets + bare.count("[") - bare.count("]"))

    def line(self, path: Sequence[str | int]) -> int:
        prefix: tuple[str, ...] = ()
        lo, hi = 0, len(self.blocks)
        owner = self.blocks[0]
        index = 0
        while index < len(path):
            name = str(path[index])
            element = path[index + 1] if index + 1 < len(path) else None
            target = (*prefix, name)
            if isinstance(element, int):
                members = [
                    i for i in range(lo, hi)
                    if self.blocks[i].header == target and self.blocks[i].is_array
                ]
                if element >= len(members):
                    return owner.keys.get(name, owner.start or 1)
                first = members[element]
                later = [
                    i for i in range(first + 1, hi)
                    if self.blocks[i].header[: len(target)] != target
                    or self.blocks[i].header == target
                ]
                lo, hi = first, (later[0] if later else hi)
                owner, prefix = self.blocks[first], target
                index += 2
                continue
            if name in owner.keys:
                return owner.keys[name]
            inside = [
                i for i in range(lo, hi) if self.blocks[i].header[: len(target)] == target
            ]
            if not inside:
                return owner.start or 1
            exact = [i for i in inside if self.blocks[i].header == target]
            owner = self.blocks[exact[0]] if exact else _Block(
                header=target, is_array=False, start=self.blocks[inside[0]].start,
                end=self.blocks[inside[0]].start, keys={},
            )
            prefix = target
            index += 1
        return owner.start or 1


def _strip_strings(line: str) -> str:
    """The line without quoted strings and comments, so brackets in regexes are not counted."""
    line = re.sub(r'"(?:[^"\\]|\\.)*"', '""', line)
    line = re.sub(r"'[^']*'", "''", line)
    return line.split("#", 1)[0]


# --- Validation helpers ---------------------------------------------------------------------


class _Reader:
    def __init__(self, *, path: Path, text: str) -> None:
        self.path = path
        self.locator = _Locator(text)

    def error(self, where: Sequence[str | int], message: str) -> BankError:
        return BankError(self.path, self.locator.line(where), message)

    def table(
        self, data: Mapping[str, Any], where: Sequence[str | int], *, required: set[str],
        optional: set[str],
    ) -> None:
        # A misspelt key is reported as itself, not as the required key it fails to provide.
        unknown = set(data) - required - optional
        for key in sorted(unknown):
            raise self.error(
                (*where, key),
                f"unknown key {key!r} (known: {', '.join(sorted(required | optional))})",
            )
        for key in sorted(required):
            if key not in data:
                raise self.error(where, f"missing key {key!r}")

    def string(self, data: Mapping[str, Any], where: Sequence[str | int], key: str) -> str:
        value = data[key]
        if not isinstance(value, str):
            raise self.error((*where, key), f"{key!r} must be a string")
        if not value.strip():
            raise self.error((*where, key), f"{key!r} must not be empty")
        return value.strip()

    def slug(self, data: Mapping[str, Any], where: Sequence[str | int], key: str) -> str:
        value = self.string(data, where, key)
        if not _SLUG.match(value):
            raise self.error((*where, key), f"{key!r} {value!r} is not a slug (a-z, 0-9, -)")
        return value

    def integer(
        self, data: Mapping[str, Any], where: Sequence[str | int], key: str, *, minimum: int,
    ) -> int:
        value = data[key]
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.error((*where, key), f"{key!r} must be an integer")
        if value < minimum:
            raise self.error((*where, key), f"{key!r} must be at least {minimum}")
        return value

    def number(self, data: Mapping[str, Any], where: Sequence[str | int], key: str) -> float:
        value = data[key]
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise self.error((*where, key), f"{key!r} must be a number")
        return float(value)

    def strings(
        self, data: Mapping[str, Any], where: Sequence[str | int], key: str,
    ) -> tuple[str, ...]:
        value = data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.error((*where, key), f"{key!r} must be a list of strings")
        return tuple(v.strip() for v in value)

    def array(
        self, data: Mapping[str, Any], where: Sequence[str | int], key: str, *, minimum: int,
        maximum: int,
    ) -> list[Mapping[str, Any]]:
        value = data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise self.error((*where, key), f"{key!r} must be an array of tables")
        if not minimum <= len(value) <= maximum:
            span = f"exactly {minimum}" if minimum == maximum else f"{minimum}-{maximum}"
            raise self.error(
                (*where, key) if value else where,
                f"{key!r} needs {span} entries, found {len(value)}",
            )
        return value


def _parse_toml(path: Path) -> tuple[str, dict[str, Any]]:
    text = path.read_text(encoding="utf-8")
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        found = re.search(r"at line (\d+)", str(error))
        line = int(found.group(1)) if found else 1
        message = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(error))
        raise BankError(path, line, f"TOML syntax: {message}") from None


@cache
def _pattern_problem(pattern: str) -> str | None:
    """Why a concept pattern is unusable, or None. Cached: a bank has thousands of them."""
    try:
        compiled = re.compile(pattern, re.IGNORECASE)
    except re.error as error:
        return f"is not a valid regex: {error}"
    if compiled.match(""):
        return "matches empty text"
    return None


def _concepts(
    reader: _Reader, data: Mapping[str, Any], where: Sequence[str | int],
) -> dict[str, Concept]:
    table = data.get("concepts", {})
    if not isinstance(table, dict):
        raise reader.error((*where, "concepts"), "'concepts' must be a table of [concepts.ID]")
    concepts: dict[str, Concept] = {}
    for concept_id, body in table.items():
        at = (*where, "concepts", concept_id)
        if not _CONCEPT_ID.match(concept_id):
            raise reader.error(at, f"concept id {concept_id!r} must be lowercase a-z, 0-9, _")
        if not isinstance(body, dict):
            raise reader.error(at, f"concept {concept_id!r} must be a table with 'patterns'")
        reader.table(body, at, required={"patterns"}, optional={"note", "absent"})
        patterns = reader.strings(body, at, "patterns")
        if not patterns:
            raise reader.error((*at, "patterns"), f"concept {concept_id!r} has no patterns")
        absent = reader.strings(body, at, "absent")
        for key, values in (("patterns", patterns), ("absent", absent)):
            for pattern in values:
                problem = _pattern_problem(pattern)
                if problem:
                    raise reader.error(
                        (*at, key), f"concept {concept_id!r}: {pattern!r} {problem}",
                    )
        concepts[concept_id] = Concept(id=concept_id, patterns=patterns, absent=absent)
    return concepts


def _check_match(
    reader: _Reader, where: Sequence[str | int], alternatives: tuple[str, ...],
    concepts: Mapping[str, Concept], *, required: bool,
) -> tuple[str, ...]:
    if required and not alternatives:
        raise reader.error(where, "'match' needs at least one alternative")
    cleaned: list[str] = []
    for alternative in alternatives:
        ids = [part.strip() for part in alternative.split("+")]
        if not all(ids):
            raise reader.error(where, f"match {alternative!r}: empty concept between '+'")
        for concept_id in ids:
            if concept_id not in concepts:
                raise reader.error(
                    where, f"match {alternative!r}: unknown concept {concept_id!r}",
                )
        cleaned.append(" + ".join(ids))
    return tuple(cleaned)


def _check_concept_list(
    reader: _Reader, where: Sequence[str | int], ids: tuple[str, ...],
    concepts: Mapping[str, Concept],
) -> tuple[str, ...]:
    for concept_id in ids:
        if concept_id not in concepts:
            raise reader.error(where, f"unknown concept {concept_id!r}")
    return ids


def _rubric(
    reader: _Reader, data: Mapping[str, Any], where: Sequence[str | int],
    concepts: Mapping[str, Concept], *, minimum: int, maximum: int,
) -> tuple[Criterion, ...]:
    criteria: list[Criterion] = []
    seen: set[str] = set()
    for index, body in enumerate(
        reader.array(data, where, "rubric", minimum=minimum, maximum=maximum),
    ):
        at = (*where, "rubric", index)
        reader.table(
            body, at,
            required={"id", "points", "earns", "match", "feedback_met", "feedback_missed"},
            optional={"unless", "scope", "paraphrases", "wrong_versions"},
        )
        criterion_id = reader.slug(body, at, "id")
        scope = reader.string(body, at, "scope") if "scope" in body else "sentence"
        if scope not in ("sentence", "answer"):
            raise reader.error((*at, "scope"), f"scope {scope!r} is not 'sentence' or 'answer'")
        if criterion_id in seen:
            raise reader.error((*at, "id"), f"duplicate criterion id {criterion_id!r}")
        seen.add(criterion_id)
        criteria.append(
            Criterion(
                id=criterion_id,
                points=reader.integer(body, at, "points", minimum=1),
                earns=reader.string(body, at, "earns"),
                match=_check_match(
                    reader, (*at, "match"), reader.strings(body, at, "match"), concepts,
                    required=True,
                ),
                feedback_met=reader.string(body, at, "feedback_met"),
                feedback_missed=reader.string(body, at, "feedback_missed"),
                unless=_check_concept_list(
                    reader, (*at, "unless"), reader.strings(body, at, "unless"), concepts,
                ),
                scope=scope,  # type: ignore[arg-type]
                paraphrases=(paraphrases := _sentences(reader, body, at, "paraphrases")),
                wrong_versions=_opposite_sentences(
                    reader, body, at, "wrong_versions", against=paraphrases,
                    refusal="is also a paraphrase: a wrong version must state the point wrongly",
                ),
            ),
        )
    return tuple(criteria)


def _opposite_sentences(
    reader: _Reader, body: Mapping[str, Any], at: Sequence[str | int], key: str, *,
    against: Sequence[str], refusal: str,
) -> tuple[str, ...]:
    """Training sentences that say the opposite of `against` (a criterion's wrong versions
    against its paraphrases, a belief's right versions against its statements): sentences like
    them, and never one of them (the same sentence cannot be both)."""
    sentences = _sentences(reader, body, at, key)
    opposite = {s.strip().lower() for s in against}
    for sentence in sentences:
        if sentence.strip().lower() in opposite:
            raise reader.error((*at, key), f"{key}: {sentence!r} {refusal}")
    return sentences


def _sentences(
    reader: _Reader, body: Mapping[str, Any], at: Sequence[str | int], key: str,
) -> tuple[str, ...]:
    """Paraphrases or statements: distinct sentences of 3 to 60 words each."""
    values = reader.strings(body, at, key)
    seen: set[str] = set()
    for value in values:
        words = len(value.split())
        if not 3 <= words <= 60:
            raise reader.error(
                (*at, key), f"each of {key!r} must be one sentence of 3 to 60 words: {value!r}",
            )
        if value.strip().lower() in seen:
            raise reader.error((*at, key), f"{key!r} repeats {value!r}")
        seen.add(value.strip().lower())
    return values


def _misconceptions(
    reader: _Reader, data: Mapping[str, Any], where: Sequence[str | int],
    concepts: Mapping[str, Concept], rubric: tuple[Criterion, ...], *, numeric: bool,
) -> tuple[Misconception, ...]:
    found: list[Misconception] = []
    seen: set[str] = set()
    criterion_ids = {c.id for c in rubric}
    for index, body in enumerate(
        reader.array(data, where, "misconceptions", minimum=0, maximum=20),
    ):
        at = (*where, "misconceptions", index)
        reader.table(
            body, at, required={"id", "name", "correction"},
            optional={
                "match", "voids", "unless", "requires", "value", "statements", "right_versions",
            },
        )
        misconception_id = reader.slug(body, at, "id")
        name = reader.string(body, at, "name").strip()
        if not 3 <= len(name) <= 80 or " " not in name:
            raise reader.error(
                (*at, "name"),
                f"misconception {misconception_id!r} needs a learner-facing 'name' of a few words "
                f"(3 to 80 characters, the wrong belief in plain words), not {name!r}",
            )
        if misconception_id in seen:
            raise reader.error((*at, "id"), f"duplicate misconception id {misconception_id!r}")
        seen.add(misconception_id)
        value = reader.number(body, at, "value") if "value" in body else None
        if value is not None and not numeric:
            raise reader.error((*at, "value"), "'value' is only for numeric questions")
        match = _check_match(
            reader, (*at, "match"), reader.strings(body, at, "match"), concepts, required=False,
        )
        statements = _sentences(reader, body, at, "statements")
        if not match and value is None and not statements:
            raise reader.error(
                at, f"misconception {misconception_id!r} needs 'match', 'statements' or 'value'",
            )
        # Alternatives like `match`'s: "pp_subject + latency" needs both in one sentence.
        requires = _check_match(
            reader, (*at, "requires"), reader.strings(body, at, "requires"), concepts,
            required=False,
        )
        if requires and not statements:
            raise reader.error(
                (*at, "requires"),
                f"misconception {misconception_id!r}: 'requires' narrows what the semantic layer "
                "flags by its 'statements', and it has none",
            )
        voids = reader.strings(body, at, "voids")
        for criterion_id in voids:
            if criterion_id not in criterion_ids:
                raise reader.error(
                    (*at, "voids"),
                    f"misconception {misconception_id!r} voids unknown criterion {criterion_id!r}",
                )
        found.append(
            Misconception(
                id=misconception_id,
                correction=reader.string(body, at, "correction"),
                match=match,
                voids=voids,
                unless=_check_concept_list(
                    reader, (*at, "unless"), reader.strings(body, at, "unless"), concepts,
                ),
                value=value,
                statements=statements,
                name=name,
                requires=requires,
                right_versions=_opposite_sentences(
                    reader, body, at, "right_versions", against=statements,
                    refusal="is also a statement of the belief: a right version must not hold it",
                ),
            ),
        )
    return tuple(found)


def _choices(
    reader: _Reader, data: Mapping[str, Any], where: Sequence[str | int],
) -> tuple[Choice, ...]:
    choices: list[Choice] = []
    for index, body in enumerate(reader.array(data, where, "choices", minimum=2, maximum=8)):
        at = (*where, "choices", index)
        reader.table(body, at, required={"text", "why"}, optional={"correct"})
        correct = body.get("correct", False)
        if not isinstance(correct, bool):
            raise reader.error((*at, "correct"), "'correct' must be true or false")
        choices.append(
            Choice(
                text=reader.string(body, at, "text"), correct=correct,
                why=reader.string(body, at, "why"),
            ),
        )
    if not any(choice.correct for choice in choices):
        raise reader.error((*where, "choices"), "no choice is marked correct = true")
    return tuple(choices)


def _numeric(
    reader: _Reader, data: Mapping[str, Any], where: Sequence[str | int],
) -> NumericSpec:
    from questions.grading.units import known_unit

    body = data.get("numeric")
    if not isinstance(body, dict):
        raise reader.error(where, "a numeric question needs a [questions.numeric] table")
    at = (*where, "numeric")
    reader.table(
        body, at, required={"value", "unit", "tolerance", "solution"}, optional={"points"},
    )
    unit = reader.string(body, at, "unit")
    if not known_unit(unit):
        raise reader.error((*at, "unit"), f"unknown unit {unit!r}")
    tolerance = reader.number(body, at, "tolerance")
    if not 0 < tolerance < 1:
        raise reader.error((*at, "tolerance"), "'tolerance' is relative: between 0 and 1")
    return NumericSpec(
        value=reader.number(body, at, "value"),
        unit=unit,
        tolerance=tolerance,
        solution=reader.string(body, at, "solution"),
        points=reader.integer(body, at, "points", minimum=1) if "points" in body else 2,
    )


def rubric_version(
    *, type: str, rubric: Sequence[Criterion], misconceptions: Sequence[Misconception],
    choices: Sequence[Choice], numeric: NumericSpec | None, concepts: Mapping[str, Concept],
) -> str:
    """A short hash of everything in the bank that decides a grade, so an attempt says what graded it.

    Concept patterns are part of it: adding a synonym can change a grade as surely as editing
    a criterion.
    """
    used: set[str] = set()
    for item in [*rubric, *misconceptions]:
        for alternative in item.match:
            used.update(part.strip() for part in alternative.split("+"))
        used.update(item.unless)
        for alternative in getattr(item, "requires", ()):
            used.update(part.strip() for part in alternative.split("+"))
    payload = {
        "type": type,
        # Wrong versions are training data for the criterion reader, never read while grading.
        "rubric": [{k: v for k, v in vars(c).items() if k != "wrong_versions"} for c in rubric],
        # Right versions, like wrong versions, are training data only.
        # An empty `requires` is left out, so a rubric's version only moves when one is set.
        "misconceptions": [
            {
                k: v for k, v in vars(m).items()
                if k not in ("name", "right_versions") and not (k == "requires" and not v)
            }
            for m in misconceptions
        ],
        "choices": [vars(c) for c in choices],
        "numeric": vars(numeric) if numeric else None,
        "concepts": {cid: concept_spec(concepts[cid]) for cid in sorted(used)},
    }
    canonical = json.dumps(payload, sort_keys=True, default=list, ensure_ascii=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


def _follow_ups(
    reader: _Reader, data: Mapping[str, Any], where: Sequence[str | int],
    concepts: Mapping[str, Concept], contrasts: tuple[tuple[str, ...], ...],
) -> tuple[FollowUp, ...]:
    follow_ups: list[FollowUp] = []
    seen: set[str] = set()
    for index, body in enumerate(reader.array(data, where, "follow_ups", minimum=1, maximum=3)):
        at = (*where, "follow_ups", index)
        reader.table(
            body, at, required={"slug", "prompt", "model_answer", "rubric"},
            optional={"misconceptions"},
        )
        slug = reader.slug(body, at, "slug")
        if slug in seen:
            raise reader.error((*at, "slug"), f"duplicate follow-up slug {slug!r}")
        seen.add(slug)
        rubric = _rubric(reader, body, at, concepts, minimum=1, maximum=5)
        misconceptions = _misconceptions(reader, body, at, concepts, rubric, numeric=False)
        follow_ups.append(
            FollowUp(
                slug=slug,
                prompt=reader.string(body, at, "prompt"),
                model_answer=reader.string(body, at, "model_answer"),
                rubric=rubric,
                misconceptions=misconceptions,
                concepts=concepts,
                contrasts=contrasts,
                rubric_version=rubric_version(
                    type="free_text", rubric=rubric, misconceptions=misconceptions, choices=(),
                    numeric=None, concepts=concepts,
                ),
            ),
        )
    return tuple(follow_ups)


_QUESTION_REQUIRED = {"slug", "type", "difficulty", "prompt", "model_answer", "lesson"}
_QUESTION_OPTIONAL = {
    "marked_up", "lab", "rubric", "misconceptions", "follow_ups", "choices", "numeric",
}


def _question(
    reader: _Reader, body: Mapping[str, Any], index: int, *, set_slug: str,
    concepts: Mapping[str, Concept], contrasts: tuple[tuple[str, ...], ...],
) -> Question:
    at: tuple[str | int, ...] = ("questions", index)
    reader.table(body, at, required=_QUESTION_REQUIRED, optional=_QUESTION_OPTIONAL)
    slug = reader.slug(body, at, "slug")
    kind = reader.string(body, at, "type")
    if kind not in QUESTION_TYPES:
        raise reader.error(
            (*at, "type"), f"type {kind!r} is not one of {', '.join(QUESTION_TYPES)}",
        )
    difficulty = reader.string(body, at, "difficulty")
    if difficulty not in DIFFICULTIES:
        raise reader.error(
            (*at, "difficulty"),
            f"difficulty {difficulty!r} is not one of {', '.join(DIFFICULTIES)}",
        )
    lesson = reader.string(body, at, "lesson")
    if not _LESSON_REF.match(lesson):
        raise reader.error((*at, "lesson"), f"lesson {lesson!r} must be 'lesson-slug#anchor'")
    lab = reader.slug(body, at, "lab") if "lab" in body else None

    # Free text is graded by its rubric alone; numeric and multiple-choice answers are graded
    # by value or choice, so a rubric there is optional and marks the working shown.
    if kind == "free_text":
        rubric = _rubric(reader, body, at, concepts, minimum=2, maximum=5)
        if "choices" in body or "numeric" in body:
            raise reader.error(at, "a free_text question has no 'choices' or 'numeric'")
    elif kind == "numeric":
        rubric = _rubric(reader, body, at, concepts, minimum=0, maximum=5)
        if "choices" in body:
            raise reader.error((*at, "choices"), "a numeric question has no 'choices'")
    else:
        rubric = _rubric(reader, body, at, concepts, minimum=0, maximum=0)
        if "numeric" in body:
            raise reader.error((*at, "numeric"), "a multiple_choice question has no 'numeric'")
    numeric = _numeric(reader, body, at) if kind == "numeric" else None
    choices = _choices(reader, body, at) if kind == "multiple_choice" else ()
    misconceptions = _misconceptions(
        reader, body, at, concepts, rubric, numeric=kind == "numeric",
    )
    return Question(
        slug=slug,
        set_slug=set_slug,
        type=kind,  # type: ignore[arg-type]
        difficulty=difficulty,  # type: ignore[arg-type]
        prompt=reader.string(body, at, "prompt"),
        model_answer=reader.string(body, at, "model_answer"),
        marked_up=reader.string(body, at, "marked_up") if "marked_up" in body else "",
        lesson=lesson,
        lab=lab,
        rubric=rubric,
        misconceptions=misconceptions,
        follow_ups=_follow_ups(reader, body, at, concepts, contrasts),
        choices=choices,
        numeric=numeric,
        concepts=concepts,
        contrasts=contrasts,
        rubric_version=rubric_version(
            type=kind, rubric=rubric, misconceptions=misconceptions, choices=choices,
            numeric=numeric, concepts=concepts,
        ),
        path=reader.path,
        line=reader.locator.line((*at, "slug")),
        order=index,
    )


def load_concepts(*, path: Path) -> tuple[dict[str, Concept], tuple[tuple[str, ...], ...]]:
    """The global vocabulary and its contrast groups (concepts that compete for a subject)."""
    text, data = _parse_toml(path)
    reader = _Reader(path=path, text=text)
    reader.table(data, (), required={"concepts"}, optional={"contrasts"})
    concepts = _concepts(reader, data, ())
    contrasts = _contrasts(reader, data, concepts)
    return concepts, contrasts


def _contrasts(
    reader: _Reader, data: Mapping[str, Any], concepts: Mapping[str, Concept],
) -> tuple[tuple[str, ...], ...]:
    raw = data.get("contrasts", [])
    if not isinstance(raw, list) or not all(
        isinstance(group, list) and all(isinstance(c, str) for c in group) for group in raw
    ):
        raise reader.error(("contrasts",), "'contrasts' must be a list of lists of concept ids")
    groups: list[tuple[str, ...]] = []
    for group in raw:
        if len(group) < 2:
            raise reader.error(("contrasts",), f"contrast group {group!r} needs 2+ concepts")
        groups.append(_check_concept_list(reader, ("contrasts",), tuple(group), concepts))
    return tuple(groups)


def load_set(
    *, path: Path, global_concepts: Mapping[str, Concept],
    contrasts: tuple[tuple[str, ...], ...] = (),
) -> QuestionSet:
    text, data = _parse_toml(path)
    reader = _Reader(path=path, text=text)
    reader.table(
        data, (), required={"slug", "title", "summary", "order", "questions"},
        optional={"concepts", "contrasts"},
    )
    slug = reader.slug(data, (), "slug")
    local = _concepts(reader, data, ())
    concepts = MappingProxyType({**global_concepts, **local})
    # A set may add contrast groups of its own subjects (GPTQ, AWQ and SmoothQuant are named
    # and compared in one answer); they join the global groups for its questions only.
    contrasts = contrasts + _contrasts(reader, data, concepts)
    questions = [
        _question(reader, body, index, set_slug=slug, concepts=concepts, contrasts=contrasts)
        for index, body in enumerate(
            reader.array(data, (), "questions", minimum=1, maximum=500),
        )
    ]
    seen: dict[str, int] = {}
    for index, question in enumerate(questions):
        if question.slug in seen:
            raise reader.error(
                ("questions", index, "slug"),
                f"duplicate question slug {question.slug!r} (first at line {seen[question.slug]})",
            )
        seen[question.slug] = question.line
    return QuestionSet(
        slug=slug,
        title=reader.string(data, (), "title"),
        summary=reader.string(data, (), "summary"),
        order=reader.integer(data, (), "order", minimum=0),
        path=path,
        questions=tuple(questions),
    )


def load_bank(*, content_dir: Path) -> Bank:
    """Every `*.toml` set under `content_dir`, validated; raises BankError on the first problem."""
    concepts_path = content_dir / CONCEPTS_FILE
    if concepts_path.exists():
        global_concepts, contrasts = load_concepts(path=concepts_path)
    else:
        global_concepts, contrasts = {}, ()
    sets: list[QuestionSet] = []
    first_seen: dict[str, tuple[Path, int]] = {}
    set_slugs: dict[str, Path] = {}
    for path in sorted(content_dir.glob("*.toml")):
        if path.name == CONCEPTS_FILE:
            continue
        question_set = load_set(path=path, global_concepts=global_concepts, contrasts=contrasts)
        if question_set.slug in set_slugs:
            reader = _Reader(path=path, text=path.read_text(encoding="utf-8"))
            raise reader.error(
                ("slug",), f"set slug {question_set.slug!r} is also used by "
                f"{set_slugs[question_set.slug].name}",
            )
        set_slugs[question_set.slug] = path
        for question in question_set.questions:
            if question.slug in first_seen:
                other_path, other_line = first_seen[question.slug]
                reader = _Reader(path=path, text=path.read_text(encoding="utf-8"))
                raise reader.error(
                    ("questions", question.order, "slug"),
                    f"duplicate question slug {question.slug!r} "
                    f"(also in {other_path.name}:{other_line})",
                )
            first_seen[question.slug] = (path, question.line)
        sets.append(question_set)
    sets.sort(key=lambda s: (s.order, s.slug))
    return Bank(sets=tuple(sets), concepts=MappingProxyType(global_concepts), contrasts=contrasts)
