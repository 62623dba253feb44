"""The headless adapter driving a fake CLI (a real process per turn) that replays a recorded stream in
each CLI's documented format, with a grader attached: the records through the API in-process;
`waza capture --adapter headless` and `waza adapters check` for the command line's options and exit codes."""

from __future__ import annotations

import os
import shutil
import sys
import tomllib
from pathlib import Path

import orjson
import pytest

import waza
from waza.adapters.headless_schema import load_schema
from waza.protocol.schemas import errors

from .conftest import compat_path, executable, message_result_schema, read_jsonl, run_waza, write_jsonl

FIXTURES = Path(__file__).parent / "fixtures" / "headless"
ANSWER = "There are two files, a.txt and b.txt; a.txt has 3 lines."


#: What the fake CLI reads besides its fixture and log; a test sets the ones it needs.
FAKE_CLI_KNOBS = ("FAKE_CLI_EXIT", "FAKE_CLI_PAUSE", "FAKE_CLI_STDERR", "FAKE_CLI_HANG")
HINT = [waza.Builtin(grader="hint")]


@pytest.fixture
def fake_clis(tmp_path: Path, monkeypatch) -> Path:
    """Fake `claude`, `gemini`, `codex` and `opencode` executables first on PATH (for this process and its children);
    returns the file where they log their calls."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("claude", "gemini", "codex", "opencode"):
        executable(bin_dir / name, f'#!/bin/sh\nexec "{os.sys.executable}" "{FIXTURES / "fake_cli.py"}" "$@"\n')
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_CLI_LOG", str(log))
    return log


def calls_in(log: Path) -> list[dict]:
    return read_jsonl(log) if log.exists() else []


def fixture_env(fixture: str | list[str]) -> str:
    return ",".join(str(FIXTURES / f) for f in ([fixture] if isinstance(fixture, str) else fixture))


@pytest.fixture
def cli(tmp_path: Path, fake_clis, monkeypatch):
    """The headless adapter through the API in-process; returns the records and the fake CLI's calls."""

    def capture(
        prompts: list[dict], schema: str | Path, *, fixture: str | list[str], graders=(), timeout=None, raw_log=None, **env: str
    ):
        monkeypatch.setenv("FAKE_CLI_FIXTURE", fixture_env(fixture))
        for name in FAKE_CLI_KNOBS:
            monkeypatch.delenv(name, raising=False)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        agent = waza.HeadlessAgent(schema=Path(schema), raw_log=raw_log)
        order = [p["id"] for p in prompts]
        records = waza.capture(
            prompts, agent, list(graders), timeouts=waza.Timeouts(prompt=timeout), workspace=waza.Workspace(cwd=tmp_path)
        )
        results = sorted((r.to_dict() for r in records), key=lambda r: order.index(r["id"]))
        for result in results:
            assert errors("CaptureResult", result) == []
        return results, calls_in(fake_clis)

    return capture


def capture_cli(tmp_path: Path, log: Path, prompts: list[dict], *args: str, fixture: str):
    """`waza capture --adapter headless ARGS` as a subprocess (the fake CLIs are on PATH through ``fake_clis``)."""
    proc = run_waza(
        "capture", write_jsonl(tmp_path / "prompts.jsonl", prompts), "--adapter", "headless", *args,
        cwd=tmp_path, env={"FAKE_CLI_FIXTURE": fixture_env(fixture)},
    )  # fmt: skip
    return proc, read_jsonl(proc.stdout), calls_in(log)


def schema_file(tmp_path: Path, name: str, events: list[dict], result: dict, **fields) -> Path:
    """A schema file running the fake `claude` with these ``outputEvents`` and ``result`` (top-level ``fields`` override)."""
    schema = {
        "version": 2,
        "name": name,
        "command": ["claude"],
        "sessionMode": "stream",
        "prompt": {"flag": "-p"},
        "output": {"flag": "", "value": ""},
        "outputEvents": events,
        "result": result,
        **fields,
    }
    path = tmp_path / f"{name}.json"
    path.write_bytes(orjson.dumps(schema))
    return path


def steps(result: dict, type_: str) -> list[dict]:
    return [s for s in result["trajectory"] if s["type"] == type_]


def tools(result: dict) -> dict[str, dict]:
    return {s["toolCallId"]: s for s in steps(result, "tool_call")}


