"""questions.bank: the real bank loads and is complete; malformed files fail with file:line."""

from __future__ import annotations

import re
import shutil
import textwrap
from pathlib import Path

import pytest
from markdown.extensions.toc import slugify

from questions.bank import BankError, load_bank

ROOT = Path(__file__).resolve().parents[2]
CONTENT_DIR = ROOT / "questions" / "content"
LESSONS_DIR = ROOT / "courses" / "content" / "lessons"
SET_SLUG = "quantization-inference-optimisation"
SEED_SLUGS = [
    "prefill-decode-ttft",
    "inference-bottleneck",
    "quantization-tradeoff",
    "batching-almost-free",
    "when-self-host",
    "8b-16-users-24gb",
    "weight-only-quant-speedup",
    "fastest-possible-generation",
    "continuous-batching-throughput",
]
LAB_SLUGS = {
    "ttft-vs-output-length", "prompt-length-ttft", "decode-speed-of-light",
    "batching-almost-free", "continuous-batching", "prefix-caching", "open-loop-slo",
    "quantization",
}
LESSON_SLUGS = {
    "how-generation-works", "prefill-vs-decode", "roofline-speed-of-light", "kv-cache-memory",
    "batching", "paged-attention", "quantization", "cutting-ttft", "speculative-decoding",
    "serving-for-a-goal", "measuring-inference", "parallelism", "self-hosting-vs-api",
    "what-your-bill-depends-on",
}
GLOBAL_CONCEPTS = (
    "prefill", "decode", "compute_bound", "memory_bound", "parallel", "sequential", "kv_cache",
    "weights", "bandwidth", "flops", "batching", "continuous_batching", "quantization",
    "dequantization", "accuracy", "prompt_length", "output_length", "ttft", "tpot", "throughput",
    "latency", "gpu_memory", "concurrency", "prefix_cache", "speculative", "draft_model",
    "acceptance_rate", "percentile", "warmup", "tokens_per_second", "cost", "utilisation",
    "input_tokens", "output_tokens", "streaming", "chunked_prefill", "paged_attention",
    "fragmentation", "tensor_parallel", "pipeline_parallel", "interconnect", "goodput", "slo",
    "privacy", "volume", "scheduler", "preemption", "arithmetic_intensity", "fp8", "int4", "int8",
    "gqa",
)


@pytest.fixture(scope="module")
def bank():
    return load_bank(content_dir=CONTENT_DIR)


@pytest.fixture(scope="module")
def question_set(bank):
    return next(s for s in bank.sets if s.slug == SET_SLUG)


def test_global_vocabulary_has_the_promised_concepts(bank):
    missing = [c for c in GLOBAL_CONCEPTS if c not in bank.concepts]
    assert missing == []
    assert ("prefill", "decode") in bank.contrasts


def test_the_set_has_its_metadata_and_the_nine_seed_questions(question_set):
    assert question_set.title == "Quantization & inference optimisation"
    assert question_set.order == 1
    assert len(question_set.questions) >= 14
    slugs = [q.slug for q in question_set.questions]
    assert [s for s in SEED_SLUGS if s not in slugs] == []
    assert {q.type for q in question_set.questions} == {
        "free_text", "numeric", "multiple_choice",
    }


def test_prefill_decode_ttft_has_the_seed_follow_ups(bank):
    question = bank.question("prefill-decode-ttft")
    prompts = [f.prompt for f in question.follow_ups]
    assert "Which one does your bill depend on?" in prompts
    assert "How would you cut time to first token specifically?" in prompts


def test_every_question_is_complete(question_set):
    for question in question_set.questions:
        where = question.slug
        assert question.prompt and question.model_answer, where
        assert question.difficulty in {"intro", "core", "advanced"}, where
        assert question.lesson_slug in LESSON_SLUGS, where
        assert question.lab in LAB_SLUGS, where
        assert 1 <= len(question.follow_ups) <= 3, where
        for follow_up in question.follow_ups:
            assert follow_up.model_answer and 1 <= len(follow_up.rubric) <= 5, where
        if question.type == "free_text":
            assert 2 <= len(question.rubric) <= 5, where
            assert question.misconceptions, where
        if question.type == "numeric":
            assert question.numeric is not None and question.numeric.solution, where
        if question.type == "multiple_choice":
            assert any(c.correct for c in question.choices), where
        for criterion in question.rubric:
            assert criterion.feedback_met and criterion.feedback_missed, where


