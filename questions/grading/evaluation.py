"""How well the deterministic grader agrees with labelled answers.

The evaluation set is TOML files, one per question:

    question = "prefill-decode-ttft"

    [[answers]]
    id = "strong-1"
    category = "strong"        # strong | partial | wrong | misconception | keyword_list | paraphrase
    split = "dev"              # dev: used while writing concepts; heldout: written afterwards
    follow_up = "bill"         # optional: grade against this follow-up instead
    text = '''The answer as a candidate wrote it.'''
    expected = { two-phases = true, prefill-compute-bound = false }   # every criterion
    misconceptions = ["swapped-bounds"]                                 # expected to be flagged

Every criterion of the rubric must be labelled, so agreement is measured on all of them.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from questions.bank import Bank, BankError, FollowUp, Question
from questions.grading import GradeResult, grade

# The six styles a blind round is written in.
STYLES = ("strong", "partial", "wrong", "misconception", "keyword_list", "paraphrase")
# A learner's own answer whose mark they challenged and staff upheld (questions.challenges,
# `manage.py export_challenges`): labelled with what the grader credited plus the points staff
# agreed it missed, and the flagged misconceptions staff agreed it does not state.
CHALLENGE = "challenge"
CATEGORIES = (*STYLES, CHALLENGE)
SPLITS = ("dev", "heldout")

# The score bounds the issue sets for each kind of answer (fraction of max score).
MIN_FRACTION = {"strong": 0.80, "paraphrase": 0.50}
MAX_FRACTION = {"keyword_list": 0.35, "wrong": 0.35}


@dataclass(frozen=True)
class LabelledAnswer:
    id: str
    question: str
    follow_up: str | None
    category: str
    split: str
    text: str
    expected: Mapping[str, bool]
    misconceptions: tuple[str, ...]
    path: Path
    line: int

    @property
    def key(self) -> str:
        target = f"{self.question}/{self.follow_up}" if self.follow_up else self.question
        return f"{target}#{self.id}"


@dataclass(frozen=True)
class AnswerOutcome:
    answer: LabelledAnswer
    result: GradeResult
    agreement: Mapping[str, bool]  # criterion id -> grader agreed with the label
    missed_misconceptions: tuple[str, ...]
    unexpected_misconceptions: tuple[str, ...]
    threshold_problem: str | None

    @property
    def fraction(self) -> float:
        return self.result.fraction


@dataclass
class EvaluationReport:
    outcomes: list[AnswerOutcome] = field(default_factory=list)

    def _agreement(self, outcomes: Iterable[AnswerOutcome]) -> tuple[int, int]:
        agreed = total = 0
        for outcome in outcomes:
            total += len(outcome.agreement)
            agreed += sum(outcome.agreement.values())
        return agreed, total

    @property
    def overall(self) -> float:
        agreed, total = self._agreement(self.outcomes)
        return agreed / total if total else 0.0

    def split_agreement(self, split: str) -> float:
        agreed, total = self._agreement(o for o in self.outcomes if o.answer.split == split)
        return agreed / total if total else 0.0

    def per_criterion(self) -> dict[str, tuple[int, int]]:
        """'question[/follow-up]:criterion' -> (agreed, labelled)."""
        table: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for outcome in self.outcomes:
            answer = outcome.answer
            target = f"{answer.question}/{answer.follow_up}" if answer.follow_up else answer.question
            for criterion_id, agreed in outcome.agreement.items():
                row = table[f"{target}:{criterion_id}"]
                row[0] += int(agreed)
                row[1] += 1
        return {key: (row[0], row[1]) for key, row in sorted(table.items())}

    def per_category(self) -> dict[str, dict[str, float]]:
        grouped: dict[str, list[AnswerOutcome]] = defaultdict(list)
        for outcome in self.outcomes:
            grouped[outcome.answer.category].append(outcome)
        stats: dict[str, dict[str, float]] = {}
        for category in CATEGORIES:
            members = grouped.get(category, [])
            if not members:
                continue
            fractions = [m.fraction for m in members]
            agreed, total = self._agreement(members)
            stats[category] = {
                "answers": len(members),
                "mean_score": sum(fractions) / len(fractions),
                "min_score": min(fractions),
                "max_score": max(fractions),
                "agreement": agreed / total if total else 0.0,
            }
        return stats

    @property
    def problems(self) -> list[str]:
        found: list[str] = []
        for outcome in self.outcomes:
            if outcome.threshold_problem:
                found.append(f"{outcome.answer.key}: {outcome.threshold_problem}")
            if outcome.answer.category == "misconception" and outcome.missed_misconceptions:
                found.append(
                    f"{outcome.answer.key}: misconception not flagged: "
                    f"{', '.join(outcome.missed_misconceptions)}",
                )
        return found

    @property
    def misconception_recall(self) -> tuple[int, int]:
        expected = sum(len(o.answer.misconceptions) for o in self.outcomes)
        missed = sum(len(o.missed_misconceptions) for o in self.outcomes)
        return expected - missed, expected

    @property
    def unexpected_misconceptions(self) -> list[str]:
        return [
            f"{o.answer.key}: {m}" for o in self.outcomes for m in o.unexpected_misconceptions
        ]

    def to_dict(self) -> dict[str, Any]:
        found, expected = self.misconception_recall
        return {
            "answers": len(self.outcomes),
            "overall_agreement": round(self.overall, 4),
            "agreement_by_split": {
                split: round(self.split_agreement(split), 4)
                for split in SPLITS if any(o.answer.split == split for o in self.outcomes)
            },
            "per_criterion": {
                key: {"agreed": agreed, "labelled": total, "agreement": round(agreed / total, 4)}
                for key, (agreed, total) in self.per_criterion().items()
            },
            "per_category": {
                category: {k: round(v, 4) for k, v in values.items()}
                for category, values in self.per_category().items()
            },
            "misconceptions": {
                "flagged": found,
                "expected": expected,
                "unexpected": self.unexpected_misconceptions,
            },
            "answers_detail": [
                {
                    "key": o.answer.key,
                    "category": o.answer.category,
                    "split": o.answer.split,
                    "score": o.result.score,
                    "max_score": o.result.max_score,
                    "disagreements": sorted(k for k, v in o.agreement.items() if not v),
                    "missed_misconceptions": list(o.missed_misconceptions),
                    "unexpected_misconceptions": list(o.unexpected_misconceptions),
                    "capped": o.result.capped_reason is not None,
                }
                for o in self.outcomes
            ],
            "problems": self.problems,
        }


def _target(bank: Bank, answer_question: str, follow_up: str | None) -> Question | FollowUp:
    question = bank.question(answer_question)
    return question.follow_up(follow_up) if follow_up else question


def load_evaluation_set(
    *, directory: Path, bank: Bank, recursive: bool = True,
    rubric_changes: Mapping[str, Mapping[str, Iterable[str]]] | None = None,
) -> list[LabelledAnswer]:
    """Every labelled answer under `directory` (recursively unless told), checked against the bank.

    `rubric_changes` ({"retired": {slug: [criterion, ...]}, "added": {...}}) is for a frozen
    round whose rubric changed after it was written: a label for a retired criterion is
    dropped, and an added criterion may go unlabelled (it is then not measured); the labels
    themselves are never edited.
    """
    changes = rubric_changes or {}
    retired = {k: set(v) for k, v in changes.get("retired", {}).items()}
    added = {k: set(v) for k, v in changes.get("added", {}).items()}
    answers: list[LabelledAnswer] = []
    seen: set[str] = set()
    paths = directory.rglob("*.toml") if recursive else directory.glob("*.toml")
    for path in sorted(paths):
        text = path.read_text(encoding="utf-8")
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise BankError(path, 1, f"TOML syntax: {error}") from None
        lines = text.splitlines()
        question_slug = data.get("question")
        if not isinstance(question_slug, str):
            raise BankError(path, 1, "missing 'question = \"slug\"'")
        try:
            bank.question(question_slug)
        except KeyError:
            raise BankError(path, 1, f"unknown question {question_slug!r}") from None
        id_lines = [n for n, line in enumerate(lines, start=1) if line.strip().startswith("id =")]
        for index, body in enumerate(data.get("answers", [])):
            line = id_lines[index] if index < len(id_lines) else 1
            follow_up = body.get("follow_up")
            try:
                target = _target(bank, question_slug, follow_up)
            except KeyError as error:
                raise BankError(path, line, str(error)) from None
            category = body.get("category")
            split = body.get("split", "dev")
            if category not in CATEGORIES:
                raise BankError(path, line, f"category {category!r} not in {CATEGORIES}")
            if split not in SPLITS:
                raise BankError(path, line, f"split {split!r} not in {SPLITS}")
            expected = {
                k: v for k, v in body.get("expected", {}).items()
                if k not in retired.get(question_slug, set())
            }
            rubric_ids = [c.id for c in target.rubric]
            if target.type == "numeric":
                rubric_ids = ["value", *rubric_ids]
            rubric_ids = [
                c for c in rubric_ids
                if c in expected or c not in added.get(question_slug, set())
            ]
            if sorted(expected) != sorted(rubric_ids):
                raise BankError(
                    path, line,
                    f"answer {body.get('id')!r} must label exactly {sorted(rubric_ids)}, "
                    f"labels {sorted(expected)}",
                )
            known = {m.id for m in target.misconceptions}
            misconceptions = tuple(body.get("misconceptions", []))
            for misconception_id in misconceptions:
                if misconception_id not in known:
                    raise BankError(path, line, f"unknown misconception {misconception_id!r}")
            answer = LabelledAnswer(
                id=str(body.get("id")), question=question_slug, follow_up=follow_up,
                category=category, split=split, text=str(body.get("text", "")),
                expected={k: bool(v) for k, v in expected.items()},
                misconceptions=misconceptions, path=path, line=line,
            )
            if answer.key in seen:
                raise BankError(path, line, f"duplicate answer {answer.key}")
            seen.add(answer.key)
            answers.append(answer)
    return answers


def _threshold_problem(category: str, fraction: float) -> str | None:
    # A capped score is exactly 35%; compare with a little slack for float rounding.
    if category in MIN_FRACTION and fraction < MIN_FRACTION[category] - 1e-9:
        return f"{category} scored {fraction:.0%}, needs >= {MIN_FRACTION[category]:.0%}"
    if category in MAX_FRACTION and fraction > MAX_FRACTION[category] + 1e-9:
        return f"{category} scored {fraction:.0%}, needs <= {MAX_FRACTION[category]:.0%}"
    return None


Grader = Callable[[Question | FollowUp, str], GradeResult]


def rubric_grader(target: Question | FollowUp, text: str) -> GradeResult:
    return grade(question=target, answer=text)


def evaluate(
    *, answers: Iterable[LabelledAnswer], bank: Bank, grader: Grader | None = None,
) -> EvaluationReport:
    """Grade each labelled answer (with the rubric grader unless another is given) against its labels."""
    # Looked up at each call, not bound at import, so the test suite can share one memo of it.
    grader = grader or rubric_grader
    report = EvaluationReport()
    for answer in answers:
        target = _target(bank, answer.question, answer.follow_up)
        result = grader(target, answer.text)
        met = {c.id: c.met for c in result.criteria}
        flagged = {m.id for m in result.misconceptions}
        report.outcomes.append(
            AnswerOutcome(
                answer=answer,
                result=result,
                agreement={cid: met.get(cid) == want for cid, want in answer.expected.items()},
                missed_misconceptions=tuple(
                    m for m in answer.misconceptions if m not in flagged
                ),
                unexpected_misconceptions=tuple(
                    sorted(flagged - set(answer.misconceptions)),
                ),
                threshold_problem=_threshold_problem(answer.category, result.fraction),
            ),
        )
    return report


def render_text(report: EvaluationReport) -> str:
    lines = [
        f"Grading agreement over {len(report.outcomes)} labelled answers",
        f"  overall: {report.overall:.1%}",
    ]
    for split in SPLITS:
        if any(o.answer.split == split for o in report.outcomes):
            lines.append(f"  {split}: {report.split_agreement(split):.1%}")
    found, expected = report.misconception_recall
    lines.append(f"  misconceptions flagged: {found}/{expected}")
    lines += ["", "By category (score as a share of max):"]
    for category, stats in report.per_category().items():
        lines.append(
            f"  {category:<14} n={int(stats['answers']):<3} mean {stats['mean_score']:.0%}  "
            f"min {stats['min_score']:.0%}  max {stats['max_score']:.0%}  "
            f"agreement {stats['agreement']:.0%}",
        )
    lines += ["", "By criterion (agreed/labelled):"]
    for key, (agreed, total) in report.per_criterion().items():
        lines.append(f"  {agreed:>2}/{total:<2} {agreed / total:>5.0%}  {key}")
    disagreements = [
        (o.answer.key, sorted(k for k, v in o.agreement.items() if not v))
        for o in report.outcomes
    ]
    disagreements = [(key, ids) for key, ids in disagreements if ids]
    if disagreements:
        lines += ["", "Disagreements:"]
        lines += [f"  {key}: {', '.join(ids)}" for key, ids in disagreements]
    if report.unexpected_misconceptions:
        lines += ["", "Misconceptions flagged that were not labelled:"]
        lines += [f"  {item}" for item in report.unexpected_misconceptions]
    problems = report.problems
    lines += ["", "Threshold problems:" if problems else "All thresholds hold."]
    lines += [f"  {problem}" for problem in problems]
    return "\n".join(lines)


# --- Rounds and the figures the issue asks for ----------------------------------------------

# What each kind of answer must score (share of max) to count as graded right; a misconception
# answer must also have its misconception flagged.
STYLE_RULES = {
    "strong": "scores >= 80%",
    "paraphrase": "scores >= 50%",
    "partial": "scores 20-85%",
    "misconception": "flagged and <= 50%",
    "keyword_list": "scores <= 35%",
    "wrong": "scores <= 35%",
    CHALLENGE: "every decision as upheld",
}
STYLE_ORDER = ("strong", "paraphrase", "partial", "misconception", "keyword_list", "wrong", CHALLENGE)
_SLACK = 1e-9
_LABEL = 36


def graded_right(outcome: AnswerOutcome) -> bool:
    """Whether an answer's score (and flags) are what its style calls for."""
    fraction = outcome.fraction
    category = outcome.answer.category
    if category == "strong":
        return fraction >= 0.80 - _SLACK
    if category == "paraphrase":
        return fraction >= 0.50 - _SLACK
    if category == "partial":
        return 0.20 - _SLACK <= fraction <= 0.85 + _SLACK
    if category == "misconception":
        flagged = not outcome.missed_misconceptions and bool(outcome.result.misconceptions)
        return flagged and fraction <= 0.50 + _SLACK
    if category == CHALLENGE:
        # No score band: right when every point and every flag is as staff upheld it.
        return (
            all(outcome.agreement.values())
            and not outcome.missed_misconceptions
            and not outcome.unexpected_misconceptions
        )
    return fraction <= 0.35 + _SLACK