ONE = [{"id": "files", "input": "How many files are there, and how long is a.txt?", "hint": "two files"}]


def test_claude_code_stream_maps_every_block_and_pairs_tools_by_id(cli):
    [result], [call] = cli(ONE, "claude-code", graders=HINT, fixture="claude-code.jsonl")
    assert call["argv"] == [
        "--verbose",
        "--output-format",
        "stream-json",
        "--dangerously-skip-permissions",
        "-p",
        ONE[0]["input"],
    ]
    assert result["status"] == "passed" and result["output"] == ANSWER
    # One assistant line carried a thinking block, a text block and two tool_use blocks: all of them apply.
    assert [s["content"] for s in steps(result, "thought")] == ["I need the file list and the line counts."]
    assert [s["content"] for s in steps(result, "message") if s["role"] == "agent"] == [
        "I'll list the files and count lines.",
        ANSWER,
    ]
    calls = tools(result)
    # Two Bash calls whose results came back in reverse order: paired by id, not by name.
    assert calls["toolu_01"]["output"] == "a.txt\nb.txt" and calls["toolu_01"]["input"] == {"command": "ls"}
    assert calls["toolu_02"]["output"] == "3 a.txt" and calls["toolu_02"]["input"] == {"command": "wc -l a.txt"}
    assert calls["toolu_03"]["status"] == "failed" and result["toolErrors"] is True
    assert result["usage"] == {
        "inputTokens": 120,
        "outputTokens": 80,
        "cachedReadTokens": 1500,
        "cachedWriteTokens": 310,
        "cost": 0.0142,
        "currency": "USD",
    }
    # The init line matches no mapping, only names the session: it is kept as a step, not consumed.
    [init] = [s for s in steps(result, "event") if s["extra"]["data"]["type"] == "system"]
    assert init["extra"]["data"]["subtype"] == "init" and init["extra"]["data"]["model"] == "claude-sonnet-4-5"
    assert result["errors"] == [] and result["exit"]["code"] == 0
    assert result["exit"]["stopReason"] == "end_turn"  # the result line's stop_reason


def test_gemini_cli_joins_deltas_and_fails_the_errored_tool(cli):
    [result], [call] = cli(ONE, "gemini-cli", graders=HINT, fixture="gemini-cli.jsonl")
    assert call["argv"] == ["--output-format", "stream-json", "--yolo", "-p", ONE[0]["input"]]
    agent = [s["content"] for s in steps(result, "message") if s["role"] == "agent"]
    assert agent == [ANSWER]  # the echoed user message is not mistaken for the agent's
    calls = tools(result)
    assert calls["list_directory-1760951522310-1"]["status"] == "completed"
    assert calls["read_file-1760951522311-2"]["output"] == "File not found: missing.txt"
    assert calls["read_file-1760951522311-2"]["status"] == "failed"
    assert result["usage"] == {"inputTokens": 1510, "outputTokens": 130, "totalTokens": 1640}
    assert result["output"] == ANSWER and result["status"] == "passed"


def test_codex_exec_items_become_tools_thoughts_plan_and_usage(cli):
    [result], [call] = cli(ONE, "codex", graders=HINT, fixture="codex.jsonl")
    assert call["argv"] == ["exec", "--json", "--sandbox", "workspace-write", "--skip-git-repo-check", ONE[0]["input"]]
    calls = tools(result)
    assert calls["item_2"]["status"] == "completed" and calls["item_2"]["output"] == "a.txt\nb.txt\n"
    assert calls["item_3"]["status"] == "failed" and calls["item_3"]["kind"] == "execute"
    plans = steps(result, "plan")
    assert [e["completed"] for e in plans[-1]["entries"]] == [True, True] and len(plans) == 2
    assert [s["content"] for s in steps(result, "thought")] == ["**Listing the files and counting lines**"]
    assert result["usage"] == {"inputTokens": 2400, "outputTokens": 95, "cachedReadTokens": 1800}
    assert result["output"] == ANSWER and result["status"] == "passed"
    # thread.started only names the thread: kept as the first agent-side step.
    assert result["trajectory"][1]["extra"]["data"] == {
        "type": "thread.started",
        "thread_id": "0199a213-81c0-7800-8aa1-bbab2a035a53",
    }