def _anchors(lesson: Path) -> set[str]:
    body = lesson.read_text(encoding="utf-8").split("+++", 2)[-1]
    headings = re.findall(r"^#{2,3}\s+(.+?)\s*$", body, re.MULTILINE)
    return {slugify(heading, "-") for heading in headings}


def test_lesson_links_point_at_real_headings(question_set):
    """Anchors are checked for every lesson file that exists (lessons are written in parallel)."""
    checked = 0
    for question in question_set.questions:
        lesson = LESSONS_DIR / f"{question.lesson_slug}.md"
        if not lesson.exists():
            continue
        checked += 1
        assert question.lesson_anchor in _anchors(lesson), (
            f"{question.slug}: #{question.lesson_anchor} is not a heading of {lesson.name}"
        )
    assert checked >= 5


def test_rubric_version_is_stable_and_tracks_the_rubric(tmp_path, bank):
    before = bank.question("prefill-decode-ttft").rubric_version
    assert re.fullmatch(r"[0-9a-f]{12}", before)
    assert load_bank(content_dir=CONTENT_DIR).question("prefill-decode-ttft").rubric_version == (
        before
    )
    copy = tmp_path / "content"
    shutil.copytree(CONTENT_DIR, copy)
    path = copy / f"{SET_SLUG}.toml"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('id = "two-phases"\npoints = 1', 'id = "two-phases"\npoints = 2', 1))
    changed = load_bank(content_dir=copy)
    assert changed.question("prefill-decode-ttft").rubric_version != before
    # Other questions are graded exactly as before.
    assert changed.question("inference-bottleneck").rubric_version == (
        bank.question("inference-bottleneck").rubric_version
    )


def test_a_concept_synonym_changes_the_rubric_version(tmp_path, bank):
    copy = tmp_path / "content"
    shutil.copytree(CONTENT_DIR, copy)
    concepts = copy / "concepts.toml"
    concepts.write_text(
        concepts.read_text(encoding="utf-8").replace(
            "[concepts.prefill]\npatterns = [\n", "[concepts.prefill]\npatterns = [\n  'prompt crunch',\n", 1,
        ),
    )
    changed = load_bank(content_dir=copy)
    assert changed.question("prefill-decode-ttft").rubric_version != (
        bank.question("prefill-decode-ttft").rubric_version
    )


# --- Errors name the file and the line ---------------------------------------------------

CONCEPTS = """\
contrasts = [["alpha", "beta"]]

[concepts.alpha]
patterns = ['alpha']

[concepts.beta]
patterns = ['beta', 'b\\w+ta']
"""

GOOD_QUESTION = """\
[[questions]]
slug = "{slug}"
type = "free_text"
difficulty = "core"
prompt = "Why alpha?"
model_answer = "Alpha and beta."
lesson = "prefill-vs-decode#two-phases-two-bottlenecks"
lab = "quantization"

[[questions.rubric]]
id = "first"
points = 1
earns = "Alpha."
match = ["alpha"]
feedback_met = "Yes."
feedback_missed = "No."

[[questions.rubric]]
id = "second"
points = 1
earns = "Beta."
match = ["alpha + beta"]
feedback_met = "Yes."
feedback_missed = "No."

[[questions.misconceptions]]
id = "wrong"
name = "A wrong belief"
match = ["beta"]
correction = "No."

[[questions.follow_ups]]
slug = "more"
prompt = "More?"
model_answer = "More alpha."

[[questions.follow_ups.rubric]]
id = "more-alpha"
points = 1
earns = "Alpha again."
match = ["alpha"]
feedback_met = "Yes."
feedback_missed = "No."
"""


