"""Trials as a run: k work items per prompt, collected per prompt into one TrialResult each.

A prompt's trials are held only until its last one finishes; then its
TrialResult line is written and they are dropped. Resume is exact per trial:
with an output file every finished trial is also appended (as a CaptureResult
line with its trial number) to the sidecar ``FILE.trials.jsonl``; resuming
skips prompts already in FILE, reuses the sidecar's trials of unfinished
prompts and runs only the missing (id, trial) pairs. The sidecar is removed
when a run completes. Retrying errors (``Output.retry_errors``) is per trial
too: a prompt with errored trials leaves FILE (its line moves to the sidecar,
which keeps its other trials) and only the errored (id, trial) pairs run again.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import get_args

import msgspec

from waza.protocol.errors import ConfigError
from waza.protocol.io.secrets import Redactor
from waza.protocol.jsonl import (
    DEFAULT_MAX_LINE,
    JsonlError,
    JsonlWriter,
    decode_line,
    dumps,
    iter_lines,
    read_records,
    repair_torn_tail,
)
from waza.protocol.records import CaptureResult, PromptCase
from waza.protocol.trial_records import ErrorPolicy, TrialEntry, TrialResult
from waza.runner.analysis.error_digest import ErrorDigest
from waza.runner.analysis.trial_stats import SummaryBuilder, trial_entry, trial_result
from waza.runner.engine.overlays import Seed
from waza.runner.engine.progress import Progress
from waza.runner.engine.rerun import ErrorRecords

SIDECAR_SUFFIX = ".trials.jsonl"


def sidecar_path(output: str) -> Path | None:
    return None if output == "-" else Path(output + SIDECAR_SUFFIX)


class Plan(msgspec.Struct, frozen=True):
    """What a trials run was asked for; a resumed run must match the finished file's."""

    trials: int
    k_values: list[int]
    policy: ErrorPolicy
    seed: int
    summary: Path | None


class Collecting(msgspec.Struct):
    """A prompt whose trials are not all finished yet."""

    case: PromptCase
    entries: dict[int, TrialEntry] = msgspec.field(default_factory=dict)


def load_finished(
    output: str, plan: Plan, builder: SummaryBuilder, max_line: int = DEFAULT_MAX_LINE, retry: ErrorRecords | None = None
) -> tuple[set[str], dict[str, dict[int, TrialEntry]]]:
    """Ids of prompts already written to ``output``, added to the summary; they must match this run's plan.

    With ``retry`` a prompt with errored trials is not finished: its line is noted there (to be moved to
    the sidecar when the run writes its first trial) and its other trials are returned, by id, to be kept
    while the errored ones run again."""
    path = Path(output)
    if not path.exists():
        return set(), {}
    _repair(path)
    done: set[str] = set()
    kept: dict[str, dict[int, TrialEntry]] = {}
    for number, result in read_records(path, TrialResult, max_line):
        _check_plan(f"{output}:{number}", result, plan)
        if retry is not None and result.errored:
            retry.lines.add(number)
            kept[result.id] = _without_errors(result)
            continue
        done.add(result.id)
        builder.add(result)
    for prompt in done & kept.keys():  # a prompt written twice: the line without errors stands
        del kept[prompt]
    if retry is not None:
        retry.ids = set(kept)
        retry.again += sum(plan.trials - len(entries) for entries in kept.values())
    return done, kept


def _check_plan(where: str, result: TrialResult, plan: Plan) -> None:
    keys = [str(k) for k in plan.k_values]
    if result.k != plan.trials:
        raise ConfigError(f"{where}: written with k={result.k}; resume with the same k= (this run: k={plan.trials})")
    if result.error_policy != plan.policy:
        raise ConfigError(f"{where}: written with errors={result.error_policy}; resume with the same policy")
    if list(result.pass_at_k) != keys:
        raise ConfigError(f"{where}: written with k_values={','.join(result.pass_at_k)}; resume with the same k values")


def _without_errors(result: TrialResult) -> dict[int, TrialEntry]:
    return {entry.trial: entry for entry in result.trials if entry.status != "error"}


def load_partial(
    sidecar: Path,
    skip: set[str],
    plan: Plan,
    max_line: int = DEFAULT_MAX_LINE,
    retry: ErrorRecords | None = None,
) -> dict[str, dict[int, TrialEntry]]:
    """Trials already run for prompts not in ``skip``, from the sidecar (the later line of a trial stands).

    The sidecar holds a CaptureResult per finished trial, and the TrialResult of each prompt whose
    errored trials a run with ``retry`` took out of the output: its other trials are kept. With ``retry``
    an errored trial of the sidecar is dropped too (counted there), so it runs again."""
    if not sidecar.exists():
        return {}
    _repair(sidecar)
    source = str(sidecar)
    partial: dict[str, dict[int, TrialEntry]] = {}
    with sidecar.open("rb") as stream:
        for number, line in iter_lines(stream, source, max_line):
            record = _sidecar_record(source, number, line)
            if record.id in skip:
                continue
            if isinstance(record, TrialResult):
                _check_plan(f"{source}:{number}", record, plan)
                partial[record.id] = _without_errors(record)
                continue
            if record.trial is None or not 1 <= record.trial <= plan.trials:
                raise ConfigError(f"trial must be 1..{plan.trials} (-k)", source=source, line=number, field="trial")
            partial.setdefault(record.id, {})[record.trial] = trial_entry(record)
    if retry is not None:
        for entries in partial.values():
            errored = [trial for trial, entry in entries.items() if entry.status == "error"]
            for trial in errored:
                del entries[trial]
            retry.again += len(errored)
    return partial


