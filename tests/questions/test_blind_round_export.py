"""`manage.py export_blind_round`: what a blind writer reads, and nothing of the grader."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from questions.bank import load_bank

ROOT = Path(__file__).resolve().parents[2]


def export(*args: str) -> str:
    out = io.StringIO()
    call_command("export_blind_round", *args, stdout=out)
    return out.getvalue()


def test_writers_get_prompts_model_answers_rubric_text_and_corrections_only(tmp_path):
    folder = tmp_path / "round14"
    said = export(str(folder), "--round", "heldout14")
    bank = load_bank(content_dir=ROOT / "questions" / "content")
    free_text = [q for s in bank.sets for q in s.questions if q.type == "free_text"]
    parts = [json.loads((folder / f"input-{n}.json").read_text()) for n in (1, 2, 3)]
    assert sorted(q["slug"] for part in parts for q in part) == sorted(q.slug for q in free_text)
    assert said.startswith(f"{len(free_text)} free-text questions for 3 writers in {folder} (")
    # Every third question to each writer, so each covers every set.
    assert [q["slug"] for q in parts[1]] == [q.slug for q in free_text[1::3]]
    for question in (q for part in parts for q in part):
        assert set(question) == {"slug", "prompt", "model_answer", "rubric", "misconceptions"}
        assert all(set(c) == {"id", "points", "earns"} for c in question["rubric"])
        assert all(set(m) == {"id", "correction"} for m in question["misconceptions"])
    # The grader's own material never reaches a writer: patterns, paraphrases, statements.
    text = "".join((folder / f"input-{n}.json").read_text() for n in (1, 2, 3))
    gqa = bank.question("gqa-mqa-kv-cache")
    assert gqa.misconceptions[0].statements[0] not in text
    assert gqa.rubric[0].paraphrases[0] not in text
    assert '"match"' not in text and '"statements"' not in text
    brief = (folder / "BRIEF.md").read_text()
    assert "Ids are exactly r14-strong, r14-paraphrase, r14-partial, r14-misconception," in brief
    assert f"`{folder}/out-N/<slug>.toml`" in brief
    assert "{" not in brief.replace("expected = { <criterion-id>", "")
    assert sorted(p.name for p in folder.iterdir()) == [
        "BRIEF.md", "input-1.json", "input-2.json", "input-3.json", "out-1", "out-2", "out-3",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--round", "14"], "give a folder name of lowercase letters and a number, e.g. heldout14"),
        (["--round", "heldout14", "--writers", "0"], "--writers 0: give 1 to 12 writers"),
    ],
)
def test_bad_options_say_what_is_allowed(tmp_path, args, message):
    with pytest.raises(CommandError, match=message):
        export(str(tmp_path / "new"), *args)


def test_a_folder_with_files_in_it_is_refused(tmp_path):
    (tmp_path / "input-1.json").write_text("[]")
    with pytest.raises(CommandError, match="is not empty: give a new folder"):
        export(str(tmp_path), "--round", "heldout14")
