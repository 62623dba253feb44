"""The LLM graders (llm, llm_comparison, prompt) end to end through `waza grade`, against a real
chat-completions server on 127.0.0.1 (a scripted judge) and a real judge command.

The scripted judge answers what a directive in the agent output tells it to
(see fixtures/judge/judge_server.py), so each test states the judge's reply
and checks what waza made of it: the score, the verdict, the details kept, the
request sent, and errors that stay errors.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from waza.protocol.schemas import errors

from .conftest import loopback_server, read_jsonl, run_waza, write_jsonl

FIXTURES = Path(__file__).parent / "fixtures"
SERVER = FIXTURES / "judge" / "judge_server.py"
COMMAND = FIXTURES / "judge" / "judge_command.py"
RUBRIC_YAML = FIXTURES / "rubrics" / "task_completion.yaml"
SECRET = "sk-judge-0123456789-never-written"


@pytest.fixture(scope="module")
def judge(tmp_path_factory):
    with loopback_server(SERVER, tmp_path_factory.mktemp("judge") / "requests.jsonl") as running:
        yield running


def result(id: str, output: str, **extra) -> dict:
    return {"id": id, "input": "What is 2+2?", "output": output, **extra}


@pytest.fixture
def grade(judge, tmp_path):
    """`waza grade` over the given results with the given options; returns (proc, results, requests)."""
    base_url, log = judge

    def run(rows: list[dict], *args: str, endpoint: bool = True, env: dict | None = None):
        log.write_bytes(b"")
        source = write_jsonl(tmp_path / "results.jsonl", rows)
        judge_args = ("--judge-base-url", base_url) if endpoint else ()
        proc = run_waza("grade", source, *judge_args, *args, cwd=tmp_path, env=env)
        out = read_jsonl(proc.stdout)
        for line in out:
            assert errors("CaptureResult", line) == []
        return proc, out, read_jsonl(log)

    return run


def only_grade(line: dict) -> dict:
    (g,) = line["grades"]
    assert errors("Grade", g) == []
    return g


def test_llm_scores_normalise_one_to_five_and_pass_at_the_threshold(grade):
    rows = [result(f"s{n}", f"four <<score:{n}>>") for n in (1, 3, 4, 5)]
    proc, out, requests = grade(rows, "-g", "builtin:llm", "--grader-config", '{"rubric": "Is it right?"}')
    assert proc.returncode == 0, proc.stderr  # fails are verdicts, not errors
    by_id = {line["id"]: only_grade(line) for line in out}
    assert [by_id[f"s{n}"]["score"] for n in (1, 3, 4, 5)] == [0.0, 0.5, 0.75, 1.0]
    assert [by_id[f"s{n}"]["pass"] for n in (1, 3, 4, 5)] == [False, False, True, True]
    details = by_id["s5"]["details"]
    assert details["rawScore"] == 5 and details["threshold"] == 0.75
    assert details["reply"] == '{"reasoning": "scripted", "score": 5}'
    assert details["usage"]["completion_tokens"] == 7 and details["latencyMs"] >= 0
    assert details["model"] == "scripted-judge" and details["attempts"] == 1 and details["structured"] is True
    prompt = details["prompt"][-1]["content"]
    assert "Is it right?" in prompt and "What is 2+2?" in prompt and "four <<score:5>>" in prompt
    # The request asked for schema-constrained output at temperature 0.
    sent = requests[0]["body"]
    assert sent["response_format"]["type"] == "json_schema"
    assert sent["response_format"]["json_schema"]["schema"]["required"] == ["reasoning", "score"]
    assert sent["temperature"] == 0 and "model" not in sent


def test_api_key_goes_only_into_the_header_in_process_and_isolated(grade):
    env = {"WAZA_TEST_JUDGE_KEY": SECRET}
    for extra in ((), ("--isolate",)):
        proc, out, requests = grade(
            [result("k", "4 <<score:5>>")],
            "-g",
            "builtin:llm",
            "--judge-api-key-env",
            "WAZA_TEST_JUDGE_KEY",
            "--judge-model",
            "judge-1",
            "--no-cache",
            *extra,
            env=env,
        )
        assert proc.returncode == 0, proc.stderr
        assert only_grade(out[0])["pass"] is True
        assert requests[0]["auth"] == f"Bearer {SECRET}" and requests[0]["body"]["model"] == "judge-1"
        assert SECRET.encode() not in proc.stdout + proc.stderr


def test_an_endpoint_without_structured_output_is_asked_again_and_parsed_strictly(grade):
    rows = [
        result("plain", "4 <<no-schema>> <<score:4>>"),
        result("fenced", '4 <<no-schema>> <<reply:```json\\n{"reasoning": "ok", "score": 5}\\n```>>'),
    ]
    _, out, requests = grade(rows, "-g", "builtin:llm")
    by_id = {line["id"]: only_grade(line) for line in out}
    assert by_id["plain"]["score"] == 0.75 and by_id["plain"]["details"]["structured"] is False
    assert by_id["fenced"]["score"] == 1.0
    assert len(requests) == 4 and "response_format" not in requests[1]["body"]


BAD_REPLIES = {
    "prose": ("I think it deserves a 4.", "not one JSON object"),
    "range": ('{"reasoning": "ok", "score": 9}', "does not fit the expected JSON"),
    "missing": ('{"reasoning": "ok"}', "'score' is a required property"),
    "chatty": ('Sure! {"reasoning": "ok", "score": 4}', "not one JSON object"),
}


def test_a_reply_that_is_not_the_asked_json_is_an_error_grade_never_a_score(grade):
    rows = [result(id, f"4 <<reply:{reply}>>") for id, (reply, _) in BAD_REPLIES.items()] + [result("good", "4 <<score:5>>")]
    proc, out, _ = grade(rows, "-g", "builtin:llm")
    assert proc.returncode == 1
    by_id = {line["id"]: line for line in out}
    for id, (_, message) in BAD_REPLIES.items():
        bad = only_grade(by_id[id])
        assert bad["status"] == "error" and bad["pass"] is None and bad["score"] is None
        assert message in bad["error"] and by_id[id]["status"] == "error"
    assert by_id["good"]["status"] == "passed"  # the run went on


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_dead_endpoint_is_an_error_grade_after_the_retries(grade):
    dead = f"http://127.0.0.1:{free_port()}/v1"
    config = '{"retries": 1, "retry_backoff": 0.01}'
    proc, out, _ = grade(
        [result("x", "4")], "-g", "builtin:llm", "--judge-base-url", dead, "--grader-config", config, endpoint=False
    )
    assert proc.returncode == 1
    g = only_grade(out[0])
    assert g["status"] == "error" and g["score"] is None
    assert f"cannot reach judge endpoint {dead}" in g["error"] and "after 2 attempts" in g["error"]


def test_transient_failures_are_retried(grade):
    _, out, requests = grade(
        [result("r", "4 <<503x2>> <<score:5>>")], "-g", "builtin:llm", "--grader-config", '{"retry_backoff": 0.01}'
    )
    g = only_grade(out[0])
    assert g["status"] == "passed" and g["details"]["attempts"] == 3 and len(requests) == 3


def test_no_judge_at_all_is_an_error_grade(grade):
    _, out, _ = grade([result("n", "4")], "-g", "builtin:llm", endpoint=False)
    g = only_grade(out[0])
    assert g["status"] == "error" and "no judge configured" in g["error"]


def test_judge_command_gets_the_prompt_on_stdin(grade, tmp_path):
    seen = tmp_path / "prompt.txt"
    cmd = f"{sys.executable} {COMMAND} {seen}"
    _, out, _ = grade([result("c", "four <<score:4>>", hint="4")], "-g", "builtin:llm", "--judge-command", cmd, endpoint=False)
    g = only_grade(out[0])
    assert g["pass"] is True and g["score"] == 0.75 and g["details"]["reply"].strip().startswith('{"reasoning": "command judge"')
    assert "four <<score:4>>" in seen.read_text() and "## Hint" in seen.read_text()
    _, out, _ = grade([result("c", "4 <<exit:3>>")], "-g", "builtin:llm", "--judge-command", cmd, endpoint=False)
    g = only_grade(out[0])
    assert g["status"] == "error" and "exited with 3: judge: model not available" in g["error"]


def test_llm_comparison_judges_against_the_reference(grade):
    rows = [result("ref", "4 <<score:5>>", reference="2+2 is 4"), result("none", "4 <<score:5>>")]
    _, out, _ = grade(rows, "-g", "builtin:llm_comparison")
    by_id = {line["id"]: only_grade(line) for line in out}
    assert by_id["ref"]["pass"] is True
    assert "## Reference answer\n2+2 is 4" in by_id["ref"]["details"]["prompt"][-1]["content"]
    assert by_id["none"]["status"] == "error" and "no reference" in by_id["none"]["error"]
    _, out, _ = grade(
        [result("cfg", "4 <<score:2>>")], "-g", "builtin:llm_comparison", "--grader-config", '{"reference": "four"}'
    )
    assert only_grade(out[0])["score"] == 0.25


def test_prompt_grader_criteria_raw_and_text_replies(grade):
    reply = '{"reasoning": "good", "correctness": 5, "clarity": 3, "overall_score": 4}'
    config = orjson.dumps({"rubric": "Correctness and clarity, 1-5 each.", "criteria": ["correctness", "clarity"]}).decode()
    _, out, requests = grade([result("j", f"4 <<reply:{reply}>>")], "-g", "builtin:prompt", "--grader-config", config)
    g = only_grade(out[0])
    assert g["score"] == 0.75 and g["pass"] is True and g["details"]["criteria"] == {"correctness": 1.0, "clarity": 0.5}
    assert requests[0]["body"]["response_format"]["json_schema"]["schema"]["required"] == [
        "reasoning",
        "correctness",
        "clarity",
        "overall_score",
    ]

    raw = orjson.dumps({"rubric": "r", "score_type": "raw", "threshold": 0.6}).decode()
    _, out, _ = grade(
        [result("raw", '4 <<reply:{"reasoning": "x", "overall_score": 0.65}>>')], "-g", "builtin:prompt", "--grader-config", raw
    )
    assert only_grade(out[0])["score"] == 0.65 and only_grade(out[0])["pass"] is True

    text = orjson.dumps({"rubric": "r", "response_format": "text"}).decode()
    rows = [result("t", "4 <<reply:Mostly right.\\nOverall_score: 2>>"), result("u", "4 <<reply:Mostly right, a 4.>>")]
    _, out, requests = grade(rows, "-g", "builtin:prompt", "--grader-config", text)
    by_id = {line["id"]: only_grade(line) for line in out}
    assert by_id["t"]["score"] == 0.25 and by_id["t"]["reasoning"] == "Mostly right."
    assert by_id["u"]["status"] == "error" and "overall_score: N" in by_id["u"]["error"]
    assert all("response_format" not in r["body"] for r in requests)


def test_prompt_grader_reads_a_rubric_yaml_with_its_own_scale(grade, tmp_path):
    shutil.copy(RUBRIC_YAML, tmp_path / "task_completion.yaml")
    config = '{"rubric": "task_completion.yaml"}'
    rows = [
        result("yes", '4 <<reply:{"reasoning": "done", "rating": "true"}>>'),
        result("no", '4 <<reply:{"reasoning": "gaps", "rating": "false"}>>'),
    ]
    _, out, requests = grade(rows, "-g", "builtin:prompt", "--grader-config", config)
    by_id = {line["id"]: only_grade(line) for line in out}
    assert (by_id["yes"]["score"], by_id["yes"]["pass"]) == (1.0, True)
    assert (by_id["no"]["score"], by_id["no"]["pass"]) == (0.0, False)
    assert by_id["yes"]["details"]["rubric"] == "task_completion.yaml"
    schema = requests[0]["body"]["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["rating"] == {"type": "string", "enum": ["false", "true"]}
    assert "Evaluates whether the agent successfully" in requests[0]["body"]["messages"][-1]["content"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("-g", "builtin:llm", "--grader-config", '{"rubrik": "x"}'), "rubrik"),
        (("-g", "builtin:llm", "--grader-config", '{"rubric": "missing.md"}'), "missing.md"),
        (("-g", "builtin:llm", "--grader-config", '{"base_url": "http://x", "command": "judge"}'), "not both"),
        (("-g", "builtin:prompt", "--grader-config", '{"rubric": "r", "score_type": "stars"}'), "score_type"),
        (("-g", "builtin:prompt", "--grader-config", '{"rubric": "task_completion.yaml", "criteria": ["a"]}'), "criteria"),
        (("-g", "builtin:hint", "--judge-model", "m"), "does nothing without an LLM grader"),
        (("-g", "builtin:llm", "--judge", "remote"), "--judge takes 'local'"),
        (("-g", "builtin:llm", "--judge-model-path", "m.gguf"), "--judge-model-path is for --judge local"),
        (("-g", "builtin:llm", "--judge-api-key-env", "WAZA_TEST_NO_SUCH_KEY", "--isolate"), "WAZA_TEST_NO_SUCH_KEY"),
    ],
)
def test_bad_judge_config_stops_before_anything_runs(grade, tmp_path, args, message):
    shutil.copy(RUBRIC_YAML, tmp_path / "task_completion.yaml")
    proc, out, requests = grade([result("x", "4")], *args, endpoint=False)
    assert proc.returncode == 2 and out == [] and requests == []
    assert message in proc.stderr.decode()


def test_standalone_llm_grader_speaks_the_protocol(judge):
    base_url, _ = judge
    request = {"id": "s", "input": "2+2?", "output": "4 <<score:5>>", "config": {"rubric": "right?"}}
    proc = subprocess.run(
        [sys.executable, "-m", "waza.graders.llm", "--config", orjson.dumps({"base_url": base_url}).decode()],
        input=orjson.dumps(request),
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    answer = orjson.loads(proc.stdout)
    assert errors("GraderResult", answer) == []
    assert answer["pass"] is True and answer["score"] == 1.0 and answer["details"]["judge"] == base_url
