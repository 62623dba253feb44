"""A hostile ACP agent against the client's file methods: symlinks, a swap race, a FIFO, a huge file.

Each attack is a prompt to the scripted agent (a real program on stdio) in one
``waza capture`` run; every attempt aims at a file outside the workspace, so
"it failed" is proven by that file being untouched or its content never seen.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

import waza

from .conftest import executable, read_jsonl, run_waza, write_jsonl
from .test_orphans import ends

AGENT = [sys.executable, str(Path(__file__).parent / "agents" / "scripted_acp_agent.py")]
SECRET = "outside-secret-content"


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("hostile")
    outside = tmp / "outside.txt"
    outside.write_text(SECRET + "\n")
    outdir = tmp / "outdir"
    outdir.mkdir()
    prompts = [
        {"id": "write-link", "input": f"symlink link {outside}\nwrite link hacked\nread link"},
        {"id": "dir-link", "input": f"symlink d {outdir}\nwrite d/new.txt hacked\nread d/../link"},
        {"id": "flip", "input": f"flip flipper {outside} 300"},
        {"id": "fifo", "input": "mkfifo pipe\nread pipe\nsay still here"},
        {"id": "big", "input": "sparse big 300\nread big\nreadpart big 1 1"},
        {"id": "slice", "input": "run seq 1 200000 > nums.txt\nreadpart nums.txt 500 2"},
    ]
    proc = run_waza(
        "capture",
        write_jsonl(tmp / "prompts.jsonl", prompts),
        "-j",
        "2",
        "--timeout",
        "60",
        "--workspace-dir",
        tmp / "ws",
        "-o",
        tmp / "out.jsonl",
        "--",
        *AGENT,
        cwd=tmp,
        timeout=120,
    )
    results = {r["id"]: r for r in read_jsonl(tmp / "out.jsonl")}
    return {"proc": proc, "results": results, "outside": outside, "outdir": outdir}


def said(result: dict[str, Any]) -> str:
    return "".join(s["content"] for s in result["trajectory"] if s["type"] == "message" and s["role"] == "agent")


def test_the_run_finishes_with_every_result(hostile: dict[str, Any]) -> None:
    assert hostile["proc"].returncode == 0, hostile["proc"].stderr.decode()[-2000:]
    assert set(hostile["results"]) == {"write-link", "dir-link", "flip", "fifo", "big", "slice"}


def test_a_write_through_a_symlink_never_reaches_the_outside_file(hostile: dict[str, Any]) -> None:
    text = said(hostile["results"]["write-link"])
    assert "write error: refused:" in text and "symlink" in text
    assert "read error:" in text and SECRET not in text
    assert hostile["outside"].read_text() == SECRET + "\n"


def test_a_symlinked_directory_is_never_entered(hostile: dict[str, Any]) -> None:
    text = said(hostile["results"]["dir-link"])
    assert "write error: refused:" in text
    assert list(hostile["outdir"].iterdir()) == []


def test_swapping_a_file_for_a_symlink_during_reads_never_leaks(hostile: dict[str, Any]) -> None:
    text = said(hostile["results"]["flip"])
    assert text.startswith("flip saw: ")
    assert SECRET not in text
    assert "inside" in text  # the reads really raced the swapper


def test_a_fifo_is_refused_without_blocking(hostile: dict[str, Any]) -> None:
    r = hostile["results"]["fifo"]
    text = said(r)
    assert "read error: refused:" in text and "FIFO" in text
    assert "still here" in text
    assert r["status"] != "error"


def test_a_file_over_the_read_limit_is_an_error_whole_or_sliced(hostile: dict[str, Any]) -> None:
    text = said(hostile["results"]["big"])
    assert text.count("over the 10 MiB read limit") == 2  # the whole file, and its one 300 MB line


def test_a_slice_is_served_from_its_line(hostile: dict[str, Any]) -> None:
    assert "read 8 chars, first line '500'" in said(hostile["results"]["slice"])


def test_distinct_ids_get_distinct_workspaces_and_a_planted_symlink_is_refused(tmp_path: Path) -> None:
    ids = ["x/y", "x_y", "x y", "é", "ü", ".", "..", "plain"]
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / ".waza-workspace").write_text("planted\n")
    (outside / "precious.txt").write_text("keep me\n")
    workspaces = tmp_path / "ws"
    workspaces.mkdir()
    (workspaces / "victim").symlink_to(outside)
    prompts = [{"id": i, "input": f"write mine.txt {i}\ncwd"} for i in [*ids, "victim"]]
    proc = run_waza(
        "capture",
        write_jsonl(tmp_path / "prompts.jsonl", prompts),
        "-j",
        "2",
        "--workspace-dir",
        workspaces,
        "-o",
        tmp_path / "out.jsonl",
        "--",
        *AGENT,
        cwd=tmp_path,
    )
    results = {r["id"]: r for r in read_jsonl(tmp_path / "out.jsonl")}
    assert set(results) == {*ids, "victim"}, proc.stderr.decode()[-2000:]
    cwds = {i: Path(results[i]["cwd"]) for i in ids}
    assert len(set(cwds.values())) == len(ids)
    for i, cwd in cwds.items():
        assert cwd.parent == workspaces.resolve()
        assert (cwd / "mine.txt").read_text() == i  # no other prompt wrote over it or wiped it
    assert cwds["plain"].name == "plain"
    victim = results["victim"]
    assert victim["status"] == "error" and "refusing" in " ".join(victim["errors"])
    assert sorted(p.name for p in outside.iterdir()) == [".waza-workspace", "precious.txt"]
    assert (workspaces / "victim").is_symlink()


def gone(pid: int) -> bool:
    """Whether ``pid`` no longer runs (a zombie waiting for a non-reaping init counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def test_a_terminal_command_that_left_its_session_dies_with_the_prompt(tmp_path: Path) -> None:
    prompts = [{"id": "daemon", "input": "spawn setsid sleep 1000 & echo $! > daemon.pid; echo ready; exec sleep 1000"}]
    proc = run_waza(
        "capture",
        write_jsonl(tmp_path / "prompts.jsonl", prompts),
        "--workspace-dir",
        tmp_path / "ws",
        "-o",
        tmp_path / "out.jsonl",
        "--",
        *AGENT,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    pid = int((tmp_path / "ws" / "daemon" / "daemon.pid").read_text())
    assert gone(pid)


@pytest.mark.parametrize(("events", "busy"), [(False, False), (True, False), (False, True)])
def test_an_exec_agent_whose_daemon_holds_stdout_ends_its_turn_when_it_exits(tmp_path: Path, events: bool, busy: bool) -> None:
    answer = '{"type": "message", "content": "answer"}' if events else "answer"
    # busy: the agent starts hundreds of processes before its daemon, so the sweep after the turn
    # cannot probe the ids given out one by one and lists the live processes instead.
    before = 'i=0; while [ "$i" -lt 400 ]; do /bin/true; i=$((i+1)); done\n' if busy else ""
    pidfile = tmp_path / "daemon.pid"
    # The daemon writes its own id once it is in a session of its own; the answer waits for that.
    daemon = f"setsid sh -c 'echo $$ > {pidfile}.tmp && mv {pidfile}.tmp {pidfile} && exec sleep 1000' &"
    wait = f"while [ ! -f {pidfile} ]; do sleep 0.05; done"
    agent = executable(tmp_path / "agent.sh", f"#!/bin/sh\n{before}{daemon}\n{wait}\necho '{answer}'\n")
    args = ["--events"] if events else []
    proc = run_waza(
        "capture",
        write_jsonl(tmp_path / "prompts.jsonl", [{"id": "d", "input": "go"}]),
        "--adapter",
        "exec",
        *args,
        "-o",
        tmp_path / "out.jsonl",
        "--",
        agent,
        cwd=tmp_path,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    [row] = read_jsonl(tmp_path / "out.jsonl")
    assert row["output"] == "answer" and row["status"] != "error"
    assert gone(int((tmp_path / "daemon.pid").read_text()))


def test_what_an_acp_agent_started_in_a_session_of_its_own_dies_with_the_agent(tmp_path: Path) -> None:
    # The agent starts `sleep 300` with setsid: out of its process group, so killing the group misses it;
    # the tag in its environment finds it when the agent is stopped at the end of the run.
    pids = tmp_path / "pids"
    results = waza.capture([{"id": "o", "input": f"orphan {pids}"}], waza.AcpAgent(command=tuple(AGENT)))
    assert results[0].status != "error", results[0].errors
    (agent, agent_start), (sleeper, sleeper_start) = (map(int, entry.split("@")) for entry in pids.read_text().split())
    assert ends(agent, started=agent_start), described(agent)
    assert ends(sleeper, started=sleeper_start), described(sleeper)


def described(pid: int) -> str:
    """What a process that should be dead is: its stat line and whether it carries a tag (for a failure's message)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()[:200]
        tagged = b"WAZA_PROCESS_TAG=" in Path(f"/proc/{pid}/environ").read_bytes()
    except OSError as exc:
        return f"{pid}: {exc}"
    return f"{pid} still runs: {stat!r}, tagged {tagged}"
