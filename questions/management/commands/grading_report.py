"""How well the grader agrees with the labelled evaluation set, round by round.

The development set (the top-level files, written by the grader's authors) and every round
folder are reported side by side, per answer style and overall, with Cohen's kappa on the
met/not-met decisions. A held-out round shows the figures of the first time the grader saw it
(recorded once in its `round.json` with `--record-first-run`) next to today's, so what the
report calls held-out is what was measured before anyone could tune to it.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from pathlib import Path
from typing import Any

import httpx
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from questions.bank import Bank, BankError, FollowUp, Question, load_bank
from questions.grading import GradeResult, grade
from questions.grading.evaluation import (
    ROUND_FILE,
    SPLITS,
    EvaluationReport,
    Grader,
    Round,
    discover_rounds,
    evaluate,
    figures,
    load_evaluation_set,
    render_rounds,
    render_text,
    round_answers,
)
from questions.grading.judge import combine, judge


def default_evaluation_dir() -> Path:
    return Path(settings.BASE_DIR) / "tests" / "questions" / "evaluation_set"


def judge_grader(client: httpx.Client) -> tuple[Grader, dict[str, int]]:
    """Rubric + judge, as the site combines them, and a count of judge failures."""
    failures = {"failed": 0, "asked": 0}

    def grader(target: Question | FollowUp, text: str) -> GradeResult:
        rubric_result = grade(question=target, answer=text)
        failures["asked"] += 1
        verdict = judge(
            question=target, answer=text, base_url=settings.GRADING_JUDGE_BASE_URL,
            model=settings.GRADING_JUDGE_MODEL,
            api_key=settings.GRADING_JUDGE_API_KEY or None,
            timeout_s=settings.GRADING_JUDGE_TIMEOUT_S, client=client,
        )
        if not verdict.ok:
            failures["failed"] += 1
        combined, _ = combine(rubric_result=rubric_result, judge_result=verdict)
        return combined

    return grader, failures


def _commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"], cwd=settings.BASE_DIR,
            capture_output=True, text=True, check=False, timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


class Command(BaseCommand):
    help = (
        "Grade every labelled answer and print, per round (development set, then each round "
        "folder), how many answers of each style were graded right, criterion agreement and "
        "Cohen's kappa, with held-out rounds' first-run figures next to today's; then "
        "per-criterion agreement and the disagreements."
    )
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="print JSON")
        parser.add_argument(
            "--dir", type=Path, default=None,
            help="evaluation set directory (default: tests/questions/evaluation_set)",
        )
        parser.add_argument("--split", choices=SPLITS, help="only answers labelled this split")
        parser.add_argument("--round", help="only this round (a folder name, or 'development')")
        parser.add_argument(
            "--judge", action="store_true",
            help="grade the held-out rounds with rubric+judge (needs GRADING_JUDGE_BASE_URL "
            "and GRADING_JUDGE_MODEL) and report them next to the rubric alone",
        )
        parser.add_argument(
            "--record-first-run", metavar="ROUND",
            help="store this held-out round's figures as its first run in its round.json "
            "(refuses when one is recorded already)",
        )
        parser.add_argument(
            "--fail-on-problems", action="store_true",
            help="exit with status 1 when a threshold does not hold (for CI)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        directory = options["dir"] or default_evaluation_dir()
        if not directory.is_dir():
            raise CommandError(f"no evaluation set at {directory}", returncode=2)
        try:
            bank = load_bank(content_dir=Path(settings.CONTENT_DIRS["questions"]))
            rounds = discover_rounds(directory)
            loaded = {r.name: round_answers(round_=r, bank=bank) for r in rounds}
        except BankError as error:
            raise CommandError(str(error)) from None
        if options["round"]:
            names = [r.name for r in rounds]
            if options["round"] not in names:
                raise CommandError(
                    f"no round {options['round']!r}; rounds are: {', '.join(names)}",
                )
            rounds = [r for r in rounds if r.name == options["round"]]
        sealed = [r for r in rounds if r.sealed and r.name != options["record_first_run"]]
        if options["round"] and sealed:
            raise CommandError(
                f"round {options['round']!r} is sealed: written blind and never graded, so its "
                f"first grading is its first run. Record it with --record-first-run "
                f"{options['round']} (grades it once and stores the figures in its {ROUND_FILE}).",
            )
        rounds = [r for r in rounds if r not in sealed]
        if options["split"]:
            loaded = {k: [a for a in v if a.split == options["split"]] for k, v in loaded.items()}
        rounds = [r for r in rounds if loaded[r.name]]
        if not rounds:
            raise CommandError(f"no labelled answers in {directory}", returncode=2)

        if options["judge"]:
            self._judge(rounds=rounds, loaded=loaded, bank=bank, options=options, sealed=sealed)
            return
        if options["record_first_run"] and options["record_first_run"] not in {r.name for r in rounds}:
            raise CommandError(f"no round folder {options['record_first_run']!r} with answers to record")
        reports = {r.name: evaluate(answers=loaded[r.name], bank=bank) for r in rounds}
        current = {name: figures(report) for name, report in reports.items()}
        if options["record_first_run"]:
            self._record(
                rounds=rounds, name=options["record_first_run"], key="first_run",
                data=current.get(options["record_first_run"]), grader="rubric",
            )
            kept = {r.name for r in rounds}
            rounds = [r for r in discover_rounds(directory) if r.name in kept]
        # The rounds' own outcomes, put together: every answer is graded once per report.
        everything = EvaluationReport(outcomes=[o for r in rounds for o in reports[r.name].outcomes])
        if options["json"]:
            data = everything.to_dict()
            data["rounds"] = {
                r.name: {
                    "status": r.meta.get("status", "development"),
                    "written": r.meta.get("written"),
                    "first_run": r.meta.get("first_run"),
                    "first_run_judge": r.meta.get("first_run_judge"),
                    "current": current[r.name],
                }
                for r in rounds
            }
            data["rounds"].update(
                {r.name: {"status": "sealed", "written": r.meta.get("written")} for r in sealed},
            )
            self.stdout.write(json.dumps(data, indent=2))
        else:
            self.stdout.write(self._rounds_text(rounds=rounds, current=current, sealed=sealed))
            self.stdout.write("")
            self.stdout.write(render_text(everything))
        if options["fail_on_problems"] and everything.problems:
            raise CommandError(f"{len(everything.problems)} threshold problem(s)")

    def _rounds_text(
        self, *, rounds: list[Round], current: dict[str, dict[str, Any]], sealed: list[Round],
    ) -> str:
        total = sum(current[r.name]["answers"] for r in rounds)
        lines = [f"Grading agreement over {total} labelled answers, by round", ""]
        lines += [
            f"  {r.name}: sealed (written blind, not graded yet: its first grading is its first "
            f"run, `--record-first-run {r.name}`); {r.meta.get('written', '')}"
            for r in sealed
        ]
        columns: list[tuple[str, dict[str, Any] | None]] = []
        for r in rounds:
            status = r.meta.get("status", "development")
            written = r.meta.get("written", "")
            first = r.first_run
            lines.append(
                f"  {r.name}: {status}; {written}"
                + (
                    f"; first run {first['measured_at']} at {first.get('commit') or '?'}"
                    if first else ""
                ),
            )
            if r.name != "development" and (r.held_out or first):
                columns.append((f"{r.name} 1st run", first["figures"] if first else None))
            columns.append((f"{r.name} now", current[r.name]))
        lines += ["", render_rounds(columns)]
        return "\n".join(lines)

    def _record(
        self, *, rounds: list[Round], name: str, key: str, data: dict[str, Any] | None,
        grader: str,
    ) -> None:
        round_ = next((r for r in rounds if r.name == name), None)
        if round_ is None or round_.name == "development" or data is None:
            raise CommandError(f"no round folder {name!r} with answers to record")
        if not round_.held_out:
            raise CommandError(
                f"round {name!r} is not held out (status {round_.meta.get('status')!r}); "
                "a first run is only recorded for a round the grader has not seen",
            )
        if round_.meta.get(key):
            raise CommandError(
                f"round {name!r} already has its {key} from "
                f"{round_.meta[key]['measured_at']}; first-run figures are never rewritten",
            )
        meta = dict(round_.meta)
        meta[key] = {
            "measured_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "commit": _commit(),
            "grader": grader,
            "figures": data,
        }
        (round_.path / ROUND_FILE).write_text(
            json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8",
        )
        self.stderr.write(f"Recorded the {key} of {name} in {round_.path / ROUND_FILE}")

    def _judge(
        self, *, rounds: list[Round], loaded: dict[str, list[Any]], bank: Bank,
        options: dict[str, Any], sealed: list[Round],
    ) -> None:
        if not (settings.GRADING_JUDGE_BASE_URL and settings.GRADING_JUDGE_MODEL):
            raise CommandError(
                "--judge needs GRADING_JUDGE_BASE_URL and GRADING_JUDGE_MODEL (an "
                "OpenAI-compatible endpoint and its model name)",
            )
        targets = [r for r in rounds if r.held_out] or (
            [r for r in rounds if r.name == options["round"]] if options["round"] else []
        )
        if not targets and sealed:
            # The judge's table shows the rubric's figures too: the rubric's first run comes first.
            names = ", ".join(r.name for r in sealed)
            raise CommandError(
                f"the held-out rounds ({names}) are sealed: record the rubric's first run first "
                f"(--record-first-run {sealed[0].name}), then judge them",
            )
        if not targets:
            raise CommandError("no held-out round to judge; name one with --round")
        columns: list[tuple[str, dict[str, Any] | None]] = []
        results: dict[str, Any] = {}
        with httpx.Client() as client:
            grader, failures = judge_grader(client)
            for r in targets:
                rubric = figures(evaluate(answers=loaded[r.name], bank=bank))
                combined = figures(evaluate(answers=loaded[r.name], bank=bank, grader=grader))
                first = r.meta.get("first_run_judge")
                columns += [
                    (f"{r.name} rubric", rubric),
                    (f"{r.name} +judge", combined),
                ]
                if first:
                    columns.append((f"{r.name} +judge 1st", first["figures"]))
                results[r.name] = {"rubric": rubric, "rubric_and_judge": combined}
        if options["record_first_run"]:
            self._record(
                rounds=rounds, name=options["record_first_run"], key="first_run_judge",
                data=results.get(options["record_first_run"], {}).get("rubric_and_judge"),
                grader=f"rubric+judge ({settings.GRADING_JUDGE_MODEL})",
            )
        if options["json"]:
            results["judge"] = {
                "model": settings.GRADING_JUDGE_MODEL,
                "asked": failures["asked"],
                "failed": failures["failed"],
            }
            self.stdout.write(json.dumps(results, indent=2))
            return
        self.stdout.write(
            f"Rubric alone and rubric+judge ({settings.GRADING_JUDGE_MODEL}) on the held-out "
            f"rounds: {failures['asked']} answers judged, {failures['failed']} judge failures "
            "(the rubric result stands for those)",
        )
        self.stdout.write("")
        self.stdout.write(render_rounds(columns))
        if sealed:
            self.stdout.write(
                f"\nSealed, not judged: {', '.join(r.name for r in sealed)} (record the rubric's "
                "first run first)",
            )


__all__ = ["Command", "judge_grader", "load_evaluation_set"]
