"""A newcomer's first runs: mistakes stop early with one line that says what to do.

Real ``waza`` subprocesses and real shell agents: a plain script given to the
default (ACP) adapter, a silent one, a missing or non-executable command, a
relative agent path with fresh trial workspaces, a mistyped option, and the
end-of-run digest of why prompts errored.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.conftest import executable, read_jsonl, run_waza, write_jsonl

PROMPTS = [{"id": "one", "input": "say hi", "hint": "hi"}, {"id": "two", "input": "say hi again", "hint": "hi"}]


def _prompts(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "prompts.jsonl", PROMPTS)


def test_a_plain_script_given_to_the_acp_adapter_stops_the_run_at_once_naming_exec(tmp_path: Path) -> None:
    prompts = _prompts(tmp_path)
    executable(tmp_path / "agent.sh", "#!/bin/sh\nread line\necho hi there\n")
    proc = run_waza("capture", prompts, "-o", "out.jsonl", "./agent.sh", cwd=tmp_path, timeout=60)
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert "does not look like an ACP agent" in err and "--adapter exec" in err and "--adapter headless" in err
    assert "hi there" in err  # what it printed instead of JSON-RPC
    assert "Traceback" not in err


def test_a_bad_handshake_limit_is_a_usage_error(tmp_path: Path) -> None:
    executable(tmp_path / "agent.sh", "#!/bin/sh\n")
    proc = run_waza("capture", _prompts(tmp_path), "./agent.sh", cwd=tmp_path, env={"WAZA_ACP_HANDSHAKE_TIMEOUT": "nan"})
    assert proc.returncode == 2 and "WAZA_ACP_HANDSHAKE_TIMEOUT" in proc.stderr.decode()


def test_a_missing_agent_command_is_one_line_before_anything_runs(tmp_path: Path) -> None:
    prompts = _prompts(tmp_path)
    for agent, words in (("./my_agent.sh", "No such file"), ("no-such-agent-program", "not found on PATH")):
        proc = run_waza("capture", prompts, "--adapter", "exec", "-o", "out.jsonl", "--", agent, cwd=tmp_path)
        err = proc.stderr.decode()
        assert proc.returncode == 2 and words in err and agent in err, err
        assert len(err.strip().splitlines()) == 1
        assert not (tmp_path / "out.jsonl").exists()


def test_a_non_executable_agent_says_chmod(tmp_path: Path) -> None:
    (tmp_path / "agent.sh").write_text("#!/bin/sh\necho hi\n")
    proc = run_waza(
        "trials", _prompts(tmp_path), "-k", "2", "--adapter", "exec", "-g", "builtin:hint", "--", "./agent.sh", cwd=tmp_path
    )
    assert proc.returncode == 2 and "chmod +x" in proc.stderr.decode()


def test_relative_agent_paths_work_in_fresh_trial_workspaces(tmp_path: Path) -> None:
    """Trials run each agent in a fresh directory; ./agent.sh and `python agent.py` still name the files here."""
    prompts = _prompts(tmp_path)
    executable(tmp_path / "agent.sh", "#!/bin/sh\ncat >/dev/null\necho hi from sh\n")
    (tmp_path / "agent.py").write_text("import sys\nsys.stdin.read()\nprint('hi from python')\n")
    for command in (["./agent.sh"], [sys.executable, "agent.py"]):
        proc = run_waza(
            "trials",
            prompts,
            "-k",
            "2",
            "--adapter",
            "exec",
            "-g",
            "builtin:hint",
            "-o",
            "t.jsonl",
            "--",
            *command,
            cwd=tmp_path,
        )
        assert proc.returncode == 0, proc.stderr.decode()
        results = read_jsonl(tmp_path / "t.jsonl")
        assert [r["passes"] for r in results] == [2, 2]


def test_a_grader_named_as_interpreter_and_relative_file_runs_in_fresh_trial_workspaces(tmp_path: Path) -> None:
    """`--grader "python g.py"`: the file is the one beside the user, not one in each trial's workspace."""
    prompts = _prompts(tmp_path)
    executable(tmp_path / "agent.sh", "#!/bin/sh\ncat >/dev/null\necho hi\n")
    (tmp_path / "g.py").write_text("import json, sys\njson.load(sys.stdin)\nprint(json.dumps({'pass': True, 'score': 1}))\n")
    proc = run_waza(
        "trials",
        prompts,
        "-k",
        "2",
        "--adapter",
        "exec",
        "-g",
        f"{sys.executable} g.py",
        "-o",
        "t.jsonl",
        "--",
        "./agent.sh",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert [r["passes"] for r in read_jsonl(tmp_path / "t.jsonl")] == [2, 2]


def test_errored_prompts_are_explained_at_the_end_with_the_agent_stderr(tmp_path: Path) -> None:
    prompts = _prompts(tmp_path)
    executable(tmp_path / "agent.sh", "#!/bin/sh\necho 'python: cannot open file my_agent.py' >&2\nexit 3\n")
    proc = run_waza(
        "capture", prompts, "--adapter", "exec", "-g", "builtin:hint", "-o", "out.jsonl", "--", "./agent.sh", cwd=tmp_path
    )
    err = proc.stderr.decode()
    assert proc.returncode == 1
    assert "2 results ended as errors" in err and "2 x agent exited with code 3" in err
    assert "cannot open file my_agent.py" in err

    proc = run_waza(
        "trials", prompts, "-k", "2", "--adapter", "exec", "-g", "builtin:hint", "-o", "t.jsonl", "--", "./agent.sh", cwd=tmp_path
    )
    err = proc.stderr.decode()
    assert "4 x agent exited with code 3" in err and "cannot open file my_agent.py" in err
    trials = [t for r in read_jsonl(tmp_path / "t.jsonl") for t in r["trials"]]
    assert len(trials) == 4 and all("cannot open file my_agent.py" in t["stderr"] for t in trials)


def test_a_mistyped_option_is_an_error_with_a_suggestion(tmp_path: Path) -> None:
    prompts = _prompts(tmp_path)
    executable(tmp_path / "agent.sh", '#!/bin/sh\ncat >/dev/null\necho "args: $*"\n')
    executable(tmp_path / "g.py", '#!/bin/sh\necho \'{"pass": true, "score": 1}\'\n')
    proc = run_waza("capture", prompts, "--adapter", "exec", "./agent.sh", "--grder", "./g.py", cwd=tmp_path)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and "--grder" in err and "did you mean --grader?" in err and " -- AGENT" in err
    assert proc.stdout == b""


def test_options_after_the_separator_go_to_the_agent_and_the_short_form_still_works(tmp_path: Path) -> None:
    prompts = _prompts(tmp_path)
    executable(tmp_path / "agent.sh", '#!/bin/sh\ncat >/dev/null\necho "args: $*"\n')
    executable(tmp_path / "g.py", '#!/bin/sh\necho \'{"pass": true, "score": 1}\'\n')
    proc = run_waza("capture", prompts, "--adapter", "exec", "--", "./agent.sh", "--grder", "x", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()
    assert {r["output"].strip() for r in read_jsonl(proc.stdout)} == {"args: --grder x"}
    # The design's short form: the agent command right after the prompts file, waza's options after it.
    proc = run_waza("capture", prompts, "./agent.sh", "--adapter", "exec", "--grader", "./g.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()
    assert [r["status"] for r in read_jsonl(proc.stdout)] == ["passed", "passed"]