def test_claude_is_error_result_fails_the_turn_and_maps_its_stop_reason(cli, tmp_path):
    lines = (FIXTURES / "claude-code.jsonl").read_text().splitlines()
    result_line = orjson.loads(lines[-1])
    result_line.update(
        subtype="error_during_execution", is_error=True, result="API Error: 529 overloaded", stop_reason="max_tokens"
    )
    stream = write_jsonl(tmp_path / "error.jsonl", [orjson.loads(line) for line in lines[:-1]] + [result_line])
    [result], _ = cli(ONE, "claude-code", graders=HINT, fixture=str(stream))
    assert result["status"] == "error" and result["errors"] == ["agent reported an error: API Error: 529 overloaded"]
    assert result["exit"] == {"code": 0, "signal": None, "timedOut": False, "stopReason": "max_tokens"}


def test_separate_message_lines_stay_separate_messages(cli, tmp_path):
    """Two message events are two messages (as acp-harness records them), not "Item 1Item 2"; lines sharing
    a message id, and a ``chunks`` mapping's streamed pieces, are joined; an unknown stop reason is kept as a step."""
    path = schema_file(
        tmp_path,
        "lines",
        [
            {
                "match": {"path": "$.type", "value": "say"},
                "emitAs": "message",
                "extract": {"content": "$.text", "messageId": "$.id"},
            },
            {
                "match": {"path": "$.type", "value": "delta"},
                "emitAs": "message",
                "chunks": True,
                "extract": {"content": "$.text"},
            },
        ],
        {
            "matchPath": "$.type",
            "matchValue": "done",
            "stopReasonPath": "$.why",
            "stopReasons": {"finished": "end_turn"},
        },
    )
    stream = [
        {"type": "say", "text": "Item 1"},
        {"type": "say", "text": "Item 2"},
        {"type": "say", "text": "Part a, ", "id": "m1"},
        {"type": "say", "text": "part b", "id": "m1"},
        {"type": "delta", "text": "Stream"},
        {"type": "delta", "text": "ed"},
        {"type": "done", "why": "paused"},
    ]
    [result], _ = cli(ONE, path, fixture=str(write_jsonl(tmp_path / "stream.jsonl", stream)))
    agent = [s["content"] for s in steps(result, "message") if s["role"] == "agent"]
    assert agent == ["Item 1", "Item 2", "Part a, part b", "Streamed"]
    assert result["exit"]["stopReason"] is None
    assert [s["extra"]["data"] for s in steps(result, "event") if s["name"] == "stop_reason"] == ["paused"]
    stream[-1]["why"] = "finished"
    [result], _ = cli(ONE, path, fixture=str(write_jsonl(tmp_path / "stream2.jsonl", stream)))
    assert result["exit"]["stopReason"] == "end_turn"


def test_a_headless_cli_that_is_not_installed_is_refused_before_the_run(tmp_path):
    out = tmp_path / "keep.jsonl"
    out.write_text('{"kept": true}\n')
    proc = run_waza(
        "capture", write_jsonl(tmp_path / "prompts.jsonl", ONE), "--adapter", "headless", "--schema", "claude-code",
        "-o", str(out), cwd=tmp_path, env={"PATH": os.path.dirname(os.sys.executable)},
    )  # fmt: skip
    err = proc.stderr.decode()
    assert proc.returncode == 2 and "claude-code (shipped): field 'command': agent command 'claude' not found on PATH" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert out.read_text() == '{"kept": true}\n'


def test_stream_mode_resumes_the_captured_session_on_later_turns(cli):
    prompts = [{"id": "two", "input": ["How many files?", "Is b.txt empty?"], "hint": "empty"}]
    [result], calls = cli(prompts, "claude-code", graders=HINT, fixture=["claude-code.jsonl", "claude-code-turn2.jsonl"])
    assert "--resume" not in calls[0]["argv"]
    assert calls[1]["argv"][-4:] == ["--resume", "8d1c6a2e-3f4b-4c1d-9a7e-2b5f0e9c1a11", "-p", "Is b.txt empty?"]
    assert result["output"] == "b.txt is empty." and result["status"] == "passed"
    assert [s["turn"] for s in steps(result, "message") if s["role"] == "user"] == [0, 1]


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="no bubblewrap (bwrap) on PATH: --sandbox needs it")
def test_a_confined_cli_gets_the_confined_auto_approve_arguments(tmp_path, fake_clis, monkeypatch):
    """Codex's own sandbox (bubblewrap) cannot nest in waza's: confined, it runs with its sandbox off."""
    monkeypatch.setenv("FAKE_CLI_FIXTURE", fixture_env("codex.jsonl"))
    shown = (FIXTURES, Path(sys.prefix), Path(sys.base_prefix), Path(os.path.realpath(sys.executable)).parent)
    agent = waza.HeadlessAgent(schema="codex", sandbox=waza.Sandbox(read_only=shown, keep_env=("FAKE_CLI_LOG",)))
    [record] = waza.capture(ONE, agent, [], workspace=waza.Workspace(cwd=tmp_path))
    assert record.errors == []
    [call] = calls_in(fake_clis)
    assert call["argv"][:4] == ["exec", "--json", "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check"]


