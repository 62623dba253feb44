"""Any of the results waza or the original writes, read as the original's results.json for the gate.

Four kinds, told apart by their content, not their name:

- the original's results.json (a JSON object whose ``summary`` has a
  ``success_rate``), as ``waza run --reporter results:FILE`` also writes it;
- waza's suite document (``waza run --reporter json:FILE``: a SuiteResult);
- CaptureResult lines (``waza capture``, ``waza run``'s JSONL): the lines of
  one id are that task's trials (``waza run``'s trigger-test lines, marked by
  ``metadata.trigger``, are not tasks and are left out);
- TrialResult lines (``waza trials``): one task per line.

A document is read whole but bounded (``MAX_DOCUMENT`` bytes); lines are
streamed with the JSONL reader's own per-line bound, so memory stays flat
however many lines there are (one small entry per task). A task of waza's own
results is golden when its task file says ``golden: true`` (a SuiteResult) or
its metadata holds ``golden: true`` (lines).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import msgspec

from waza.protocol.codec import RecordError
from waza.protocol.errors import ConfigError
from waza.protocol.jsonl import display_name, iter_lines, open_input
from waza.protocol.records import CaptureResult
from waza.protocol.suite_records import SuiteResult
from waza.runner.analysis.outcome_format import Outcome, TaskRuns, build
from waza.runner.analysis.runs import ResultsFile

__all__ = ["MAX_DOCUMENT", "from_suite", "load"]

#: The largest results document read (the original's files carry every trial's transcript).
MAX_DOCUMENT = 512 << 20


def _first_line(path: str) -> bytes | None:
    """The first non-blank line, read with the JSONL reader's bound (None for an empty file)."""
    stream = open_input(path)
    try:
        return next((line for _, line in iter_lines(stream, display_name(path))), None)
    finally:
        stream.close()


def _read_document(path: str) -> Any:
    stream = open_input(path)
    try:
        data = stream.read(MAX_DOCUMENT + 1)
    finally:
        stream.close()
    if len(data) > MAX_DOCUMENT:
        raise ConfigError(f"{path}: larger than {MAX_DOCUMENT >> 20} MiB; not read")
    try:
        return msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise ConfigError(f"{path}: neither a results document nor JSON lines: {exc}") from None


def from_suite(result: SuiteResult) -> Outcome:
    """waza's suite document as the original's: one entry per task, its trials' statuses and scores."""
    tasks = [
        TaskRuns(
            id=t.id,
            name=t.name,
            golden=t.golden,
            statuses=[r.status for r in t.trials],
            scores=[r.score.score for r in t.trials if r.score is not None and r.score.score is not None],
            runs=_conversation_runs(t.trials),
        )
        for t in result.tasks
    ]
    return build(
        tasks,
        name=result.suite,
        skill=result.skill or "",
        model=result.model or "",
        engine=result.adapter,
        runs_per_test=result.trials_per_task,
        timestamp=datetime.fromtimestamp(result.started / 1000, UTC).isoformat(),
        duration_ms=max(0, result.finished - result.started),
    )


#: What a suite task's conversation records in each trial's result (runner.suites.conversation), carried into
#: the original's ``runs[]``: the checkpoints beside the final verdict, and how the conversation ended.
CONVERSATION_KEYS = ("conversation", "checkpoints")


def _conversation_runs(trials: list[CaptureResult]) -> list[dict[str, object]]:
    """One ``runs[]`` entry per trial (number, status, conversation, checkpoints) for a task whose trials were
    conversations; none for the others, whose results.json stays as it was."""
    if not any(key in r.unknown for r in trials for key in CONVERSATION_KEYS):
        return []
    return [
        {"run_number": number, "status": r.status, **{k: r.unknown[k] for k in CONVERSATION_KEYS if k in r.unknown}}
        for number, r in enumerate(trials, 1)
    ]


def _golden(metadata: dict[str, Any]) -> bool:
    return metadata.get("golden") is True


def _from_lines(path: str) -> Outcome:
    tasks: dict[str, TaskRuns] = {}
    most = 0
    for _, record in ResultsFile(path):
        if isinstance(record, CaptureResult):
            if "trigger" in record.metadata:
                continue  # a trigger-test prompt of waza run, not a task
            task = tasks.setdefault(record.id, TaskRuns(id=record.id, name=record.id, statuses=[]))
            task.statuses.append(record.status)
            task.golden = task.golden or _golden(record.metadata)
            if record.score is not None and record.score.score is not None:
                task.scores.append(record.score.score)
        else:
            scores = [t.score for t in record.trials if t.score is not None]
            tasks[record.id] = TaskRuns(
                id=record.id,
                name=record.id,
                statuses=[t.status for t in record.trials],
                scores=scores,
                golden=_golden(record.metadata),
            )
        most = max(most, len(tasks[record.id].statuses))
    if not tasks:
        raise ConfigError(f"{path}: no task results in it")
    return build(list(tasks.values()), name=path, runs_per_test=most)


def load(path: str) -> Outcome:
    """The results in ``path`` as the original's results.json; a ConfigError or JsonlError naming the file
    (and the line and field) when they are none of the kinds above.

    The first line tells a document from JSON lines without reading the file whole: a line that is a
    JSON object on its own is a document when it holds ``summary`` and ``tasks`` (a compact document),
    else the first of the lines; a line that is not whole JSON starts an indented document."""
    if path == "-":
        raise ConfigError("waza gate reads files, not stdin: give each results file's path")
    first = _first_line(path)
    if first is None:
        raise ConfigError(f"{path}: empty; no results to gate on")
    try:
        value: Any = msgspec.json.decode(first)
    except msgspec.DecodeError:
        value = _read_document(path)
    if isinstance(value, dict) and "summary" in value and "tasks" in value:
        return _document(path, value)
    return _from_lines(path)


#: The results.json versions waza reads: the original's major 1, any minor (absent: 1.0), as the original does.
_RESULTS_VERSION = re.compile(r"1\.(0|[1-9][0-9]*)")


def _document(path: str, value: dict[str, Any]) -> Outcome:
    summary = value.get("summary")
    version = value.get("schemaVersion", "1.0")
    if not isinstance(version, str) or not _RESULTS_VERSION.fullmatch(version):
        raise ConfigError(f"{path}: results.json of schemaVersion {version!r}; waza reads 1.x", field="schemaVersion")
    try:
        if isinstance(summary, dict) and "success_rate" in summary:
            return msgspec.convert(value, Outcome)
        return from_suite(SuiteResult.from_dict(value))
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{path}: not a results.json of the original waza: {exc}") from None
    except RecordError as exc:
        raise ConfigError(f"{path}: not a waza suite result: {exc.message}", field=exc.path) from None
