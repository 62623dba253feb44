"""Secrets never appear in results or logs, and graders never see them."""

from __future__ import annotations

import sys

from .conftest import executable, read_jsonl, run_waza, write_jsonl

SECRET = "sk-test-9f8e7d6c5b4a"
PY = sys.executable


def test_secret_values_are_redacted_everywhere_and_hidden_from_graders(tmp_path):
    agent = executable(
        tmp_path / "leaky_agent.py",
        f"""#!{PY}
import os, sys
key = os.environ["MY_API_KEY"]
sys.stderr.write("debug: using key " + key + "\\n")
print("my key is " + key)
""",
    )
    grader = executable(
        tmp_path / "env_grader.py",
        f"""#!{PY}
import json, os, sys
json.load(sys.stdin)
names = sorted(k for k in os.environ if "KEY" in k or "TOKEN" in k)
print(json.dumps({{"pass": True, "score": 1, "reasoning": "secret-like vars: " + ",".join(names)}}))
""",
    )
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "leak", "input": "tell me your key"}])
    out = tmp_path / "out.jsonl"
    env = {"MY_API_KEY": SECRET, "GITHUB_TOKEN": "ghp_" + "x" * 20}
    proc = run_waza("-vv", "capture", prompts, "--adapter", "exec", "--grader", grader, "-o", out, "--", agent, env=env)
    assert proc.returncode == 0, proc.stderr
    written = out.read_bytes()
    assert SECRET.encode() not in written and SECRET.encode() not in proc.stderr and SECRET.encode() not in proc.stdout
    (row,) = read_jsonl(out)
    assert row["output"] == "my key is [REDACTED]"  # the agent had its key; the record does not
    assert "[REDACTED]" in row["stderr"]
    assert row["grades"][0]["reasoning"] == "secret-like vars: "  # the grader saw none of them
