"""``waza review``: a person labels the outputs the human graders queued.

The queue is what ``builtin:human`` / ``builtin:human_calibration`` appended
(ReviewItem lines; an item queued twice, by a re-grade, is shown once). Labels
are appended, one flushed CalibrationLabel line each, so quitting halfway
keeps every answer given; items already labelled are not asked again.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, TextIO

import typer

from waza.protocol.errors import ConfigError
from waza.protocol.jsonl import JsonlError, JsonlWriter, read_records
from waza.protocol.review_records import ReviewItem
from waza.protocol.trial_records import CalibrationLabel
from waza.runner.cli.metavars import argument, option
from waza.runner.cli.runtime import EXIT_OK, fail

DEFAULT_QUEUE = "waza-review.jsonl"
DEFAULT_LABELS = "waza-labels.jsonl"
VERDICTS = {"p": True, "pass": True, "f": False, "fail": False}

HELP = """Label the outputs queued by the human graders, pass or fail.

Without --label, each pending item is shown on stderr and answered on stdin:
p (pass) or f (fail), optionally followed by notes, s to skip, q to stop.
Labels are appended to --labels; grade the results again to turn the pending
grades into the labels, and use the same file with `waza calibrate --labels`.

Examples:

  waza capture prompts.jsonl --adapter exec -g builtin:human -o results.jsonl -- ./agent.sh
  waza review
  waza review --label deploy-1=pass --label deploy-2=fail
  waza grade results.jsonl -g builtin:human -o labelled.jsonl
"""


def load_queue(path: str) -> dict[str, ReviewItem]:
    """Items by key, in queue order; a later line for the same key replaces the earlier one."""
    if not Path(path).is_file():
        raise ConfigError(f"review queue {path!r} not found (the human graders write it; see `waza graders show human`)")
    items: dict[str, ReviewItem] = {}
    for _, item in read_records(path, ReviewItem):
        items[item.key] = item
    return items


def key_of(label: CalibrationLabel) -> str:
    return label.id if label.trial is None else f"{label.id}#{label.trial}"


def labelled(path: str) -> set[str]:
    """Keys that already have a verdict in the labels file."""
    if path == "-" or not Path(path).is_file():
        return set()
    return {key_of(label) for _, label in read_records(path, CalibrationLabel) if label.passed is not None}


def label_for(item: ReviewItem, passed: bool, notes: str = "") -> CalibrationLabel:
    return CalibrationLabel(
        id=item.id, trial=item.trial, passed=passed, notes=notes, input=item.input, output=item.output_preview
    )


def parse_labels(values: list[str], items: dict[str, ReviewItem]) -> list[CalibrationLabel]:
    out = []
    for value in values:
        key, sep, verdict = value.rpartition("=")
        if not sep or verdict.lower() not in ("pass", "fail"):
            raise ConfigError(f"--label {value!r} must be ID=pass or ID=fail (ID#TRIAL for a trial)", field="--label")
        if key not in items:
            raise ConfigError(f"--label {value!r}: no item {key!r} in the review queue", field="--label")
        out.append(label_for(items[key], verdict.lower() == "pass"))
    return out


def card(item: ReviewItem, number: int, total: int) -> str:
    """The item as a person reads it."""
    turns = [item.input] if isinstance(item.input, str) else item.input
    lines = [
        f"\n=== {number}/{total}: {item.key} ({item.grader}" + (f", calibrates {item.calibrates})" if item.calibrates else ")")
    ]
    if item.instructions:
        lines.append(f"Instructions: {item.instructions}")
    lines += [f"  [ ] {c}" for c in item.criteria]
    lines += [f"Input: {t}" for t in turns]
    if item.hint:
        lines.append(f"Hint: {item.hint}")
    if item.reference:
        lines.append(f"Reference: {item.reference}")
    cut = item.output_chars - len(item.output_preview)
    lines.append("Output:\n" + item.output_preview + (f"\n[... {cut} more characters]" if cut > 0 else ""))
    return "\n".join(lines)


def ask(items: list[ReviewItem], answers: TextIO, writer: JsonlWriter) -> list[CalibrationLabel]:
    """Show each item, read an answer line, write its label; returns the labels written."""
    done: list[CalibrationLabel] = []
    for number, item in enumerate(items, 1):
        print(card(item, number, len(items)), file=sys.stderr)
        while True:
            print("pass/fail [notes], skip, quit > ", end="", file=sys.stderr, flush=True)
            line = answers.readline()
            if not line or line.strip().lower() in ("q", "quit"):
                return done
            word, _, notes = line.strip().partition(" ")
            if word.lower() in ("s", "skip"):
                break
            if word.lower() in VERDICTS:
                done.append(label_for(item, VERDICTS[word.lower()], notes.strip()))
                writer.write(done[-1])
                break
            print("answer p, f, s or q", file=sys.stderr)
    return done


def register(app: typer.Typer) -> None:
    @app.command("review", help=HELP)
    def review(
        queue: Annotated[
            str, argument(metavar="QUEUE", value="FILE", help="Review queue JSONL written by the human graders.")
        ] = DEFAULT_QUEUE,
        labels: Annotated[str, option("--labels", help="Labels JSONL to append to (- for stdout).")] = DEFAULT_LABELS,
        label: Annotated[
            list[str] | None, option("--label", help="ID=pass|fail without asking (repeatable; ID#TRIAL for a trial).")
        ] = None,
    ) -> None:
        try:
            items = load_queue(queue)
            already = labelled(labels)
            given = parse_labels(label or [], items)
        except (ConfigError, JsonlError) as exc:
            raise typer.Exit(fail(str(exc))) from None
        pending = [item for key, item in items.items() if key not in already]
        with JsonlWriter(labels, append=True) as writer:
            for value in given:
                writer.write(value)
            written = given or ask(pending, sys.stdin, writer)
        now = {key_of(value) for value in written}
        left = sum(1 for item in pending if item.key not in now)
        print(f"waza: {len(written)} labelled, {left} still pending in {queue}; labels in {labels}", file=sys.stderr)
        raise typer.Exit(EXIT_OK)