def test_codex_resume_is_a_subcommand_with_the_thread_id(cli):
    prompts = [{"id": "two", "input": ["How many files?", "Thanks"]}]
    [result], calls = cli(prompts, "codex", fixture="codex.jsonl")
    assert result["errors"] == []
    assert calls[1]["argv"] == [
        "exec",
        "--json",
        "--sandbox",
        "workspace-write",
        "--skip-git-repo-check",
        "resume",
        "0199a213-81c0-7800-8aa1-bbab2a035a53",
        "Thanks",
    ]


def test_iterative_mode_sends_earlier_turns_through_the_history_template(cli, tmp_path):
    schema = orjson.loads((FIXTURES.parent.parent.parent / "adapters" / "headless_schemas" / "gemini-cli.json").read_bytes())
    del schema["resume"]
    schema.update(sessionMode="iterative", historyTemplate="User: {{input}}\nAssistant: {{output}}")
    path = tmp_path / "gemini-iterative.json"
    path.write_bytes(orjson.dumps(schema))
    prompts = [{"id": "two", "input": ["How many files?", "And lines?"]}]
    [result], calls = cli(prompts, path, fixture="gemini-cli.jsonl")
    assert result["errors"] == []
    assert calls[0]["argv"][-1] == "How many files?"
    assert calls[1]["argv"][-1] == f"User: How many files?\nAssistant: {ANSWER}\n\nUser: And lines?"


def test_acp_harness_schemas_load_unchanged_and_run(cli, tmp_path):
    harness = compat_path("acp-harness-schemas")
    for name in ("claude-headless.json", "gemini-headless.json"):
        assert run_waza("adapters", "check", harness / name).returncode == 0
    # The stream that schema was written for names the tool on both events and gives no id.
    stream = tmp_path / "named.jsonl"
    write_jsonl(
        stream,
        [
            {"type": "tool_use", "tool_name": "read_file", "args": {"path": "a.txt"}},
            {"type": "tool_use", "tool_name": "read_file", "args": {"path": "b.txt"}},
            {"type": "tool_result", "tool_name": "read_file", "output": "A"},
            {"type": "tool_result", "tool_name": "read_file", "output": "B"},
            {"type": "message", "content": "done"},
            {"type": "result", "content": "A and B"},
        ],
    )
    [result], _ = cli(ONE, harness / "gemini-headless.json", fixture=str(stream))
    assert result["errors"] == []
    # No id to pair by: each result closes the oldest open call of its name.
    assert [(s["input"], s["output"], s["status"]) for s in steps(result, "tool_call")] == [
        ({"path": "a.txt"}, "A", "completed"),
        ({"path": "b.txt"}, "B", "completed"),
    ]
    assert result["output"] == "A and B"


def test_prompt_on_stdin_and_unmatched_lines_kept(cli, tmp_path):
    schema = orjson.loads((FIXTURES.parent.parent.parent / "adapters" / "headless_schemas" / "claude-code.json").read_bytes())
    schema["prompt"] = {"stdin": True}
    path = tmp_path / "stdin-schema.json"
    path.write_bytes(orjson.dumps(schema))
    [result], [call] = cli(ONE, path, fixture="codex.jsonl", FAKE_CLI_EXIT="0")
    assert call["stdin"] == ONE[0]["input"] and ONE[0]["input"] not in call["argv"]
    # Codex lines mean nothing to a Claude schema: kept as event steps, and the missing result is an error.
    kept = [s["extra"]["data"]["type"] for s in steps(result, "event") if s["name"] == "unmatched"]
    assert kept[:2] == ["thread.started", "turn.started"] and len(kept) == 11
    assert result["status"] == "error" and "without a result line" in result["errors"][0]  # the CLI's exit 1


