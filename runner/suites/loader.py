"""Reading an eval suite: eval.yaml, its task files and trigger_tests.yaml, all checked up front.

Everything a run could trip over is found here, before any agent starts, and
reported as one ``file:line: field 'x': message`` line: schema violations,
task globs that match nothing, duplicate task ids or grader names, unknown
grader types and bad grader configs, fixture paths that are missing or climb
out of their root, mock scripts that do not parse, and metrics that cannot be
computed from what the suite contains.
"""

from __future__ import annotations

import difflib
import glob
import os
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from waza.adapters import adapter_class
from waza.adapters.mock import ScriptError, parse_script
from waza.graders._paths import check_relative
from waza.protocol.errors import ConfigError
from waza.runner.grading.build import make_runner
from waza.runner.grading.grader_specs import Builtin
from waza.runner.suites import csv_tasks, fixtures, mocks, resources, unsupported, validate
from waza.runner.suites.expected import expected_graders
from waza.runner.suites.graders import JUDGES, Roots, build
from waza.runner.suites.located import Located, PathKey, load_yaml
from waza.runner.suites.metrics import MEASURES
from waza.runner.suites.models import (
    Checkpoint,
    FixtureFile,
    Metric,
    Responder,
    Suite,
    SuiteConfig,
    Task,
    TriggerPrompt,
    TriggerTests,
)

KNOWN_METRICS = frozenset(MEASURES)
EVAL_FILE = "eval.yaml"
#: The original waza's Copilot SDK executor: accepted, reported, and replaced by the command line's adapter.
ORIGINAL_EXECUTOR = "copilot-sdk"
TRIGGER_FILES = ("trigger_tests.yaml", "trigger_tests.yml")
FIXTURES_DIR = "fixtures"
#: config keys the loader reads itself rather than copying into SuiteConfig.
OWN_CONFIG_KEYS = frozenset({"command", "workers", "instruction_files"})


def eval_path(path: Path) -> Path:
    """A suite is named by its eval.yaml or by the directory holding it; a directory holding neither it nor
    benchmark tasks is said to be so, with what waza looks for (rather than "eval.yaml: file not found")."""
    if not path.is_dir():
        return path
    found = path / EVAL_FILE
    if not found.exists() and not found.is_symlink():
        raise ConfigError(
            f"holds no {EVAL_FILE}: waza runs a folder holding {EVAL_FILE} (an eval suite), task.toml (a Harbor task), "
            "task.yaml (a Terminal-Bench 1.x task), or folders of such tasks (a dataset)",
            source=str(path),
        )
    return found


def load_suite(path: Path, *, context_dir: Path | None = None) -> Suite:
    path = eval_path(path)
    doc = load_yaml(path)
    validate.check(doc, "eval-suite")
    raw: dict[str, Any] = doc.value
    here = path.resolve().parent
    fixtures_root = (context_dir or here / FIXTURES_DIR).resolve()
    notices = unsupported.suite_notices(doc)
    config_raw: dict[str, Any] = raw.get("config", {})
    config = _config(doc, config_raw, here, notices)
    suite = Suite(
        name=raw["name"],
        file=path,
        config=config,
        description=raw.get("description", "").strip(),
        skill=raw.get("skill"),
        scenario=raw.get("scenario"),
        version=None if raw.get("version") is None else str(raw["version"]),
        metrics=_metrics(doc, raw.get("metrics", [])),
        notices=notices,
        mcp_mocks=mocks.mcp_mocks(doc, here),
        command_mocks=mocks.command_mocks(doc, ("command_mocks",), here, raw.get("command_mocks") or []),
    )
    suite.graders = [
        build(doc, ("graders", i), g, Roots(here, fixtures_root), notices) for i, g in enumerate(raw.get("graders", []))
    ]
    _unique_names(doc, ("graders",), suite.graders, [])
    instructions = _instructions(doc, ("config", "instruction_files"), fixtures_root, config_raw.get("instruction_files", []))
    for task_file in _task_files(doc, here):
        suite.tasks.append(_task(task_file, fixtures_root, suite, instructions))
    rows = raw.get("range")
    if rows is not None and rows[0] > rows[1]:
        raise doc.error(("range",), f"range start {rows[0]} is after its end {rows[1]}")
    if csv_tasks.is_csv(raw.get("tasks_from", "")):
        _csv_tasks(doc, here, fixtures_root, suite)
    elif rows is not None:
        suite.tasks = suite.tasks[rows[0] : rows[1] + 1]
    _judge_model(suite)
    suite.triggers = _triggers(here, suite.skill)
    _check_metrics(doc, suite)
    return suite