def write_bank(tmp_path: Path, *files: tuple[str, str]) -> Path:
    content = tmp_path / "content"
    content.mkdir()
    (content / "concepts.toml").write_text(CONCEPTS, encoding="utf-8")
    for name, text in files:
        (content / name).write_text(text, encoding="utf-8")
    return content


def set_file(*questions: str, slug: str = "demo") -> str:
    header = f'slug = "{slug}"\ntitle = "Demo"\nsummary = "A demo set."\norder = 2\n\n'
    return header + "\n".join(questions)


def line_of(text: str, needle: str, occurrence: int = 1) -> int:
    lines = text.splitlines()
    hits = [n for n, line in enumerate(lines, start=1) if needle in line]
    return hits[occurrence - 1]


def load_error(content: Path) -> BankError:
    with pytest.raises(BankError) as caught:
        load_bank(content_dir=content)
    return caught.value


def test_a_minimal_valid_bank_loads(tmp_path):
    bank = load_bank(
        content_dir=write_bank(tmp_path, ("demo.toml", set_file(GOOD_QUESTION.format(slug="q1")))),
    )
    question = bank.question("q1")
    assert [c.id for c in question.rubric] == ["first", "second"]
    assert question.follow_up("more").rubric[0].id == "more-alpha"
    assert question.line == 7  # the line of its slug
    assert bank.contrasts == (("alpha", "beta"),)


def test_a_sets_own_contrasts_hold_for_its_questions_only(tmp_path):
    local = (
        'slug = "demo"\ntitle = "Demo"\nsummary = "A demo set."\norder = 2\n'
        'contrasts = [["gamma", "delta"]]\n\n'
        "[concepts.gamma]\npatterns = ['gamma']\n\n[concepts.delta]\npatterns = ['delta']\n\n"
    )
    bank = load_bank(
        content_dir=write_bank(
            tmp_path,
            ("demo.toml", local + GOOD_QUESTION.format(slug="q1")),
            ("other.toml", set_file(GOOD_QUESTION.format(slug="q2"), slug="other")),
        ),
    )
    assert bank.question("q1").contrasts == (("alpha", "beta"), ("gamma", "delta"))
    assert bank.question("q2").contrasts == (("alpha", "beta"),)
    assert bank.contrasts == (("alpha", "beta"),)


def test_a_sets_contrast_of_an_unknown_concept_is_refused_with_the_line(tmp_path):
    text = set_file(GOOD_QUESTION.format(slug="q1")).replace(
        "order = 2\n", 'order = 2\ncontrasts = [["alpha", "omega"]]\n', 1,
    )
    error = load_error(write_bank(tmp_path, ("demo.toml", text)))
    assert error.path.name == "demo.toml"
    assert error.line == line_of(text, "contrasts = ")
    assert "omega" in str(error)


def test_toml_syntax_error_reports_tomllibs_line(tmp_path):
    text = set_file(GOOD_QUESTION.format(slug="q1")).replace('earns = "Beta."', 'earns = "Beta.')
    error = load_error(write_bank(tmp_path, ("demo.toml", text)))
    assert error.path.name == "demo.toml"
    assert error.line == line_of(text, 'earns = "Beta.')
    assert str(error).startswith(f"{error.path}:{error.line}: TOML syntax")


def test_unknown_concept_in_a_match_points_at_that_match(tmp_path):
    text = set_file(GOOD_QUESTION.format(slug="q1")).replace(
        'match = ["alpha + beta"]', 'match = ["alpha + gamma"]',
    )
    error = load_error(write_bank(tmp_path, ("demo.toml", text)))
    assert error.line == line_of(text, '"alpha + gamma"')
    assert "unknown concept 'gamma'" in error.message


