"""Secrets never appear in results or logs, and graders never see them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from .conftest import compat_path, executable, read_jsonl, run_waza, write_jsonl

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


def test_a_grader_inherits_the_environment_when_nothing_in_it_is_secret_and_never_a_secret(tmp_path):
    """With no secret-like variable about, a grader starts with waza's environment as it is (nothing to
    encode); with one (any case), it gets the same environment without it."""
    grader = executable(
        tmp_path / "env_grader.py",
        f"""#!{PY}
import json, os, sys
json.load(sys.stdin)
seen = [k for k in ("PLAIN_SETTING", "my_token", "Db_Password") if k in os.environ]
print(json.dumps({{"pass": True, "score": 1, "reasoning": ",".join(seen)}}))
""",
    )
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": "hi"}])
    base = {
        k: v
        for k, v in os.environ.items()
        if not any(w in k.upper() for w in ("KEY", "TOKEN", "SECRET", "PASSW", "CREDENTIAL", "AUTH"))
    }
    for extra, seen in (({}, "PLAIN_SETTING"), ({"my_token": "t" * 12, "Db_Password": "p" * 12}, "PLAIN_SETTING")):
        out = tmp_path / "out.jsonl"
        env = {**base, "PLAIN_SETTING": "1", **extra}
        done = subprocess.run(
            [
                PY,
                "-m",
                "waza",
                "capture",
                str(prompts),
                "-g",
                str(grader),
                "-o",
                str(out),
                "--adapter",
                "exec",
                "--",
                PY,
                "-c",
                "print(1)",
            ],
            env=env,
            capture_output=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert read_jsonl(out)[0]["grades"][0]["reasoning"] == seen


PEM = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\n-----END PRIVATE KEY-----"
QUOTED = 'pa"ss\\wo\trd-42'


def _forms(value: str) -> list[bytes]:
    """Every way a value can be seen in an output: raw, JSON-escaped, and each line of it."""
    forms = {value.encode(), json.dumps(value)[1:-1].encode()}
    for line in value.splitlines():
        if len(line.strip()) >= 6:
            forms.update({line.encode(), json.dumps(line)[1:-1].encode()})
    return sorted(forms)


def _leaks(value: str, *outputs: bytes) -> list[bytes]:
    return [form for form in _forms(value) for out in outputs if form in out]


def test_quoted_multiline_and_named_secrets_are_masked_in_every_form(tmp_path):
    agent = executable(
        tmp_path / "leaky.py",
        f"""#!{PY}
import os, sys
for name in ("MY_API_KEY", "DEPLOY_TOKEN", "PLAIN"):
    print(name, os.environ[name])
    sys.stderr.write(name + " " + os.environ[name] + "\\n")