def _config(doc: Located, raw: dict[str, Any], here: Path, notices: list[str]) -> SuiteConfig:
    ours = {k: v for k, v in raw.items() if k not in OWN_CONFIG_KEYS and k not in unsupported.CONFIG_KEYS}
    config = SuiteConfig(**ours)
    if "workers" in raw and "max_workers" in raw:
        raise doc.error(("config", "max_workers"), "give workers or its older name max_workers, not both")
    if "max_workers" in raw:
        notices.append(
            f"{doc.source}:{doc.line(('config', 'max_workers'))}: config.max_workers: the older name of workers; read as workers"
        )
    if "workers" in raw:
        config.max_workers = raw["workers"] or os.cpu_count() or 1
    if config.executor == ORIGINAL_EXECUTOR:
        notices.append(
            f"{doc.source}:{doc.line(('config', 'executor'))}: config.executor: {ORIGINAL_EXECUTOR} is the original waza's "
            "Copilot engine; waza runs the agent given by --adapter (or config.command) instead"
        )
        config.executor = None
    if config.executor is not None:
        try:
            adapter_class(config.executor)
        except ConfigError as exc:
            raise doc.error(("config", "executor"), exc.message) from None
    command = raw.get("command")
    if command is not None:
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        if "/" in argv[0] and not Path(argv[0]).is_absolute():
            argv[0] = str((here / argv[0]).resolve())
        config.command = argv
    return config


def _metrics(doc: Located, raw: list[dict[str, Any]]) -> list[Metric]:
    metrics: list[Metric] = []
    for i, m in enumerate(raw):
        if any(seen.name == m["name"] for seen in metrics):
            raise doc.error(("metrics", i, "name"), f"metric {m['name']!r} is listed twice")
        metrics.append(Metric(**m))
    return metrics


def _csv_tasks(doc: Located, here: Path, fixtures_root: Path, suite: Suite) -> None:
    """The rows of ``tasks_from: FILE.csv`` as tasks after the task files' (``range`` picks rows, from 1)."""
    raw: dict[str, Any] = doc.value
    rows = raw.get("range")
    if rows is not None and rows[0] < 1:
        raise doc.error(("range",), f"with a CSV tasks_from, range counts rows from 1 (as the original), got {rows[0]}")
    path = Path(raw["tasks_from"])
    try:
        tasks = csv_tasks.load_rows(
            path, here, fixture_root=fixtures_root, inputs=raw.get("inputs") or {}, rows=rows, shown=shown(here / path)
        )
    except ConfigError as exc:
        if exc.source is None:
            raise doc.error(("tasks_from",), exc.message) from None
        raise
    if not tasks:
        raise doc.error(("tasks_from",), f"{str(path)!r} has no rows" + (f" in range {rows}" if rows else ""))
    for task in tasks:
        clash = next((t.file for t in suite.tasks if t.id == task.id), None)
        if clash:
            source, line = task.file.rsplit(":", 1)
            raise ConfigError(f"task id {task.id!r} is also used by {clash}", source=source, line=int(line), field="id")
        task.graders = list(suite.graders)
        suite.tasks.append(task)


def _task_files(doc: Located, here: Path) -> list[Path]:
    """Task files the globs match, in a stable order; the suite's own files never count as tasks."""
    own = {(here / name).resolve() for name in (EVAL_FILE, *TRIGGER_FILES)} | {Path(doc.source).resolve()}
    files: list[Path] = []
    patterns: list[tuple[PathKey, str]] = [(("tasks", i), p) for i, p in enumerate(doc.value.get("tasks", []))]
    tasks_from = doc.value.get("tasks_from")
    if tasks_from is not None and not csv_tasks.is_csv(tasks_from):
        patterns.append((("tasks_from",), tasks_from))
    if not patterns and tasks_from is None:
        raise doc.error((), "give tasks or tasks_from")
    for where, pattern in patterns:
        matched = sorted(
            Path(p) for p in glob.glob(str(here / pattern), recursive=True) if Path(p).is_file() and Path(p).resolve() not in own
        )
        if not matched:
            raise doc.error(where, f"{pattern!r} matches no task file (relative to {here})")
        files += [p for p in matched if p not in files]
    return files


