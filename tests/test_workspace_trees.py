"""Workspaces filled and removed without following links, off the event loop, however deep an agent made them."""

from __future__ import annotations

import json
import os
import stat
import sys
import threading
from pathlib import Path

import anyio
import pytest

import waza
from waza.protocol.records import PromptCase
from waza.runner.engine.pipeline import WorkItem, Workspaces, run_items
from waza.runner.engine.run_setup import run_settings
from waza.runner.engine.specs import ExecAgent, Timeouts
from waza.runner.engine.trees import MAX_DEPTH, TreeError, copy_tree, remove_tree, tree_bytes

from .conftest import executable, run_waza


def _tree(root: Path) -> Path:
    """A small fixture: nested files, an executable with an old mtime, an empty folder, a link inside."""
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "mod.py").write_text("x = 1\n")
    (root / "big.bin").write_bytes(os.urandom(3 << 20))
    tool = executable(root / "run.sh", "#!/bin/sh\necho hi\n")
    os.utime(tool, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
    (root / "empty").mkdir()
    (root / "src" / "link.py").symlink_to("pkg/mod.py")
    return root


def test_copy_tree_keeps_contents_modes_times_and_inner_links(tmp_path):
    source = _tree(tmp_path / "fixture")
    (tmp_path / "ws").mkdir()
    copy_tree(source, tmp_path / "ws")
    ws = tmp_path / "ws"
    assert (ws / "src" / "pkg" / "mod.py").read_text() == "x = 1\n"
    assert (ws / "big.bin").read_bytes() == (source / "big.bin").read_bytes()
    assert os.access(ws / "run.sh", os.X_OK) and (ws / "run.sh").stat().st_mtime_ns == 1_000_000_000_000_000_000
    assert (ws / "empty").is_dir() and not any((ws / "empty").iterdir())
    assert os.readlink(ws / "src" / "link.py") == "pkg/mod.py"  # a link stays a link
    (ws / "src" / "pkg" / "mod.py").write_text("changed")
    assert (source / "src" / "pkg" / "mod.py").read_text() == "x = 1\n"  # a write in the copy never reaches the source


@pytest.mark.parametrize("target", ["/etc/passwd", "../../outside.txt", "../..", "/"])
def test_a_link_leading_out_of_a_fixture_is_refused_never_followed(tmp_path, target):
    (tmp_path / "outside.txt").write_text("secret")
    source = tmp_path / "fixture"
    (source / "sub").mkdir(parents=True)
    (source / "sub" / "escape").symlink_to(target)
    (tmp_path / "ws").mkdir()
    with pytest.raises(TreeError, match="leads outside"):
        copy_tree(source, tmp_path / "ws")
    assert not (tmp_path / "ws" / "sub" / "escape").exists()


def test_a_template_keeps_its_links_as_links_and_refuses_a_fifo(tmp_path):
    source = tmp_path / "template"
    source.mkdir()
    (source / "python").symlink_to("/usr/bin/python3")  # a virtual environment's link, copied as it is
    (tmp_path / "ws").mkdir()
    copy_tree(source, tmp_path / "ws", links_outside=True)
    assert os.readlink(tmp_path / "ws" / "python") == "/usr/bin/python3"
    os.mkfifo(source / "pipe")
    (tmp_path / "ws2").mkdir()
    with pytest.raises(TreeError, match="not a regular file"):  # opening a FIFO would block the copy forever
        copy_tree(source, tmp_path / "ws2", links_outside=True)


def _deep(root: Path, depth: int) -> None:
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        os.symlink("/", "up", dir_fd=fd)  # a removal that followed links would wipe the host
        child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = child
    os.close(fd)


def test_remove_tree_handles_depth_past_path_and_descriptor_limits_without_following_links(tmp_path):
    keep = tmp_path / "keep.txt"
    keep.write_text("still here")
    tree = tmp_path / "tree"
    tree.mkdir()
    _deep(tree, 3000)  # far past PATH_MAX, the recursion limit and a 1024-descriptor ulimit
    (tree / "link-out").symlink_to(tmp_path)
    remove_tree(tree)
    assert not tree.exists() and keep.read_text() == "still here"


DEEP_AGENT = """#!{python}
import os, sys
sys.stdin.read()
for _ in range(3000):
    os.mkdir("d")
    os.chdir("d")
print("made a deep tree")
"""


def test_a_deep_tree_left_by_an_agent_does_not_block_the_next_run(tmp_path):
    agent = executable(tmp_path / "agent.py", DEEP_AGENT.format(python=sys.executable))
    spec = waza.ExecAgent(command=(str(agent),))
    root = tmp_path / "workspaces"
    try:
        for _ in range(2):  # the second run removes the first's workspace before making its own
            [result] = waza.capture([{"id": "p", "input": "x"}], spec, workspace=waza.Workspace(root=root))
            assert result.status != "error", result.errors
    finally:
        remove_tree(root)  # pytest's own clean-up of old temporary folders would hit Python's recursion limit
    [fresh] = waza.capture([{"id": "p", "input": "x"}], spec, workspace=waza.Workspace(fresh=True))
    assert fresh.status != "error" and fresh.cwd and not Path(fresh.cwd).exists()


def test_filling_a_workspace_does_not_stall_other_trials(tmp_path):
    """One trial's workspace is filled only once another trial's agent has run: were filling done on the
    event loop, that agent could never start and the run would not finish."""
    flag = tmp_path / "agent-ran"
    agent = executable(tmp_path / "agent.sh", f"#!/bin/sh\ncat >/dev/null\ntouch {flag}\necho done\n")
    went_on = threading.Event()

    def slow_fill(workspace: Path) -> None:
        for _ in range(600):  # up to 60 s on a busy machine
            if flag.exists():
                went_on.set()
                return
            threading.Event().wait(0.1)

    items = [
        WorkItem(case=PromptCase(id="slow", input="x"), prepare=slow_fill),
        WorkItem(case=PromptCase(id="quick", input="x")),
    ]
    settings = run_settings(ExecAgent(command=(str(agent),)), [], Timeouts(prompt=120), 2, Workspaces(fresh=True))
    done: list[str] = []

    async def source():  # type: ignore[no-untyped-def]
        for item in items:
            yield item

    async def sink(result: waza.CaptureResult) -> None:
        done.append(result.id)

    anyio.run(run_items, source(), settings, sink)
    assert went_on.is_set() and sorted(done) == ["quick", "slow"]


def test_a_workspace_that_cannot_be_filled_is_that_prompts_error(tmp_path):
    template = tmp_path / "template"
    template.mkdir()
    os.mkfifo(template / "pipe")
    (template / "ok.txt").write_text("x")
    agent = executable(tmp_path / "agent.sh", "#!/bin/sh\ncat >/dev/null\necho done\n")
    spec = waza.ExecAgent(command=(str(agent),))
    bad = waza.run_one({"id": "a-fifo-template", "input": "x"}, spec, workspace=waza.Workspace(fresh=True, template=template))
    assert bad.status == "error" and "cannot prepare workspace" in bad.errors[0] and "pipe" in bad.errors[0]
    leftovers = Path(os.environ.get("TMPDIR", "/tmp")).glob("waza-a-fifo-template-*")
    assert not [p for p in leftovers if stat.S_ISDIR(p.lstat().st_mode)]  # the half-filled workspace is removed
    (template / "pipe").unlink()
    assert (
        waza.run_one({"id": "b", "input": "y"}, spec, workspace=waza.Workspace(fresh=True, template=template)).status != "error"
    )


def test_a_suite_fixture_directory_is_copied_per_trial_and_the_agent_never_writes_into_it(tmp_path):
    suite = tmp_path / "suite"
    repo = suite / "fixtures" / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "a.txt").write_text("original")
    (repo / "src" / "alias.txt").symlink_to("a.txt")
    for n in range(300):  # a fixture of many files
        (repo / f"f{n}.txt").write_text(str(n))
    (suite / "tasks").mkdir()
    (suite / "eval.yaml").write_text(
        "name: fx\ngraders:\n  - type: text\n    config: {contains: [done]}\ntasks: ['tasks/*.yaml']\n"
    )
    (suite / "tasks" / "edit.yaml").write_text("id: edit\ninputs:\n  prompt: 'edit'\n  files: [{path: repo}]\n")
    agent = executable(
        tmp_path / "agent.py",
        f"#!{sys.executable}\nimport sys\nsys.stdin.read()\n"
        "open('repo/src/alias.txt', 'a').write(' + edited through the link')\nopen('repo/new.txt', 'w').write('new')\n"
        "print('done')\n",
    )
    out = tmp_path / "trials.jsonl"
    done = run_waza(
        "run", suite, "--adapter", "exec", "--trials", "2", "--keep-workspaces", "-o", out, "--no-triggers", "--", agent
    )
    assert done.returncode == 0, done.stderr.decode()
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 2 and len({r["cwd"] for r in rows}) == 2
    for row in rows:
        ws = Path(row["cwd"]) / "repo"
        assert (ws / "src" / "a.txt").read_text() == "original + edited through the link"
        assert os.readlink(ws / "src" / "alias.txt") == "a.txt" and (ws / "f299.txt").read_text() == "299"
    assert (repo / "src" / "a.txt").read_text() == "original" and not (repo / "new.txt").exists()


