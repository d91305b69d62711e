"""Deterministic grading speed over the evaluation set: p50 / p95 / max per answer, in ms.

    python bench/grading_speed.py [--repeat 20] [--every N] [--without-reader]
        [--without-criterion-reader] [--without-second-look]

Needs no database or Django settings: it reads the bank and the labelled answers from files.
The first pass over the set is reported on its own (regexes compile and each question's
reference sentences are embedded on first use) and left out of the percentiles, which
describe a warm worker. Learner sentences are never cached: every pass runs the sentence
model on every sentence again, as a new answer would. The model runs on one BLAS thread per
process (the web and worker processes already use the cores); on a busy machine pin the run
to a core and take the best of three. `--every N` grades every Nth labelled answer (the set
is ~4,000 answers); `--without-reader` lets the decision model decide misconceptions alone
and the patterns or the decision model credit criteria (neither reader), and
`--without-criterion-reader` drops only the criterion reader's stage, and `--without-second-look`
only the belief reader's second look at every own sentence, to show what each costs. E.g.

    for i in 1 2 3; do OPENBLAS_NUM_THREADS=1 taskset -c 1 python bench/grading_speed.py; done
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from questions.bank import load_bank  # noqa: E402
from questions.grading import grade, semantic  # noqa: E402
from questions.grading.belief_reader import criterion_reader, reader  # noqa: E402
from questions.grading.embedding import encoder  # noqa: E402
from questions.grading.evaluation import discover_rounds, round_answers  # noqa: E402


def percentile(sorted_ms: list[float], fraction: float) -> float:
    """Nearest-rank percentile of an already sorted list."""
    index = max(0, min(len(sorted_ms) - 1, round(fraction * len(sorted_ms) + 0.5) - 1))
    return sorted_ms[index]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20, help="passes over the set (warm)")
    parser.add_argument("--content-dir", type=Path, default=ROOT / "questions" / "content")
    parser.add_argument(
        "--eval-dir",
        type=Path,
        default=ROOT / "tests" / "questions" / "evaluation_set",
    )
    parser.add_argument("--every", type=int, default=1, help="grade every Nth labelled answer")
    parser.add_argument(
        "--without-reader", action="store_true",
        help="misconceptions by the decision model alone (no belief reader)",
    )
    parser.add_argument(
        "--without-criterion-reader", action="store_true",
        help="criteria credited by the patterns or the decision model (no criterion reader)",
    )
    parser.add_argument(
        "--without-second-look", action="store_true",
        help="the belief reader reads only the closest sentence per belief (no second look)",
    )
    args = parser.parse_args()
    if args.every < 1:
        parser.error(f"--every must be at least 1, not {args.every}")
    if args.without_reader:
        shipped = semantic.load_model()
        semantic.use_model(
            semantic.SemanticModel(criterion=shipped.criterion, misconception=shipped.misconception),
        )
    elif args.without_criterion_reader:
        semantic.use_model(dataclasses.replace(semantic.load_model(), criterion_stage=None))
    if args.without_second_look:
        semantic.SECOND_LOOK_FROM = None

    started = time.perf_counter()
    bank = load_bank(content_dir=args.content_dir)
    load_ms = (time.perf_counter() - started) * 1000
    # Sealed rounds wait for their recorded first run (grading_report says why).
    answers = [
        a for r in discover_rounds(args.eval_dir) if not r.sealed
        for a in round_answers(round_=r, bank=bank)
    ][:: args.every]
    started = time.perf_counter()
    encoder()
    if not args.without_reader:
        reader()
        if not args.without_criterion_reader:
            criterion_reader()
    model_ms = (time.perf_counter() - started) * 1000
    targets = []
    for answer in answers:
        question = bank.question(answer.question)
        targets.append(question.follow_up(answer.follow_up) if answer.follow_up else question)

    started = time.perf_counter()
    for target, answer in zip(targets, answers, strict=True):
        grade(question=target, answer=answer.text)
    cold_ms = (time.perf_counter() - started) * 1000

    timings: list[float] = []
    for _ in range(args.repeat):
        for target, answer in zip(targets, answers, strict=True):
            started = time.perf_counter()
            grade(question=target, answer=answer.text)
            timings.append((time.perf_counter() - started) * 1000)
    timings.sort()
    lengths = [len(a.text) for a in answers]

    print(f"bank load: {load_ms:.0f} ms ({len(bank.questions)} questions)")
    print(
        f"sentence model{'' if args.without_reader else ' and readers'} load: "
        f"{model_ms:.0f} ms (once per process)",
    )
    print(
        f"answers: {len(answers)} (median {statistics.median(lengths):.0f} chars, "
        f"max {max(lengths)}), first pass {cold_ms:.0f} ms total",
    )
    print(f"graded {len(timings)} times over {args.repeat} warm passes")
    print(
        f"per answer: p50 {percentile(timings, 0.50):.2f} ms  "
        f"p95 {percentile(timings, 0.95):.2f} ms  max {timings[-1]:.2f} ms",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