def cohen_kappa(pairs: Iterable[tuple[bool, bool]]) -> float | None:
    """Cohen's kappa of (grader, label) decisions; None when chance agreement is total."""
    table = [0, 0, 0, 0]  # both met, grader only, label only, neither
    for graded, labelled in pairs:
        table[(0 if graded else 2) + (0 if labelled else 1)] += 1
    both, grader_only, label_only, neither = table
    total = sum(table)
    if total == 0:
        return None
    observed = (both + neither) / total
    grader_met = (both + grader_only) / total
    label_met = (both + label_only) / total
    expected = grader_met * label_met + (1 - grader_met) * (1 - label_met)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1 - expected)


def figures(report: EvaluationReport) -> dict[str, Any]:
    """Per style: answers and how many were graded right, mean score; overall agreement and
    Cohen's kappa on met/not-met, pooled and per criterion; misconceptions flagged."""
    styles: dict[str, dict[str, float]] = {}
    for style in STYLE_ORDER:
        members = [o for o in report.outcomes if o.answer.category == style]
        if not members:
            continue
        right = sum(graded_right(o) for o in members)
        styles[style] = {
            "answers": len(members),
            "graded_right": right,
            "share": round(right / len(members), 4),
            "mean_score": round(sum(o.fraction for o in members) / len(members), 4),
        }
    decisions: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    for outcome in report.outcomes:
        met = {c.id: c.met for c in outcome.result.criteria}
        answer = outcome.answer
        target = f"{answer.question}/{answer.follow_up}" if answer.follow_up else answer.question
        for criterion_id, wanted in answer.expected.items():
            if criterion_id in met:
                decisions[f"{target}:{criterion_id}"].append((met[criterion_id], wanted))
    pooled = [pair for pairs in decisions.values() for pair in pairs]
    kappa = cohen_kappa(pooled)
    per_criterion = {}
    for key, pairs in sorted(decisions.items()):
        value = cohen_kappa(pairs)
        per_criterion[key] = {
            "decisions": len(pairs),
            "agreement": round(sum(a == b for a, b in pairs) / len(pairs), 4),
            "kappa": None if value is None else round(value, 4),
        }
    found, expected = report.misconception_recall
    right = sum(graded_right(o) for o in report.outcomes)
    # Near misses (a missed point's closest sentence, quoted on the mark sheet): how many were
    # quoted, how many of those the labels say were made, and how many points were missed that
    # the labels say were made (each such near miss is one of them).
    quoted = truly_made = false_misses = 0
    for outcome in report.outcomes:
        for criterion in outcome.result.criteria:
            wanted = outcome.answer.expected.get(criterion.id)
            if wanted is None or criterion.met:
                continue
            false_misses += wanted
            if criterion.closest:
                quoted += 1
                truly_made += wanted
    return {
        "answers": len(report.outcomes),
        "graded_right": right,
        "graded_right_share": round(right / len(report.outcomes), 4) if report.outcomes else 0.0,
        "agreement": round(report.overall, 4),
        "kappa": None if kappa is None else round(kappa, 4),
        "styles": styles,
        "misconceptions_flagged": [found, expected],
        "unexpected_misconceptions": len(report.unexpected_misconceptions),
        "near_misses": {"quoted": quoted, "truly_made": truly_made, "false_misses": false_misses},
        "per_criterion": per_criterion,
    }