def test_capture_fills_each_fresh_workspace_from_its_template_and_refuses_one_without_fresh(tmp_path):
    template = _tree(tmp_path / "template")
    agent = executable(tmp_path / "agent.sh", "#!/bin/sh\ncat >/dev/null\ncat src/pkg/mod.py\necho edit >> src/pkg/mod.py\n")
    spec = waza.ExecAgent(command=(str(agent),))
    prompts = [{"id": f"p{n}", "input": "x"} for n in range(3)]
    results = waza.capture(prompts, spec, concurrency=3, workspace=waza.Workspace(fresh=True, template=template))
    assert [r.output.strip() for r in results] == ["x = 1"] * 3  # each saw the template, none another's edit
    assert (template / "src" / "pkg" / "mod.py").read_text() == "x = 1\n"
    with pytest.raises(waza.ConfigError, match=r"Workspace\.template needs Workspace\.fresh or Workspace\.root"):
        waza.capture(prompts, spec, workspace=waza.Workspace(cwd=tmp_path, template=template))


def test_tree_bytes_counts_allocated_space_and_refuses_a_tree_too_deep_to_measure(tmp_path):
    tree = tmp_path / "tree"
    (tree / "a").mkdir(parents=True)
    (tree / "a" / "data").write_bytes(os.urandom(1 << 20))
    (tree / "link").symlink_to("/usr")  # not followed: /usr is not counted
    assert (1 << 20) <= tree_bytes(tree) < (2 << 20)
    _deep(tree / "a", MAX_DEPTH + 5)
    with pytest.raises(TreeError, match="folders deep"):
        tree_bytes(tree)
    remove_tree(tree)