def _sidecar_record(source: str, number: int, line: bytes) -> CaptureResult | TrialResult:
    """A sidecar line: a trial's CaptureResult, or (rarely) a prompt's TrialResult moved there by a retry."""
    try:
        return decode_line(source, number, line, CaptureResult)
    except JsonlError as not_a_trial:
        try:
            return decode_line(source, number, line, TrialResult)
        except JsonlError:
            raise not_a_trial from None


def _repair(path: Path) -> None:
    removed = repair_torn_tail(path)
    if removed:
        print(f"waza: repaired {path}: removed a torn last line ({removed} bytes)", file=sys.stderr)


def seeder(template: Path | None) -> Seed | None:
    """Each trial's fresh workspace starts as a copy of ``template`` (--cwd) (when given), so no trial sees another's changes.

    The copy follows no link (links are copied as links, as ``shutil.copytree(symlinks=True)`` did) and
    refuses FIFOs, devices and sockets (``trees.copy_tree``)."""
    if template is None:
        return None
    source = template.resolve()
    if not source.is_dir():
        raise ConfigError(f"Workspace.template {str(template)!r} is not a directory")
    return Seed(source)


class TrialsOutput:
    """Collects trials per prompt and writes each prompt's TrialResult once its last trial is in.

    ``output`` None writes nothing (the API's in-memory runs); ``on_result``
    gets each finished TrialResult after it is written.
    """

    def __init__(
        self, plan: Plan, adapter: str, output: str | None, *, append: bool, progress: Progress, builder: SummaryBuilder
    ) -> None:
        self.plan = plan
        self.adapter = adapter
        self.redact = Redactor()
        self.main = JsonlWriter(output, append=append) if output is not None else None
        sidecar = sidecar_path(output) if output is not None else None
        self.sidecar = JsonlWriter(sidecar, append=append) if sidecar else None
        self.progress = progress
        self.builder = builder
        self.open: dict[str, Collecting] = {}
        self.errors = ErrorDigest()
        self.on_result: Callable[[TrialResult], Awaitable[None]] | None = None
        #: Runs once before the first line of either file is written (``ErrorRecords.remove`` of a retry).
        self.first: Callable[[], None] | None = None

    def _first_write(self) -> None:
        if self.first is not None:
            first, self.first = self.first, None
            first()

    async def start(self, case: PromptCase, earlier: dict[int, TrialEntry]) -> list[int]:
        """Begin collecting a prompt; returns the trial numbers still to run (none: written now)."""
        self.open[case.id] = Collecting(case, dict(earlier))
        missing = [t for t in range(1, self.plan.trials + 1) if t not in earlier]
        if not missing:
            await self._finish(case.id)
        return missing

    async def __call__(self, result: CaptureResult) -> None:
        self._first_write()
        if self.sidecar is not None:
            self.sidecar.write_bytes(self.redact(dumps(result)))
        self.progress.advance(result.status)
        self.errors.add(result)
        collecting = self.open[result.id]
        collecting.entries[result.trial or 1] = trial_entry(result)
        if len(collecting.entries) == self.plan.trials:
            await self._finish(result.id)

    async def _finish(self, prompt_id: str) -> None:
        collecting = self.open.pop(prompt_id)
        result = trial_result(
            collecting.case,
            list(collecting.entries.values()),
            k=self.plan.trials,
            k_values=self.plan.k_values,
            policy=self.plan.policy,
            adapter=self.adapter,
        )
        if self.main is not None:
            self._first_write()
            self.main.write_bytes(self.redact(dumps(result)))
        self.builder.add(result)
        if self.on_result is not None:
            await self.on_result(result)

    def close(self, *, complete: bool = False) -> None:
        """Close the files; ``complete``: the run finished (an output never written is created now)."""
        if self.main is not None:
            self.main.close(complete=complete)
        if self.sidecar is not None:
            self.sidecar.close()


def check_policy(text: str) -> ErrorPolicy:
    """``exclude`` or ``fail``, else a ConfigError."""
    if text not in get_args(ErrorPolicy):
        raise ConfigError(f"errors= takes exclude or fail, got {text!r}")
    return text  # type: ignore[return-value]


__all__ = [
    "SIDECAR_SUFFIX",
    "Plan",
    "TrialsOutput",
    "check_policy",
    "load_finished",
    "load_partial",
    "seeder",
    "sidecar_path",
]