def test_line_timestamps_are_taken_as_lines_arrive(cli):
    [result], _ = cli(ONE, "claude-code", fixture="claude-code.jsonl", FAKE_CLI_PAUSE="0.3")
    assert result["errors"] == []
    thought = steps(result, "thought")[0]
    # Line 1 arrived, then the CLI paused 0.3 s before line 2; a lower bound, so it cannot flake.
    assert thought["timestamp"] >= 250
    stamps = [s["timestamp"] for s in result["trajectory"]]
    assert stamps == sorted(stamps)


def test_chatty_stderr_is_drained_and_kept_out_of_ours(cli, capfd):
    [result], _ = cli(ONE, "claude-code", fixture="claude-code.jsonl", FAKE_CLI_STDERR=str(2 << 20))
    assert result["errors"] == []
    assert result["stderr"].endswith("end\n") and len(result["stderr"]) <= 8192
    assert "xxxx" not in capfd.readouterr().err  # this process's own stderr (file descriptor 2)


def test_timeout_kills_a_hung_cli_and_keeps_what_it_printed(cli, tmp_path):
    truncated = tmp_path / "no-result.jsonl"
    truncated.write_text("".join((FIXTURES / "claude-code.jsonl").read_text().splitlines(True)[:3]))
    [result], _ = cli(ONE, "claude-code", timeout=1, fixture=str(truncated), FAKE_CLI_HANG="1")
    assert result["exit"]["timedOut"] is True and result["status"] == "error"  # the CLI's exit 1
    assert "toolu_01" in tools(result)


def test_a_cli_that_lingers_after_its_result_is_stopped_without_error(cli):
    [result], _ = cli(ONE, "claude-code", graders=HINT, fixture="claude-code.jsonl", FAKE_CLI_HANG="1")
    assert result["status"] == "passed" and result["errors"] == []
    assert result["exit"]["signal"] == 9


def test_nonzero_exit_is_an_error_and_the_run_goes_on(cli):
    prompts = [ONE[0], {**ONE[0], "id": "again"}]
    results, _ = cli(prompts, "claude-code", fixture="claude-code.jsonl", FAKE_CLI_EXIT="3")
    assert [r["errors"] for r in results] == [["agent exited with code 3"]] * 2
    assert [r["status"] for r in results] == ["error"] * 2  # the CLI's exit 1


def test_raw_log_has_every_line_with_its_prompt(fake_clis, tmp_path):
    """The command line's path: --schema NAME, --raw-log FILE and a grader; the record on stdout, exit 0."""
    raw = tmp_path / "raw.jsonl"
    proc, [result], _ = capture_cli(
        tmp_path, fake_clis, ONE, "--schema", "codex", "--raw-log", str(raw), "--grader", "builtin:hint", fixture="codex.jsonl"
    )
    assert proc.returncode == 0, proc.stderr
    assert errors("CaptureResult", result) == [] and result["status"] == "passed" and result["output"] == ANSWER
    lines = read_jsonl(raw)
    assert len(lines) == 11 and {(l["id"], l["turn"]) for l in lines} == {("files", 0)}
    assert lines[0]["line"] == {"type": "thread.started", "thread_id": "0199a213-81c0-7800-8aa1-bbab2a035a53"}