def test_missing_key_points_at_the_table(tmp_path):
    text = set_file(GOOD_QUESTION.format(slug="q1")).replace('feedback_missed = "No."\n', "", 2)
    error = load_error(write_bank(tmp_path, ("demo.toml", text)))
    assert error.line == line_of(text, "[[questions.rubric]]", 1)
    assert "missing key 'feedback_missed'" in error.message


def test_wrong_type_points_at_the_key(tmp_path):
    text = set_file(GOOD_QUESTION.format(slug="q1")).replace("points = 1", 'points = "one"', 1)
    error = load_error(write_bank(tmp_path, ("demo.toml", text)))
    assert error.line == line_of(text, 'points = "one"')
    assert "'points' must be an integer" in error.message


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('difficulty = "core"', 'difficulty = "hard"', "difficulty 'hard' is not one of"),
        ('type = "free_text"', 'type = "essay"', "type 'essay' is not one of"),
        ('lesson = "prefill-vs-decode#two', 'lesson = "prefill-vs-decode two', "slug#anchor"),
        ("[concepts.alpha]", "[concepts.Alpha]", "must be lowercase"),
    ],
)
def test_bad_values_point_at_their_line(tmp_path, old, new, message):
    if old.startswith("[concepts"):
        content = write_bank(tmp_path, ("demo.toml", set_file(GOOD_QUESTION.format(slug="q1"))))
        path = content / "concepts.toml"
        text = path.read_text().replace(old, new)
        path.write_text(text)
        error = load_error(content)
        assert error.path.name == "concepts.toml"
    else:
        text = set_file(GOOD_QUESTION.format(slug="q1")).replace(old, new)
        error = load_error(write_bank(tmp_path, ("demo.toml", text)))
    assert error.line == line_of(text, new)
    assert message in error.message


def test_duplicate_slug_across_files_points_at_the_second_file(tmp_path):
    first = set_file(GOOD_QUESTION.format(slug="shared"), slug="a-set")
    second = set_file(GOOD_QUESTION.format(slug="other"), GOOD_QUESTION.format(slug="shared"),
                      slug="b-set")
    error = load_error(write_bank(tmp_path, ("a.toml", first), ("b.toml", second)))
    assert error.path.name == "b.toml"
    assert error.line == line_of(second, 'slug = "shared"')
    assert "also in a.toml:7" in error.message


def test_rubric_needs_two_to_five_criteria(tmp_path):
    one_criterion = GOOD_QUESTION.format(slug="q1")
    start = one_criterion.index("[[questions.rubric]]\nid = \"second\"")
    end = one_criterion.index("[[questions.misconceptions]]")
    text = set_file(one_criterion[:start] + one_criterion[end:])
    error = load_error(write_bank(tmp_path, ("demo.toml", text)))
    assert "'rubric' needs 2-5 entries, found 1" in error.message
    assert error.line == line_of(text, "[[questions.rubric]]")


def test_follow_ups_are_one_to_three(tmp_path):
    question = GOOD_QUESTION.format(slug="q1")
    follow_up = question[question.index("[[questions.follow_ups]]") :]
    extra = "".join(follow_up.replace('slug = "more"', f'slug = "more-{n}"') for n in range(3))
    text = set_file(question + "\n" + extra)
    error = load_error(write_bank(tmp_path, ("demo.toml", text)))
    assert "'follow_ups' needs 1-3 entries, found 4" in error.message

    none = set_file(question[: question.index("[[questions.follow_ups]]")])
    second = tmp_path / "second"
    second.mkdir()
    error = load_error(write_bank(second, ("demo.toml", none)))
    assert "'follow_ups' needs 1-3 entries, found 0" in error.message
    assert error.line == line_of(none, "[[questions]]")


def test_unknown_key_is_an_error_not_silently_ignored(tmp_path):
    text = set_file(GOOD_QUESTION.format(slug="q1")).replace(
        'feedback_missed = "No."', 'feedback_mised = "No."', 1,
    )
    error = load_error(write_bank(tmp_path, ("demo.toml", text)))
    assert error.line == line_of(text, "feedback_mised")


