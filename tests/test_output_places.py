"""Where a run's records go, and places it cannot use, said once and before the run.

Without ``-o`` the records go to stdout, also on a terminal (stdout carries only data); on a terminal a
line on stderr says so. A ``--workspace-dir`` waza cannot make workspaces in is one error (exit 2) before
anything runs, not one error result per prompt; ``-o file/x`` where ``file`` is a file says so.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

from .conftest import run_waza, write_jsonl

NOTICE = "waza: results go to standard output as JSON lines (give -o FILE to write them to a file)"


def prompts(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": "one"}, {"id": "b", "input": "two"}])


def test_records_on_a_terminal_are_announced_and_piped_stdout_stays_data(tmp_path: Path) -> None:
    args = [sys.executable, "-m", "waza", "capture", str(prompts(tmp_path)), "--adapter", "exec", "--", "cat"]
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(args, stdout=follower, stderr=subprocess.PIPE, cwd=tmp_path)
        os.close(follower)
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed with the process
                break
            if not chunk:
                break
            shown += chunk
        _, stderr = proc.communicate(timeout=120)
    finally:
        os.close(leader)
    assert proc.returncode == 0, stderr
    assert NOTICE in stderr.decode()
    rows = [json.loads(line) for line in shown.decode().splitlines() if line.strip()]
    assert sorted(r["id"] for r in rows) == ["a", "b"]  # the records are still there, as before
    piped = run_waza("capture", prompts(tmp_path), "--adapter", "exec", "--", "cat")
    assert piped.returncode == 0, piped.stderr
    assert NOTICE.encode() not in piped.stderr
    assert sorted(json.loads(line)["id"] for line in piped.stdout.splitlines()) == ["a", "b"]
    helped = run_waza("capture", "--help").stdout.decode()
    words = " ".join(w for w in helped.split() if w != "│")  # the help's panel wraps the text
    assert "(the default, also on a terminal: stdout carries only the records)" in words


def test_a_workspace_dir_that_cannot_hold_workspaces_is_one_error_before_the_run(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    out = tmp_path / "out.jsonl"
    places = [(blocker / "ws", "it is not a directory")]
    if Path("/sys/kernel").is_dir():  # a folder no one may write in, not even root
        places.append((Path("/sys/kernel"), "Operation not permitted"))
    for place, why in places:
        done = run_waza("capture", prompts(tmp_path), "--adapter", "exec", "--workspace-dir", place, "-o", out, "--", "cat")
        assert done.returncode == 2, done.stderr
        assert done.stderr.decode().strip().splitlines() == [
            f"waza: field '--workspace-dir': cannot make workspaces in {place}: {why}"
        ]
        assert not out.exists()


def test_an_output_under_a_file_says_that_it_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x\n")
    done = run_waza("capture", prompts(tmp_path), "--adapter", "exec", "-o", tmp_path / "file" / "x", "--", "cat")
    assert done.returncode == 2
    assert f"{str(tmp_path / 'file')!r} is a file, not a folder" in done.stderr.decode()