ROUND_FILE = "round.json"


@dataclass(frozen=True)
class Round:
    """A set of labelled answers: the development set (top-level files) or a round folder.

    A round folder holds `round.json`: how it was written, whether it is still held out, and
    the figures of the first time the grader saw it (`first_run`, and `first_run_judge` for
    rubric+judge), which are never rewritten.
    """

    name: str
    path: Path
    meta: Mapping[str, Any]

    @property
    def held_out(self) -> bool:
        return self.meta.get("status") == "held-out"

    @property
    def first_run(self) -> Mapping[str, Any] | None:
        return self.meta.get("first_run")

    @property
    def sealed(self) -> bool:
        """Held out and never graded: its first grading is its first run, so nothing grades
        it but `grading_report --record-first-run` (a look at its figures would be a first run
        nobody recorded)."""
        return self.held_out and self.first_run is None


def discover_rounds(directory: Path) -> list[Round]:
    """The development set first, then every round folder in the order written: by name, with the
    number read as a number (heldout9 before heldout10, which plain name order puts after heldout1)."""
    rounds = [
        Round(
            name="development",
            path=directory,
            meta={
                "status": "development",
                "written": "by the grader's authors, while writing the patterns",
            },
        ),
    ]
    for folder in sorted((p for p in directory.iterdir() if p.is_dir()), key=_round_order):
        meta_path = folder / ROUND_FILE
        meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.is_file() else {}
        rounds.append(Round(name=folder.name, path=folder, meta=meta))
    return rounds