def test_bad_regex_in_a_concept_points_at_its_patterns(tmp_path):
    content = write_bank(tmp_path, ("demo.toml", set_file(GOOD_QUESTION.format(slug="q1"))))
    (content / "concepts.toml").write_text(CONCEPTS.replace("'b\\w+ta'", "'b(eta'"))
    error = load_error(content)
    assert error.path.name == "concepts.toml"
    assert error.line == line_of(CONCEPTS, "patterns = ['beta'")
    assert "not a valid regex" in error.message


def test_a_concepts_absent_words_load_with_it_and_a_bad_one_points_at_them(tmp_path):
    guarded = CONCEPTS + "\n[concepts.gamma]\npatterns = ['gamma']\nabsent = ['delta', 'eps\\w+']\n"
    content = write_bank(tmp_path, ("demo.toml", set_file(GOOD_QUESTION.format(slug="q1"))))
    (content / "concepts.toml").write_text(guarded, encoding="utf-8")
    assert load_bank(content_dir=content).concepts["gamma"].absent == ("delta", "eps\\w+")
    (content / "concepts.toml").write_text(guarded.replace("'delta'", "'del(ta'"), encoding="utf-8")
    error = load_error(content)
    assert error.line == line_of(guarded, "absent = [")
    assert "concept 'gamma': 'del(ta' is not a valid regex" in error.message


def test_voids_must_name_a_criterion(tmp_path):
    text = set_file(GOOD_QUESTION.format(slug="q1")).replace(
        'correction = "No."', 'voids = ["third"]\ncorrection = "No."',
    )
    error = load_error(write_bank(tmp_path, ("demo.toml", text)))
    assert error.line == line_of(text, 'voids = ["third"]')
    assert "unknown criterion 'third'" in error.message


def test_local_concepts_extend_the_global_vocabulary(tmp_path):
    local = textwrap.dedent(
        """\
        [concepts.gamma]
        patterns = ['gamma']

        """,
    )
    text = set_file(local + GOOD_QUESTION.format(slug="q1").replace('["alpha + beta"]', '["gamma"]'))
    bank = load_bank(content_dir=write_bank(tmp_path, ("demo.toml", text)))
    assert "gamma" in bank.question("q1").concepts
    assert "gamma" not in bank.concepts


def test_a_misconception_needs_a_learner_facing_name(tmp_path):
    text = set_file(GOOD_QUESTION.format(slug="q1")).replace('name = "A wrong belief"\n', "", 1)
    error = load_error(write_bank(tmp_path, ("demo.toml", text)))
    assert error.line == line_of(text, "[[questions.misconceptions]]")
    assert "missing key 'name'" in error.message


def test_a_misconception_name_is_words_not_a_slug(tmp_path):
    text = set_file(GOOD_QUESTION.format(slug="q1")).replace('name = "A wrong belief"', 'name = "wrong-belief"', 1)
    error = load_error(write_bank(tmp_path, ("demo.toml", text)))
    assert error.line == line_of(text, 'name = "wrong-belief"')
    assert "learner-facing 'name'" in error.message


def test_every_misconception_in_the_bank_has_a_name(bank):
    for question in bank.questions.values():
        for item in (question, *question.follow_ups):
            for misconception in item.misconceptions:
                assert " " in misconception.name and misconception.name != misconception.id, misconception.id


def test_renaming_a_misconception_keeps_the_rubric_version(tmp_path, bank):
    copy = tmp_path / "content"
    shutil.copytree(CONTENT_DIR, copy)
    path = copy / f"{SET_SLUG}.toml"
    text = path.read_text(encoding="utf-8")
    old_name = 'name = "Prefill memory-bound, decode compute-bound (swapped)"'
    path.write_text(text.replace(old_name, 'name = "Bounds swapped"', 1))
    changed = load_bank(content_dir=copy)
    question = changed.question("prefill-decode-ttft")
    assert {m.name for m in question.misconceptions} >= {"Bounds swapped"}
    assert question.rubric_version == bank.question("prefill-decode-ttft").rubric_version
