"""``waza check``: valid suites pass; every kind of bad suite is one file:line error and exit 2, nothing run."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.conftest import compat_path, run_waza
from waza.protocol import schemas
from waza.protocol.errors import ConfigError
from waza.runner.suites.execute import require_graders
from waza.runner.suites.loader import load_suite

SUITES = Path(__file__).parent / "fixtures" / "suites"
EXAMPLES = Path(__file__).parent.parent / "examples"


@pytest.mark.parametrize("name", ["snippet-explainer", "every-grader", "code-explainer", "grader-showcase"])
def test_example_suites_pass_check(name: str) -> None:
    """Our suites (in the original format) always; the reference suites when ../shared/compat is present."""
    ours = next((d / name for d in (SUITES, EXAMPLES) if (d / name).is_dir()), None)
    suite = ours or compat_path(f"waza-examples/{name}")
    done = run_waza("check", suite / "eval.yaml")
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == b""
    summary = {
        "snippet-explainer": b"ok: 2 tasks, 12 graders, 3 metrics, 4 trigger prompts",
        "every-grader": b"ok: 10 tasks (1 disabled), 35 graders, 4 metrics, 6 trigger prompts",
        "code-explainer": b"ok: 4 tasks, 28 graders, 3 metrics, 16 trigger prompts",
        "grader-showcase": b"ok: 6 tasks, 27 graders, 3 metrics",
    }[name]
    assert summary in done.stderr, done.stderr


def write_suite(root: Path, eval_yaml: str, tasks: dict[str, str], extra: dict[str, str] | None = None) -> Path:
    (root / "tasks").mkdir(parents=True, exist_ok=True)
    (root / "fixtures").mkdir(exist_ok=True)
    (root / "fixtures" / "a.txt").write_text("fixture\n")
    (root / "eval.yaml").write_text(textwrap.dedent(eval_yaml))
    for name, text in tasks.items():
        (root / "tasks" / name).write_text(textwrap.dedent(text))
    for name, text in (extra or {}).items():
        (root / name).write_text(textwrap.dedent(text))
    return root / "eval.yaml"


GOOD_EVAL = """\
    name: mini
    config:
      executor: mock
    graders:
      - type: code
        name: answered
        assertions: ["len(output) > 0"]
    tasks: ["tasks/*.yaml"]
    """.rstrip(" ")

GOOD_TASK = """\
    id: one
    inputs:
      prompt: "hello"
      files:
        - path: a.txt
    """.rstrip(" ")


def check_error(tmp_path: Path, eval_yaml: str = GOOD_EVAL, task: str = GOOD_TASK, extra: dict[str, str] | None = None) -> str:
    """The one-line error ``waza check`` prints, from the loader it runs (in-process: these cases are many)."""
    path = write_suite(tmp_path, eval_yaml, {"one.yaml": task}, extra)
    with pytest.raises(ConfigError) as caught:
        load_suite(path)
    line = f"waza: {caught.value}"
    assert "\n" not in line
    return line


def test_bad_suite_through_the_cli_exits_2_with_one_line(tmp_path: Path) -> None:
    path = write_suite(tmp_path, GOOD_EVAL + "    retries: 3\n", {"one.yaml": GOOD_TASK})
    out = tmp_path / "never.jsonl"
    for args in (("check", path), ("run", path, "-o", out)):
        done = run_waza(*args)
        assert done.returncode == 2, done.stderr.decode()
        lines = done.stderr.decode().strip().splitlines()
        assert lines == [
            f"waza: {path}:9: field 'retries': unknown key 'retries' (allowed here: baseline, command_mocks, config, description, graders, hooks, inputs, mcp_mocks, metrics, name, range, scenario, schemaVersion, skill, tasks, tasks_from, version)"
        ]
        assert done.stdout == b""
    assert not out.exists()


def test_a_misspelt_metric_fails_the_run_before_it_starts(tmp_path: Path) -> None:
    """It exited 0 with the threshold silently out of the gate; now nothing runs (exit 2)."""
    path = write_suite(
        tmp_path, GOOD_EVAL + "    metrics:\n      - name: task_completon\n        threshold: 1\n", {"one.yaml": GOOD_TASK}
    )
    out = tmp_path / "never.jsonl"
    done = run_waza("run", path, "-o", out)
    assert done.returncode == 2, done.stderr.decode()
    assert b"did you mean 'task_completion'?" in done.stderr
    assert not out.exists()


def test_a_folder_that_is_neither_a_suite_nor_tasks_says_what_waza_looks_for(tmp_path: Path) -> None:
    for command in ("run", "check"):
        done = run_waza(command, tmp_path)
        assert done.returncode == 2, done.stderr.decode()
        assert done.stderr.decode() == (
            f"waza: {tmp_path}: holds no eval.yaml: waza runs a folder holding eval.yaml (an eval suite), task.toml "
            "(a Harbor task), task.yaml (a Terminal-Bench 1.x task), or folders of such tasks (a dataset)\n"
        )


def test_a_suite_or_task_folder_given_as_prompts_points_at_waza_run(tmp_path: Path) -> None:
    harbor = Path(__file__).parent / "fixtures" / "benchmarks" / "harbor" / "hello-sh"
    for folder, what in ((harbor, "task.toml: a Harbor task"), (EXAMPLES / "snippet-explainer", "eval.yaml: an eval suite")):
        done = run_waza("capture", folder, "--adapter", "exec", "-o", tmp_path / "out.jsonl", "--", "cat")
        assert done.returncode == 2, done.stderr.decode()
        assert f"is a directory, not a JSONL file (it holds {what}, which `waza run {folder}` runs)" in done.stderr.decode()


def test_minimal_suite_is_valid(tmp_path: Path) -> None:
    path = write_suite(tmp_path, GOOD_EVAL, {"one.yaml": GOOD_TASK})
    assert load_suite(path).tasks[0].id == "one"


CASES = [
    # (what is wrong, eval.yaml, task file, expected file suffix:line, text in the message)
    ("unknown eval key", GOOD_EVAL + "    retries: 3\n", GOOD_TASK, "eval.yaml:9", "unknown key 'retries'"),
    (
        "unknown config key",
        GOOD_EVAL.replace("executor: mock", "executor: mock\n      verbose: true"),
        GOOD_TASK,
        "eval.yaml:4",
        "unknown key 'verbose'",
    ),
    (
        "missing prompt",
        GOOD_EVAL,
        "    id: one\n    inputs:\n      files: []\n",
        "one.yaml:2",
        "'prompt' is a required property",
    ),
    # Typos that passed: a misspelt required key read as raw jsonschema words, a misspelt metric left the gate.
    (
        "misspelt tasks key",
        GOOD_EVAL.replace("tasks: [", "taks: ["),
        GOOD_TASK,
        "eval.yaml:8",
        "field 'taks': unknown key 'taks'; did you mean 'tasks'? (allowed here: baseline,",
    ),
    (
        "misspelt config key",
        GOOD_EVAL.replace("executor: mock", "executor: mock\n      trails_per_task: 2"),
        GOOD_TASK,
        "eval.yaml:4",
        "unknown key 'trails_per_task'; did you mean 'trials_per_task'? (allowed here:",
    ),
    (
        "misspelt metric",
        GOOD_EVAL + "    metrics:\n      - name: task_completon\n        threshold: 0.9\n",
        GOOD_TASK,
        "eval.yaml:10",
        "field 'metrics[0].name': unknown metric 'task_completon'; did you mean 'task_completion'? (waza computes behavior_quality,",
    ),
    (
        "unknown grader type",
        GOOD_EVAL.replace("type: code", "type: telepathy"),
        GOOD_TASK,
        "eval.yaml:5",
        "unknown built-in grader 'telepathy'",
    ),
    ("hint grader", GOOD_EVAL.replace("type: code", "type: hint"), GOOD_TASK, "eval.yaml:5", "use expected.output_contains"),
    (
        "unknown grader config key",
        GOOD_EVAL,
        GOOD_TASK + "    graders:\n      - type: regex\n        config:\n          must_match: ['x']\n          mustnt: ['y']\n",
        "one.yaml:10",
        "unknown key 'mustnt'",
    ),
    (
        "metric threshold out of range",
        GOOD_EVAL + "    metrics:\n      - name: task_completion\n        threshold: 80\n",
        GOOD_TASK,
        "eval.yaml:11",
        "80 is greater than the maximum of 1",
    ),
    (
        "trigger_accuracy without trigger tests",
        GOOD_EVAL + "    metrics:\n      - name: trigger_accuracy\n",
        GOOD_TASK,
        "eval.yaml:10",
        "trigger_accuracy needs trigger_tests.yaml",
    ),
    (
        "wrong type",
        GOOD_EVAL.replace("executor: mock", "executor: mock\n      trials_per_task: '3'"),
        GOOD_TASK,
        "eval.yaml:4",
        "must be an integer, got str '3'",
    ),
    ("empty task file", GOOD_EVAL, "", "one.yaml:1", "must be a mapping, got nothing"),
    (
        "glob matching nothing",
        GOOD_EVAL.replace("tasks/*.yaml", "missing/*.yaml"),
        GOOD_TASK,
        "eval.yaml:8",
        "matches no task file",
    ),
    (
        "unknown executor",
        GOOD_EVAL.replace("executor: mock", "executor: telepathy"),
        GOOD_TASK,
        "eval.yaml:3",
        "unknown adapter 'telepathy'",
    ),
    ("fixture climbing out", GOOD_EVAL, GOOD_TASK.replace("path: a.txt", "path: ../eval.yaml"), "one.yaml:5", "climbs out"),
    ("absolute fixture", GOOD_EVAL, GOOD_TASK.replace("path: a.txt", "path: /etc/passwd"), "one.yaml:5", "not absolute"),
    ("missing fixture", GOOD_EVAL, GOOD_TASK.replace("path: a.txt", "path: b.txt"), "one.yaml:5", "fixture 'b.txt' not found"),
    ("duplicate key", GOOD_EVAL, GOOD_TASK + "    id: two\n", "one.yaml:6", "key 'id' appears twice (first on line 1)"),
    ("YAML syntax", GOOD_EVAL, "id: one\ninputs: [\n", "one.yaml:3", "not valid YAML"),
    (
        "expected key unknown",
        GOOD_EVAL,
        GOOD_TASK + "    expected:\n      output_equals: 'x'\n",
        "one.yaml:7",
        "unknown key 'output_equals'",
    ),
    (
        "bad mock step",
        GOOD_EVAL,
        GOOD_TASK + "    mock:\n      - message: hi\n      - write: ../escape.txt\n        content: x\n",
        "one.yaml:8",
        "climb out of the workspace",
    ),
    (
        "mock step with two actions",
        GOOD_EVAL,
        GOOD_TASK + "    mock:\n      - message: hi\n        thought: hmm\n",
        "one.yaml:8",
        "unknown key 'thought' (allowed here: message)",
    ),
    (
        "duplicate grader name",
        GOOD_EVAL,
        GOOD_TASK + "    graders:\n      - type: text\n        name: answered\n        config: {contains: [x]}\n",
        "one.yaml:8",
        "grader name 'answered' is already used",
    ),
    (
        "assertions both folded and in config",
        GOOD_EVAL,
        GOOD_TASK
        + "    graders:\n      - type: code\n        name: c\n        assertions: ['True']\n        config: {assertions: ['True']}\n",
        "one.yaml:9",
        "given both here and under config",
    ),
]


@pytest.mark.parametrize(("what", "eval_yaml", "task", "where", "text"), CASES, ids=[c[0] for c in CASES])
def test_bad_suite_is_one_located_error(tmp_path: Path, what: str, eval_yaml: str, task: str, where: str, text: str) -> None:
    line = check_error(tmp_path, eval_yaml, task)
    assert line.startswith("waza: "), line
    assert f"{where}:" in line, line
    assert text in line, line


def test_duplicate_task_id_names_both_files(tmp_path: Path) -> None:
    path = write_suite(tmp_path, GOOD_EVAL, {"one.yaml": GOOD_TASK, "two.yaml": GOOD_TASK})
    with pytest.raises(ConfigError) as caught:
        load_suite(path)
    assert "two.yaml:1: field 'id': task id 'one' is also used by" in str(caught.value)
    assert "one.yaml" in str(caught.value)


def test_bad_trigger_file_is_located(tmp_path: Path) -> None:
    triggers = "skill: s\nshould_trigger_prompts:\n  - prompt: go\n    confidence: low\n"
    line = check_error(
        tmp_path, GOOD_EVAL.replace("name: mini", "name: mini\n    skill: s"), GOOD_TASK, {"trigger_tests.yaml": triggers}
    )
    assert "trigger_tests.yaml:4:" in line and "must be one of 'high', 'medium'" in line


def test_task_without_any_grader_is_rejected(tmp_path: Path) -> None:
    eval_yaml = "name: bare\ntasks: ['tasks/*.yaml']\n"
    path = write_suite(tmp_path, eval_yaml, {"one.yaml": GOOD_TASK})
    suite = load_suite(path)
    with pytest.raises(ConfigError, match=r"one\.yaml: task has no graders"):
        require_graders(suite.tasks, [])


def test_context_dir_option_changes_the_fixture_root(tmp_path: Path) -> None:
    path = write_suite(tmp_path / "suite", GOOD_EVAL, {"one.yaml": GOOD_TASK.replace("a.txt", "only-elsewhere.txt")})
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "only-elsewhere.txt").write_text("x")
    with pytest.raises(ConfigError, match=r"only-elsewhere\.txt' not found"):
        load_suite(path)
    assert load_suite(path, context_dir=other).tasks[0].fixture_root == other.resolve()


def test_schema_files_are_published_and_strict() -> None:
    files = schemas.schema_files()
    for name in ("eval-suite", "eval-task", "trigger-tests", "SuiteResult"):
        assert name in files
    for name in ("eval-suite", "trigger-tests"):
        assert schemas.load(name)["additionalProperties"] is False
    # the original's task schema is open: unknown task keys are accepted and reported (test_suite_original_keys)
    assert schemas.load("eval-task")["additionalProperties"] is True


def test_fixture_symlink_leading_outside_the_root_is_rejected(tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("not for the agent\n")
    path = write_suite(tmp_path / "suite", GOOD_EVAL, {"one.yaml": GOOD_TASK.replace("a.txt", "link.txt")})
    (tmp_path / "suite" / "fixtures" / "link.txt").symlink_to(outside)
    with pytest.raises(ConfigError) as caught:
        load_suite(path)
    message = str(caught.value)
    assert "one.yaml:5: field 'inputs.files[0].path'" in message and "outside" in message


def test_fixture_directory_holding_a_symlink_out_is_rejected_by_check(tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("not for the agent\n")
    path = write_suite(tmp_path / "suite", GOOD_EVAL, {"one.yaml": GOOD_TASK.replace("a.txt", "tree")})
    tree = tmp_path / "suite" / "fixtures" / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "ok.txt").write_text("fine\n")
    (tree / "sub" / "leak.txt").symlink_to(outside)
    done = run_waza("check", path)
    assert done.returncode == 2, done.stderr.decode()
    [line] = done.stderr.decode().strip().splitlines()
    assert "one.yaml:5: field 'inputs.files[0].path'" in line and "tree/sub/leak.txt" in line and "outside" in line


def test_one_task_is_one_task_not_one_tasks() -> None:
    done = run_waza("check", Path(__file__).parent / "fixtures" / "benchmarks" / "harbor" / "hello-sh")
    assert done.returncode == 0, done.stderr
    assert done.stderr.decode().endswith(": ok: 1 task (harbor)\n")
