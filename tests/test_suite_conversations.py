"""Conversations of a suite task (the original's follow_up_prompts, responder and checkpoints), run for real.

The agents are real programs: the scripted ACP agent (one ACP session, a session/prompt per turn) and a
headless CLI stand-in (one process per turn, ``--resume SESSION`` on later turns). The responder's model
is ``waza serve-model`` on loopback with a reply script (tests/fixtures/suites/conversations/replies.yaml),
reached through the judge options, as a user reaches an OpenAI-compatible endpoint or a local model.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

import waza
from tests import test_headless, test_real_agents
from tests.conftest import read_jsonl, run_waza
from tests.test_headless import calls_in, fixture_env
from tests.test_serve_model import serving
from waza.protocol.records import CaptureResult

SUITE = Path(__file__).parent / "fixtures" / "suites" / "conversations"
AGENT = Path(__file__).parent / "agents" / "scripted_acp_agent.py"
#: Fake `claude`, `gemini` and `codex` first on PATH (the headless adapter's tests' fixture).
fake_clis = test_headless.fake_clis


@pytest.fixture(scope="module")
def responder_url() -> Iterator[str]:
    """The responder's model: `waza serve-model` answering from the suite's reply script."""
    with serving(SUITE / "replies.yaml") as (base, _):
        yield f"{base}/v1"


def acp_trials(tasks: list[str], url: str | None = None) -> dict[str, CaptureResult]:
    agent = waza.AcpAgent(command=[sys.executable, str(AGENT)])
    judge = waza.Judge(base_url=url) if url else None
    document = waza.run_suite(SUITE, agent, tasks=tasks, judge=judge)
    return {t.id: t.trials[0] for t in document.tasks if t.trials}


def user_turns(result: CaptureResult) -> list[str]:
    return [s.content or "" for s in result.trajectory if s.type == "message" and s.role == "user"]


def grades(entry: dict[str, Any]) -> dict[str, bool]:
    return {g["name"]: g["pass"] for g in entry["grades"]}


def test_follow_up_prompts_are_later_turns_of_the_same_acp_session_graded_at_checkpoints() -> None:
    result = acp_trials(["follow"])["follow"]
    assert user_turns(result) == ["say first answer", "write notes.txt kept", "history"]
    assert [s.turn for s in result.trajectory if s.type == "message" and s.role == "user"] == [0, 1, 2]
    assert result.status == "passed", result.grades  # the agent's history holds the earlier turns: one session
    assert result.output == "history: say first answer | write notes.txt kept"
    first, second = result.unknown["checkpoints"]
    # each checkpoint saw the conversation as it stood after its turn: the first before notes.txt was written
    assert (first["after_turn"], first["status"], grades(first)) == (1, "passed", {"said-first": True})
    assert (second["after_turn"], second["status"], grades(second)) == (2, "passed", {"has-notes": True})
    assert result.unknown["conversation"] == {"turns": 3, "outcome": "completed"}


def test_a_failed_checkpoint_that_stops_sends_no_later_turn_and_leaves_the_verdict_to_the_final_graders() -> None:
    result = acp_trials(["stop"])["stop"]
    assert user_turns(result) == ["say draft"]
    failed, later = result.unknown["checkpoints"]
    assert (failed["status"], failed["on_failure"], grades(failed)) == ("failed", "stop", {"wants-final": False})
    assert later == {"after_turn": 2, "status": "not_run"}
    assert result.unknown["conversation"]["outcome"] == "stopped"
    assert result.status == "passed"  # a checkpoint is recorded, never part of the final verdict


def test_the_responder_answers_the_agents_question_then_stops(responder_url: str) -> None:
    result = acp_trials(["ask"], responder_url)["ask"]
    assert user_turns(result) == ["say Which colour do you want?", "say blue it is"]
    assert result.status == "passed", result.grades
    assert result.unknown["conversation"] == {"turns": 2, "outcome": "completed", "followups": 1}
    [checkpoint] = result.unknown["checkpoints"]
    assert grades(checkpoint) == {"heard-blue": True}


def test_a_responder_that_abstains_fails_the_trial_with_its_own_outcome(responder_url: str) -> None:
    result = acp_trials(["vague"], responder_url)["vague"]
    assert result.status == "failed"
    assert {g.name: g.status for g in result.grades} == {"asked": "passed", "responder": "failed"}
    assert result.outcome["conversation"] == "abstained"
    assert result.unknown["conversation"] == {
        "turns": 1,
        "outcome": "abstained",
        "followups": 0,
        "reason": "the brief says nothing about a budget",
    }


def test_an_agent_still_asking_after_max_followups_ends_cap_exhausted_and_is_graded(responder_url: str) -> None:
    result = acp_trials(["cap"], responder_url)["cap"]
    assert user_turns(result) == ["say Which size?", "say Which size again?"]
    assert result.unknown["conversation"]["outcome"] == "cap_exhausted"
    assert result.unknown["conversation"]["followups"] == 1
    assert result.status == "passed"  # the graders judge the final state


def test_the_headless_adapter_resumes_its_session_for_the_responders_turn(
    fake_clis: Path, monkeypatch: pytest.MonkeyPatch, responder_url: str
) -> None:
    monkeypatch.setenv("FAKE_CLI_FIXTURE", fixture_env(["claude-code.jsonl", "claude-code-turn2.jsonl"]))
    agent = waza.HeadlessAgent(schema=Path("claude-code"))
    document = waza.run_suite(SUITE, agent, tasks=["files"], judge=waza.Judge(base_url=responder_url))
    [result] = document.tasks[0].trials
    first, second = calls_in(fake_clis)
    assert "--resume" not in first["argv"]
    assert second["argv"][-4:] == ["--resume", "8d1c6a2e-3f4b-4c1d-9a7e-2b5f0e9c1a11", "-p", "Is b.txt empty?"]
    assert result.output == "b.txt is empty." and result.status == "passed"
    assert result.unknown["conversation"] == {"turns": 2, "outcome": "completed", "followups": 1}


def test_the_results_reporter_lists_each_runs_checkpoints(tmp_path: Path) -> None:
    out, results = tmp_path / "out.jsonl", tmp_path / "results.json"
    done = run_waza(
        "run", SUITE, "--task", "follow", "--task", "stop", "--adapter", "acp", "-o", out,
        "--reporter", f"results:{results}", "--no-progress", "--", sys.executable, AGENT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    assert "not applied" not in done.stderr.decode() and "not supported" not in done.stderr.decode()
    tasks = {t["test_id"]: t for t in orjson.loads(results.read_bytes())["tasks"]}
    [run] = tasks["stop"]["runs"]
    assert run["run_number"] == 1 and run["status"] == "passed"
    assert [c["status"] for c in run["checkpoints"]] == ["failed", "not_run"]
    assert tasks["stop"]["status"] == "passed"
    assert [c["status"] for c in tasks["follow"]["runs"][0]["checkpoints"]] == ["passed", "passed"]
    assert {r["id"] for r in read_jsonl(out)} == {"follow", "stop"}


def test_a_responder_without_a_model_is_a_one_line_config_error(tmp_path: Path) -> None:
    done = run_waza("run", SUITE, "--task", "ask", "--adapter", "acp", "--", sys.executable, AGENT, cwd=tmp_path)
    err = done.stderr.decode()
    assert done.returncode == 2 and "inputs.responder needs a model to play the user" in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_a_checkpoint_after_a_turn_the_task_never_has_is_refused_at_its_line(tmp_path: Path) -> None:
    (tmp_path / "tasks").mkdir()
    (tmp_path / "eval.yaml").write_text("name: x\nschemaVersion: '1.1'\ntasks: ['tasks/*.yaml']\n")
    (tmp_path / "tasks" / "t.yaml").write_text(
        "id: t\ninputs:\n  prompt: hi\n  follow_up_prompts: [more]\ncheckpoints:\n  - after_turn: 3\n"
        "    graders: [{type: text, config: {contains: [hi]}}]\n"
    )
    done = run_waza("check", tmp_path)
    err = done.stderr.decode()
    assert done.returncode == 2, err
    assert "t.yaml:6" in err and "checkpoints[0].after_turn" in err and "no turn 3" in err, err


@pytest.mark.parametrize("version", [None, "'1.0'"])
def test_a_task_file_has_no_version_of_its_own_to_negotiate(tmp_path: Path, version: str | None) -> None:
    """The original's own compatibility suite is schemaVersion 1.0 and its task has checkpoints and a
    follow-up, and it runs: a task file's keys are not tied to its suite's schemaVersion (a task's own
    command_mocks neither)."""
    (tmp_path / "tasks").mkdir()
    (tmp_path / "eval.yaml").write_text(f"name: x\n{f'schemaVersion: {version}' if version else ''}\ntasks: ['tasks/*.yaml']\n")
    (tmp_path / "tasks" / "t.yaml").write_text(
        "id: t\ninputs:\n  prompt: hi\n  follow_up_prompts: [more]\ncheckpoints:\n  - after_turn: 2\n"
        "    graders: [{type: text, config: {contains: [hi]}}]\ncommand_mocks: []\n"
        "graders: [{type: text, config: {contains: [hi]}}]\n"
    )
    done = run_waza("check", ".", cwd=tmp_path)
    assert done.returncode == 0, done.stderr.decode()


def test_workdir_is_where_the_acp_agent_starts_and_a_missing_one_is_the_trials_error() -> None:
    trials = acp_trials(["workdir", "nowhere"])
    assert trials["workdir"].status == "passed", (trials["workdir"].output, trials["workdir"].grades)
    assert trials["workdir"].output.endswith("/app/src")
    assert trials["nowhere"].status == "error"
    assert "workdir 'missing' is not a folder of the prepared workspace" in trials["nowhere"].errors[0]


def test_workdir_is_the_exec_agents_working_directory() -> None:
    agent = waza.ExecAgent(command=[sys.executable, "-c", "import os; print(os.getcwd())"])
    document = waza.run_suite(SUITE, agent, tasks=["workdir"])
    [result] = document.tasks[0].trials
    assert result.status == "passed", result.output
    assert result.output.strip().endswith("/app/src")


@pytest.mark.slow  # the scripted headless-resume test covers the responder in main
def test_claude_code_answers_the_responder_in_its_resumed_session(tmp_path: Path) -> None:
    """The real Claude Code CLI (pinned, as tests/test_real_agents.py installs it) under the headless adapter: one
    `waza serve-model` script is both its model (Anthropic API) and the responder's (OpenAI API); the responder's
    reply is the second turn, sent with --resume."""
    claude = test_real_agents.AGENTS["claude-code"]
    claude.require()
    suite = tmp_path / "suite"
    (suite / "tasks").mkdir(parents=True)
    (suite / "eval.yaml").write_text("name: real\ntasks: ['tasks/*.yaml']\n")
    (suite / "tasks" / "logo.yaml").write_text(
        "id: logo\ninputs:\n  prompt: Pick a colour for the logo, asking me first.\n"
        "  responder: {instructions: You want a blue logo., max_followups: 2}\n"
        "graders: [{type: text, name: blue, config: {contains: [Blue it is]}}]\n"
    )
    replies = tmp_path / "replies.yaml"
    replies.write_text(
        "- {match: 'Agent: Blue it is', text: '{\"action\": \"stop\"}'}\n"  # the responder, once the agent is done
        '- {match: \'Agent: Which colour\', text: \'{"action": "reply", "message": "Blue, please."}\'}\n'
        "- {match: '^Blue, please', text: 'Blue it is.'}\n"  # the agent's second turn
        "- {text: 'Which colour do you want?'}\n"  # the agent's first turn
    )
    (tmp_path / "home").mkdir()
    out = tmp_path / "out.jsonl"
    with serving(replies) as (base, served):
        env = {
            **{k: served[k] for k in ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC")},
            **claude.env,
            "PATH": f"{claude.bin_dir}{os.pathsep}{os.environ['PATH']}",
            "HOME": str(tmp_path / "home"),
        }
        done = run_waza(
            "run", suite, "--adapter", "headless", "--schema", "claude-code", "--judge-base-url", f"{base}/v1",
            "-o", out, "--no-progress", env=env, cwd=tmp_path, timeout=300,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    [result] = read_jsonl(out)
    said = [(s["turn"], s["role"], s["content"]) for s in result["trajectory"] if s["type"] == "message"]
    assert said == [
        (0, "user", "Pick a colour for the logo, asking me first."),
        (0, "agent", "Which colour do you want?"),
        (1, "user", "Blue, please."),
        (1, "agent", "Blue it is."),
    ]
    assert result["conversation"] == {"turns": 2, "outcome": "completed", "followups": 1}
