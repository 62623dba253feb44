"""The original waza's own compatibility corpus (microsoft/waza ``internal/testdata/compatibility/v1`` and
``examples/compatibility``), rewritten here as data: the files a suite author of today has, run through waza.

- Its v1 suite (``schemaVersion: "1.0"``, mock executor) with a golden task that has a follow-up prompt and a
  checkpoint runs and passes; the same suite with an answer no agent gives fails; both as the original's CLI
  test expects (exit 0, exit 1).
- Its inventory task naming every grader type loads.
- Its three scenario tasks (an MCP lookup, a CLI inspection, a repository edit) with their known-good,
  deliberately-bad and alternative-valid samples get the original's verdict from waza's graders, twice.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

import waza
from waza.protocol.records import GraderRequest

from .conftest import run_waza
from .graders_support import in_process, step, write_files

SUITE_1_0 = """\
schemaVersion: "1.0"
name: compatibility
skill: compatibility-skill
version: "1.0"
config:
  trials_per_task: 1
  timeout_seconds: 30
  executor: mock
  model: mock-model
tasks: [task.yaml]
graders:
  - name: answer
    type: text
    config:
      contains: [{answer}]
metrics: []
"""

TASK = """\
id: compatibility-task
name: Compatibility task
golden: true
inputs:
  prompt: Say ready.
  follow_up_prompts: [Confirm ready.]
checkpoints:
  - after_turn: 1
    graders:
      - name: intermediate
        type: text
        config:
          contains: [ready]
graders:
  - name: final
    type: text
    config:
      contains: [ready]
"""

#: Every grader type the original has, one each, as its inventory fixture names them.
INVENTORY = """\
id: compatibility-graders
name: All v1 grader configurations
inputs:
  prompt: Fixture construction only.
graders:
  - {name: code, type: code, config: {language: javascript, assertions: ["true"]}}
  - {name: prompt, type: prompt, config: {prompt: Judge fixture output.}}
  - {name: text, type: text, config: {contains: [ready]}}
  - {name: file, type: file, config: {must_exist: [report.txt]}}
  - {name: json_schema, type: json_schema, config: {schema: {type: object}}}
  - {name: program, type: program, config: {command: fixture-grader, timeout: 1}}
  - {name: behavior, type: behavior, config: {max_tool_calls: 2}}
  - {name: action_sequence, type: action_sequence, config: {matching_mode: in_order_match, expected_actions: [read_file]}}
  - {name: skill_invocation, type: skill_invocation, config: {mode: in_order, required_skills: [compatibility-skill]}}
  - {name: trigger, type: trigger, config: {skill_path: SKILL.md, mode: positive}}
  - {name: diff, type: diff, config: {expected_files: [{path: report.txt, contains: ["+ready"]}]}}
  - {name: tool_constraint, type: tool_constraint, config: {expect_tools: [{tool: read_file}]}}
  - {name: tool_calls, type: tool_calls, config: {required_tools: [read_file]}}
"""


def _suite(root: Path, answer: str = "ready") -> Path:
    (root / "task.yaml").write_text(TASK)
    path = root / "eval.yaml"
    path.write_text(SUITE_1_0.format(answer=answer))
    return path


def test_the_v1_suite_with_a_follow_up_and_a_checkpoint_passes_in_process(tmp_path: Path) -> None:
    document = waza.run_suite(_suite(tmp_path), waza.MockAgent(), trials=1)
    assert document.summary.status == "passed"
    (task,) = document.tasks
    assert task.id == "compatibility-task" and task.golden and task.status == "passed"
    (trial,) = task.trials
    assert trial.input == ["Say ready.", "Confirm ready."]  # the follow-up is a second turn of one session
    assert trial.unknown["conversation"] == {"turns": 2, "outcome": "completed"}
    assert [(c["after_turn"], c["status"]) for c in trial.unknown["checkpoints"]] == [(1, "passed")]


def test_the_v1_suite_exits_as_the_originals_cli_test_expects(tmp_path: Path) -> None:
    (tmp_path / "good").mkdir()
    good = _suite(tmp_path / "good")
    results = tmp_path / "results.json"
    done = run_waza("run", good, "--reporter", f"results:{results}", "-o", tmp_path / "t.jsonl")
    assert done.returncode == 0, done.stderr
    bad_root = tmp_path / "bad"
    bad_root.mkdir()
    assert run_waza("run", _suite(bad_root, answer="impossible-fixture-answer")).returncode == 1
    assert run_waza("run", tmp_path / "missing.yaml").returncode == 2
    # and the results.json it wrote gates against itself as the original's does
    assert run_waza("gate", "--baseline", results, "--current", results).returncode == 0


def test_the_inventory_of_every_grader_type_loads(tmp_path: Path) -> None:
    (tmp_path / "graders.yaml").write_text(INVENTORY)
    (tmp_path / "SKILL.md").write_text("---\nname: compatibility-skill\ndescription: Read fixture status.\n---\n\nRead it.\n")
    grader = tmp_path / "bin" / "fixture-grader"
    grader.parent.mkdir()
    grader.write_text("#!/bin/sh\necho '{\"score\": 1}'\n")
    grader.chmod(0o755)
    suite = tmp_path / "eval.yaml"
    suite.write_text("name: inventory\nskill: compatibility-skill\nconfig: {executor: mock}\ntasks: [graders.yaml]\n")
    done = run_waza("check", suite, env={"PATH": f"{grader.parent}:/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert b"1 task, 13 graders" in done.stderr


SCENARIOS: dict[str, tuple[str, list[dict[str, Any]]]] = {
    "mcp": (
        """
