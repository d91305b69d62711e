"""A small, complete set of content files (course, two lessons, a question set, a lab) for tests."""

from pathlib import Path

COURSE = """
slug = "test-course"
title = "Test course"
summary = "A small course for tests."

[[modules]]
slug = "basics"
title = "Basics"
lessons = ["first-lesson", "second-lesson"]
"""

LESSON = """+++
title = "{title}"
summary = "Why decode is slow."
minutes = 5
objectives = ["Explain the decode loop"]
practice = ["sample-question"]
labs = ["sample-lab"]
+++

## The loop

Decode reads every weight once per step: $t \\ge B / W$.

See [the other lesson](lesson:{other}#the-loop) and [the lab](lab:sample-lab).
"""

QUESTIONS = """
slug = "sample-set"
title = "Sample set"
summary = "One question."
order = 1

[[questions]]
slug = "sample-question"
type = "free_text"
difficulty = "core"
prompt = "Why is decode memory-bound?"
model_answer = "Each decode step reads all the weights to produce one token per sequence, so bytes moved dominate."
marked_up = "Naming the bytes read per step."
lesson = "first-lesson#the-loop"
lab = "sample-lab"

[[questions.rubric]]
id = "reads-weights"
points = 2
earns = "Says each step reads all the weights."
match = ["decode + weights"]
feedback_met = "Yes: every step streams the weights."
feedback_missed = "Say what each step has to read."

[[questions.rubric]]
id = "memory-bound"
points = 1
earns = "Names memory bandwidth as the limit."
match = ["decode + memory_bound"]
feedback_met = "Right, bandwidth is the limit."
feedback_missed = "Name the resource that limits decode."

[[questions.misconceptions]]
id = "decode-compute"
name = "Decode is compute-bound"
match = ["decode + compute_bound"]
correction = "At batch 1 decode does about 2 FLOPs per weight byte, far below the ridge point."

[[questions.follow_ups]]
slug = "batching"
prompt = "What changes with batching?"
model_answer = "The same weight read serves every sequence in the batch."

[[questions.follow_ups.rubric]]
id = "shared-read"
points = 1
earns = "Weights are read once for the whole batch."
match = ["batching + weights"]
feedback_met = "Yes."
feedback_missed = "Say what the batch shares."
"""

LAB = """
slug = "sample-lab"
title = "Sample lab"
objective = "Measure decode."
lesson = "first-lesson#the-loop"
questions = ["sample-question"]
guide = "Run it and compare with [the lesson](lesson:first-lesson)."
prediction = "What will TPOT be?"

[[params]]
name = "max_tokens"
label = "Output tokens"
kind = "int"
default = 128
min = 1
max = 1024
help = "How many tokens to decode."
"""


def write_sample_content(*, root: Path, settings_base_dir: Path) -> dict[str, Path]:
    """The sample content files (a course of two lessons, a question set, a lab) under `root`."""
    courses = root / "courses" / "content"
    (courses / "lessons").mkdir(parents=True)
    (courses / "course.toml").write_text(COURSE)
    (courses / "lessons" / "first-lesson.md").write_text(LESSON.format(title="First lesson", other="second-lesson"))
    (courses / "lessons" / "second-lesson.md").write_text(LESSON.format(title="Second lesson", other="first-lesson"))
    questions = root / "questions" / "content"
    questions.mkdir(parents=True)
    (questions / "concepts.toml").write_text(
        (settings_base_dir / "questions" / "content" / "concepts.toml").read_text()
    )
    (questions / "sample-set.toml").write_text(QUESTIONS)
    labs = root / "labs" / "content"
    labs.mkdir(parents=True)
    (labs / "sample-lab.toml").write_text(LAB)
    return {"courses": courses, "questions": questions, "labs": labs}