""",
    )
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "leak", "input": "go"}])
    out = tmp_path / "out.jsonl"
    env = {"MY_API_KEY": QUOTED, "DEPLOY_TOKEN": PEM, "PLAIN": "hunter"}
    proc = run_waza("-vv", "capture", prompts, "--adapter", "exec", "-o", out, "--", agent, env=env)
    assert proc.returncode == 0, proc.stderr
    outputs = (out.read_bytes(), proc.stdout, proc.stderr)
    assert _leaks(QUOTED, *outputs) == [] and _leaks(PEM, *outputs) == []
    (row,) = read_jsonl(out)
    assert "MY_API_KEY [REDACTED]" in row["output"] and "PLAIN hunter" in row["output"]


def test_a_variable_named_by_api_key_env_is_masked_whatever_its_name(tmp_path):
    from .conftest import loopback_server

    server = Path(__file__).parent / "fixtures" / "http" / "chat_server.py"
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": "the word is zq9"}])
    with loopback_server(server, tmp_path / "requests.jsonl") as (base_url, _):
        proc = run_waza(
            "capture",
            prompts,
            "--adapter",
            "http",
            "--base-url",
            base_url,
            "--model",
            "m",
            "--api-key-env",
            "MODEL_ACCESS",
            env={"MODEL_ACCESS": "zq9"},
        )
    assert proc.returncode == 0, proc.stderr
    (row,) = read_jsonl(proc.stdout)
    assert b"zq9" not in proc.stdout + proc.stderr
    assert row["output"].startswith("echo the word is [REDACTED]")


@pytest.mark.parametrize("word", ["output", "passed", "status"])
def test_a_secret_equal_to_a_field_name_leaves_the_record_whole(tmp_path, word):
    agent = executable(tmp_path / "a.py", f"#!{PY}\nprint('the status is fine')\n")
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": "x"}])
    proc = run_waza("capture", prompts, "--adapter", "exec", "-g", "builtin:hint", "--", agent, env={"WORD_SECRET": word})
    (row,) = read_jsonl(proc.stdout)  # still one valid record with every field
    assert {"id", "output", "status", "trajectory"} <= row.keys()
    assert row["status"] in ("passed", "failed", "error", "ungraded", "pending")


def test_a_secret_split_across_message_chunks_is_not_in_the_raw_log(tmp_path):
    secret = "split-secret-0123456789"
    agent = [PY, str(Path(__file__).parent / "agents" / "scripted_acp_agent.py")]
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": f"say {secret}"}])
    raw, out = tmp_path / "raw.jsonl", tmp_path / "out.jsonl"
    proc = run_waza("capture", prompts, "--raw-log", raw, "-o", out, "--", *agent, env={"CHUNK_TOKEN": secret})
    assert proc.returncode == 0, proc.stderr
    chunks = "".join(
        m["message"]["params"]["update"]["content"]["text"]
        for m in read_jsonl(raw)
        if m["dir"] == "in"
        and m.get("message", {}).get("method") == "session/update"
        and m["message"]["params"]["update"].get("sessionUpdate") == "agent_message_chunk"
    )
    assert chunks and secret not in chunks and "[REDACTED]" in chunks
    for data in (raw.read_bytes(), out.read_bytes(), proc.stderr):
        assert secret.encode() not in data


def test_a_secret_streamed_a_character_a_chunk_is_in_no_line_of_the_raw_log(tmp_path):
    """An agent trickles a key one character a message: no line, and no joining of lines, gives it back."""
    secret = "sk-trickle-0123456789"
    agent = [PY, str(Path(__file__).parent / "agents" / "scripted_acp_agent.py")]
    text = f"the key is {secret} and sk-t again {secret}."
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": f"trickle {text}"}, {"id": "b", "input": "trickle sk-"}])
    raw, out = tmp_path / "raw.jsonl", tmp_path / "out.jsonl"
    proc = run_waza("capture", prompts, "--raw-log", raw, "-o", out, "-j", "1", "--", *agent, env={"TRICKLE_TOKEN": secret})
    assert proc.returncode == 0, proc.stderr
    lines = read_jsonl(raw)
    chunks = {
        prompt: [
            m["message"]["params"]["update"]["content"]["text"]
            for m in lines
            if m["promptId"] == prompt and m.get("message", {}).get("method") == "session/update"
        ]
        for prompt in ("a", "b")
    }
    # Every chunk is still written (one line a message), and joined they read as the message with the mask.
    assert len(chunks["a"]) == len(text) and "".join(chunks["a"]) == text.replace(secret, "[REDACTED]")
    assert "".join(chunks["b"]) == "sk-"  # a secret's start that never went on is written when the prompt ends
    assert [m["ts"] for m in lines] == sorted(m["ts"] for m in lines)  # held lines kept their place
    for data in (raw.read_bytes(), out.read_bytes(), proc.stderr):
        assert secret.encode() not in data


def test_a_secret_whose_value_is_a_record_word_never_changes_waza_s_own_fields(tmp_path):
    """DB_PASSWORD=passed: the agent's text is masked, the verdicts, grade names and step types are not."""
    env = {"DB_PASSWORD": "passed", "STEP_TOKEN": "message", "GRADER_SECRET": "text:hint"}
    agent = executable(tmp_path / "a.py", f"#!{PY}\nimport sys\nsys.stderr.write('db passed\\n')\nprint('all tests passed')\n")
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": "run the tests", "hint": "all tests"}])
    proc = run_waza("capture", prompts, "--adapter", "exec", "-g", "builtin:hint", "--", agent, env=env)
    (row,) = read_jsonl(proc.stdout)
    assert (row["status"], row["score"]["status"], row["grades"][0]["status"]) == ("passed",) * 3, proc.stderr
    assert row["grades"][0]["name"] == "hint" and [s["type"] for s in row["trajectory"]] == ["message", "message"]
    assert row["output"] == "all tests [REDACTED]" and "[REDACTED]" in row["stderr"]
    trials = run_waza("trials", prompts, "-k", "2", "--adapter", "exec", "-g", "builtin:hint", "--", agent, env=env)
    (trial,) = read_jsonl(trials.stdout)
    assert [t["status"] for t in trial["trials"]] == ["passed", "passed"], trials.stderr
    assert {t["output"] for t in trial["trials"]} == {"all tests [REDACTED]"}
    assert [g["status"] for t in trial["trials"] for g in t["grades"]] == ["passed", "passed"]


