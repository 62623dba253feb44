"""Sandboxed workspaces from a template as a kernel overlay: no copy, the template untouched, graders
reading the merged view, a kept workspace left as a plain folder, and a copy (said once) where no
overlay can be made.

The agents are real shell scripts run through bubblewrap by the exec adapter (the engine in-process);
each tries to change the template through its workspace: delete a file, rewrite one, add one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import waza
from waza.adapters.sandbox.bwrap import _probe

pytestmark = [
    pytest.mark.skipif(
        not sys.platform.startswith("linux") or _probe() is not None,
        reason=f"no bubblewrap sandbox here ({_probe() if sys.platform.startswith('linux') else 'not Linux'})",
    ),
    pytest.mark.skipif(
        sys.platform.startswith("linux") and os.geteuid() != 0, reason="waza mounts an overlay as root only; else it copies"
    ),
]

AGENT = """#!/bin/sh
cat > /dev/null
ls -A | sort | tr '\\n' ' '
echo
cat notes/a.txt
rm keep.txt
echo rewritten > notes/a.txt
echo new > new.txt
stat -f -c %T .
"""


def _setup(tmp_path: Path) -> tuple[Path, Path]:
    template = tmp_path / "template"
    (template / "notes").mkdir(parents=True)
    (template / "keep.txt").write_text("keep\n")
    (template / "notes" / "a.txt").write_text("original\n")
    agent = tmp_path / "agents" / "changes-template.sh"
    agent.parent.mkdir()
    agent.write_text(AGENT)
    agent.chmod(0o755)
    return template, agent


def _unchanged(template: Path) -> None:
    assert sorted(p.relative_to(template).as_posix() for p in template.rglob("*")) == ["keep.txt", "notes", "notes/a.txt"]
    assert (template / "notes" / "a.txt").read_text() == "original\n" and (template / "keep.txt").read_text() == "keep\n"


def _our_mounts(tmp_path: Path) -> list[str]:
    return [line for line in Path("/proc/self/mountinfo").read_text().splitlines() if str(tmp_path) in line]


GRADER = waza.Builtin(
    grader="file",
    config={"must_exist": ["new.txt"], "must_not_exist": ["keep.txt"], "content_patterns": [{"path": "notes/a.txt", "must_match": ["^rewritten$"]}]},
)  # fmt: skip


def test_a_sandboxed_trial_overlays_the_template_and_graders_see_the_merged_view(tmp_path: Path) -> None:
    template, agent = _setup(tmp_path)
    results = waza.capture(
        [{"id": "p", "input": "go"}, {"id": "q", "input": "go"}],
        waza.ExecAgent(command=(str(agent),), sandbox=waza.Sandbox()),
        (GRADER,),
        workspace=waza.Workspace(fresh=True, template=template),
        timeouts=waza.Timeouts(prompt=120),
    )
    for result in results:
        assert result.errors == [], result.stderr
        assert result.output.splitlines() == ["keep.txt notes ", "original", "overlayfs"], result.output  # the template, overlaid
        assert result.status == "passed", result.grades  # the graders read the merged view
    _unchanged(template)
    assert _our_mounts(tmp_path) == []
    leftovers = [p for p in Path(os.environ.get("TMPDIR", "/tmp")).glob(".waza-p-*.overlay-*")]
    assert leftovers == []


def test_a_kept_workspace_is_a_plain_folder_with_what_the_agent_left(tmp_path: Path) -> None:
    template, agent = _setup(tmp_path)
    root = tmp_path / "workspaces"
    root.mkdir()
    (result,) = waza.capture(
        [{"id": "p", "input": "go"}],
        waza.ExecAgent(command=(str(agent),), sandbox=waza.Sandbox()),
        (GRADER,),
        workspace=waza.Workspace(root=root, template=template),
        timeouts=waza.Timeouts(prompt=120),
    )
    assert result.errors == [] and result.status == "passed", (result.stderr, result.grades)
    assert result.output.splitlines()[-1] == "overlayfs", result.output
    kept = root / "p"
    assert not os.path.ismount(kept) and _our_mounts(tmp_path) == []
    assert sorted(p.name for p in kept.iterdir() if not p.name.startswith(".waza")) == ["new.txt", "notes"]
    assert (kept / "notes" / "a.txt").read_text() == "rewritten\n"
    assert [p.name for p in root.iterdir() if ".overlay-" in p.name] == []  # the layers are gone
    _unchanged(template)


def test_where_no_overlay_can_be_made_the_template_is_copied_and_waza_says_so_once(tmp_path: Path) -> None:
    """A template whose path holds a comma (which overlay's mount options cannot name): copied, one line."""
    template, agent = _setup(tmp_path)
    odd = template.rename(tmp_path / "tem,plate")
    script = f"""
import pathlib, waza
results = waza.capture(
    [{{"id": "p", "input": "go"}}, {{"id": "q", "input": "go"}}],
    waza.ExecAgent(command=({str(agent)!r},), sandbox=waza.Sandbox()),
    workspace=waza.Workspace(fresh=True, template=pathlib.Path({str(odd)!r})),
    timeouts=waza.Timeouts(prompt=120),
)
print(sorted((r.status, *r.output.splitlines()[1:]) for r in results))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("'original'") == 2 and "overlayfs" not in done.stdout, done.stdout
    told = [line for line in done.stderr.splitlines() if "not overlaid" in line]
    assert len(told) == 1 and "copied" in told[0], done.stderr
    _unchanged(odd)


SUITE_AGENT = """#!/bin/sh
cat > /dev/null
cat added.txt
stat -f -c %T . > fs.txt
rm keep.txt
echo rewritten > notes/a.txt
echo new > new.txt
"""

SUITE_TASK = """id: edit
inputs:
  prompt: change the fixture
  context: {fixture: starter}
  files:
    - {path: added.txt, content: "added by the task"}
graders:
  - type: file
    name: changed
    config:
      must_exist: [new.txt, added.txt]
      must_not_exist: [keep.txt]
      content_patterns:
        - {path: notes/a.txt, must_match: ["^rewritten$"]}
        - {path: fs.txt, must_match: ["^overlayfs$"]}
  - type: git
    name: changes
    config:
      expect_created: [new.txt, fs.txt]
      expect_deleted: [keep.txt]
      expect_unchanged: [added.txt]
"""


def test_a_sandboxed_suite_task_overlays_its_fixture_folder_and_adds_its_files_over_it(tmp_path: Path) -> None:
    """The fixture folder is the lower layer; the task's files and the git baseline are written over it."""
    suite = tmp_path / "suite"
    (suite / "tasks").mkdir(parents=True)
    (suite / "eval.yaml").write_text('name: overlay\nconfig: {executor: mock}\ntasks: ["tasks/*.yaml"]\n')
    (suite / "tasks" / "edit.yaml").write_text(SUITE_TASK)
    template, agent = _setup(tmp_path)
    (suite / "fixtures").mkdir()
    fixture = template.rename(suite / "fixtures" / "starter")
    agent.write_text(SUITE_AGENT)
    result = waza.run_suite(
        suite,
        waza.ExecAgent(command=(str(agent),), sandbox=waza.Sandbox()),
        trials=2,
        concurrency=2,
        timeouts=waza.Timeouts(prompt=120),
        output=waza.Output(str(tmp_path / "out.jsonl")),
    )
    records = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert len(records) == 2
    for record in records:
        assert record["errors"] == [], record["stderr"]
        assert record["output"] == "added by the task", record["output"]  # written into the merged view
        assert {g["name"]: g["pass"] for g in record["grades"]} == {"changed": True, "changes": True}, record["grades"]
        assert record["status"] == "passed"
    assert result.summary.status == "passed" and result.summary.trials == 2
    _unchanged(fixture)
    assert not (fixture / ".git").exists() and not (fixture / "added.txt").exists()
    assert [line for line in Path("/proc/self/mountinfo").read_text().splitlines() if str(tmp_path) in line] == []
