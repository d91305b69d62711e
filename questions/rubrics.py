"""Rubric versions as stored data: what grades a question (or one of its follow-ups), as JSON.

Django-free. `sync_content` turns each parsed question and follow-up into a rubric spec (the
criteria, misconceptions, choices or numeric answer, and the concepts and contrast groups the
grader looks for), keyed by the hash of that spec; the database keeps every version it has seen
(questions.models.Rubric). Grading at run time rebuilds the gradable object from the stored spec
(`gradable_from`), so what grades an answer is exactly what the attempt points at, not whatever
the TOML files say now.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from questions.bank import (
    Choice,
    Criterion,
    FollowUp,
    Misconception,
    NumericSpec,
    Question,
    concept_from_spec,
    concept_spec,
)
from questions.grading.free_text import used_concepts

# Bump only if the meaning of a stored field changes; it is part of every hash.
SPEC_FORMAT = 1


class RubricUnavailable(Exception):
    """A stored rubric cannot grade (a version kept from before rubrics were stored in full)."""


def rubric_spec(item: Question | FollowUp) -> dict[str, Any]:
    """Everything that decides a grade, as plain JSON."""
    concept_ids = sorted(used_concepts(item))
    return {
        "format": SPEC_FORMAT,
        "type": item.type,
        "rubric": [_plain(c) for c in item.rubric],
        # A misconception's name is what the mark sheet shows, not what grades: renaming one
        # must not make a new rubric version.
        "misconceptions": [{k: v for k, v in _plain(m).items() if k != "name"} for m in item.misconceptions],
        "choices": [_plain(c) for c in item.choices],
        "numeric": _plain(item.numeric) if item.numeric else None,
        "concepts": {cid: concept_spec(item.concepts[cid]) for cid in concept_ids},
        "contrasts": [list(group) for group in item.contrasts],
    }


def rubric_hash(spec: Mapping[str, Any]) -> str:
    canonical = json.dumps(spec, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def gradable_from(
    *, question_spec: Mapping[str, Any], rubric: Mapping[str, Any], version: str, follow_up: str = ""
) -> Question | FollowUp:
    """The object `questions.grading.grade` takes, built from a stored question and rubric version.

    Prompt and model answer come from the question as stored now (the LLM judge reads them);
    everything that decides the deterministic grade comes from the rubric version.
    """
    if "concepts" not in rubric:
        raise RubricUnavailable(
            "This rubric version was stored before rubrics were kept in full; run `manage.py sync_content`."
        )
    concepts = MappingProxyType(
        {cid: concept_from_spec(concept_id=cid, spec=spec) for cid, spec in rubric["concepts"].items()}
    )
    contrasts = tuple(tuple(group) for group in rubric["contrasts"])
    criteria = tuple(_build(Criterion, c) for c in rubric["rubric"])
    misconceptions = tuple(_build(Misconception, m) for m in rubric["misconceptions"])
    if follow_up:
        item = next((f for f in question_spec.get("follow_ups", []) if f.get("slug") == follow_up), None)
        if item is None:
            raise KeyError(f"question {question_spec.get('slug')!r} has no follow-up {follow_up!r}")
        return FollowUp(
            slug=follow_up,
            prompt=item["prompt"],
            model_answer=item["model_answer"],
            rubric=criteria,
            misconceptions=misconceptions,
            concepts=concepts,
            contrasts=contrasts,
            rubric_version=version,
        )
    numeric = rubric["numeric"]
    return Question(
        slug=question_spec["slug"],
        set_slug=question_spec.get("set_slug", ""),
        type=rubric["type"],
        difficulty=question_spec.get("difficulty", "core"),
        prompt=question_spec["prompt"],
        model_answer=question_spec["model_answer"],
        marked_up=question_spec.get("marked_up", ""),
        lesson=question_spec.get("lesson", ""),
        lab=question_spec.get("lab"),
        rubric=criteria,
        misconceptions=misconceptions,
        follow_ups=(),
        choices=tuple(_build(Choice, c) for c in rubric["choices"]),
        numeric=_build(NumericSpec, numeric) if numeric else None,
        concepts=concepts,
        contrasts=contrasts,
        rubric_version=version,
    )


def _plain(item: Any) -> dict[str, Any]:
    """A flat bank dataclass (criterion, misconception, choice, numeric answer) as JSON: every
    field, so a field the grader gains later is stored without touching this module."""
    return {f.name: list(v) if isinstance(v := getattr(item, f.name), tuple) else v for f in dataclasses.fields(item)}


def _build(cls: type, data: Mapping[str, Any]) -> Any:
    return cls(**{key: tuple(value) if isinstance(value, list) else value for key, value in data.items()})