def test_raw_log_masks_secret_values_the_cli_printed(fake_clis, tmp_path):
    """A CLI that prints the value of a secret-like variable: the raw log holds the mask, never the value."""
    raw = tmp_path / "raw.jsonl"
    secret = "a.txt has 3 lines"  # what the fixture's CLI says, as if it were a key it read
    proc = run_waza(
        "capture", write_jsonl(tmp_path / "prompts.jsonl", ONE), "--adapter", "headless", "--schema", "codex",
        "--raw-log", raw, cwd=tmp_path, env={"FAKE_CLI_FIXTURE": fixture_env("codex.jsonl"), "CODEX_SECRET": secret},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    data = raw.read_bytes()
    assert secret.encode() not in data and b"[REDACTED]" in data
    assert read_jsonl(raw)[0]["line"]["type"] == "thread.started"  # lines are still whole records


def test_raw_log_masks_a_secret_the_cli_streamed_across_two_lines(fake_clis, tmp_path):
    """A key a CLI streams as two text deltas (``sk-wz-5a6b`` in one line, ``7c8d9e0f`` in the next): neither
    line holds it whole, and the raw log still holds the mask and no part of the key's tail."""
    secret = "sk-wz-5a6b7c8d9e0f"
    lines = (FIXTURES / "codex.jsonl").read_text().splitlines()
    deltas = [
        {"type": "item.updated", "item": {"id": "item_9", "type": "agent_message", "text": f"my key is {secret[:10]}"}},
        {"type": "item.updated", "item": {"id": "item_9", "type": "agent_message", "text": f"{secret[10:]}, use it"}},
    ]
    fixture = tmp_path / "split.jsonl"
    fixture.write_text("\n".join([*lines[:3], *map(lambda d: orjson.dumps(d).decode(), deltas), *lines[3:]]) + "\n")
    raw = tmp_path / "raw.jsonl"
    proc = run_waza(
        "capture", write_jsonl(tmp_path / "prompts.jsonl", ONE), "--adapter", "headless", "--schema", "codex",
        "--raw-log", raw, cwd=tmp_path, env={"FAKE_CLI_FIXTURE": str(fixture), "CODEX_API_KEY": secret},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    logged = read_jsonl(raw)
    assert len(logged) == len(lines) + 2  # every line, in order, whole
    texts = [
        entry["line"]["item"]["text"]
        for entry in logged
        if entry["line"].get("type") == "item.updated" and "text" in entry["line"]["item"]
    ]
    assert texts == ["my key is [REDACTED]", ", use it"], texts
    data = raw.read_text()
    assert secret[:10] not in data and secret[10:] not in data
    assert [entry["line"]["type"] for entry in logged][:2] == ["thread.started", "turn.started"]


def test_bad_schemas_are_usage_errors_naming_file_and_field(fake_clis, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_bytes(
        orjson.dumps(
            {
                "version": 1,
                "name": "x",
                "command": ["x"],
                "sessionMode": "stream",
                "prompt": {"flag": "-p"},
                "output": {"flag": "", "value": ""},
                "outputEvents": [
                    {"match": {"path": "$.type", "value": "a"}, "emitAs": "tool_call", "extract": {"content": "$.x"}}
                ],
                "result": {"matchPath": "$.type", "matchValue": "result"},
            }
        )
    )
    proc, results, calls = capture_cli(tmp_path, fake_clis, ONE, "--schema", str(bad), fixture="codex.jsonl")
    assert proc.returncode == 2 and results == [] and calls == []
    assert f"{bad}: field 'outputEvents.0.extract.content'" in proc.stderr.decode()
    proc, _, _ = capture_cli(tmp_path, fake_clis, ONE, "--schema", "claude-code", "--events", fixture="codex.jsonl")
    assert proc.returncode == 2 and b"--events does nothing" in proc.stderr
    with pytest.raises(waza.ConfigError, match=r"needs HeadlessAgent\.schema"):
        waza.capture(ONE, waza.HeadlessAgent())


def test_acp_harness_wildcard_match_and_any_value(cli, tmp_path):
    """acp-harness's forms: a wildcard match path selects each matching item (extract relative to it),
    and "*" as a match or result value means any non-null value."""
    path = schema_file(
        tmp_path,
        "wild",
        [
            {
                "match": {"path": "$.message.content[*].type", "value": "tool_use"},
                "emitAs": "tool_call",
                "extract": {"toolCallId": "$.id", "name": "$.name", "status": "'pending'", "input": "$.input"},
            },
            {
                "match": {"path": "$.message.content[*]", "value": "tool_result"},
                "emitAs": "tool_call",
                "extract": {"toolCallId": "$.tool_use_id", "status": "'completed'", "output": "$.content"},
            },
            {
                "match": {"path": "$.message.id", "value": "*"},
                "emitAs": "message",
                "extract": {"content": "$.message.content[?@.type == 'text'].text"},
            },
        ],
        {"matchPath": "$.result", "matchValue": "*", "contentPath": "$.result"},
        version=1,
        output={"flag": "--output-format", "value": "stream-json"},
    )
    [result], _ = cli(ONE, path, fixture="claude-code.jsonl")
    calls = tools(result)
    assert calls["toolu_01"]["name"] == "Bash" and calls["toolu_01"]["input"] == {"command": "ls"}
    assert calls["toolu_02"]["input"] == {"command": "wc -l a.txt"} and calls["toolu_02"]["status"] == "completed"
    assert calls["toolu_01"]["output"] == "a.txt\nb.txt"
    assert "I'll list the files and count lines." in [s["content"] for s in steps(result, "message")]
    assert result["output"] == ANSWER and result["errors"] == []


def test_adapters_check_refuses_a_scalar_extract_that_selects_several(tmp_path):
    schema = orjson.loads((FIXTURES.parent.parent.parent / "adapters" / "headless_schemas" / "claude-code.json").read_bytes())
    schema["outputEvents"][2] = {
        "match": {"path": "$.type", "value": "assistant"},
        "emitAs": "tool_call",
        "extract": {"name": "$.message.content[*].name"},
    }
    path = tmp_path / "bad.json"
    path.write_bytes(orjson.dumps(schema))
    proc = run_waza("adapters", "check", path)
    assert proc.returncode == 2
    assert "outputEvents.2.extract.name" in proc.stderr.decode() and "takes one" in proc.stderr.decode()


def test_acp_harness_passthrough_mode_extra_extract_keys_and_stdin_format(cli, tmp_path):
    """Schema features valid in acp-harness: outputMode passthrough with passthroughTypeMap,
    extract keys toolName and mcpServer, prompt.stdinFormat."""
    stream = write_jsonl(
        tmp_path / "typed.jsonl",
        [
            {"kind": "reasoning", "content": "look first"},
            {"kind": "tool", "name": "Bash", "status": "pending", "input": {"command": "ls"}},
            {"kind": "tool", "name": "Bash", "status": "completed", "output": "a.txt"},
            {"kind": "text", "content": "one file"},
            {"kind": "done", "result": "one file"},
        ],
    )
    schema = {
        "version": 1,
        "name": "typed",
        "command": ["codex"],
        "sessionMode": "stream",
        "prompt": {"stdin": True, "stdinFormat": "text"},
        "output": {"flag": "", "value": ""},
        "outputMode": "passthrough",
        "passthroughTypeMap": {
            "typeField": "kind",
            "typeValues": {"reasoning": "thought", "tool": "tool_call", "text": "message"},
        },
        "result": {"matchPath": "$.kind", "matchValue": "done", "contentPath": "$.result"},
    }
    path = tmp_path / "typed.json"
    path.write_bytes(orjson.dumps(schema))
    [result], calls = cli(ONE, path, fixture=str(stream))
    assert result["errors"] == []
    assert calls[0]["stdin"] == ONE[0]["input"]
    assert [s["type"] for s in result["trajectory"] if s["type"] != "message" or s["role"] != "user"] == [
        "thought",
        "tool_call",
        "message",
    ]
    [call] = steps(result, "tool_call")
    assert (call["name"], call["status"], call["input"], call["output"]) == ("Bash", "completed", {"command": "ls"}, "a.txt")
    assert result["output"] == "one file"

    extra_keys = orjson.loads((FIXTURES.parent.parent.parent / "adapters" / "headless_schemas" / "claude-code.json").read_bytes())
    extra_keys["outputEvents"][2]["extract"] = {
        "toolCallId": "$.id",
        "toolName": "$.name",
        "mcpServer": "'files'",
        "status": "'pending'",
        "input": "$.input",
    }
    path.write_bytes(orjson.dumps(extra_keys))
    [result], _ = cli(ONE, path, fixture="claude-code.jsonl")
    assert result["errors"] == []
    assert tools(result)["toolu_01"]["name"] == "Bash" and tools(result)["toolu_01"]["extra"]["mcpServer"] == "files"

    schema["prompt"] = {"flag": "-p", "stdinFormat": "json"}
    path.write_bytes(orjson.dumps(schema))
    refused = run_waza("adapters", "check", path)
    assert refused.returncode == 2 and "prompt.stdinFormat" in refused.stderr.decode()


def test_a_daemon_holding_stdout_does_not_hold_the_turn_after_the_cli_exits(tmp_path):
    pidfile = tmp_path / "daemon.pid"
    # The result line only once the daemon is in a session of its own (its pid file is written after setsid).
    daemon = f"echo $$ > {pidfile}.tmp && mv {pidfile}.tmp {pidfile} && exec sleep 1000"
    result_line = '{"type":"result","result":"done"}'
    agent = executable(
        tmp_path / "agent.sh",
        f"#!/bin/sh\nsetsid sh -c '{daemon}' &\nwhile [ ! -f {pidfile} ]; do sleep 0.05; done\necho '{result_line}'\n",
    )
    schema = message_result_schema(tmp_path / "schema.json", agent)
    try:
        [result] = waza.capture(
            [{"id": "d", "input": "go"}],
            waza.HeadlessAgent(schema=schema),
            timeouts=waza.Timeouts(prompt=60),
            workspace=waza.Workspace(cwd=tmp_path),
        )
        # Over once the CLI exited and its pipes went quiet (1 s), not at the 60 s timeout.
        assert (result.output, result.errors, result.exit.code, result.exit.timed_out) == ("done", [], 0, False)
    finally:
        if pidfile.exists():
            os.kill(int(pidfile.read_text()), 9)


def test_adapters_list_shows_each_shipped_schema_with_its_tested_cli_version():
    proc = run_waza("adapters", "list")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.decode().splitlines()
    assert lines[0].startswith("adapters: acp (default), exec, headless")
    for name, package in (
        ("claude-code", "@anthropic-ai/claude-code"),
        ("codex", "@openai/codex"),
        ("gemini-cli", "@google/gemini-cli"),
        ("opencode", "opencode-ai"),
    ):
        [row] = [line for line in lines if line.split()[:1] == [name]]
        version = load_schema(name).tested_with[1]
        assert f"{package} {version}" in row
    rows = read_jsonl(run_waza("adapters", "list", "--json").stdout)
    assert {r["schema"]: r["version"] for r in rows}["codex"] == "0.169.0"


MOCKS_MCP = Path(__file__).parent / "fixtures" / "suites" / "mocks-mcp"


@pytest.mark.parametrize("schema", ["codex", "gemini-cli", "opencode"])
def test_a_suites_mcp_mocks_reach_the_cli_as_its_schema_says(fake_clis, tmp_path, monkeypatch, schema):
    """Codex: one `-c mcp_servers.NAME={...}` TOML value per mock (required, its tools approved); Gemini CLI
    and OpenCode: a config file their variable names, in the shape each reads. Each entry starts the mock
    server on waza's interpreter."""
    monkeypatch.setenv("FAKE_CLI_FIXTURE", fixture_env("gemini-cli.jsonl" if schema == "gemini-cli" else "codex.jsonl"))
    monkeypatch.setenv("FAKE_CLI_READS", "GEMINI_CLI_SYSTEM_DEFAULTS_PATH,OPENCODE_CONFIG")
    waza.run_suite(MOCKS_MCP, waza.HeadlessAgent(schema=schema), output=waza.Output(str(tmp_path / "out.jsonl")))
    [call] = calls_in(fake_clis)
    if schema == "codex":
        values = [call["argv"][i + 1] for i, a in enumerate(call["argv"]) if a == "-c"]
        servers = {k: v for value in values for k, v in tomllib.loads(value)["mcp_servers"].items()}
        assert {k: v.pop("required") for k, v in servers.items()} == {"tracker": True, "github": True}
        assert {k: v.pop("default_tools_approval_mode") for k, v in servers.items()} == {
            "tracker": "approve",
            "github": "approve",
        }
        assert call["files"] == {}
    elif schema == "gemini-cli":
        servers = orjson.loads(call["files"]["GEMINI_CLI_SYSTEM_DEFAULTS_PATH"])["mcpServers"]
        assert {k: v.pop("trust") for k, v in servers.items()} == {"tracker": True, "github": True}
    else:
        entries = orjson.loads(call["files"]["OPENCODE_CONFIG"])["mcp"]
        assert {v["type"] for v in entries.values()} == {"local"}
        servers = {k: {"command": v["command"][0], "args": v["command"][1:], "env": v["environment"]} for k, v in entries.items()}
    assert sorted(servers) == ["github", "tracker"]
    for server in servers.values():
        assert server["command"] == os.sys.executable and server["env"] == {}
        script, config, log = server["args"]
        assert Path(script).name == "mcp_server.py" and Path(config).suffix == ".json" and log.endswith(".jsonl")