def _round_order(folder: Path) -> tuple[str, int]:
    match = re.fullmatch(r"(.*?)(\d*)", folder.name)
    stem, number = match.group(1), match.group(2)
    return stem, int(number) if number else 1


def round_answers(*, round_: Round, bank: Bank) -> list[LabelledAnswer]:
    return load_evaluation_set(
        directory=round_.path, bank=bank, recursive=round_.name != "development",
        rubric_changes=round_.meta.get("rubric_changes"),
    )


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def render_rounds(columns: list[tuple[str, Mapping[str, Any] | None]]) -> str:
    """A table: one row per style and overall, one column per (heading, figures)."""
    width = max(16, *(len(heading) + 2 for heading, _ in columns))
    lines = ["".ljust(_LABEL) + "".join(heading.rjust(width) for heading, _ in columns)]

    def cell(data: Mapping[str, Any] | None, style: str | None, what: str) -> str:
        if data is None:
            return "not recorded".rjust(width)
        if style is not None:
            item = data.get("styles", {}).get(style)
            if item is None:
                return "-".rjust(width)
            return (
                f"{item['graded_right']}/{item['answers']} {item['share']:.0%}".rjust(width)
            )
        if what == "right":
            return (
                f"{data['graded_right']}/{data['answers']} {data['graded_right_share']:.0%}"
            ).rjust(width)
        if what == "misconceptions":
            found, expected = data["misconceptions_flagged"]
            return f"{found}/{expected}".rjust(width)
        if what in ("near_precision", "near_recall"):
            near = data.get("near_misses")  # not in first runs recorded before near misses
            if near is None:
                return "-".rjust(width)
            made, out_of = near["truly_made"], near["quoted" if what == "near_precision" else "false_misses"]
            return f"{made}/{out_of} {made / out_of:.0%}".rjust(width) if out_of else f"{made}/0".rjust(width)
        value = data.get(what)
        if what == "kappa":
            return ("-" if value is None else f"{value:.2f}").rjust(width)
        return _percent(value).rjust(width)

    for style in STYLE_ORDER:
        label = f"{style} ({STYLE_RULES[style]})"
        lines.append(label.ljust(_LABEL) + "".join(cell(d, style, "") for _, d in columns))
    lines.append("all answers graded right".ljust(_LABEL) + "".join(cell(d, None, "right") for _, d in columns))
    lines.append("criterion agreement".ljust(_LABEL) + "".join(cell(d, None, "agreement") for _, d in columns))
    lines.append("Cohen's kappa (met/not met)".ljust(_LABEL) + "".join(cell(d, None, "kappa") for _, d in columns))
    lines.append(
        "misconceptions flagged".ljust(_LABEL)
        + "".join(cell(d, None, "misconceptions") for _, d in columns),
    )
    lines.append(
        "near misses quoted: points made".ljust(_LABEL) + "".join(cell(d, None, "near_precision") for _, d in columns)
    )
    lines.append(
        "false misses quoted as near misses".ljust(_LABEL) + "".join(cell(d, None, "near_recall") for _, d in columns)
    )
    return "\n".join(lines)