def shown(path: Path) -> str:
    """How a file is named in messages: relative to the current directory when it is below it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _instructions(doc: Located, where: PathKey, root: Path, files: list[str]) -> str:
    """The text of instruction files (relative to the fixtures directory), each ending with a blank line."""
    texts = []
    for i, name in enumerate(files):
        try:
            texts.append(resources.read_text_file(root, name, "instruction file").strip() + "\n\n")
        except ConfigError as exc:
            raise doc.error((*where, i), exc.message) from None
    return "".join(texts)


def _resources(doc: Located, inputs: dict[str, Any], here: Path, root: Path, task: Task) -> None:
    """prompt_file, context.fixture and repos of a task's inputs, checked and set on ``task``."""
    if "prompt_file" in inputs:
        try:
            task.prompt = resources.read_text_file(here, inputs["prompt_file"], "prompt_file")
        except ConfigError as exc:
            raise doc.error(("inputs", "prompt_file"), exc.message) from None
    fixture = (inputs.get("context") or {}).get("fixture")
    if fixture is not None:
        try:
            resources.check_fixture(root, fixture)
        except ConfigError as exc:
            raise doc.error(("inputs", "context", "fixture"), exc.message) from None
        task.fixture = fixture
    for i, repo in enumerate(inputs.get("repos", [])):
        try:
            task.repos.append(resources.check_repo(here, repo))
        except ConfigError as exc:
            field, _, message = exc.message.partition(": ")
            raise doc.error(("inputs", "repos", i, field), message) from None
    if "workdir" in inputs:
        try:
            check_relative(inputs["workdir"], "workdir")
        except ConfigError as exc:
            raise doc.error(("inputs", "workdir"), exc.message) from None
        task.workdir = inputs["workdir"]


def _conversation(doc: Located, inputs: dict[str, Any], task: Task, roots: Roots, notices: list[str]) -> None:
    """follow_up_prompts, responder and checkpoints of a task, checked and set on ``task``."""
    task.follow_ups = list(inputs.get("follow_up_prompts", []))
    if "responder" in inputs:
        raw = inputs["responder"]
        task.responder = Responder(raw["instructions"], raw["max_followups"], raw.get("model"))
    for j, point in enumerate(doc.value.get("checkpoints", [])):
        where: PathKey = ("checkpoints", j, "graders")
        specs = [build(doc, (*where, i), g, roots, notices) for i, g in enumerate(point["graders"])]
        _unique_names(doc, where, specs, [])
        turns = 1 + len(task.follow_ups)
        if point["after_turn"] > turns and task.responder is None:
            raise doc.error(
                ("checkpoints", j, "after_turn"), f"the task has {turns} user turn(s), so no turn {point['after_turn']}"
            )
        task.checkpoints.append(Checkpoint(point["after_turn"], specs, point.get("on_failure") == "stop"))


def _task(path: Path, fixtures_root: Path, suite: Suite, instructions: str = "") -> Task:
    doc = load_yaml(path, shown(path))
    validate.check(doc, "eval-task")
    raw: dict[str, Any] = doc.value
    suite.notices += unsupported.task_notices(doc)
    clash = next((t.file for t in suite.tasks if t.id == raw["id"]), None)
    if clash:
        raise doc.error(("id",), f"task id {raw['id']!r} is also used by {clash}")
    here = path.resolve().parent
    root = _context_dir(here, raw["context_dir"]) if "context_dir" in raw else fixtures_root
    if "context_dir" in raw and not root.is_dir():
        raise doc.error(("context_dir",), f"{raw['context_dir']!r} is not a directory (looked for {root})")
    inputs = raw["inputs"]
    task = Task(
        id=raw["id"],
        name=raw.get("name", raw["id"]),
        file=doc.source,
        prompt=inputs.get("prompt", ""),
        fixture_root=root,
        description=raw.get("description", "").strip(),
        enabled=raw.get("enabled", True),
        tags=list(raw.get("tags", [])),
        timeout=raw.get("timeout_seconds"),
        weight=float(raw.get("weight", 1.0)),
        golden=raw.get("golden", False),
        files=[FixtureFile(f["path"], f.get("content")) for f in inputs.get("files", [])],
        context=inputs.get("context"),
        mock=raw.get("mock"),
    )
    _resources(doc, inputs, here, root, task)
    _conversation(doc, inputs, task, Roots(here, root), suite.notices)
    own_instructions = _instructions(doc, ("instruction_files",), root, raw.get("instruction_files", []))
    task.prompt = instructions + own_instructions + task.prompt
    for i, item in enumerate(task.files):
        try:
            fixtures.check(root, item, "fixture")
        except ConfigError as exc:
            raise doc.error(("inputs", "files", i, "path"), exc.message) from None
    _check_script(doc, ("mock",), task.mock)
    if "command_mocks" in raw:
        _task_command_mocks(doc, suite, task)
    expected = [(("expected", key), spec) for key, spec in expected_graders(raw.get("expected", {}))]
    for where, spec in expected:
        try:
            make_runner(spec)
        except ConfigError as exc:
            raise doc.error(where, exc.message) from None
    own = [build(doc, ("graders", i), g, Roots(here, root), suite.notices) for i, g in enumerate(raw.get("graders", []))]
    task.graders = [*suite.graders, *(spec for _, spec in expected), *own]
    _unique_names(doc, ("graders",), own, [*suite.graders, *(spec for _, spec in expected)])
    return task