- {name: lookup-behavior, type: behavior, config: {max_tool_calls: 1, required_tools: [catalog_lookup]}}
- name: lookup-arguments
  type: tool_calls
  config: {expect: [{tool: "^catalog_lookup$", args: {id: {equals: item-7}}}]}
- name: lookup-answer
  type: json_schema
  config:
    schema: {type: object, required: [id, state], properties: {id: {const: item-7}, state: {const: ready}}}
""",
        [
            {"name": "known-good", "pass": True, "output": '{"id":"item-7","state":"ready"}',
             "calls": [("catalog_lookup", {"id": "item-7"})]},
            {"name": "deliberately-bad", "pass": False, "output": '{"id":"item-7","state":"ready"}',
             "calls": [("catalog_lookup", {"id": "item-8"})]},
            {"name": "alternative-valid", "pass": True, "output": '{ "state": "ready", "id": "item-7", "source": "fixture" }',
             "calls": [("catalog_lookup", {"id": "item-7", "detail": True})]},
        ],
    ),
    "cli": (
        """
- {name: status-behavior, type: behavior, config: {max_tool_calls: 1, required_tools: [bash]}}
- name: status-command
  type: tool_calls
  config: {expect: [{tool: "^bash$", args: {command: {equals: "compat-cli status"}}}]}
- {name: status-answer, type: text, config: {contains: [ready], not_contains: [unavailable]}}
""",
        [
            {"name": "known-good", "pass": True, "output": "Fixture service is ready.",
             "calls": [("bash", {"command": "compat-cli status"})]},
            {"name": "deliberately-bad", "pass": False, "output": "Fixture service is ready.",
             "calls": [("bash", {"command": "compat-cli configure"})]},
            {"name": "alternative-valid", "pass": True, "output": "READY: inspection complete.",
             "calls": [("bash", {"command": "compat-cli status", "description": "Read-only status"})]},
        ],
    ),
    "repository": (
        """
- name: report
  type: file
  config:
    must_exist: [report.txt, source.txt]
    must_not_exist: [deleted.txt]
    content_patterns:
      - {path: report.txt, must_match: ["(?m)^state=ready$"]}
      - {path: source.txt, must_match: ["^original\\n$"]}
""",
        [
            {"name": "known-good", "pass": True, "output": "Report written.",
             "files": {"report.txt": "state=ready\n", "source.txt": "original\n"}},
            {"name": "deliberately-bad", "pass": False, "output": "Report written.",
             "files": {"report.txt": "state=ready\n", "source.txt": "changed\n"}},
            {"name": "alternative-valid", "pass": True, "output": "Preserved source; added report metadata.",
             "files": {"report.txt": "format=plain\nstate=ready\n", "source.txt": "original\n"}},
        ],
    ),
}  # fmt: skip


@pytest.mark.parametrize(
    ("scenario", "sample"), [(name, sample) for name, (_, samples) in SCENARIOS.items() for sample in samples],
    ids=lambda v: v if isinstance(v, str) else v["name"],
)  # fmt: skip
def test_each_scenario_sample_gets_the_originals_verdict_every_time(
    tmp_path: Path, scenario: str, sample: dict[str, Any]
) -> None:
    graders = yaml.safe_load(SCENARIOS[scenario][0])
    verdicts = []
    for attempt in range(2):
        workspace = tmp_path / str(attempt)
        workspace.mkdir()
        write_files(workspace, sample.get("files", {}))
        trajectory = [step(name, n, input=args) for n, (name, args) in enumerate(sample.get("calls", []), 1)]
        request = GraderRequest(output=sample["output"], trajectory=trajectory, cwd=str(workspace))
        grades = [in_process(g["type"], g["config"], request) for g in graders]
        assert all(g.status != "error" for g in grades), [g.error for g in grades]
        verdicts.append([(g.passed, g.score) for g in grades])
    assert all(passed for passed, _ in verdicts[0]) is sample["pass"]
    assert verdicts[0] == verdicts[1]