def test_a_suite_s_documents_keep_their_words_when_a_secret_equals_one(tmp_path):
    suite = compat_path("waza-examples/code-explainer")
    documents = {}
    for label, env in (("plain", {}), ("secret", {"DB_PASSWORD": "passed", "OTHER_SECRET": "failed"})):
        folder = tmp_path / label
        folder.mkdir()
        reporters = [f"json:{folder / 'r.json'}", f"junit:{folder / 'r.xml'}", f"markdown:{folder / 'r.md'}"]
        proc = run_waza("run", suite, "--no-progress", *[a for r in reporters for a in ("--reporter", r)], cwd=folder, env=env)
        assert proc.returncode in (0, 1), proc.stderr
        documents[label] = [(folder / name).read_bytes() for name in ("r.json", "r.xml", "r.md")]
    plain, secret = documents["plain"], documents["secret"]
    summary = lambda doc: (json.loads(doc)["summary"], json.loads(doc)["metrics"])
    assert summary(secret[0]) == summary(plain[0])
    statuses = lambda doc: [
        (t["id"], t["status"], [(g["name"], g["status"]) for tr in t["trials"] for g in tr["grades"]])
        for t in json.loads(doc)["tasks"]
    ]
    assert statuses(secret[0]) == statuses(plain[0])
    junit = lambda doc: [
        (e.tag, e.get("name")) for e in ET.fromstring(doc).iter() if e.tag in ("testcase", "failure", "error", "skipped")
    ]
    assert junit(secret[1]) == junit(plain[1])
    for word in (b"PASSED", b"FAILED", b"| passed", b"| failed"):
        assert secret[2].count(word) == plain[2].count(word)


def test_values_held_for_a_secret_that_never_completes_stay_bounded(monkeypatch):
    """A CLI whose every line ends with the start of a key (and never the rest) holds back no more than a
    bounded number of lines: the log goes on being written as the lines come, masked as they stand."""
    from waza.protocol.io.secrets import Redactor, ValueStreamMasker

    monkeypatch.setenv("BOUND_TEST_TOKEN", "tok-0123456789abcdef")
    stream = ValueStreamMasker(Redactor())
    handed = 0
    for n in range(5000):
        handed += len(stream.push({"n": n, "text": "partial tok-0123"}))
        assert n + 1 - handed <= 1025
    rest = stream.drain()
    assert handed + len(rest) == 5000 and all(v["text"] == "partial tok-0123" for v in rest)


def test_an_unsandboxed_agent_never_gets_the_judges_key_unless_given_it(tmp_path):
    """The judge's key shares its variable name with the agent's usual one (OPENAI_API_KEY): the agent, and
    a command it starts, do not get it; `--agent-env OPENAI_API_KEY` gives it back. Other secret-like
    variables stay (an unsandboxed agent runs as the user)."""
    agent = tmp_path / "agent.py"
    agent.write_text(
        "import os, subprocess, sys\nsys.stdin.read()\n"
        "child = subprocess.run(['sh', '-c', 'test -n \"$OPENAI_API_KEY\" && echo has || echo none'], capture_output=True, text=True)\n"
        "print('agent', 'has' if os.environ.get('OPENAI_API_KEY') else 'none', 'child', child.stdout.strip(),\n"
        "      'other', 'has' if os.environ.get('MY_OTHER_TOKEN') else 'none')\n"
    )
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "p", "input": "go"}])
    env = {"OPENAI_API_KEY": "sk-judge-0123456789", "MY_OTHER_TOKEN": "tok-0123456789"}
    judge = ["-g", "builtin:llm", "--judge-api-key-env", "OPENAI_API_KEY", "--judge-base-url", "http://127.0.0.1:9/v1"]
    outputs = []
    for extra in ([], ["--agent-env", "OPENAI_API_KEY"]):
        proc = run_waza(
            "capture", prompts, "--adapter", "exec", *judge, *extra, "--", sys.executable, agent, cwd=tmp_path, env=env
        )
        assert b"sk-judge" not in proc.stdout + proc.stderr
        outputs.append(json.loads(proc.stdout)["output"].strip())
    assert outputs == ["agent none child none other has", "agent has child has other has"]
