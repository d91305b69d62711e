"""`manage.py export_reader_pairs`: what the belief reader is trained on, and nothing held out."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from questions.bank import load_bank
from questions.grading.belief_reader import belief_text
from questions.grading.evaluation import discover_rounds, round_answers
from questions.grading.semantic import statement_of
from questions.grading.text import split_sentences

ROOT = Path(__file__).resolve().parents[2]
EVALUATION_SET = ROOT / "tests" / "questions" / "evaluation_set"


def test_training_pairs_come_from_development_rounds_and_the_bank_never_a_held_out_round(tmp_path):
    shutil.copy(EVALUATION_SET / "prefill-decode-ttft.toml", tmp_path)
    held_out = tmp_path / "heldout99"
    held_out.mkdir()
    shutil.copy(EVALUATION_SET / "heldout12" / "gqa-mqa-kv-cache.toml", held_out)
    (held_out / "round.json").write_text(json.dumps({"status": "held-out", "written": "blind"}))
    out = io.StringIO()
    call_command("export_reader_pairs", str(tmp_path / "pairs.json"), "--dir", str(tmp_path), stdout=out)
    data = json.loads((tmp_path / "pairs.json").read_text())
    assert data["rounds"] == ["development"]
    assert data["answers"] and {r["round"] for r in data["answers"]} == {"development"}
    assert all(r["answer"].startswith("prefill-decode-ttft#") for r in data["answers"])
    # Nothing a blind writer wrote for the held-out round reaches the training file.
    held_out_text = (held_out / "gqa-mqa-kv-cache.toml").read_text()
    assert not any(r["unit"] in held_out_text for r in data["answers"] if len(r["unit"]) > 40)
    bank = load_bank(content_dir=ROOT / "questions" / "content")
    gqa = bank.question("gqa-mqa-kv-cache")
    flops = next(m for m in gqa.misconceptions if m.id == "gqa-saves-flops")
    belief = belief_text(flops)
    # The bank: the belief's other wordings as yes, its question's criteria as no.
    assert {"belief": belief, "unit": flops.statements[1], "label": True} in data["bank"]
    assert {"belief": belief, "unit": gqa.rubric[0].earns, "label": False} in data["bank"]
    # Hard negatives: the model answer's own sentences, right by construction.
    hard = [r["unit"] for r in data["hard_negatives"] if r["belief"] == belief]
    assert hard and all(not r["label"] for r in data["hard_negatives"])
    assert all(sentence in gqa.model_answer or sentence in flops.correction for sentence in hard)
    # Right answer sentences: every sentence of a development strong or plain-words answer that
    # holds no belief, against each of its question's beliefs, as no.
    right = data["right_sentences"]
    assert right and {r["round"] for r in right} == {"development"}
    assert not any(r["label"] for r in right)
    answers = {a.key: a for a in round_answers(round_=discover_rounds(tmp_path)[0], bank=bank)}
    assert {answers[r["answer"]].category for r in right} == {"strong", "paraphrase"}
    assert all(r["unit"] in answers[r["answer"]].text for r in right)
    assert not any(answers[r["answer"]].misconceptions for r in right)
    ttft = bank.question("prefill-decode-ttft")
    one = next(
        a for a in answers.values()
        if a.category == "strong" and not a.misconceptions and a.follow_up is None
    )
    assert {(r["belief"], r["unit"]) for r in right if r["answer"] == one.key} == {
        (belief_text(m), sentence.text)
        for m in ttft.misconceptions if m.statements for sentence in split_sentences(one.text)
    }
    assert out.getvalue().startswith(f"wrote {tmp_path / 'pairs.json'}: {len(data['answers'])} answer pairs")


def test_criterion_pairs_come_from_development_rounds_and_the_bank_never_a_held_out_round(tmp_path):
    shutil.copy(EVALUATION_SET / "prefill-decode-ttft.toml", tmp_path)
    held_out = tmp_path / "heldout99"
    held_out.mkdir()
    shutil.copy(EVALUATION_SET / "heldout12" / "gqa-mqa-kv-cache.toml", held_out)
    (held_out / "round.json").write_text(json.dumps({"status": "held-out", "written": "blind"}))
    call_command(
        "export_criterion_pairs", str(tmp_path / "pairs.json"), "--dir", str(tmp_path), stdout=io.StringIO(),
    )
    data = json.loads((tmp_path / "pairs.json").read_text())
    assert data["rounds"] == ["development"]
    bank = load_bank(content_dir=ROOT / "questions" / "content")
    ttft = bank.question("prefill-decode-ttft")
    answers = {a.key: a for a in round_answers(round_=discover_rounds(tmp_path)[0], bank=bank)}
    rows = data["answers"]
    assert rows and {r["round"] for r in rows} == {"development"}
    # Each row is a sentence (or two) of the answer, labelled as the answer's labels say.
    statements = {statement_of(c.earns): c.id for c in ttft.rubric}
    for row in rows:
        answer = answers[row["answer"]]
        assert row["unit"] in answer.text or all(part in answer.text for part in split_sentences(row["unit"]))
        if answer.follow_up is None:
            assert row["label"] == answer.expected[statements[row["criterion"]]]
    assert {True, False} <= {r["label"] for r in rows}
    held_out_text = (held_out / "gqa-mqa-kv-cache.toml").read_text()
    assert not any(r["unit"] in held_out_text for r in rows if len(r["unit"]) > 40)
    # The bank: a criterion's paraphrases as yes; its question's misconceptions as no.
    gqa = bank.question("gqa-mqa-kv-cache")
    point = gqa.rubric[0]
    statement = statement_of(point.earns)
    assert {"criterion": statement, "unit": point.paraphrases[0], "label": True} in data["bank"]
    wrong = [r["unit"] for r in data["bank"] if r["criterion"] == statement and not r["label"]]
    assert any(u in m.statements for m in gqa.misconceptions for u in wrong)
    # The shipped reader was trained without the bank's wrong versions; the flag adds them as no.
    assert point.wrong_versions and not set(point.wrong_versions) & set(wrong)
    call_command(
        "export_criterion_pairs", str(tmp_path / "with.json"), "--dir", str(tmp_path), "--with-wrong-versions",
        stdout=io.StringIO(),
    )
    with_them = json.loads((tmp_path / "with.json").read_text())
    assert with_them["answers"] == rows
    added = [r for r in with_them["bank"] if r not in data["bank"]]
    assert {"criterion": statement, "unit": point.wrong_versions[0], "label": False} in added
    assert len(added) == sum(len(c.wrong_versions) for t in bank.free_text_targets() for c in t.rubric)


def test_right_versions_join_the_belief_readers_negatives_only_when_asked(tmp_path):
    shutil.copy(EVALUATION_SET / "prefill-decode-ttft.toml", tmp_path)
    call_command("export_reader_pairs", str(tmp_path / "pairs.json"), "--dir", str(tmp_path), stdout=io.StringIO())
    call_command(
        "export_reader_pairs", str(tmp_path / "with.json"), "--dir", str(tmp_path), "--with-right-versions",
        stdout=io.StringIO(),
    )
    without, with_them = (json.loads((tmp_path / name).read_text()) for name in ("pairs.json", "with.json"))
    bank = load_bank(content_dir=ROOT / "questions" / "content")
    flops = next(m for m in bank.question("gqa-mqa-kv-cache").misconceptions if m.id == "gqa-saves-flops")
    belief = belief_text(flops)
    assert flops.right_versions
    # The same answers; the bank pairs and hard negatives gain each right version, as no.
    assert with_them["answers"] == without["answers"]
    for part in ("bank", "hard_negatives"):
        added = [r for r in with_them[part] if r not in without[part]]
        assert {"belief": belief, "unit": flops.right_versions[0], "label": False} in added
        assert not any(r["label"] for r in added)
        # A pattern-only belief has no statement for the reader to read, so no pairs.
        assert len(added) == sum(
            len(m.right_versions) for t in bank.free_text_targets() for m in t.misconceptions if m.statements
        )
    assert not any(r["unit"] in flops.right_versions for r in without["bank"] + without["hard_negatives"])


def test_named_rounds_train_the_reader_and_a_held_out_or_unknown_name_is_refused(tmp_path):
    for name in ("heldout7", "heldout8"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "round.json").write_text((EVALUATION_SET / name / "round.json").read_text())
        shutil.copy(EVALUATION_SET / name / "gqa-mqa-kv-cache.toml", tmp_path / name)
    held_out = tmp_path / "heldout99"
    held_out.mkdir()
    shutil.copy(EVALUATION_SET / "heldout12" / "gqa-mqa-kv-cache.toml", held_out)
    (held_out / "round.json").write_text(json.dumps({"status": "held-out", "written": "blind"}))
    call_command(
        "export_reader_pairs", str(tmp_path / "pairs.json"), "--dir", str(tmp_path), "--rounds", "heldout8",
        stdout=io.StringIO(),
    )
    data = json.loads((tmp_path / "pairs.json").read_text())
    # Only the named round's answers; the trainer writes these names into the weights file.
    assert data["rounds"] == ["heldout8"]
    assert {r["round"] for r in data["answers"]} == {"heldout8"}
    bank = load_bank(content_dir=ROOT / "questions" / "content")
    eighth = next(r for r in discover_rounds(tmp_path) if r.name == "heldout8")
    assert {r["answer"] for r in data["answers"]} <= {a.key for a in round_answers(round_=eighth, bank=bank)}
    with pytest.raises(CommandError, match="held-out rounds never train a reader: heldout99"):
        call_command("export_reader_pairs", str(tmp_path / "no.json"), "--dir", str(tmp_path), "--rounds", "heldout99")
    listed = r"no such round: heldout5 \(rounds: development, heldout7, heldout8, heldout99\)"
    with pytest.raises(CommandError, match=listed):
        call_command("export_reader_pairs", str(tmp_path / "no.json"), "--dir", str(tmp_path), "--rounds", "heldout5")
    assert not (tmp_path / "no.json").exists()
