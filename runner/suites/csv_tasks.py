"""Tasks from a CSV file (``tasks_from: tasks.csv``), as the original waza makes them.

The first row names the columns; every other row is one task:

* ``id``: the ``id`` column, else the ``name`` column, else ``row-N`` (N counts
  data rows from 1);
* ``name``: the ``name`` column, else ``row-N``;
* ``prompt``: the ``prompt`` column (empty when there is none), with the
  original's template actions filled in: ``{{.Vars.col}}`` is the row's value of
  column ``col`` (or, when the row has no such column, the suite's ``inputs``
  value of that name; a column wins over an input), ``{{.TaskName}}`` the task's
  name, ``{{.JobID}}``, ``{{.Timestamp}}``, ``{{.Iteration}}`` and
  ``{{.Attempt}}`` as the original sets them when it loads the rows. A name that
  is neither a column nor an input is an error, as in the original
  (``missingkey=error``); so is any other template action (``if``, ``range``,
  pipelines), which waza does not evaluate.

``range: [start, end]`` picks rows ``start`` to ``end`` (from 1, both
included, clamped to the rows there are), as the original's CSV loader does.
The file must be inside the suite's folder. The suite's graders judge every
row's task; the rows have no graders, fixtures or mock script of their own.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from waza.protocol.errors import ConfigError
from waza.runner.suites.models import Task

__all__ = ["is_csv", "load_rows"]

#: A template action: ``{{ ... }}`` (with the ``{{-``/``-}}`` trim markers Go allows).
_ACTION = re.compile(r"\{\{(?:(-)\s+|\s*)(.*?)(?:\s+(-)|\s*)\}\}", re.DOTALL)
_VAR = re.compile(r"\.Vars\.(\w+)")
_FIELDS = ("TaskName", "JobID", "Timestamp", "Iteration", "Attempt")


def is_csv(pattern: str) -> bool:
    return pattern.lower().endswith(".csv")


def load_rows(
    path: Path, here: Path, *, fixture_root: Path, inputs: dict[str, str], rows: tuple[int, int] | None, shown: str
) -> list[Task]:
    """The tasks of the CSV file ``path`` (relative to the suite folder ``here``), one per data row."""
    resolved = (here / path).resolve()
    if not resolved.is_relative_to(here.resolve()):
        raise ConfigError(f"{str(path)!r} is outside the suite's folder {str(here)!r}", field="tasks_from")
    if not resolved.is_file():
        raise ConfigError(f"{str(path)!r} is not a file (relative to {here})", field="tasks_from")
    now = datetime.now().astimezone()
    stamp = now.isoformat(timespec="seconds").replace("+00:00", "Z")  # Go's RFC 3339
    system = {"JobID": f"run-{int(now.timestamp())}", "Timestamp": stamp, "Iteration": "0", "Attempt": "0"}
    tasks: list[Task] = []
    for number, line, row in _rows(resolved, shown):
        if rows is not None and not rows[0] <= number <= rows[1]:
            continue
        name = row.get("name") or f"row-{number}"
        task_id = row.get("id") or row.get("name") or f"row-{number}"
        try:
            prompt = render(row.get("prompt", ""), {**inputs, **row}, {**system, "TaskName": name})
        except ValueError as exc:
            raise ConfigError(str(exc), source=shown, line=line, field="prompt") from None
        clash = next((t for t in tasks if t.id == task_id), None)
        if clash is not None:
            raise ConfigError(f"task id {task_id!r} is also used by {clash.file}", source=shown, line=line, field="id")
        tasks.append(Task(id=task_id, name=name, file=f"{shown}:{line}", prompt=prompt, fixture_root=fixture_root))
    return tasks


def _rows(path: Path, shown: str) -> Iterator[tuple[int, int, dict[str, str]]]:
    """(data row number from 1, line number, the row by column) for each data row."""
    with path.open(encoding="utf-8-sig", newline="") as f:
        reader = csv.reader(f)
        try:
            header = next(reader, None)
            if header is None:
                raise ConfigError("is empty (no header row)", source=shown, line=1)
            line = reader.line_num + 1
            for number, record in enumerate(reader, start=1):
                if len(record) != len(header):
                    raise ConfigError(f"has {len(record)} fields, the header has {len(header)}", source=shown, line=line)
                yield number, line, dict(zip(header, record, strict=True))
                line = reader.line_num + 1
        except csv.Error as exc:
            raise ConfigError(f"is not valid CSV ({exc})", source=shown, line=reader.line_num) from None
        except UnicodeDecodeError as exc:
            raise ConfigError(f"is not UTF-8 ({exc.reason})", source=shown) from None


def render(text: str, variables: dict[str, str], fields: dict[str, str]) -> str:
    """``text`` with each ``{{.Vars.x}}`` and ``{{.Field}}`` filled in; ValueError for anything else."""
    if "{{" not in text:
        return text

    def action(match: re.Match[str]) -> str:
        body = match[2]
        var = _VAR.fullmatch(body)
        if var is not None:
            if var[1] not in variables:
                raise ValueError(f"{{{{{body}}}}}: no column or input named {var[1]!r}")
            return variables[var[1]]
        if body.startswith(".") and body[1:] in _FIELDS:
            return fields[body[1:]]
        raise ValueError(f"{{{{{body}}}}}: waza fills in only {{{{.Vars.NAME}}}} and {{{{.{'}}, {{.'.join(_FIELDS)}}}}}")

    out: list[str] = []
    at = 0
    for match in _ACTION.finditer(text):
        before = text[at : match.start()]
        out.append(before.rstrip() if match[1] else before)
        out.append(action(match))
        at = match.end()
        if match[3]:
            rest = text[at:]
            at += len(rest) - len(rest.lstrip())
    out.append(text[at:])
    return "".join(out)