@dataclass(frozen=True)
class WrongVersionCredit:
    """A criterion's wrong version that earns the criterion when it is the whole answer."""

    target: str  # question slug, or "question/follow-up"
    criterion: str
    sentence: str


def _free_text_targets(bank: Bank) -> list[tuple[str, Question | FollowUp]]:
    """Every free-text question and follow-up, named as the reports name them."""
    targets: list[tuple[str, Question | FollowUp]] = []
    for question in bank.questions.values():
        if question.type == "free_text":
            targets.append((question.slug, question))
        targets += [(f"{question.slug}/{f.slug}", f) for f in question.follow_ups if f.type == "free_text"]
    return targets


def wrong_versions_credited(*, bank: Bank) -> tuple[int, list[WrongVersionCredit]]:
    """Grade every criterion's wrong versions (bank `wrong_versions`), each alone as the answer,
    and return how many there are and those that earn their own criterion. Each is on the
    point's topic, in its words, and false: a grader that reads meaning credits none."""
    total = 0
    credited: list[WrongVersionCredit] = []
    for name, target in _free_text_targets(bank):
        for criterion in target.rubric:
            for sentence in criterion.wrong_versions:
                total += 1
                if grade(question=target, answer=sentence).criterion(criterion.id).met:
                    credited.append(WrongVersionCredit(target=name, criterion=criterion.id, sentence=sentence))
    return total, credited


@dataclass(frozen=True)
class RightVersionFlag:
    """A misconception's right version that is flagged as that misconception when it is the
    whole answer."""

    target: str  # question slug, or "question/follow-up"
    misconception: str
    sentence: str


def right_versions_flagged(*, bank: Bank) -> tuple[int, list[RightVersionFlag]]:
    """Grade every misconception's right versions (bank `right_versions`), each alone as the
    answer, and return how many there are and those flagged as their own misconception. Each is
    on the belief's topic, close in words, and true: a grader that reads meaning flags none."""
    total = 0
    flagged: list[RightVersionFlag] = []
    for name, target in _free_text_targets(bank):
        for misconception in target.misconceptions:
            for sentence in misconception.right_versions:
                total += 1
                hits = grade(question=target, answer=sentence).misconceptions
                if any(hit.id == misconception.id for hit in hits):
                    flagged.append(RightVersionFlag(target=name, misconception=misconception.id, sentence=sentence))
    return total, flagged