def _task_command_mocks(doc: Located, suite: Suite, task: Task) -> None:
    """A task's own ``command_mocks`` (``[]``: none), checked with the suite schema's rules, paths relative to eval.yaml."""
    raw = doc.value["command_mocks"]
    shape = {"name": "task", "tasks": ["task"], "schemaVersion": "1.3", "command_mocks": raw}
    problem = validate.first_problem(doc, "eval-suite", shape, lambda path: path)
    if problem is not None:
        raise problem
    task.command_mocks = mocks.command_mocks(doc, ("command_mocks",), suite.file.resolve().parent, raw)


def _context_dir(here: Path, value: str) -> Path:
    """A task's context_dir: relative to the task file; else, as the original resolves it, to the working directory."""
    beside = (here / value).resolve()
    if not beside.is_dir() and (Path.cwd() / value).is_dir():
        return (Path.cwd() / value).resolve()
    return beside


def _unique_names(doc: Located, where: PathKey, specs: Sequence[Builtin], earlier: Sequence[Builtin]) -> None:
    taken = {s.name for s in earlier}
    for i, spec in enumerate(specs):
        if spec.name in taken:
            raise doc.error((*where, i, "name"), f"grader name {spec.name!r} is already used in this task; give it another name")
        taken.add(spec.name)


def _check_script(doc: Located, where: PathKey, script: list[Any] | None) -> None:
    if script is None:
        return
    try:
        parse_script(script)
    except ScriptError as exc:
        at = (*where, exc.index) + ((exc.key,) if exc.key else ())
        raise doc.error(at, str(exc).split(": ", 1)[1]) from None


def _triggers(here: Path, skill: str | None) -> TriggerTests | None:
    path = next((here / name for name in TRIGGER_FILES if (here / name).is_file()), None)
    if path is None:
        return None
    doc = load_yaml(path, shown(path))
    validate.check(doc, "trigger-tests")
    raw = doc.value
    if skill is not None and raw["skill"] != skill:
        raise doc.error(("skill",), f"trigger tests are for {raw['skill']!r} but eval.yaml's skill is {skill!r}")
    prompts = []
    for key, should in (("should_trigger_prompts", True), ("should_not_trigger_prompts", False)):
        for i, p in enumerate(raw.get(key, [])):
            _check_script(doc, (key, i, "mock"), p.get("mock"))
            prompts.append(TriggerPrompt(p["prompt"], should, p.get("confidence", "high"), p.get("reason", ""), p.get("mock")))
    if not prompts:
        raise doc.error((), "holds no prompts")
    return TriggerTests(skill=raw["skill"], file=doc.source, prompts=prompts)


def _check_metrics(doc: Located, suite: Suite) -> None:
    """Reject a metric the suite gives no data for, or a misspelt name (close to one waza computes); another name
    the original allows but waza cannot compute is reported."""
    for i, metric in enumerate(suite.metrics):
        if not metric.enabled:
            continue
        if metric.name == "trigger_accuracy" and suite.triggers is None:
            raise doc.error(("metrics", i, "name"), f"trigger_accuracy needs {TRIGGER_FILES[0]} beside eval.yaml")
        if metric.name not in KNOWN_METRICS:
            close = difflib.get_close_matches(metric.name, sorted(KNOWN_METRICS), n=1, cutoff=0.8)
            if close:  # a misspelling: its threshold would silently leave the gate
                raise doc.error(
                    ("metrics", i, "name"),
                    f"unknown metric {metric.name!r}; did you mean {close[0]!r}? (waza computes {', '.join(sorted(KNOWN_METRICS))})",
                )
            suite.notices.append(
                f"{doc.source}:{doc.line(('metrics', i, 'name'))}: metrics[{i}].name: waza does not compute {metric.name!r}; "
                "it is listed with no value"
            )


def _judge_model(suite: Suite) -> None:
    """config.judge_model: the model of every LLM grader that names none (the original's judge override)."""
    if suite.config.judge_model is None:
        return
    model = suite.config.judge_model
    for graders in [suite.graders, *(t.graders for t in suite.tasks)]:
        graders[:] = [
            msgspec.structs.replace(s, config={**s.config, "model": model})
            if s.grader in JUDGES and "model" not in s.config
            else s
            for s in graders
        ]
